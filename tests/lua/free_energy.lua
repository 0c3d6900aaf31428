-- lua/fe: carlo.mbar, carlo.integrate and carlo.gauss_legendre. Synthetic ladders with an
-- analytic answer (Gaussian energies: ln Z(beta) = beta^2 s^2 / 2); the integration rules on
-- polynomials of the degree they claim (and one degree more, where they must miss); the q = 2
-- Potts model on a 16 x 16 torus, whose ln Z is known exactly (Kaufman): MBAR over a beta
-- ladder sampled by carlo.ensemble, and thermodynamic integration of the energy from beta = 0
-- (ln Z(0) = N ln 2) on Gauss-Legendre nodes run by carlo.anneal. Statistical comparisons:
-- within 3 error bars.
local carlo = require "carlo"
local check = require "check"
local exact = require "ising_exact"

-- 16 x 16 lattices sampled every few sweeps: one thread (OpenMP's start-up per sample would
-- cost more than the sweeps)
carlo.threads(1)

-- normal deviates from the counter-based generator (Box-Muller)
local function normal(seed, step, i)
  local u1 = carlo.uniform(seed, step, 2 * i)
  local u2 = carlo.uniform(seed, step, 2 * i + 1)
  return math.sqrt(-2 * math.log(1 - u1)) * math.cos(2 * math.pi * u2)
end

local function gaussian_ladder(beta, s2, n, seed)
  local energy = {}
  for k, b in ipairs(beta) do
    energy[k] = {}
    for j = 1, n do energy[k][j] = -b * s2 + math.sqrt(s2) * normal(seed, k, j) end
  end
  return energy
end

