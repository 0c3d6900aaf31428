-- lj_free_energy: the excess Helmholtz free energy of the Lennard-Jones fluid by thermodynamic
-- integration from the ideal gas, compared with the Johnson-Zollweg-Gubbins (1993) equation of
-- state, and the excess chemical potential against Widom insertion at the same state.
--   carlo workflows/lj_free_energy.lua [quick=false] [targets=2.0:0.5,1.2:0.7] [T_high=2.0]
--          [N=500] [rc=3.0] [nodes_rho=8] [nodes_T=6] [equilibrate=2000] [measure=20000]
--          [every=5] [widom=100] [device=auto] [seed=1] [together=true] [out=lj_free_energy.tsv]
-- Every state point of every path is one system (seeds 1000 seed + 1, + 2, ... along the paths);
-- together=true (the default) tunes (lj:tune's rule, one sweep a chunk), equilibrates and samples
-- them side by side (carlo.advance: on the GPU each from its own host thread and stream),
-- together=false one after another: the same chains and numbers (bit for bit for N >= 200; the
-- Widom error to first order here, by jackknife there). The seconds column is the whole run's.
-- Path to each target (T, rho), with the tail corrections on (carlo's truncated potential plus
-- the g(r) = 1 corrections stands for the full potential that JZG fit):
--   1. along density at T_high: beta A_ex(rho) / N = int_0^rho (P / (rho' T) - 1) / rho' drho'
--      on Gauss-Legendre nodes (the integrand tends to B2(T) at rho' = 0, no node there);
--   2. along temperature at rho, when T differs: d(beta A_ex / N) / d beta = U (the potential
--      energy per particle), Gauss-Legendre nodes in beta. T_high is above the critical
--      temperature (1.31) so that the first leg never crosses the liquid-vapour coexistence.
-- Then beta mu_ex = beta A_ex / N + P / (rho T) - 1 with P sampled at the target, against
-- Widom's -ln <exp(-beta dU)>. quick=true: N = 108, rc = 2.5, 5 + 4 nodes, short runs (the CPU
-- test; options given with it are kept); the defaults are for a GPU. dofile'd with a global
-- lj_free_energy_opts table instead of arguments, it returns its rows.
local carlo = require "carlo"

local defaults = { quick = false, targets = "2.0:0.5,1.2:0.7", T_high = 2.0, N = 500, rc = 3.0,
                   nodes_rho = 8, nodes_T = 6, equilibrate = 2000, measure = 20000, every = 5,
                   widom = 100, device = "auto", seed = 1, out = "lj_free_energy.tsv", quiet = false,
                   together = true }
local opt = carlo.options(arg, defaults)
for k, v in pairs(rawget(_G, "lj_free_energy_opts") or {}) do
  if defaults[k] == nil then error(("lj_free_energy: unknown option '%s'"):format(k), 0) end
  opt[k] = v
end
if opt.quick then
  local q = { N = 108, rc = 2.5, nodes_rho = 5, nodes_T = 4, equilibrate = 300, measure = 1500,
              widom = 20 }
  local given = {} -- what the caller set stays as set
  for k in pairs(rawget(_G, "lj_free_energy_opts") or {}) do given[k] = true end
  for _, a in ipairs(arg or {}) do given[a:match("^([%w_]+)=") or ""] = true end
  for k, v in pairs(q) do
    if not given[k] then opt[k] = v end
  end
end

-- ---------- Johnson, Zollweg and Gubbins (1993), Mol. Phys. 78, 591: the MBWR equation ----------
-- A_ex / N = sum_{i=1}^8 a_i rho^i / i + sum_{i=1}^6 b_i G_i, with F = exp(-gamma rho^2),
-- G_1 = (1 - F) / (2 gamma), G_i = -(F rho^(2(i-1)) - 2 (i - 1) G_{i-1}) / (2 gamma);
-- P = rho T + sum a_i rho^(i+1) + F sum b_i rho^(2i+1). The 32 parameters of their Table 10.
local X = { 0.8623085097507421, 2.976218765822098, -8.402230115796038, 0.1054136629203555,
            -0.8564583828174598, 1.582759470107601, 0.7639421948305453, 1.753173414312048,
            2.798291772190376e3, -4.8394220260857657e-2, 0.9963265197721935, -3.698000291272493e1,
            2.084012299434647e1, 8.305402124717285e1, -9.574799715203068e2, -1.477746229234994e2,
            6.398607852471505e1, 1.603993673294834e1, 6.805916615864377e1, -2.791293578795945e3,
            -6.245128304568454, -8.116836104958410e3, 1.488735559561229e1, -1.059346754655084e4,
            -1.131607632802822e2, -8.867771540418822e3, -3.986982844450543e1, -4.689270299917261e3,
            2.593535277438717e2, -2.694523589434903e3, -7.218487631550215e2, 1.721802063863269e2 }
local GAMMA = 3.0

local function jzg_ab(T)
  local x = X
  local s = math.sqrt(T)
  local a = { x[1] * T + x[2] * s + x[3] + x[4] / T + x[5] / T ^ 2,
              x[6] * T + x[7] + x[8] / T + x[9] / T ^ 2,
              x[10] * T + x[11] + x[12] / T,
              x[13],
              x[14] / T + x[15] / T ^ 2,
              x[16] / T,
              x[17] / T + x[18] / T ^ 2,
              x[19] / T ^ 2 }
  local b = { x[20] / T ^ 2 + x[21] / T ^ 3,
              x[22] / T ^ 2 + x[23] / T ^ 4,
              x[24] / T ^ 2 + x[25] / T ^ 3,
              x[26] / T ^ 2 + x[27] / T ^ 4,
              x[28] / T ^ 2 + x[29] / T ^ 3,
              x[30] / T ^ 2 + x[31] / T ^ 3 + x[32] / T ^ 4 }
  return a, b
end

local jzg = {}

-- The excess Helmholtz energy per particle, A_ex / N (units of epsilon).
function jzg.A(T, rho)
  local a, b = jzg_ab(T)
  local F = math.exp(-GAMMA * rho * rho)
  local A = 0
  for i = 1, 8 do A = A + a[i] * rho ^ i / i end
  local G = (1 - F) / (2 * GAMMA)
  A = A + b[1] * G
  for i = 2, 6 do
    G = -(F * rho ^ (2 * (i - 1)) - 2 * (i - 1) * G) / (2 * GAMMA)
    A = A + b[i] * G
  end
  return A
end

function jzg.P(T, rho)
  local a, b = jzg_ab(T)
  local F = math.exp(-GAMMA * rho * rho)
  local P = rho * T
  for i = 1, 8 do P = P + a[i] * rho ^ (i + 1) end
  for i = 1, 6 do P = P + F * b[i] * rho ^ (2 * i + 1) end
  return P
end

-- beta mu_ex = beta A_ex / N + Z - 1
function jzg.beta_mu(T, rho)
  return jzg.A(T, rho) / T + jzg.P(T, rho) / (rho * T) - 1
end

-- The second virial coefficient: the rho -> 0 limit of (Z - 1) / rho (the G terms start at rho^2).
function jzg.B2(T)
  local a = jzg_ab(T)
  return a[1] / T
end

-- ---------- the simulations ----------

-- One state point one system (its own seed), tuned, equilibrated and sampled: on its own
-- (together = false) or every state point of every target side by side (carlo.advance).
local function sample_at(T, rho, seed, want_widom)
  local sys = carlo.lj{ N = opt.N, rho = rho, T = T, rc = opt.rc, tail = true, seed = seed,
                        device = opt.device, quiet = true }
  sys:tune{ sweeps = math.max(10, opt.equilibrate // 10), target = 0.5 }
  sys:run{ sweeps = opt.equilibrate, quiet = true }
  local m = opt.measure - opt.measure % opt.every
  local s = sys:sample{ sweeps = m, every = opt.every, widom = want_widom and opt.widom or nil, quiet = true }
  sys:close()
  return s
end

-- lj:tune's rule (src/lj/lj_sys.c) on every system between sweeps advanced together: delta
-- times acc / target clamped to [0.5, 1.5], within [1e-6, delta_max]. A chunk is one sweep
-- (lj:tune's chunk in decomposition mode is max(200, N) moves: the same for N >= 200).
local function tune_together(systems, chunks, target)
  for _ = 1, chunks do
    local t0, a0 = {}, {}
    for i, sys in ipairs(systems) do t0[i], a0[i] = sys.tried, sys.accepted end
    carlo.advance(systems, 1)
    for i, sys in ipairs(systems) do
      local f = (sys.accepted - a0[i]) / (sys.tried - t0[i]) / target
      f = f < 0.5 and 0.5 or (f > 1.5 and 1.5 or f)
      local d, top = sys.delta * f, sys.delta_max
      sys.delta = d > top and top or (d < 1e-6 and 1e-6 or d)
    end
  end
end

-- points[k] = { T =, rho =, seed =, widom = } -> the samples of each, as sys:sample gives them
-- (U, P; boltzmann and mu_ex = -T ln <boltzmann> where widom, its error to first order).
local function sample_all(points)
  if not opt.together then
    local out = {}
    for k, pt in ipairs(points) do out[k] = sample_at(pt.T, pt.rho, pt.seed, pt.widom) end
    return out
  end
  local systems = {}
  for k, pt in ipairs(points) do
    systems[k] = carlo.lj{ N = opt.N, rho = pt.rho, T = pt.T, rc = opt.rc, tail = true, seed = pt.seed,
                           device = opt.device, quiet = true }
  end
  tune_together(systems, math.max(10, opt.equilibrate // 10), 0.5)
  carlo.advance(systems, opt.equilibrate)
  local every = opt.every
  local n = (opt.measure - opt.measure % every) // every
  local series = {}
  for k in ipairs(points) do series[k] = { U = {}, P = {}, boltzmann = points[k].widom and {} or nil } end
  local plain, widom = {}, { widom = opt.widom }
  for j = 1, n do
    carlo.advance(systems, every)
    for k, sys in ipairs(systems) do
      local o, s = sys:observe(points[k].widom and widom or plain), series[k]
      s.U[j], s.P[j] = o.U, o.P
      if s.boltzmann then s.boltzmann[j] = o.boltzmann end
    end
  end
  local out = {}
  for k, sys in ipairs(systems) do
    local r = {}
    for name, list in pairs(series[k]) do
      local e = carlo.stats(list)
      r[name] = { mean = e.mean, err = e.err, tau = e.tau * every, plateau = e.plateau }
    end
    if r.boltzmann then
      local b = r.boltzmann
      r.mu_ex = { mean = -points[k].T * math.log(b.mean), err = points[k].T * b.err / b.mean, plateau = b.plateau }
    end
    out[k] = r
    sys:close()
  end
  return out
end

local targets = {}
for T, rho in tostring(opt.targets):gmatch("([%d%.eE+-]+):([%d%.eE+-]+)") do
  targets[#targets + 1] = { T = tonumber(T), rho = tonumber(rho) }
end
if #targets == 0 then error("lj_free_energy: targets must read T:rho[,T:rho...]", 0) end

-- the paths' state points, seeds counted along them (1000 seed + 1, + 2, ...)
local points, seed = {}, opt.seed * 1000
local function point(T, rho, widom)
  seed = seed + 1
  points[#points + 1] = { T = T, rho = rho, seed = seed, widom = widom }
  return #points
end
local Th = opt.T_high
for _, tg in ipairs(targets) do
  -- 1. along density at T_high; 2. along beta at rho (when T differs); 3. the target itself
  tg.gl = carlo.gauss_legendre{ from = 0, to = tg.rho, n = opt.nodes_rho }
  tg.at_rho = {}
  for i, rho in ipairs(tg.gl) do tg.at_rho[i] = point(Th, rho, false) end
  if math.abs(tg.T - Th) > 1e-12 then
    tg.glb = carlo.gauss_legendre{ from = 1 / Th, to = 1 / tg.T, n = opt.nodes_T }
    tg.at_beta = {}
    for i, beta in ipairs(tg.glb) do tg.at_beta[i] = point(1 / beta, tg.rho, false) end
  end
  tg.at = point(tg.T, tg.rho, true)
end
local t0 = carlo.clock()
local got = sample_all(points)
local seconds = carlo.clock() - t0

local log = carlo.log(opt.out, { columns = { "T", "rho", "betaA_ex", "betaA_ex_err", "betaA_jzg",
  "A_dev", "betamu_ti", "betamu_ti_err", "betamu_widom", "betamu_widom_err", "betamu_jzg", "mu_dev",
  "Z", "Z_err", "Z_jzg", "widom_plateau", "seconds" } })
local rows = {}
for _, tg in ipairs(targets) do
  -- 1. beta A_ex / N = int_0^rho (P / (rho' T) - 1) / rho' drho' at T_high
  local y, dy = {}, {}
  for i, rho in ipairs(tg.gl) do
    local s = got[tg.at_rho[i]]
    y[i] = (s.P.mean / (rho * Th) - 1) / rho
    dy[i] = s.P.err / (rho * rho * Th)
  end
  local bA, dbA = carlo.integrate{ x = tg.gl, y = y, dy = dy, rule = "gauss" }
  -- 2. d(beta A_ex / N) / d beta = U from 1 / T_high to 1 / T
  if tg.glb then
    local u, du = {}, {}
    for i in ipairs(tg.glb) do
      local s = got[tg.at_beta[i]]
      u[i], du[i] = s.U.mean, s.U.err
    end
    local I, dI = carlo.integrate{ x = tg.glb, y = u, dy = du, rule = "gauss" }
    bA, dbA = bA + I, math.sqrt(dbA ^ 2 + dI ^ 2)
  end
  -- 3. the target: the pressure for mu, and Widom insertion
  local s = got[tg.at]
  local Z, dZ = s.P.mean / (tg.rho * tg.T), s.P.err / (tg.rho * tg.T)
  local bmu, dbmu = bA + Z - 1, math.sqrt(dbA ^ 2 + dZ ^ 2)
  local wmu, dwmu = s.mu_ex.mean / tg.T, s.mu_ex.err / tg.T
  local ref_A, ref_mu = jzg.A(tg.T, tg.rho) / tg.T, jzg.beta_mu(tg.T, tg.rho)
  local row = { T = tg.T, rho = tg.rho, betaA_ex = bA, betaA_ex_err = dbA, betaA_jzg = ref_A,
                A_dev = (bA - ref_A) / dbA, betamu_ti = bmu, betamu_ti_err = dbmu,
                betamu_widom = wmu, betamu_widom_err = dwmu, betamu_jzg = ref_mu,
                mu_dev = (bmu - wmu) / math.sqrt(dbmu ^ 2 + dwmu ^ 2), Z = Z, Z_err = dZ,
                Z_jzg = jzg.P(tg.T, tg.rho) / (tg.rho * tg.T), seconds = seconds,
                widom_plateau = s.mu_ex.plateau and 1 or 0 }
  log:row(row)
  rows[#rows + 1] = row
  if not opt.quiet then
    print(("T = %.3f rho = %.3f: beta A_ex/N = %.5f +- %.5f (JZG %.5f), beta mu_ex TI %.4f +- %.4f, "
      .. "Widom %.4f +- %.4f (JZG %.4f), Z = %.4f +- %.4f (JZG %.4f)")
      :format(tg.T, tg.rho, bA, dbA, ref_A, bmu, dbmu, wmu, dwmu, ref_mu, Z, dZ, row.Z_jzg))
  end
end
if not opt.quiet then
  print(("# %d state points%s, %s: %.0f s"):format(#points, opt.together and " together" or " one after another",
    opt.device, seconds))
end
log:close()
rows.jzg = jzg
return rows
