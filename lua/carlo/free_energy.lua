-- carlo.mbar: free energies of sampled states and averages at any state between them by
-- MBAR (Shirts and Chodera 2008) or the multiple-histogram method (Ferrenberg and Swendsen
-- 1989); carlo.integrate and carlo.gauss_legendre for thermodynamic integration.
--   local per = ens:sample{ sweeps = 20000, every = 10, series = true }
--   local mb = carlo.mbar{ samples = per }               -- or beta = {...}, energy = {{...}, ...}
--   mb.f[k], mb.df[k]                                    -- reduced free energies, f[1] = 0
--   local lnZ, err = mb:lnZ(0.44)                        -- ln Z(beta) - ln Z(beta_1)
--   local C, dC = mb:heat_capacity(0.44)
--   carlo.mbar{ beta =, energy =, pressure =, volume = }  -- NPT: u = beta (E + P V)
--   carlo.mbar{ u = { u_1(x_n) ... }, N_k = {...} }      -- any reduced energies, pymbar's u_kn
--   local I, dI = carlo.integrate{ x = xs, y = ys, dy = errs, rule = "simpson" }
-- The solver, covariance and reweighting are in C (src/fe/mbar.c); this file checks arguments,
-- subsamples each state's series by its statistical inefficiency and composes the results.
local carlo = require "carlo"

local fail, check_keys = carlo._fail, carlo._check_keys -- lua/carlo/schedule.lua

local function got(v)
  if type(v) == "string" then return ("the string %q"):format(v) end
  if type(v) == "table" then return "a table" end
  return tostring(v)
end

-- A list of finite numbers (a carlo.array is read into one).
local function numbers(v, where, key, level)
  if type(v) == "userdata" and v.totable then v = v:totable() end
  if type(v) ~= "table" then fail(where, ("%s must be a list of numbers (got %s)"):format(key, got(v)), level + 1) end
  for i = 1, #v do
    local x = v[i]
    if type(x) ~= "number" or x ~= x or x == math.huge or x == -math.huge then
      fail(where, ("%s[%d] must be a finite number (got %s)"):format(key, i, got(x)), level + 1)
    end
  end
  return v
end

-- ---------- carlo.mbar ----------

local MBAR = {}
MBAR.__index = MBAR

-- States from the samples of carlo.ensemble (series = true) or carlo.anneal (series = true):
-- beta from the sample's T or beta, the energy series and the other observables' series.
local function from_samples(samples, where)
  if type(samples) ~= "table" or #samples < 1 then
    fail(where, "samples must be the list returned by ensemble:sample{ series = true } or "
      .. "carlo.anneal{ series = true }", 3)
  end
  local beta, energy, obs, size = {}, {}, {}, nil
  for k, s in ipairs(samples) do
    local b = s.beta or (type(s.T) == "number" and 1 / s.T)
    if type(b) ~= "number" then
      fail(where, ("samples[%d] has neither beta nor T (the control must be a temperature)"):format(k), 3)
    end
    local series = s.series
    if type(series) ~= "table" then
      fail(where, ("samples[%d] carries no series: sample with series = true"):format(k), 3)
    end
    beta[k] = b
    size = size or series.size
    local E = series.energy
    if E == nil then
      -- the total energy from the energy per site (Potts e) or per particle (LJ U)
      local per = series.e or series.U
      if per == nil or type(series.size) ~= "number" then
        fail(where, ("samples[%d] has no energy series (energy, or e or U with size)"):format(k), 3)
      end
      per = numbers(per, where, ("samples[%d].series.%s"):format(k, series.e and "e" or "U"), 3)
      E = {}
      for j = 1, #per do E[j] = per[j] * series.size end
    end
    energy[k] = numbers(E, where, ("samples[%d] energy"):format(k), 3)
    for name, v in pairs(series) do
      if name ~= "energy" and (type(v) == "table" or type(v) == "userdata") then
        obs[name] = obs[name] or {}
        obs[name][k] = numbers(v, where, ("samples[%d].series.%s"):format(k, name), 3)
      end
    end
  end
  for name, list in pairs(obs) do
    for k = 1, #samples do
      if list[k] == nil then obs[name] = nil break end
    end
  end
  return beta, energy, obs, size
end