-- ---------- MBAR on synthetic data ----------
do
  local beta, s2 = { 0.5, 0.6, 0.7, 0.8 }, 100
  local energy = gaussian_ladder(beta, s2, 2000, 5)
  local mb = carlo.mbar{ beta = beta, energy = energy }
  local worst = 0
  for k = 2, #beta do
    local f = -0.5 * (beta[k] ^ 2 - beta[1] ^ 2) * s2
    worst = math.max(worst, math.abs(mb.f[k] - f) / mb.df[k])
  end
  check.ok("lua/fe/mbar/gaussian-ladder", worst < 3 and mb.residual < 1e-10,
    ("worst %.2f error bars, residual %.2g"):format(worst, mb.residual))
  check.ok("lua/fe/mbar/independent-g", mb.g[1] < 1.5 and mb.N_k[1] > 1300,
    ("g = %.2f, %d samples kept of 2000"):format(mb.g[1], mb.N_k[1]))
  local lnZ, err = mb:lnZ(0.65)
  check.within("lua/fe/mbar/reweight-lnZ", lnZ, 0.5 * (0.65 ^ 2 - 0.25) * s2, err, 3)
  local E, dE = mb:expect("energy", 0.65)
  check.within("lua/fe/mbar/reweight-energy", E, -0.65 * s2, dE, 3)
  local C, dC = mb:heat_capacity(0.65)
  check.within("lua/fe/mbar/heat-capacity", C, 0.65 ^ 2 * s2, dC, 3)

  -- the same samples as reduced energies u_k(x_n) = beta_k E_n (the general form)
  local u, Nk = {}, {}
  for k = 1, #beta do
    u[k] = {}
    for l = 1, #beta do for _, e in ipairs(energy[l]) do u[k][#u[k] + 1] = beta[k] * e end end
    Nk[k] = #energy[k]
  end
  local mu = carlo.mbar{ u = u, N_k = Nk, subsample = false }
  local mb0 = carlo.mbar{ beta = beta, energy = energy, subsample = false }
  local d = 0
  for k = 1, #beta do d = math.max(d, math.abs(mu.f[k] - mb0.f[k]), math.abs(mu.df[k] - mb0.df[k])) end
  -- a target in the u form: its reduced energies for every state's samples
  local ut = {}
  for l = 1, #beta do
    ut[l] = {}
    for j, e in ipairs(energy[l]) do ut[l][j] = 0.65 * e end
  end
  local a, da = mu:lnZ(ut)
  local b, db = mb0:lnZ(0.65)
  d = math.max(d, math.abs(a - b), math.abs(da - db))
  check.ok("lua/fe/mbar/u-form", d < 1e-8, ("max difference %.3g"):format(d))

  -- an NPT ladder: u_k = beta_k (E + P_k V) on the fly, against the same u written out
  local P, vol = { 0.5, 1.0, 1.5, 2.0 }, {}
  for k = 1, #beta do
    vol[k] = {}
    for j = 1, #energy[k] do vol[k][j] = 50 + 5 * normal(77, k, j) - 3 * P[k] end
  end
  local un = {}
  for k = 1, #beta do
    un[k] = {}
    for l = 1, #beta do
      for j, e in ipairs(energy[l]) do un[k][#un[k] + 1] = beta[k] * (e + P[k] * vol[l][j]) end
    end
  end
  local mp = carlo.mbar{ beta = beta, energy = energy, pressure = P, volume = vol, subsample = false }
  local mpu = carlo.mbar{ u = un, N_k = Nk, subsample = false }
  local dp = 0
  for k = 1, #beta do dp = math.max(dp, math.abs(mp.f[k] - mpu.f[k]), math.abs(mp.df[k] - mpu.df[k])) end
  local V, dV = mp:expect("volume", { beta = 0.65, pressure = 1.2 })
  check.ok("lua/fe/mbar/npt-ladder", dp < 1e-8 and dV > 0 and V > 40 and V < 50,
    ("max difference from the u form %.3g; <V>(0.65, 1.2) = %.4g +- %.2g"):format(dp, V, dV))

  -- the multiple-histogram method agrees with MBAR as the bins shrink
  local h1 = carlo.mbar{ beta = beta, energy = energy, subsample = false, method = "histogram", bin = 1e-6 }
  local h2 = carlo.mbar{ beta = beta, energy = energy, subsample = false, method = "histogram", bin = 2 }
  local d1, d2, z2 = 0, 0, 0
  for k = 2, #beta do
    d1 = math.max(d1, math.abs(h1.f[k] - mb0.f[k]))
    d2 = math.max(d2, math.abs(h2.f[k] - mb0.f[k]))
    z2 = math.max(z2, math.abs(h2.f[k] - mb0.f[k]) / mb0.df[k])
  end
  check.ok("lua/fe/histogram/bins-to-zero", d1 < 1e-5 and d1 < d2,
    ("bin 1e-6: %.3g, bin 2: %.3g"):format(d1, d2))
  check.ok("lua/fe/histogram/coarse", z2 < 0.5, ("bin 2 (s/5): %.2f error bars from MBAR"):format(z2))
  local Eh, dEh = h1:expect("energy", 0.65)
  check.ok("lua/fe/histogram/expect", math.abs(Eh - mb0:expect("energy", 0.65)) < 1e-4 and dEh > 0,
    ("%.8g vs %.8g"):format(Eh, mb0:expect("energy", 0.65)))
end

-- ---------- errors ----------
check.raises("lua/fe/bad/unknown-key", function() carlo.mbar{ beta = { 1 }, energy = { { 1, 2 } }, bogus = 1 } end,
  "carlo.mbar", "unknown key 'bogus'")
check.raises("lua/fe/bad/energy-value", function() carlo.mbar{ beta = { 1 }, energy = { { 1, "x" } } } end,
  "carlo.mbar", "energy[1][2]", "the string \"x\"")
check.raises("lua/fe/bad/energy-count", function() carlo.mbar{ beta = { 1, 2 }, energy = { { 1, 2 } } } end,
  "energy must hold one series per beta (2")
check.raises("lua/fe/bad/method", function() carlo.mbar{ beta = { 1 }, energy = { { 1, 2 } }, method = "wham" } end,
  "method must be", "the string \"wham\"")
check.raises("lua/fe/bad/beta", function() carlo.mbar{ beta = { -1 }, energy = { { 1, 2 } } } end,
  "beta[1] must be >= 0 (got -1)")
check.raises("lua/fe/bad/forms", function() carlo.mbar{ beta = { 1 } } end, "give one of samples")
check.raises("lua/fe/bad/N_k", function() carlo.mbar{ u = { { 1, 2 } }, N_k = { 3 } } end,
  "u[1] must hold 3 values")
check.raises("lua/fe/bad/observable", function()
  local mb = carlo.mbar{ beta = { 1, 1.1 }, energy = { { 1, 2, 3 }, { 0, 1, 2 } }, subsample = false }
  mb:expect("m", 1.05)
end, "no series of 'm'", "energy")
check.raises("lua/fe/bad/no-overlap", function()
  -- two Gaussian ladders 45 standard deviations apart: f_2 - f_1 is not determined
  local e = gaussian_ladder({ 0.5, 5 }, 100, 300, 9)
  carlo.mbar{ beta = { 0.5, 5 }, energy = e, subsample = false }
end, "carlo.mbar: state 2 does not overlap the others")
check.raises("lua/fe/bad/rule", function() carlo.integrate{ x = { 0, 1 }, y = { 0, 1 }, rule = "romberg" } end,
  "carlo.integrate", "rule must be", "romberg")
check.raises("lua/fe/bad/simpson-even", function() carlo.integrate{ x = { 0, 1 }, y = { 0, 1 }, rule = "simpson" } end,
  "odd number of points", "got 2")
check.raises("lua/fe/bad/gauss-n", function() carlo.gauss_legendre{ from = 0, to = 1, n = 0 } end,
  "carlo.gauss_legendre", "n must be an integer in [1, 200] (got 0)")
check.raises("lua/fe/bad/dy", function() carlo.integrate{ x = { 0, 1 }, y = { 0, 1 }, dy = { 0.1, -1 } } end,
  "dy[2] must be >= 0 (got -1)")

-- ---------- integration rules: exact to their degree, not beyond ----------
do
  local function poly(c) return function(x) local s = 0 for i = #c, 1, -1 do s = s * x + c[i] end return s end end
  local function prim(c, a, b)
    local s = 0
    for i = 1, #c do s = s + c[i] * (b ^ i - a ^ i) / i end
    return s
  end
  local function run(x, f, rule)
    local y = {}
    for i = 1, #x do y[i] = f(x[i]) end
    return (carlo.integrate{ x = x, y = y, rule = rule })
  end
  local uneven = { 0.1, 0.25, 0.7, 0.8, 1.3, 1.45, 2.0 }
  local even = { 0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5 }
  local c1, c2, c3, c4 = { 0.3, -1.7 }, { 0.3, -1.7, 2.2 }, { 0.3, -1.7, 2.2, -0.9 }, { 0.3, -1.7, 2.2, -0.9, 0.6 }
  local function err(x, c, rule) return math.abs(run(x, poly(c), rule) - prim(c, x[1], x[#x])) end
  check.ok("lua/fe/integrate/trapezoid-degree1", err(uneven, c1, "trapezoid") < 1e-13 and err(uneven, c2, "trapezoid") > 1e-3,
    ("linear %.3g, quadratic %.3g"):format(err(uneven, c1, "trapezoid"), err(uneven, c2, "trapezoid")))
  check.ok("lua/fe/integrate/simpson-degree2", err(uneven, c2, "simpson") < 1e-13 and err(uneven, c3, "simpson") > 1e-4,
    ("uneven: quadratic %.3g, cubic %.3g"):format(err(uneven, c2, "simpson"), err(uneven, c3, "simpson")))
  check.ok("lua/fe/integrate/simpson-degree3-even", err(even, c3, "simpson") < 1e-13 and err(even, c4, "simpson") > 1e-5,
    ("even: cubic %.3g, quartic %.3g"):format(err(even, c3, "simpson"), err(even, c4, "simpson")))
  for _, n in ipairs { 1, 2, 5, 8 } do
    local gl = carlo.gauss_legendre{ from = -0.4, to = 1.7, n = n }
    local c, c_more = {}, {}
    for i = 1, 2 * n do c[i] = math.sin(i) end
    for i = 1, 2 * n + 1 do c_more[i] = math.sin(i) end
    local f, g = poly(c), poly(c_more)
    local y, z = {}, {}
    for i = 1, n do y[i], z[i] = f(gl[i]), g(gl[i]) end
    local e1 = math.abs(carlo.integrate{ x = gl, y = y, rule = "gauss" } - prim(c, -0.4, 1.7))
    local e2 = math.abs(carlo.integrate{ x = gl, y = z, rule = "gauss" } - prim(c_more, -0.4, 1.7))
    -- rounding: relative to the size of the terms, sum |c_i| 1.7^i over the interval
    local scale = 0
    for i = 1, #c do scale = scale + math.abs(c[i]) * 1.7 ^ (i - 1) * 2.1 end
    local tol = 1e-14 * scale
    check.ok(("lua/fe/integrate/gauss-%d-degree%d"):format(n, 2 * n - 1), e1 < tol and e2 > 100 * tol,
      ("degree %d: %.3g, degree %d: %.3g (rounding %.3g)"):format(2 * n - 1, e1, 2 * n, e2, tol))
  end
  -- errors of independent points: sqrt(sum w_i^2 dy_i^2); trapezoid on a uniform grid of step h
  local _, e = carlo.integrate{ x = { 0, 1, 2, 3 }, y = { 1, 1, 1, 1 }, dy = { 0.2, 0.2, 0.2, 0.2 } }
  check.ok("lua/fe/integrate/error", math.abs(e - 0.2 * math.sqrt(0.25 + 1 + 1 + 0.25)) < 1e-14, ("err %.17g"):format(e))
  local gl = carlo.gauss_legendre{ from = 2, to = 0, n = 4 }
  local s = 0
  for i = 1, 4 do s = s + gl.weights[i] end
  check.ok("lua/fe/gauss/descending", gl[1] > gl[4] and gl[1] < 2 and gl[4] > 0 and math.abs(s + 2) < 1e-14,
    ("nodes %.4g .. %.4g, weights sum %.17g"):format(gl[1], gl[4], s))
end

-- ---------- q = 2 Potts, L = 16: ln Z against Kaufman's exact value ----------
local L = 16
local N = L * L
do
  -- an ensemble with replica exchange over a short ladder from beta = 0; heat bath: at beta = 0
  -- Metropolis would flip every spin of a q = 2 model each sweep and never change the energy
  local betas = { 0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6 }
  local ens = carlo.ensemble{ model = "potts", args = { L = L, q = 2, algorithm = "heatbath" },
                              controls = { beta = betas }, seed = 11, device = "cpu", quiet = true }
  ens:run{ sweeps = 200, exchange_every = 10 }
  local per = ens:sample{ sweeps = 1500, every = 5, exchange_every = 10, series = true }
  local mb = carlo.mbar{ samples = per }
  for _, b in ipairs { 0.25, 0.6 } do
    local lnZ, err = mb:lnZ(b)
    check.within(("lua/fe/potts/ensemble-lnZ-%.2f"):format(b), N * math.log(2) + lnZ, exact.lnZ_potts2(b, L), err, 3)
  end
  -- the reweighted energy at a beta between two states lies between their plain means
  local e, de = mb:expect("energy", 0.45)
  local lo, hi = per[5].e.mean * N, per[6].e.mean * N
  check.ok("lua/fe/potts/reweighted-energy", e < lo and e > hi and de > 0,
    ("E(0.45) = %.3f between E(0.4) = %.3f and E(0.5) = %.3f"):format(e, lo, hi))
end
do
  -- carlo.anneal's points (series kept by sample) up to beyond the critical beta = 0.8814
  local sys = carlo.potts{ L = L, q = 2, beta = 0, algorithm = "heatbath", seed = 12, device = "cpu" }
  local rows = carlo.anneal{ system = sys, schedule = carlo.ladder{ from = 0, to = 1, n = 11 },
                             control = "beta", equilibrate = 200, measure = 4000, every = 2,
                             observe = { series = true }, quiet = true }
  local mb = carlo.mbar{ samples = rows }
  for _, b in ipairs { 0.85, 1.0 } do
    local lnZ, err = mb:lnZ(b)
    check.within(("lua/fe/potts/anneal-lnZ-%.2f"):format(b), N * math.log(2) + lnZ, exact.lnZ_potts2(b, L), err, 3)
  end
  -- the heat capacity at a sampled beta against the plain sample's (same samples, thinned)
  local C, dC = mb:heat_capacity(0.8)
  check.agree("lua/fe/potts/heat-capacity", C, dC, rows[9].C.mean, rows[9].C.err, 3)
  local chi, dchi = mb:susceptibility(0.8)
  check.agree("lua/fe/potts/susceptibility", chi, dchi, rows[9].chi.mean, rows[9].chi.err, 3)
  local m, dm = mb:expect("m", 0.8)
  check.agree("lua/fe/potts/expect-m", m, dm, rows[9].m.mean, rows[9].m.err, 3)
  check.raises("lua/fe/bad/target", function() mb:lnZ(-1) end, "mbar:lnZ", "beta must be a number >= 0 (got -1)")
end
do
  -- d ln Z / d beta = -<E>: Gauss-Legendre in beta from 0
  local b1 = 0.6
  local gl = carlo.gauss_legendre{ from = 0, to = b1, n = 6 }
  local sys = carlo.potts{ L = L, q = 2, beta = gl[1], algorithm = "heatbath", seed = 21, device = "cpu" }
  local rows = carlo.anneal{ system = sys, schedule = gl, control = "beta", equilibrate = 200,
                             measure = 4000, every = 2, quiet = true }
  local y, dy = {}, {}
  for i, s in ipairs(rows) do y[i], dy[i] = -s.e.mean * N, s.e.err * N end
  local I, dI = carlo.integrate{ x = gl, y = y, dy = dy, rule = "gauss" }
  check.within("lua/fe/potts/ti-lnZ", N * math.log(2) + I, exact.lnZ_potts2(b1, L), dI, 3)
end

-- ---------- Lennard-Jones: workflows/lj_free_energy.lua, quick, one state ----------
do
  lj_free_energy_opts = { quick = true, targets = "2.0:0.5", device = "cpu", quiet = true,
                          out = check.tmp .. "/lj_free_energy.tsv" }
  local saved = arg
  arg = {}
  local rows = dofile("workflows/lj_free_energy.lua")
  arg = saved
  local j = rows.jzg
  -- the equation of state against published values computed from it (S. Stephan, as quoted by
  -- teqp's tests) and JZG's own critical point (T = 1.313, rho = 0.310: dP/drho = 0)
  check.ok("lua/fe/lj/jzg-alphar", math.abs(j.A(1.35, 0.6) / 1.35 - (-1.237403479)) < 1e-8,
    ("A_ex/NT(1.35, 0.6) = %.10f"):format(j.A(1.35, 0.6) / 1.35))
  check.ok("lua/fe/lj/jzg-B2", math.abs(j.B2(0.8) - (-7.821026827)) < 1e-8, ("B2(0.8) = %.10f"):format(j.B2(0.8)))
  local dP = (j.P(1.313, 0.3101) - j.P(1.313, 0.3099)) / 2e-4
  check.ok("lua/fe/lj/jzg-critical", math.abs(dP) < 1e-3, ("dP/drho = %.3g"):format(dP))
  local r = rows[1]
  -- quick: N = 108; 0.01 allowed besides for the finite size and the fit of the equation of state
  check.ok("lua/fe/lj/ti-vs-jzg", math.abs(r.betaA_ex - r.betaA_jzg) <= 3 * r.betaA_ex_err + 0.01,
    ("beta A_ex/N %.5f +- %.5f vs JZG %.5f"):format(r.betaA_ex, r.betaA_ex_err, r.betaA_jzg))
  check.agree("lua/fe/lj/ti-vs-widom", r.betamu_ti, r.betamu_ti_err, r.betamu_widom, r.betamu_widom_err, 3)
end
