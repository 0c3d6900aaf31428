-- lj_frenkel_ladd: the Helmholtz free energy of the Lennard-Jones fcc solid by Frenkel-Ladd
-- thermodynamic integration, in the Einstein-molecule form of Vega & Noya (J. Chem. Phys. 127,
-- 154113, 2007): the particle of index 0 is held fixed and the others are tethered to their
-- lattice sites with beta U_t = lambda sum_{i>0} |r_i - r0_i|^2 (lengths in sigma), the
-- Lennard-Jones interactions on throughout (mode = "checkerboard", the only mode with the tether).
--   carlo workflows/lj_frenkel_ladd.lua                       T = 2, rho = 1.2, N = 256
--   carlo workflows/lj_frenkel_ladd.lua quick=true            short: the CPU, a minute or two
--   carlo workflows/lj_frenkel_ladd.lua T=1.5 rho=1.1 N=500 shift=true
-- The formula (per particle, beta = 1 / T, Lambda = sigma):
--   beta A / N = einstein + reference + lattice + perturbation + integral, with
--     einstein     = (d/2) (1 - 1/N) ln(lambda_max / pi)   the ideal Einstein molecule at lambda_max
--     reference    = (1/N) ln(N / V)                       the fixed particle's translations
--     lattice      = beta U_lattice / N                    the perfect lattice's energy
--     perturbation = (1/N) ln < exp(beta (U - U_lattice)) >_(lambda_max)
--     integral     = -(1/N) int_0^lambda_max < sum_{i>0} |r_i - r0_i|^2 >_lambda dlambda
-- Why: with U(lambda) = U_LJ + lambda T sum |dr|^2 the free energy obeys d(beta A)/d lambda =
-- < sum |dr|^2 >_lambda (sampled with the interactions on), so A(0) = A(lambda_max) - the
-- integral. At lambda_max the crystal is the ideal Einstein molecule plus the interactions; the
-- exact identity A(lambda_max) - A_Einstein = T ln < exp(beta (U - U_0)) >, averaged in the
-- interacting system at lambda_max, gives it with U_0 = U_lattice (configurations stay within a
-- few hundredths of sigma of the lattice there, so U - U_lattice is small and the average is
-- well sampled). This is Frenkel & Smit's route (Understanding Molecular Simulation: the
-- lattice energy plus the exponential average at lambda_max, the interactions on along the
-- path) with the Einstein molecule's reference terms of Vega & Noya (no centre-of-mass
-- constraint, no correction for it: particle 0 fixed removes the translations exactly, as in
-- workflows/hs_frenkel_ladd.lua). Tail corrections, when on, are in U and U_lattice alike; with
-- shift = true the sampled potential is continuous at rc and the virial pressure is exactly
-- -dA/dV (tests/validation/fe_lj_solid.lua checks A(rho) against it).
-- The integral runs over x = ln(lambda + c) by Gauss-Legendre (Frenkel & Smit's change of
-- variable): the integrand N <msd>(lambda + c) is nearly flat when c = d / (2 msd(0)); c = 0
-- (the default) measures msd at lambda = 1 for it.
-- Every node is a system of its own (seed carlo.replica_seed(seed, i)), from the perfect
-- lattice, all advanced together by carlo.advance (on the GPU each from its own host thread and
-- stream, on the CPU one system a thread): tuned (lj:tune's rule), equilibrated and sampled.
-- Options (key=value): T (2.0), rho (1.2), N (256), rc (2.5), shift (false), tail (not shift),
-- nodes (12), lambda_max (20000), c (0: measured), sweeps (4000 per node), equilibrate (1000),
-- every (4), seed (1), device (auto), quick (false), out (lj_frenkel_ladd: <out>.tsv, the terms,
-- and <out>_nodes.tsv, the integrand). dofile'd with arg[1] = "--module" it returns its
-- functions (tests/validation/fe_lj_solid.lua).
local carlo = require "carlo"

-- ---------- systems advanced together ----------

local function lj_system(o, seed, rho, lambda)
  local tail = o.tail
  if tail == nil then tail = not o.shift end
  return carlo.lj{ N = o.N, rho = rho, T = o.T, rc = o.rc, shift = o.shift, tail = tail,
                   mode = "checkerboard", init = "fcc", seed = seed, device = o.device, quiet = true,
                   lambda = lambda, delta = 0.05 }
end

-- lj:tune's rule (src/lj/lj_sys.c, lj_tune) between rounds of sweeps advanced together: delta
-- times acc / target clamped to [0.5, 1.5], within [1e-6, delta_max].
local function tune_together(systems, rounds, sweeps, target)
  local before = {}
  for i, s in ipairs(systems) do before[i] = { s.tried, s.accepted } end
  for _ = 1, rounds do
    carlo.advance(systems, sweeps)
    for i, s in ipairs(systems) do
      local t, a = s.tried - before[i][1], s.accepted - before[i][2]
      if t > 0 then
        local f = (a / t) / target
        f = f < 0.5 and 0.5 or (f > 1.5 and 1.5 or f)
        local d = s.delta * f
        s.delta = d > s.delta_max and s.delta_max or (d < 1e-6 and 1e-6 or d)
      end
      before[i] = { s.tried, s.accepted }
    end
  end
end

-- Every system sampled every `every` sweeps, `n` times: per system the series of the keys.
local function sample_together(systems, n, every, keys)
  local series = {}
  for i = 1, #systems do
    series[i] = {}
    for _, k in ipairs(keys) do series[i][k] = {} end
  end
  for j = 1, n do
    carlo.advance(systems, every)
    for i, s in ipairs(systems) do
      local o = s:observe()
      for _, k in ipairs(keys) do series[i][k][j] = o[k] end
    end
  end
  return series
end

local function stats(list, every)
  local e = carlo.stats(list)
  return { mean = e.mean, err = e.err, tau = e.tau * every }
end

-- ln mean exp(x) of a list, without overflow.
local function log_mean_exp(x)
  local top = -math.huge
  for _, v in ipairs(x) do top = math.max(top, v) end
  local s = 0
  for _, v in ipairs(x) do s = s + math.exp(v - top) end
  return top + math.log(s / #x)
end

-- ---------- Frenkel-Ladd ----------

-- The ladder at density rho: c, the nodes lambda_i (ascending) and their weights in x.
local function ladder(o, rho)
  local c = o.c
  if not (c > 0) then
    local s = lj_system(o, o.seed, rho, 1)
    s:tune{ sweeps = 100, target = 0.4, quiet = true }
    s:run{ sweeps = o.equilibrate // 2 }
    local r = s:sample{ sweeps = o.equilibrate - o.equilibrate % o.every, every = o.every }
    c = s.dim / (2 * r.msd_site.mean)
    s:close()
  end
  local g = carlo.gauss_legendre{ from = math.log(c), to = math.log(o.lambda_max + c), n = o.nodes }
  local lam = {}
  for i = 1, o.nodes do lam[i] = math.exp(g[i]) - c end
  return { c = c, x = g, lambda = lam }
end

-- beta A / N of the solid at density rho, term by term (the header's formula). o: T, N, rc,
-- shift, tail, nodes, lambda_max, c, sweeps, equilibrate, every, seed, device; log: a carlo.log
-- for the nodes (or nil).
local function frenkel_ladd(o, rho, log)
  local lat = lj_system(o, o.seed, rho, 0)
  local N, dim, V = lat.N, lat.dim, lat.volume
  local u_lat = lat:observe().U -- per particle, tail included when on
  lat:close()
  local L = ladder(o, rho)
  local systems = {}
  for i = 1, o.nodes do systems[i] = lj_system(o, carlo.replica_seed(o.seed, i), rho, L.lambda[i]) end
  tune_together(systems, 12, math.max(1, o.equilibrate // 24), 0.4)
  carlo.advance(systems, o.equilibrate)
  local n = o.sweeps // o.every
  local series = sample_together(systems, n, o.every, { "msd_site", "U" })
  local ys, dys = {}, {}
  local top
  for i, s in ipairs(systems) do
    local m, lam = stats(series[i].msd_site, o.every), L.lambda[i]
    ys[i], dys[i] = N * m.mean * (lam + L.c), N * m.err * (lam + L.c)
    if log then
      log:row{ rho = rho, lambda = lam, msd_site = m.mean, msd_err = m.err, tau = m.tau,
               ideal_msd = dim * (N - 1) / (2 * lam * N), integrand = ys[i], delta = s.delta,
               acceptance = s.acceptance }
    end
    if i == o.nodes then top = { msd = m, lambda = lam, U = series[i].U } end
    s:close()
  end
  local integral, err = carlo.integrate{ x = L.x, y = ys, dy = dys, rule = "gauss" }
  -- the perturbation at lambda_max: x_j = beta N (U_j - U_lattice)
  local xs = {}
  for j, u in ipairs(top.U) do xs[j] = N * (u - u_lat) / o.T end
  local u_top = stats(top.U, o.every)
  local t = {
    rho = rho, N = N, c = L.c,
    einstein = dim / 2 * (N - 1) / N * math.log(o.lambda_max / math.pi),
    reference = math.log(N / V) / N,
    lattice = u_lat / o.T,
    perturbation = log_mean_exp(xs) / N,
    perturbation_err = u_top.err / o.T,
    integral = -integral / N, integral_err = err / N,
    top_ratio = top.msd.mean / (dim * (N - 1) / (2 * top.lambda * N)),
  }
  t.A = t.einstein + t.reference + t.lattice + t.perturbation + t.integral
  t.A_err = math.sqrt(t.integral_err ^ 2 + t.perturbation_err ^ 2)
  return t
end

-- int_rho1^rho2 beta P / rho^2 drho (the same potential, lambda = 0) by Gauss-Legendre on
-- `nodes` densities, all advanced together: the change of beta A / N along the isotherm.
local function pressure_path(o, rho1, rho2, nodes)
  local g = carlo.gauss_legendre{ from = rho1, to = rho2, n = nodes }
  local systems = {}
  for i = 1, nodes do systems[i] = lj_system(o, carlo.replica_seed(o.seed, 100 + i), g[i], 0) end
  tune_together(systems, 12, math.max(1, o.equilibrate // 24), 0.4)
  carlo.advance(systems, o.equilibrate)
  local series = sample_together(systems, o.sweeps // o.every, o.every, { "P" })
  local ys, dys, P = {}, {}, {}
  for i, s in ipairs(systems) do
    local p = stats(series[i].P, o.every)
    P[i] = p
    ys[i], dys[i] = p.mean / (o.T * g[i] * g[i]), p.err / (o.T * g[i] * g[i])
    s:close()
  end
  local v, e = carlo.integrate{ x = g, y = ys, dy = dys, rule = "gauss" }
  return { value = v, err = e, rho = g, P = P }
end

if (...) == "--module" then
  return { frenkel_ladd = frenkel_ladd, pressure_path = pressure_path }
end

local defaults = { T = 2.0, rho = 1.2, N = 256, rc = 2.5, shift = false, tail = "auto", nodes = 12,
                   lambda_max = 2e4, c = 0, sweeps = 4000, equilibrate = 1000, every = 4, seed = 1,
                   device = "auto", quick = false, out = "lj_frenkel_ladd" }
local opt = carlo.options(arg, defaults)
if opt.quick then
  opt.nodes, opt.sweeps, opt.equilibrate = 8, 1200, 400
end
if opt.tail == "auto" then opt.tail = not opt.shift
elseif opt.tail == "true" or opt.tail == true then opt.tail = true
elseif opt.tail == "false" or opt.tail == false then opt.tail = false
else error("lj_frenkel_ladd: tail must be true, false or auto (got " .. tostring(opt.tail) .. ")", 0) end
local nodes = math.tointeger(opt.nodes)
if not nodes or nodes < 2 or nodes > 64 then error("lj_frenkel_ladd: nodes must be an integer from 2 to 64", 0) end
opt.nodes = nodes
if not (opt.lambda_max > 1 and opt.lambda_max <= 1e7) then
  error("lj_frenkel_ladd: lambda_max must be in (1, 1e7] (got " .. tostring(opt.lambda_max) .. ")", 0)
end
opt.every = math.tointeger(opt.every)
if not opt.every or opt.every < 1 then error("lj_frenkel_ladd: every must be an integer >= 1", 0) end
opt.sweeps, opt.equilibrate = math.floor(opt.sweeps), math.floor(opt.equilibrate)
if opt.sweeps < 2 * opt.every then error("lj_frenkel_ladd: sweeps must give 2 samples at least", 0) end
opt.N = math.tointeger(opt.N)

local t0 = carlo.clock()
print(("# Frenkel-Ladd (Einstein molecule), LJ fcc solid, N = %d, T = %g, rho = %g, rc = %g%s%s; "
  .. "lambda_max = %g, %d Gauss-Legendre nodes in ln(lambda + c), %d sweeps per node after %d")
  :format(opt.N, opt.T, opt.rho, opt.rc, opt.shift and ", shifted" or "", opt.tail and ", tail corrections" or "",
    opt.lambda_max, opt.nodes, opt.sweeps, opt.equilibrate))
print("# beta A / N = einstein + reference + lattice + perturbation + integral (see the header)")
local t = frenkel_ladd(opt, opt.rho, carlo.log(opt.out .. "_nodes.tsv"))
for _, k in ipairs{ "einstein", "reference", "lattice", "perturbation", "integral" } do
  local e = t[k .. "_err"]
  print(("%-13s %12.6f%s"):format(k, t[k], e and ("  +- %.6f"):format(e) or ""))
end
print(("%-13s %12.6f  +- %.6f"):format("beta A / N", t.A, t.A_err))
print(("# c = %.5g; at lambda_max the msd is %.4f of the ideal Einstein molecule's; %.0f s")
  :format(t.c, t.top_ratio, carlo.clock() - t0))
carlo.log(opt.out .. ".tsv"):row{ N = opt.N, T = opt.T, rho = opt.rho, rc = opt.rc, einstein = t.einstein,
  reference = t.reference, lattice = t.lattice, perturbation = t.perturbation,
  perturbation_err = t.perturbation_err, integral = t.integral, integral_err = t.integral_err,
  A = t.A, A_err = t.A_err, c = t.c }