-- Indices 1..n thinned by the statistical inefficiency g = 2 tau (tau from the blocking
-- analysis of the state's own reduced energy): floor((i - 1) g + 1/2) + 1.
local function thin(series)
  local n = #series
  local est = carlo.stats(series)
  local g = math.max(1, 2 * est.tau)
  local idx = {}
  local i = 0
  while true do
    local j = math.floor(i * g + 0.5) + 1
    if j > n then break end
    idx[#idx + 1] = j
    i = i + 1
  end
  return idx, g
end

local function pick(series, idx)
  local out = {}
  for i = 1, #idx do out[i] = series[idx[i]] end
  return out
end

local allowed = { samples = true, beta = true, energy = true, u = true, N_k = true, observables = true,
                  pressure = true, volume = true, size = true, subsample = true, method = true,
                  bin = true, tol = true }

-- The helpers below are called from carlo.mbar: their errors name the caller of carlo.mbar
-- (fail level 3, numbers level 3).

-- A ladder: beta, the energy series and, for NPT, pressure and the volume series.
local function read_ladder(t, d, where)
  d.beta = numbers(t.beta, where, "beta", 3)
  local K = #d.beta
  if type(t.energy) ~= "table" or #t.energy ~= K then
    fail(where, ("energy must hold one series per beta (%d; got %s)")
      :format(K, type(t.energy) == "table" and #t.energy .. " series" or got(t.energy)), 3)
  end
  d.energy = {}
  for k = 1, K do d.energy[k] = numbers(t.energy[k], where, ("energy[%d]"):format(k), 3) end
  d.K = K
  if t.pressure == nil and t.volume == nil then return end
  -- an NPT ladder: u_k = beta_k (E + P_k V)
  d.pressure = numbers(t.pressure, where, "pressure", 3)
  if #d.pressure ~= K then
    fail(where, ("pressure must hold %d values, one per beta (got %d)"):format(K, #d.pressure), 3)
  end
  if type(t.volume) ~= "table" or #t.volume ~= K then
    fail(where, ("volume must hold one series per beta (%d)"):format(K), 3)
  end
  d.volume = {}
  for k = 1, K do
    d.volume[k] = numbers(t.volume[k], where, ("volume[%d]"):format(k), 3)
    if #d.volume[k] ~= #d.energy[k] then
      fail(where, ("volume[%d] must hold %d values, as energy[%d] (got %d)")
        :format(k, #d.energy[k], k, #d.volume[k]), 3)
    end
  end
end

-- The general form: u[k] lists u_k(x_n) for the samples of every state in turn (N_k[l] of
-- state l), cut here into per-state series u[k][l].
local function read_u(t, d, where)
  local Nk = numbers(t.N_k, where, "N_k", 3)
  local K = #Nk
  if type(t.u) ~= "table" or #t.u ~= K then
    fail(where, ("u must hold one row of reduced energies per state (%d, as N_k; got %s)")
      :format(K, type(t.u) == "table" and #t.u .. " rows" or got(t.u)), 3)
  end
  local total = 0
  for k = 1, K do
    if Nk[k] ~= math.floor(Nk[k]) or Nk[k] < 1 then
      fail(where, ("N_k[%d] must be an integer >= 1 (got %s)"):format(k, got(Nk[k])), 3)
    end
    total = total + Nk[k]
  end
  d.u, d.K = {}, K
  for k = 1, K do
    local row = numbers(t.u[k], where, ("u[%d]"):format(k), 3)
    if #row ~= total then
      fail(where, ("u[%d] must hold %d values (the sum of N_k; got %d)"):format(k, total, #row), 3)
    end
    d.u[k] = {}
    local off = 0
    for l = 1, K do
      local s = {}
      for j = 1, Nk[l] do s[j] = row[off + j] end
      d.u[k][l] = s
      off = off + Nk[l]
    end
  end
end

-- The state's own reduced energy up to its constant beta_k (what its correlations are read from).
local function own_energy(d, k)
  if d.u then return d.u[k][k] end
  if not d.pressure then return d.energy[k] end
  local h = {}
  for j = 1, #d.energy[k] do h[j] = d.energy[k][j] + d.pressure[k] * d.volume[k][j] end
  return h
end

-- Each state's kept samples: every g-th (g = 2 tau from the blocking analysis) or all.
local function thin_states(d, subsample, where)
  d.tau, d.g, d.keep = {}, {}, {}
  for k = 1, d.K do
    local own = own_energy(d, k)
    if #own < 2 then fail(where, ("state %d has %d samples (at least 2)"):format(k, #own), 3) end
    if subsample then
      d.keep[k], d.g[k] = thin(own)
    else
      d.g[k] = 1
    end
    d.tau[k] = carlo.stats(own).tau
  end
end

-- The table carlo._mbar reads: nk, coef and x (ladders) or u, and the observables with their
-- squares (slot[name], slot[name .. "^2"]: their indices).
local function build_spec(d, where)
  local K = d.K
  local spec, slot = { nk = {}, obs = {} }, {}
  local function cut(series, k)
    if #series ~= #(d.energy and d.energy[k] or d.u[k][k]) then
      fail(where, ("the series of state %d differ in length"):format(k), 5)
    end
    return d.keep[k] and pick(series, d.keep[k]) or series
  end
  local function add_obs(name, lists)
    local col, sq = {}, {}
    for k = 1, K do
      col[k] = cut(lists[k], k)
      sq[k] = {}
      for j, v in ipairs(col[k]) do sq[k][j] = v * v end
    end
    spec.obs[#spec.obs + 1] = col
    slot[name] = #spec.obs
    spec.obs[#spec.obs + 1] = sq
    slot[name .. "^2"] = #spec.obs
  end
  if d.beta then
    spec.coef, spec.x = {}, { {} }
    for k = 1, K do
      spec.x[1][k] = cut(d.energy[k], k)
      spec.coef[k] = { d.beta[k] }
    end
    add_obs("energy", d.energy)
    if d.pressure then
      spec.x[2] = {}
      for k = 1, K do
        spec.x[2][k] = cut(d.volume[k], k)
        spec.coef[k][2] = d.beta[k] * d.pressure[k]
      end
      add_obs("volume", d.volume)
    end
    for k = 1, K do spec.nk[k] = #spec.x[1][k] end
  else
    spec.u = {}
    for k = 1, K do
      spec.u[k] = {}
      for l = 1, K do spec.u[k][l] = cut(d.u[k][l], l) end
    end
    for k = 1, K do spec.nk[k] = #spec.u[1][k] end
  end
  local names = {}
  for name in pairs(d.obs) do
    if not slot[name] then names[#names + 1] = name end
  end
  table.sort(names)
  for _, name in ipairs(names) do add_obs(name, d.obs[name]) end
  return spec, slot
end

local function read_observables(t, d, where)
  if t.observables == nil then return end
  if type(t.observables) ~= "table" then
    fail(where, "observables must be { name = { series per state } }", 3)
  end
  for name, list in pairs(t.observables) do
    if type(list) ~= "table" or #list ~= d.K then
      fail(where, ("observables.%s must hold one series per state (%d)"):format(tostring(name), d.K), 3)
    end
    d.obs[name] = {}
    for k = 1, d.K do
      local key = ("observables.%s[%d]"):format(name, k)
      d.obs[name][k] = numbers(list[k], where, key, 3)
      local n = #(d.energy and d.energy[k] or d.u[k][k])
      if #d.obs[name][k] ~= n then
        fail(where, ("%s must hold %d values, one per sample of state %d (got %d)"):format(key, n, k, #list[k]), 3)
      end
    end
  end
end

-- method, subsample, tol, size and bin, checked.
local function read_options(t, where)
  local o = { method = t.method or "mbar", subsample = t.subsample, tol = t.tol or 1e-12, size = t.size }
  if o.method ~= "mbar" and o.method ~= "histogram" then
    fail(where, ("method must be \"mbar\" or \"histogram\" (got %s)"):format(got(o.method)), 3)
  end
  if o.subsample == nil then o.subsample = true end
  if type(o.subsample) ~= "boolean" then
    fail(where, ("subsample must be true or false (got %s)"):format(got(o.subsample)), 3)
  end
  if type(o.tol) ~= "number" or not (o.tol > 0 and o.tol < 1e-3) then
    fail(where, ("tol must be a number in (0, 1e-3) (got %s)"):format(got(o.tol)), 3)
  end
  if o.size ~= nil and (type(o.size) ~= "number" or not (o.size > 0)) then
    fail(where, ("size must be a number > 0 (particles or sites; got %s)"):format(got(o.size)), 3)
  end
  if t.bin ~= nil and o.method ~= "histogram" then fail(where, "bin goes with method = \"histogram\"", 3) end
  if t.bin ~= nil and (type(t.bin) ~= "number" or not (t.bin > 0)) then
    fail(where, ("bin must be a number > 0 (the energy bin width; got %s)"):format(got(t.bin)), 3)
  end
  o.bin = t.bin
  return o
end

function carlo.mbar(t)
  local where = "carlo.mbar"
  check_keys(t, where, allowed)
  local forms = (t.samples ~= nil and 1 or 0) + (t.energy ~= nil and 1 or 0) + (t.u ~= nil and 1 or 0)
  if forms ~= 1 then
    fail(where, "give one of samples = (from ensemble:sample or carlo.anneal with series = true), "
      .. "beta = and energy = (a temperature ladder), or u = with N_k = (reduced energies)")
  end
  if (t.pressure ~= nil or t.volume ~= nil) and t.energy == nil then
    fail(where, "pressure and volume go with beta = and energy = (an NPT ladder)")
  end
  local o = read_options(t, where)
  local d = { obs = {} }
  if t.samples ~= nil then
    local size
    d.beta, d.energy, d.obs, size = from_samples(t.samples, where)
    d.K = #d.beta
    o.size = o.size or size
  elseif t.energy ~= nil then
    read_ladder(t, d, where)
  else
    read_u(t, d, where)
  end
  if d.K < 1 then fail(where, "needs at least one state") end
  for k = 1, d.beta and d.K or 0 do
    if not (d.beta[k] >= 0) then fail(where, ("beta[%d] must be >= 0 (got %s)"):format(k, got(d.beta[k]))) end
  end
  read_observables(t, d, where)
  if o.method == "histogram" and (not d.beta or d.pressure) then
    fail(where, "method = \"histogram\" needs a temperature ladder at fixed volume (beta and energies)")
  end
  thin_states(d, o.subsample, where)
  local spec, slot = build_spec(d, where)
  if o.method == "histogram" and o.bin == nil then
    local lo, hi = math.huge, -math.huge
    for k = 1, d.K do for _, e in ipairs(spec.x[1][k]) do lo, hi = math.min(lo, e), math.max(hi, e) end end
    o.bin = (hi > lo) and (hi - lo) / 1000 or 1
  end

  local core = carlo._mbar(spec)
  local ok, passes, residual, rows = pcall(core.solve, core, o.tol, 200, o.bin)
  if not ok then error((tostring(passes):gsub("^.-carlo%.mbar: ", "carlo.mbar: ")), 2) end
  local theta = core:theta()
  local self = setmetatable({ core = core, K = d.K, beta = d.beta, pressure = d.pressure, f = core:f(),
                              df = {}, theta = theta, N_k = spec.nk, tau = d.tau, g = d.g,
                              method = o.method, bin = o.bin, passes = passes, residual = residual,
                              rows = rows, size = o.size, slot = slot, subsample = o.subsample }, MBAR)
  for k = 1, d.K do
    local v = theta[k][k] + theta[1][1] - 2 * theta[1][k]
    self.df[k] = math.sqrt(math.max(v, 0))
  end
  return self
end

-- The target: a beta (ladder), { beta =, pressure = } (NPT ladder) or, for u = ..., the
-- target's reduced energies per state.
function MBAR:_target(target, where)
  if self.pressure then
    if type(target) ~= "table" or type(target.beta) ~= "number" or not (target.beta >= 0)
      or type(target.pressure) ~= "number" then
      fail(where, ("the target of an NPT ladder is { beta = (>= 0), pressure = } (got %s)"):format(got(target)), 3)
    end
    return { target.beta, target.beta * target.pressure }
  end
  if self.beta then
    if type(target) ~= "number" or not (target >= 0) then
      fail(where, ("beta must be a number >= 0 (got %s)"):format(got(target)), 3)
    end
    return { target }
  end
  if type(target) ~= "table" then
    fail(where, "the target is its reduced energies, one series per state (the form of u)", 3)
  end
  return target
end

function MBAR:_slots(names, where)
  local idx = {}
  for i, name in ipairs(names) do
    idx[i] = self.slot[name]
    if not idx[i] then
      local known = {}
      for k in pairs(self.slot) do if not k:find("%^2$") then known[#known + 1] = k end end
      table.sort(known)
      fail(where, ("no series of '%s' (recorded: %s)"):format(tostring(name:gsub("%^2$", "")),
        #known > 0 and table.concat(known, ", ") or "none"), 3)
    end
  end
  return idx
end

-- ln Z(target) - ln Z(state 1) and its error.
function MBAR:lnZ(target)
  local ft, dft = self.core:expect(self:_target(target, "mbar:lnZ"), {})
  return -ft, dft
end

-- The reduced free energy f(target) - f_1 and its error.
function MBAR:free_energy(target)
  local ft, dft = self.core:expect(self:_target(target, "mbar:free_energy"), {})
  return ft, dft
end

-- <name> at the target and its error (covariance formula, augmented states).
function MBAR:expect(name, target)
  local where = "mbar:expect"
  if type(name) ~= "string" then fail(where, ("the observable is a name (got %s)"):format(got(name))) end
  local idx = self:_slots({ name }, where)
  local _, _, mean, cov = self.core:expect(self:_target(target, where), idx)
  return mean[1], math.sqrt(math.max(cov[1][1], 0))
end

-- <A^2> - <A>^2 at the target with its error (delta method on the covariance of the means).
function MBAR:fluctuation(name, target, where)
  where = where or "mbar:fluctuation"
  local idx = self:_slots({ name, name .. "^2" }, where)
  local _, _, mean, cov = self.core:expect(self:_target(target, where), idx)
  local var = mean[2] - mean[1] * mean[1]
  local g1, g2 = -2 * mean[1], 1
  local v = g1 * g1 * cov[1][1] + 2 * g1 * g2 * cov[1][2] + g2 * g2 * cov[2][2]
  return var, math.sqrt(math.max(v, 0))
end

-- C = beta^2 (<E^2> - <E>^2) / size, E the total energy (size: sites or particles, 1 if unknown).
function MBAR:heat_capacity(beta)
  local where = "mbar:heat_capacity"
  if not self.beta or self.pressure then fail(where, "needs a temperature ladder at fixed volume") end
  local var, err = self:fluctuation("energy", beta, where)
  local n = self.size or 1
  return beta * beta * var / n, beta * beta * err / n
end

-- chi = beta size (<m^2> - <m>^2), m an intensive order parameter (default "m").
function MBAR:susceptibility(beta, name)
  local where = "mbar:susceptibility"
  if not self.beta or self.pressure then fail(where, "needs a temperature ladder at fixed volume") end
  local var, err = self:fluctuation(name or "m", beta, where)
  local n = self.size or 1
  return beta * n * var, beta * n * err
end

function MBAR:covariance()
  return self.theta
end

MBAR.__tostring = function(self)
  return ("carlo.mbar (%d states, %s, %d rows, %d passes)"):format(self.K, self.method, self.rows, self.passes)
end

-- ---------- thermodynamic integration ----------

local Schedule = getmetatable(carlo.ladder{ from = 0, to = 1, n = 1 })

-- Gauss-Legendre nodes and weights on [from, to]: the roots of P_n by Newton's method from
-- the Chebyshev-like start cos(pi (i - 1/4) / (n + 1/2)). A schedule (values from `from`
-- towards `to`) with .weights, so that sum_i weights[i] f(x_i) = int_from^to f (exact for
-- polynomials of degree 2n - 1).
function carlo.gauss_legendre(t)
  local where = "carlo.gauss_legendre"
  check_keys(t, where, { from = true, to = true, n = true })
  local a, b, n = t.from, t.to, t.n
  if type(a) ~= "number" or a ~= a or math.abs(a) == math.huge then fail(where, ("from must be a finite number (got %s)"):format(got(a))) end
  if type(b) ~= "number" or b ~= b or math.abs(b) == math.huge then fail(where, ("to must be a finite number (got %s)"):format(got(b))) end
  if a == b then fail(where, ("from and to must differ (got %s twice)"):format(got(a))) end
  if math.type(n) ~= "integer" or n < 1 or n > 200 then
    fail(where, ("n must be an integer in [1, 200] (got %s)"):format(got(n)))
  end
  local nodes, weights = {}, {}
  for i = 1, n do
    local z = math.cos(math.pi * (i - 0.25) / (n + 0.5))
    local dp
    for _ = 1, 100 do
      local p0, p1 = 1.0, z
      for j = 2, n do p0, p1 = p1, ((2 * j - 1) * z * p1 - (j - 1) * p0) / j end
      if n == 1 then p0, p1 = 1.0, z end
      dp = n * (z * p1 - p0) / (z * z - 1)
      local dz = p1 / dp
      z = z - dz
      if math.abs(dz) < 1e-16 then break end
    end
    -- the derivative at the converged root
    local p0, p1 = 1.0, z
    for j = 2, n do p0, p1 = p1, ((2 * j - 1) * z * p1 - (j - 1) * p0) / j end
    if n == 1 then p0, p1 = 1.0, z end
    dp = n * (z * p1 - p0) / (z * z - 1)
    nodes[i] = z                        -- descending in i
    weights[i] = 2 / ((1 - z * z) * dp * dp)
  end
  local r = setmetatable({}, Schedule)
  r.weights = {}
  local half, mid = (b - a) / 2, (a + b) / 2
  for i = 1, n do
    local z = -nodes[i] -- ascending in [-1, 1]: values from `from` towards `to`
    r[i] = mid + half * z
    r.weights[i] = half * weights[i]
  end
  r.from, r.to, r.rule = a, b, "gauss"
  return r
end

-- Weights of the composite rules on the points x (any spacing).
local function trapezoid_weights(x)
  local w = {}
  for i = 1, #x do w[i] = 0 end
  for i = 1, #x - 1 do
    local h = x[i + 1] - x[i]
    w[i] = w[i] + h / 2
    w[i + 1] = w[i + 1] + h / 2
  end
  return w
end

-- Simpson's rule on pairs of intervals of any lengths h0, h1 (the integral of the quadratic
-- through the three points): exact for quadratics, and for cubics when h0 = h1.
local function simpson_weights(x, where)
  local n = #x
  if n < 3 or n % 2 == 0 then
    fail(where, ("rule \"simpson\" needs an odd number of points, at least 3 (got %d)"):format(n), 3)
  end
  local w = {}
  for i = 1, n do w[i] = 0 end
  for i = 1, n - 2, 2 do
    local h0, h1 = x[i + 1] - x[i], x[i + 2] - x[i + 1]
    local s = (h0 + h1) / 6
    w[i] = w[i] + s * (2 - h1 / h0)
    w[i + 1] = w[i + 1] + s * (h0 + h1) * (h0 + h1) / (h0 * h1)
    w[i + 2] = w[i + 2] + s * (2 - h0 / h1)
  end
  return w
end

-- carlo.integrate{ x =, y =, dy =, rule = "trapezoid" | "simpson" | "gauss", weights = }
-- -> integral, error (the dy of independent points propagated: sqrt(sum w_i^2 dy_i^2)).
-- "gauss" takes the weights from x when x is carlo.gauss_legendre's schedule (or weights =).
function carlo.integrate(t)
  local where = "carlo.integrate"
  check_keys(t, where, { x = true, y = true, dy = true, rule = true, weights = true })
  local rule = t.rule or "trapezoid"
  if rule ~= "trapezoid" and rule ~= "simpson" and rule ~= "gauss" then
    fail(where, ("rule must be \"trapezoid\", \"simpson\" or \"gauss\" (got %s)"):format(got(rule)))
  end
  local x = numbers(t.x, where, "x", 2)
  local y = numbers(t.y, where, "y", 2)
  local n = #x
  if #y ~= n then fail(where, ("y must hold %d values, one per x (got %d)"):format(n, #y)) end
  local dy
  if t.dy ~= nil then
    dy = numbers(t.dy, where, "dy", 2)
    if #dy ~= n then fail(where, ("dy must hold %d values, one per x (got %d)"):format(n, #dy)) end
    for i = 1, n do
      if dy[i] < 0 then fail(where, ("dy[%d] must be >= 0 (got %s)"):format(i, got(dy[i]))) end
    end
  end
  local w
  if rule == "gauss" then
    w = t.weights or t.x.weights
    if w == nil then
      fail(where, "rule \"gauss\" needs the nodes of carlo.gauss_legendre as x (or weights =)")
    end
    w = numbers(w, where, "weights", 2)
    if #w ~= n then fail(where, ("weights must hold %d values (got %d)"):format(n, #w)) end
  else
    if t.weights ~= nil then fail(where, "weights goes with rule = \"gauss\"") end
    if n < 2 then fail(where, ("x must hold at least 2 points (got %d)"):format(n)) end
    local up = x[2] > x[1]
    for i = 1, n - 1 do
      if (x[i + 1] > x[i]) ~= up or x[i + 1] == x[i] then
        fail(where, ("x must be strictly monotonic (x[%d] = %s, x[%d] = %s)")
          :format(i, got(x[i]), i + 1, got(x[i + 1])))
      end
    end
    w = rule == "trapezoid" and trapezoid_weights(x) or simpson_weights(x, where)
  end
  local sum, var = 0, 0
  for i = 1, n do
    sum = sum + w[i] * y[i]
    if dy then var = var + w[i] * w[i] * dy[i] * dy[i] end
  end
  return sum, dy and math.sqrt(var) or nil
end
