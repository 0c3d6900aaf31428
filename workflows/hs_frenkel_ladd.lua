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
--   carlo workflows/hs_frenkel_ladd.lua                      N = 108 .. 2048 on a GPU
--   carlo workflows/hs_frenkel_ladd.lua quick=true              N = 108, short: the CPU, seconds
--   carlo workflows/hs_frenkel_ladd.lua dim=2 N=224          hex disks
-- Arguments (key=value): dim (3), N (a comma list: 108,256,864,1372,2048; fcc boxes of 5 cells
-- a side, N = 500, have no cell grid at this density), rho (1.0409; 2D: 0.95), nodes (16),
-- lambda_max (20000), c (1; 0: from a short run at lambda = 1), sweeps (20000 per node),
-- equilibrate (4000), every (5), seed (1), device (auto), quick (0), out
-- (hs_frenkel_ladd: writes <out>.tsv, the terms per N, and <out>_nodes.tsv, the integrand).
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

-- beta F_ex / N of N particles on the lattice at density o.rho, term by term (see the header):
-- o = { dim, rho, nodes, lambda_max, c (0: measured), sweeps, equilibrate, every, seed, device,
-- log (a carlo.log for the integrand, or nil) }.
local function frenkel_ladd(o, N)
  local dim, every = o.dim, o.every
  local sweeps = o.sweeps - o.sweeps % every
  local equil = o.equilibrate
  local function part(k) return math.max(1, equil // k) end
  local v0 = dim == 3 and math.pi / 6 or math.pi / 4
  local nodes = o.nodes
  local make = dim == 3 and carlo.hard_spheres or carlo.hard_disks
  local sys = make{ N = N, phi = o.rho * v0, init = dim == 3 and "fcc" or "hex", seed = o.seed,
                    device = o.device, quiet = true }
  local V = sys.volume
  -- c: the lambda at which an ideal tether would allow the pinned crystal's own msd
  local c = o.c
  if not (c > 0) then
    sys.lambda = 1
    sys:tune{ target = 0.3, rounds = 8, sweeps = part(16), quiet = true }
    sys:run{ sweeps = equil }
    local m = sys:sample{ sweeps = math.max(every, equil // 2 - (equil // 2) % every), every = every, pressure = false }
    c = dim / (2 * m.msd_site.mean)
  end
  local a, b = math.log(c), math.log(o.lambda_max + c)
  -- the nodes x_i ascending in [a, b] with their weights: carlo.gauss_legendre where the module
  -- has it, else this file's own
  local xs, ws
  if carlo.gauss_legendre and carlo.integrate then
    xs = carlo.gauss_legendre{ from = a, to = b, n = nodes }
    ws = xs.weights
  else
    local gx, gw = gauss_legendre(nodes)
    xs, ws = {}, {}
    for i = 1, nodes do
      xs[i] = 0.5 * (a + b) - 0.5 * (b - a) * gx[i]
      ws[i] = 0.5 * (b - a) * gw[i]
    end
  end
  local ys, dys, rows = {}, {}, {}
  for i = nodes, 1, -1 do -- lambda_max first, the crystal closest to its sites
    local lam = math.exp(xs[i]) - c
    sys.lambda = lam
    sys:tune{ target = 0.3, rounds = 10, sweeps = part(20), quiet = true }
    sys:run{ sweeps = equil }
    local s = sys:sample{ sweeps = sweeps, every = every, pressure = false }
    local g = N * s.msd_site.mean * (lam + c)
    ys[i], dys[i] = g, N * s.msd_site.err * (lam + c)
    local ideal = dim * (N - 1) / (2 * lam * N)
    rows[#rows + 1] = { lam = lam, msd = s.msd_site.mean, err = s.msd_site.err, ideal = ideal }
    if o.log then o.log:row{ N = N, lambda = lam, msd_site = s.msd_site, ideal_msd = ideal,
                   integrand = g, delta = sys.delta, acceptance = s.acceptance, tau = s.msd_site.tau } end
  end
  local integral, var = 0, 0
  if carlo.integrate and xs.weights then
    local e
    integral, e = carlo.integrate{ x = xs, y = ys, dy = dys, rule = "gauss" }
    var = e * e
  else
    for i = 1, nodes do
      integral = integral + ws[i] * ys[i]
      var = var + (ws[i] * dys[i]) ^ 2
    end
  end
  local top = rows[1] -- lambda_max-most node: the hard cores should no longer matter there
  local terms = {
    einstein = dim / 2 * (N - 1) / N * math.log(o.lambda_max / math.pi),
    integral = -integral / N, integral_err = math.sqrt(var) / N,
    reference = -math.log(V / N) / N,
    ideal = -(math.log(N / V) - 1),
    stirling = (lgamma_int(N) - N * math.log(N) + N) / N, -- ln N!/N - (ln N - 1)
    c = c, top_ratio = top.msd / top.ideal, top_lambda = top.lam, top_z = (top.msd - top.ideal) / top.err,
  }
  terms.fex = terms.einstein + terms.integral + terms.reference + terms.ideal
  sys:close()
  return terms
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

if (...) == "--module" then return { frenkel_ladd = frenkel_ladd, gauss_legendre = gauss_legendre, extrapolate = extrapolate }
end

local opt = { dim = 3, N = nil, rho = nil, nodes = 16, lambda_max = 2e4, c = 1, sweeps = 2e4,
              equilibrate = 4000, every = 5, seed = 1, device = "auto", quick = 0,
              out = "hs_frenkel_ladd" }
local known = { dim = 1, N = 1, rho = 1, nodes = 1, lambda_max = 1, c = 1, sweeps = 1, equilibrate = 1,
                every = 1, seed = 1, device = 1, quick = 1, out = 1 }
for _, a in ipairs(arg or {}) do
  local k, v = a:match("^([%w_]+)=(.+)$")
  if not k or not known[k] then
    error(("hs_frenkel_ladd: unknown argument '%s' (key=value: dim, N, rho, nodes, lambda_max, c, "
      .. "sweeps, equilibrate, every, seed, device, quick, out)"):format(a))
  end
  if k == "quick" then v = v == "true" and "1" or v == "false" and "0" or v end
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
local sweeps = math.floor(opt.sweeps)
sweeps = sweeps - sweeps % every

local nodes_log = carlo.log(opt.out .. "_nodes.tsv")
local t0 = carlo.clock()
local out = carlo.log(opt.out .. ".tsv")
print(("# Frenkel-Ladd (Einstein molecule), %s at rho = %.6g, lambda_max = %g, %d Gauss-Legendre nodes "
  .. "in ln(lambda + c), %d sweeps per node after %d"):format(dim == 3 and "fcc spheres" or "hex disks",
  opt.rho, opt.lambda_max, nodes, sweeps, math.floor(opt.equilibrate)))
print("# per particle: einstein = (d/2)(1 - 1/N) ln(lambda_max/pi); integral = -(1/N) int <sum dr^2>;")
print("#   reference = (1/N) ln rho (the fixed particle's translations, V, over the N lattice")
print("#   translations that give the same configurations); ideal = -(ln rho - 1);")
print("#   Fex = their sum; Fex_exact = Fex + stirling (ideal gas with the exact ln N!)")
print("N\teinstein\tintegral\terr\treference\tideal\tFex\terr\tFex_exact\tc\tmsd_ratio_top")
local results = {}
for _, N in ipairs(sizes) do
  local t = frenkel_ladd({ dim = dim, rho = opt.rho, nodes = nodes, lambda_max = opt.lambda_max, c = opt.c,
                          sweeps = sweeps, equilibrate = math.floor(opt.equilibrate), every = every,
                          seed = opt.seed, device = opt.device, log = nodes_log }, N)
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
