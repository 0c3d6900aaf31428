-- Frenkel-Ladd free energy of the hard-sphere fcc crystal (hex disks with dim=2), by the
-- Einstein-molecule variant of Vega & Noya (J. Chem. Phys. 127, 154113, 2007): the particle of
-- tag 0 is held fixed and the others are tethered to their lattice sites with
-- beta U = lambda sum |r - r0|^2 (lengths in sigma). Thermodynamic integration from the ideal
-- Einstein molecule at lambda_max down to lambda = 0,
--     beta F = -ln(V/N) + (d/2)(N - 1) ln(lambda_max / pi) - int_0^lambda_max <sum |dr|^2> dlambda
-- (Lambda = sigma), over x = ln(lambda + c) by Gauss-Legendre (Frenkel & Smit's transformation),
-- the integrand <sum |dr|^2>(lambda + c) a smooth step in x. The default c = 1 resolves small
-- lambda, where the softest phonons of the pinned crystal make <|dr|^2> climb steeply (at N =
-- 108 from 0.015 at lambda = 6 to 0.047 at 0.1); Frenkel & Smit's c = d / (2 <|dr|^2>) (c=0:
-- measured at lambda = 1) flattens large lambda but leaves lambda < 5 between the nodes.
-- beta F_ex / N = beta F / N - (ln rho - 1).
-- Target (3D, rho = 1.0409): Polson et al. 2000, beta F_ex / N = 5.91889(4) for N -> infinity,
-- reached by fitting f + a ln(N)/N + b/N to the sizes given (three or more).
-- Every node is a system of its own (seed carlo.replica_seed(seed, i) for node i, from the perfect
-- lattice), tuned (hard:tune's rule), equilibrated and sampled; with together=1 (the default)
-- the nodes of every size in N are advanced side by side by carlo.advance (on the GPU each from
-- its own host thread and stream, so that small systems fill the device; on the CPU one system a
-- thread), with together=0 one after another (sys:tune, sys:run, sys:sample): the same chains
-- and numbers bit for bit (tests/lua/fe_together.lua).
--   carlo workflows/hs_frenkel_ladd.lua                      N = 108 .. 2048 on a GPU
--   carlo workflows/hs_frenkel_ladd.lua quick=true              N = 108, short: the CPU, seconds
--   carlo workflows/hs_frenkel_ladd.lua dim=2 N=224          hex disks
-- Arguments (key=value): dim (3), N (a comma list: 108,256,864,1372,2048; fcc boxes of 5 cells
-- a side, N = 500, have no cell grid at this density), rho (1.0409; 2D: 0.95), nodes (16),
-- lambda_max (20000), c (1; 0: from a short run at lambda = 1), sweeps (20000 per node),
-- equilibrate (4000), every (5), seed (1), device (auto), quick (0), together (1), out
-- (hs_frenkel_ladd: writes <out>.tsv, the terms per N, and <out>_nodes.tsv, the integrand).
-- tests/validation/hs_frenkel_ladd.lua runs chosen sizes per call (rows to a tsv) and fits them.
-- The quadrature is carlo.gauss_legendre and carlo.integrate where the module has them, else
-- this file's own Gauss-Legendre nodes (Newton on the Legendre recurrence).
local carlo = require "carlo"

-- Gauss-Legendre nodes and weights on [-1, 1]
local function gauss_legendre(n)
  local x, w = {}, {}
  for i = 1, n do
    local z = math.cos(math.pi * (i - 0.25) / (n + 0.5))
    for _ = 1, 100 do
      local p0, p1 = 1.0, z
      for k = 2, n do p0, p1 = p1, ((2 * k - 1) * z * p1 - (k - 1) * p0) / k end
      local dp = n * (z * p1 - p0) / (z * z - 1)
      local dz = p1 / dp
      z = z - dz
      if math.abs(dz) < 1e-15 then break end
    end
    local p0, p1 = 1.0, z
    for k = 2, n do p0, p1 = p1, ((2 * k - 1) * z * p1 - (k - 1) * p0) / k end
    local dp = n * (z * p1 - p0) / (z * z - 1)
    x[i], w[i] = z, 2 / ((1 - z * z) * dp * dp)
  end
  return x, w
end

local function lgamma_int(n) -- ln n!
  local s = 0
  for k = 2, n do s = s + math.log(k) end
  return s
end

-- ---------- systems advanced together (carlo.advance): tune, equilibrate, sample ----------

-- The move counts of a hard system (observe's tried, accepted and their volume forms).
local function counts(sys)
  local o = sys:observe{ pressure = false }
  return { o.tried, o.accepted, o.volume_tried or 0, o.volume_accepted or 0 }
end

-- hard:tune's rule (src/hard/hard.c, hard_tune), applied to every system of the list between
-- rounds of sweeps advanced together: the move size times acc / target clamped to [0.5, 1.5],
-- delta within [1e-6, 1], dlnV (NPT) within [1e-12, 1]. The same arithmetic as sys:tune, so
-- a system tuned here holds the very delta (and chain) sys:tune gives it.
local function retune(size, acc, target, lo, hi)
  local f = acc / target
  f = f < 0.5 and 0.5 or (f > 1.5 and 1.5 or f)
  local v = size * f
  return v > hi and hi or (v < lo and lo or v)
end

local function tune_together(systems, t)
  local target, vtarget = t.target or 0.2, t.volume_target or 0.3
  local before = {}
  for i, sys in ipairs(systems) do before[i] = counts(sys) end
  for _ = 1, t.rounds do
    carlo.advance(systems, t.sweeps)
    for i, sys in ipairs(systems) do
      local c, b = counts(sys), before[i]
      if c[1] > b[1] then sys.delta = retune(sys.delta, (c[2] - b[2]) / (c[1] - b[1]), target, 1e-6, 1.0) end
      if sys.npt and c[3] > b[3] then
        sys.dlnV = retune(sys.dlnV, (c[4] - b[4]) / (c[3] - b[3]), vtarget, 1e-12, 1.0)
      end
      before[i] = c
    end
  end
end

-- Jobs { sys =, sweeps = (sampled, a multiple of every), keys = { observable names }, obs = }
-- sampled together every `every` sweeps (each job until its own sweeps are done), with observe
-- options job.obs or else obs: per job { name = { mean =, err =, tau =, plateau = }, acceptance =, volume_acceptance =,
-- samples = } -- what sys:sample{ sweeps =, every =, <obs> } returns for these names (the same
-- series, the same blocking analysis), the systems advancing side by side.
local function sample_together(jobs, every, obs)
  local series, first, most = {}, {}, 0
  for j, job in ipairs(jobs) do
    series[j] = {}
    for _, k in ipairs(job.keys) do series[j][k] = {} end
    first[j] = counts(job.sys)
    most = math.max(most, job.sweeps // every)
  end
  for n = 1, most do
    local active, which = {}, {}
    for j, job in ipairs(jobs) do
      if job.sweeps // every >= n then active[#active + 1], which[#which + 1] = job.sys, j end
    end
    carlo.advance(active, every)
    for i, sys in ipairs(active) do
      local o, s = sys:observe(jobs[which[i]].obs or obs), series[which[i]]
      for k, list in pairs(s) do list[n] = o[k] end
    end
  end
  local out = {}
  for j, job in ipairs(jobs) do
    local r = { samples = job.sweeps // every }
    for k, list in pairs(series[j]) do
      local e = carlo.stats(list)
      r[k] = { mean = e.mean, err = e.err, tau = e.tau * every, plateau = e.plateau }
    end
    local c, b = counts(job.sys), first[j]
    if c[1] > b[1] then r.acceptance = (c[2] - b[2]) / (c[1] - b[1]) end
    if c[3] > b[3] then r.volume_acceptance = (c[4] - b[4]) / (c[3] - b[3]) end
    out[j] = r
  end
  return out
end

-- ---------- Frenkel-Ladd ----------

-- The ladder of one size: c, the nodes lambda_i (ascending) with their weights in x = ln(lambda
-- + c), and the box. o = { dim, rho, nodes, lambda_max, c (0: measured), equilibrate, every,
-- seed, device }.
local function ladder(o, N)
  local dim, every, equil = o.dim, o.every, o.equilibrate
  local v0 = dim == 3 and math.pi / 6 or math.pi / 4
  local c = o.c
  if not (c > 0) then -- the lambda at which an ideal tether would allow the pinned crystal's msd
    local make = dim == 3 and carlo.hard_spheres or carlo.hard_disks
    local sys = make{ N = N, phi = o.rho * v0, init = dim == 3 and "fcc" or "hex", seed = o.seed,
                      device = o.device, quiet = true }
    sys.lambda = 1
    sys:tune{ target = 0.3, rounds = 8, sweeps = math.max(1, equil // 16), quiet = true }
    sys:run{ sweeps = equil }
    local m = sys:sample{ sweeps = math.max(every, equil // 2 - (equil // 2) % every), every = every, pressure = false }
    c = dim / (2 * m.msd_site.mean)
    sys:close()
  end
  local a, b = math.log(c), math.log(o.lambda_max + c)
  local xs, ws = {}, {}
  if carlo.gauss_legendre and carlo.integrate then
    local g = carlo.gauss_legendre{ from = a, to = b, n = o.nodes }
    for i = 1, o.nodes do xs[i], ws[i] = g[i], g.weights[i] end
  else
    local gx, gw = gauss_legendre(o.nodes)
    for i = 1, o.nodes do
      xs[i] = 0.5 * (a + b) - 0.5 * (b - a) * gx[i]
      ws[i] = 0.5 * (b - a) * gw[i]
    end
  end
  local lam = {}
  for i = 1, o.nodes do lam[i] = math.exp(xs[i]) - c end
  return { N = N, c = c, x = xs, w = ws, lambda = lam, volume = N / o.rho }
end

-- Node i of a size: its own system, seed carlo.replica_seed(seed, i), from the perfect lattice.
local function node_system(o, L, i)
  local make = o.dim == 3 and carlo.hard_spheres or carlo.hard_disks
  local v0 = o.dim == 3 and math.pi / 6 or math.pi / 4
  local sys = make{ N = L.N, phi = o.rho * v0, init = o.dim == 3 and "fcc" or "hex",
                    seed = carlo.replica_seed(o.seed, i), device = o.device, quiet = true }
  sys.lambda = L.lambda[i]
  return sys
end

-- beta F_ex / N term by term from the samples of a ladder's nodes (see the header).
local function terms_of(o, L, samples, V, log)
  local N, c, dim = L.N, L.c, o.dim
  local ys, dys = {}, {}
  for i = 1, o.nodes do
    local s, lam = samples[i], L.lambda[i]
    ys[i], dys[i] = N * s.msd_site.mean * (lam + c), N * s.msd_site.err * (lam + c)
    if log then
      log:row{ N = N, lambda = lam, msd_site = s.msd_site, ideal_msd = dim * (N - 1) / (2 * lam * N),
               integrand = ys[i], delta = s.delta, acceptance = s.acceptance, tau = s.msd_site.tau }
    end
  end
  local integral, var = 0, 0
  if carlo.integrate then
    local xs = { weights = L.w }
    for i = 1, o.nodes do xs[i] = L.x[i] end
    local e
    integral, e = carlo.integrate{ x = xs, y = ys, dy = dys, rule = "gauss" }
    var = e * e
  else
    for i = 1, o.nodes do
      integral = integral + L.w[i] * ys[i]
      var = var + (L.w[i] * dys[i]) ^ 2
    end
  end
  local k = o.nodes -- the lambda_max-most node: the hard cores should no longer matter there
  local top, lam = samples[k].msd_site, L.lambda[k]
  local ideal = dim * (N - 1) / (2 * lam * N)
  local t = {
    N = N,
    einstein = dim / 2 * (N - 1) / N * math.log(o.lambda_max / math.pi),
    integral = -integral / N, integral_err = math.sqrt(var) / N,
    reference = -math.log(V / N) / N,
    ideal = -(math.log(N / V) - 1),
    stirling = (lgamma_int(N) - N * math.log(N) + N) / N, -- ln N!/N - (ln N - 1)
    c = c, top_ratio = top.mean / ideal, top_lambda = lam, top_z = (top.mean - ideal) / top.err,
  }
  t.fex = t.einstein + t.integral + t.reference + t.ideal
  return t
end

-- beta F_ex / N of every size of the list `sizes`, all their nodes advanced together
-- (o.together ~= false; each node one system, tuned, equilibrated and sampled side by side)
-- or one node after another (o.together == false: sys:tune, sys:run, sys:sample, the same
-- chains and the same numbers bit for bit). o = { dim, rho, nodes, lambda_max, c, sweeps,
-- equilibrate, every, seed, device, together, log }. Returns the terms per size, in order.
local function frenkel_ladd_sizes(o, sizes)
  local every, equil = o.every, o.equilibrate
  local sweeps = o.sweeps - o.sweeps % every
  local tune = { target = 0.3, rounds = 10, sweeps = math.max(1, equil // 20) }
  local ladders, jobs = {}, {}
  for s, N in ipairs(sizes) do
    ladders[s] = ladder(o, N)
    for i = 1, o.nodes do jobs[#jobs + 1] = { size = s, node = i, sweeps = sweeps, keys = { "msd_site" } } end
  end
  local samples = {}
  for s = 1, #sizes do samples[s] = {} end
  local V = {}
  if o.together == false then
    for _, job in ipairs(jobs) do
      local sys = node_system(o, ladders[job.size], job.node)
      sys:tune{ target = tune.target, rounds = tune.rounds, sweeps = tune.sweeps, quiet = true }
      sys:run{ sweeps = equil }
      local r = sys:sample{ sweeps = sweeps, every = every, pressure = false }
      r.delta = sys.delta
      samples[job.size][job.node], V[job.size] = r, sys.volume
      sys:close()
    end
  else
    local systems = {}
    for j, job in ipairs(jobs) do
      job.sys = node_system(o, ladders[job.size], job.node)
      systems[j] = job.sys
    end
    tune_together(systems, tune)
    carlo.advance(systems, equil)
    local got = sample_together(jobs, every, { pressure = false })
    for j, job in ipairs(jobs) do
      got[j].delta = job.sys.delta
      samples[job.size][job.node], V[job.size] = got[j], job.sys.volume
      job.sys:close()
    end
  end
  local out = {}
  for s = 1, #sizes do out[s] = terms_of(o, ladders[s], samples[s], V[s], o.log) end
  return out
end

-- One size (what hs_coexistence.lua calls).
local function frenkel_ladd(o, N)
  return frenkel_ladd_sizes(o, { N })[1]
end

-- N -> infinity: weighted least squares of f + a ln(N)/N + b/N over rows { N =, f =, e = }
-- (three or more): f and its standard error.
local function extrapolate(rows)
  local A = { { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 } }
  local y = { 0, 0, 0 }
  for _, r in ipairs(rows) do
    local phi = { 1, math.log(r.N) / r.N, 1 / r.N }
    local w = 1 / math.max(r.e, 1e-12) ^ 2
    for i = 1, 3 do
      y[i] = y[i] + w * phi[i] * r.f
      for j = 1, 3 do A[i][j] = A[i][j] + w * phi[i] * phi[j] end
    end
  end
  local function det3(m)
    return m[1][1] * (m[2][2] * m[3][3] - m[2][3] * m[3][2]) - m[1][2] * (m[2][1] * m[3][3] - m[2][3] * m[3][1])
      + m[1][3] * (m[2][1] * m[3][2] - m[2][2] * m[3][1])
  end
  local D = det3(A) -- Cramer's rule for f; the (1, 1) element of the inverse is its variance
  local M = { { y[1], A[1][2], A[1][3] }, { y[2], A[2][2], A[2][3] }, { y[3], A[3][2], A[3][3] } }
  return det3(M) / D, math.sqrt((A[2][2] * A[3][3] - A[2][3] * A[3][2]) / D)
end

if (...) == "--module" then
  return { frenkel_ladd = frenkel_ladd, frenkel_ladd_sizes = frenkel_ladd_sizes, gauss_legendre = gauss_legendre,
           extrapolate = extrapolate, tune_together = tune_together, sample_together = sample_together }
end

local opt = { dim = 3, N = nil, rho = nil, nodes = 16, lambda_max = 2e4, c = 1, sweeps = 2e4,
              equilibrate = 4000, every = 5, seed = 1, device = "auto", quick = 0, together = 1,
              out = "hs_frenkel_ladd" }
local known = { dim = 1, N = 1, rho = 1, nodes = 1, lambda_max = 1, c = 1, sweeps = 1, equilibrate = 1,
                every = 1, seed = 1, device = 1, quick = 1, together = 1, out = 1 }
for _, a in ipairs(arg or {}) do
  local k, v = a:match("^([%w_]+)=(.+)$")
  if not k or not known[k] then
    error(("hs_frenkel_ladd: unknown argument '%s' (key=value: dim, N, rho, nodes, lambda_max, c, "
      .. "sweeps, equilibrate, every, seed, device, quick, together, out)"):format(a))
  end
  if k == "quick" or k == "together" then v = v == "true" and "1" or v == "false" and "0" or v end
  opt[k] = (k == "N" or k == "out" or k == "device") and v or tonumber(v)
  if opt[k] == nil then error(("hs_frenkel_ladd: %s must be a number (got '%s')"):format(k, v)) end
end
local dim = math.tointeger(opt.dim)
if dim ~= 2 and dim ~= 3 then error("hs_frenkel_ladd: dim must be 2 or 3 (got " .. tostring(opt.dim) .. ")") end
if opt.quick ~= 0 then
  opt.N = opt.N or (dim == 3 and "108" or "56")
  opt.nodes, opt.sweeps, opt.equilibrate, opt.every = 8, 2000, 500, 4
end
opt.N = opt.N or (dim == 3 and "108,256,864,1372,2048" or "224,504,896")
opt.rho = opt.rho or (dim == 3 and 1.0409 or 0.95)
local sizes = {}
for n in tostring(opt.N):gmatch("[^,]+") do
  local v = math.tointeger(tonumber(n))
  if not v or v < 2 then error(("hs_frenkel_ladd: N must list integers >= 2 (got '%s')"):format(n)) end
  sizes[#sizes + 1] = v
end
local nodes = math.tointeger(opt.nodes)
if not nodes or nodes < 2 or nodes > 64 then error("hs_frenkel_ladd: nodes must be an integer from 2 to 64") end
if not (opt.lambda_max > 1) then error("hs_frenkel_ladd: lambda_max must be > 1") end
local every = math.tointeger(opt.every)
if not every or every < 1 then error(("hs_frenkel_ladd: every must be an integer >= 1 (got %s)"):format(opt.every)) end
local sweeps = math.floor(opt.sweeps)
sweeps = sweeps - sweeps % every
if sweeps < 2 * every then error(("hs_frenkel_ladd: sweeps must give 2 samples at least (got %s, every = %d)"):format(opt.sweeps, every)) end

local nodes_log = carlo.log(opt.out .. "_nodes.tsv")
local t0 = carlo.clock()
local out = carlo.log(opt.out .. ".tsv")
print(("# Frenkel-Ladd (Einstein molecule), %s at rho = %.6g, lambda_max = %g, %d Gauss-Legendre nodes "
  .. "in ln(lambda + c), %d sweeps per node after %d; %s"):format(dim == 3 and "fcc spheres" or "hex disks",
  opt.rho, opt.lambda_max, nodes, sweeps, math.floor(opt.equilibrate),
  opt.together ~= 0 and ("all %d nodes of the %d sizes together"):format(nodes * #sizes, #sizes)
    or "one node after another"))
print("# per particle: einstein = (d/2)(1 - 1/N) ln(lambda_max/pi); integral = -(1/N) int <sum dr^2>;")
print("#   reference = (1/N) ln rho (the fixed particle's translations, V, over the N lattice")
print("#   translations that give the same configurations); ideal = -(ln rho - 1);")
print("#   Fex = their sum; Fex_exact = Fex + stirling (ideal gas with the exact ln N!)")
print("N\teinstein\tintegral\terr\treference\tideal\tFex\terr\tFex_exact\tc\tmsd_ratio_top")
local all = frenkel_ladd_sizes({ dim = dim, rho = opt.rho, nodes = nodes, lambda_max = opt.lambda_max, c = opt.c,
                                 sweeps = sweeps, equilibrate = math.floor(opt.equilibrate), every = every,
                                 seed = opt.seed, device = opt.device, together = opt.together ~= 0,
                                 log = nodes_log }, sizes)
local results = {}
for _, t in ipairs(all) do
  local N = t.N
  results[#results + 1] = { N = N, f = t.fex, e = t.integral_err }
  print(("%d\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t%.4g\t%.5f"):format(N, t.einstein,
    t.integral, t.integral_err, t.reference, t.ideal, t.fex, t.integral_err, t.fex + t.stirling, t.c,
    t.top_ratio))
  out:row{ N = N, rho = opt.rho, einstein = t.einstein, integral = t.integral, integral_err = t.integral_err,
           reference = t.reference, ideal = t.ideal, Fex = t.fex, Fex_err = t.integral_err,
           Fex_exact_lnNfact = t.fex + t.stirling, c = t.c, msd_ratio_top = t.top_ratio }
  if math.abs(t.top_z) > 4 then -- beyond four error bars of the ideal Einstein molecule
    io.stderr:write(("hs_frenkel_ladd: at lambda = %.4g the msd is %.4f of the ideal Einstein "
      .. "molecule's: raise lambda_max\n"):format(t.top_lambda, t.top_ratio))
  end
end

if #results >= 3 then
  local f, err = extrapolate(results)
  print(("# N -> infinity (fit f + a ln N / N + b / N over %d sizes): beta F_ex / N = %.5f +- %.5f%s")
    :format(#results, f, err, dim == 3 and math.abs(opt.rho - 1.0409) < 1e-9
      and "   (Polson et al. 2000: 5.91889(4))" or ""))
end
print(("# %s, %.0f s; the integrand per node in %s_nodes.tsv"):format(opt.device, carlo.clock() - t0, opt.out))
