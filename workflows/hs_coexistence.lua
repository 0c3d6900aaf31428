-- Fluid-solid coexistence of hard spheres from the chemical potentials of the two branches
-- (Vega & Noya, J. Chem. Phys. 127, 154113, 2007: p* = beta p sigma^3 = 11.54(4) for N -> infinity).
--  * fluid: NPT densities at a ladder of pressures from a random start; Z = beta P / rho fitted
--    as Z (1 - eta)^3 = 1 + eta + eta^2 + sum_k c_k eta^k (k = 3 .. K, eta = pi rho / 6; the
--    first terms are the exact second and third virial coefficients) and integrated from
--    rho = 0, beta f_ex = int_0^eta (Z - 1) / eta';
--    beta mu = ln rho - 1 + beta f_ex + Z (Lambda = sigma). Carnahan-Starling and, at the lowest
--    pressure, Widom insertion (sys:widom) are printed as checks, never used.
--  * solid: NPT densities of the fcc crystal at a ladder of pressures, rho(P) fitted as a
--    polynomial in P; beta F / N at rho_ref by Frenkel-Ladd (workflows/hs_frenkel_ladd.lua, the
--    Einstein molecule, same N); beta mu(P) = beta mu(P_ref) + int_P_ref^P dP' / rho(P')
--    (Gibbs-Duhem), P_ref the pressure of the fit at rho_ref.
--  * the crossing of mu_fluid(P) and mu_solid(P): the coexistence pressure, its error from
--    sigma(mu_f - mu_s) / |1/rho_f - 1/rho_s|, and the two densities.
-- Every pressure of both branches is one NPT system (seed carlo.replica_seed(seed, k) for the
-- fluid's k-th, of seed + 1 for the crystal's), all tuned, equilibrated and sampled side by side
-- (carlo.advance: on the GPU each from its own host thread and stream); the Frenkel-Ladd nodes
-- likewise (hs_frenkel_ladd.lua, seed + 2).
-- Writes <out>.tsv (mu of both branches on a grid of pressures), <out>_points.tsv (the
-- measured densities), <out>.gp and, when gnuplot is installed, <out>.png.
--   carlo workflows/hs_coexistence.lua                 GPU, minutes
--   carlo workflows/hs_coexistence.lua quick=true         CPU, under a minute (rough numbers)
-- Arguments (key=value): N_fluid (1000), N_solid (864; fcc boxes of 5 cells a side, N = 500,
-- have no cell grid), P_fluid (a comma list), P_solid (a comma list), rho_ref (1.0409),
-- sweeps (20000 per pressure), equilibrate (5000), every (10), fl_sweeps (20000 per node),
-- nodes (16), degree (5: the fluid fit's highest power of eta), widom (20000 insertions per sample at the lowest
-- pressure), solid_fex and solid_fex_err (0: Frenkel-Ladd at N_solid; else the fcc's beta F_ex / N
-- at rho_ref as given, e.g. the N -> infinity value of hs_frenkel_ladd.lua or Polson et al.'s
-- 5.91889, which takes the solid's finite-size term out), seed (1), device (auto), quick (0),
-- out (hs_coexistence). Returns { P =, P_err =, rho_fluid =, rho_solid =, ... } to a caller.
local carlo = require "carlo"

local opt = { N_fluid = 1000, N_solid = 864, P_fluid = "0.5,1,2,3,4,5,6,7,8,9,10,11,11.5,12,12.5,13",
              P_solid = "10.5,11,11.5,12,12.5,13,14,15", rho_ref = 1.0409, sweeps = 2e4, equilibrate = 5000,
              every = 10, fl_sweeps = 2e4, nodes = 16, degree = 5, widom = 20000, solid_fex = 0,
              solid_fex_err = 0, seed = 1, device = "auto",
              quick = 0, out = "hs_coexistence" }
local strings = { P_fluid = true, P_solid = true, device = true, out = true }
-- the arguments: the script's (carlo passes them as ... and arg), or a caller's loadfile(...)(...)
local args = select("#", ...) > 0 and { ... } or arg or {}
for _, a in ipairs(args) do
  local k, v = a:match("^([%w_]+)=(.+)$")
  if not k or opt[k] == nil then
    error(("hs_coexistence: unknown argument '%s' (key=value: N_fluid, N_solid, P_fluid, P_solid, rho_ref, "
      .. "sweeps, equilibrate, every, fl_sweeps, nodes, degree, widom, solid_fex, solid_fex_err, seed, device, "
      .. "quick, out)"):format(a))
  end
  if k == "quick" then v = v == "true" and "1" or v == "false" and "0" or v end
  opt[k] = strings[k] and v or tonumber(v)
  if opt[k] == nil then error(("hs_coexistence: %s must be a number (got '%s')"):format(k, v)) end
end
if opt.quick ~= 0 then
  local given = {}
  for _, a in ipairs(args) do given[a:match("^([%w_]+)=") or ""] = true end
  local q = { N_fluid = 600, N_solid = 256, P_fluid = "0.5,1.5,3,5,7,9,11,12.5", P_solid = "10.5,12,13.5,15",
              sweeps = 300, equilibrate = 400, every = 4, fl_sweeps = 1000, nodes = 8, degree = 4, widom = 2000 }
  for k, v in pairs(q) do if not given[k] then opt[k] = v end end
end
local function list(s, what)
  local t = {}
  for x in s:gmatch("[^,]+") do
    local v = tonumber(x)
    if not v or not (v > 0) then error(("hs_coexistence: %s must list pressures > 0 (got '%s')"):format(what, x)) end
    t[#t + 1] = v
  end
  table.sort(t)
  return t
end
local P_fluid, P_solid = list(opt.P_fluid, "P_fluid"), list(opt.P_solid, "P_solid")
if #P_fluid < 3 or #P_solid < 2 then error("hs_coexistence: give at least 3 fluid and 2 solid pressures") end
local every = math.tointeger(opt.every)
local function whole(x) x = math.floor(x); return x - x % every end
local sweeps, equil = whole(opt.sweeps), math.floor(opt.equilibrate)
local degree = math.min(math.tointeger(opt.degree) or 5, #P_fluid + 1)
if degree < 3 then error("hs_coexistence: degree must be 3 or more") end
local v0 = math.pi / 6
local t0 = carlo.clock()

-- ---------- weighted linear least squares (normal equations, Gauss-Jordan): the coefficients and
-- their covariance, scaled up by chi^2 per degree of freedom when that exceeds 1 (Birge)
local function lsq(X, y, w)
  local n, m = #y, #X[1]
  local A, b = {}, {}
  for i = 1, m do
    A[i], b[i] = {}, 0
    for j = 1, m do A[i][j] = 0 end
  end
  for r = 1, n do
    for i = 1, m do
      b[i] = b[i] + w[r] * X[r][i] * y[r]
      for j = 1, m do A[i][j] = A[i][j] + w[r] * X[r][i] * X[r][j] end
    end
  end
  local inv = {}
  for i = 1, m do
    inv[i] = {}
    for j = 1, m do inv[i][j] = i == j and 1 or 0 end
  end
  for c = 1, m do
    local p = c
    for r = c + 1, m do if math.abs(A[r][c]) > math.abs(A[p][c]) then p = r end end
    A[c], A[p], inv[c], inv[p] = A[p], A[c], inv[p], inv[c]
    local d = A[c][c]
    for j = 1, m do A[c][j] = A[c][j] / d; inv[c][j] = inv[c][j] / d end
    for r = 1, m do
      if r ~= c then
        local f = A[r][c]
        for j = 1, m do A[r][j] = A[r][j] - f * A[c][j]; inv[r][j] = inv[r][j] - f * inv[c][j] end
      end
    end
  end
  local coef = {}
  for i = 1, m do
    coef[i] = 0
    for j = 1, m do coef[i] = coef[i] + inv[i][j] * b[j] end
  end
  local chi2 = 0
  for r = 1, n do
    local f = 0
    for i = 1, m do f = f + coef[i] * X[r][i] end
    chi2 = chi2 + w[r] * (y[r] - f) ^ 2
  end
  local scale = n > m and math.max(1, chi2 / (n - m)) or 1
  for i = 1, m do for j = 1, m do inv[i][j] = inv[i][j] * scale end end
  return coef, inv, chi2 / math.max(1, n - m)
end

-- the error of g(coef) from the covariance, by a numerical gradient
local function propagate(g, coef, cov)
  local m, grad = #coef, {}
  for i = 1, m do
    local h = 1e-6 * math.max(1, math.abs(coef[i]))
    local up, dn = {}, {}
    for j = 1, m do up[j], dn[j] = coef[j], coef[j] end
    up[i], dn[i] = coef[i] + h, coef[i] - h
    grad[i] = (g(up) - g(dn)) / (2 * h)
  end
  local var = 0
  for i = 1, m do for j = 1, m do var = var + grad[i] * cov[i][j] * grad[j] end end
  return math.sqrt(math.max(var, 0))
end

-- ---------- the two branches: NPT densities
local points = carlo.log(opt.out .. "_points.tsv")
-- starting densities only (never in a result): Carnahan-Starling for the fluid, Speedy's
-- equation of state for the fcc crystal, inverted by bisection
local function guess(P, phase)
  local function Pof(rho)
    if phase == "fluid" then
      local e = rho * v0
      return rho * (1 + e + e * e - e ^ 3) / (1 - e) ^ 3
    end
    local z = rho / math.sqrt(2)
    return rho * (3 / (1 - z) - 0.5921 * (z - 0.7072) / (z - 0.601))
  end
  local lo, hi = phase == "fluid" and 1e-6 or 0.95, phase == "fluid" and 1.0 or 1.35
  for _ = 1, 100 do
    local m = 0.5 * (lo + hi)
    if Pof(m) < P then lo = m else hi = m end
  end
  return 0.5 * (lo + hi)
end

local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local fl = assert(loadfile(here .. "/hs_frenkel_ladd.lua"))("--module")

-- One NPT system per pressure (seed carlo.replica_seed(seed, k)), started at the density guessed
-- for its pressure: the fluid's taken from one system compressed through the ascending guesses
-- (sys:assign, own seeds kept), the crystal's from the fcc lattice at rho_ref (compressed where
-- the guess is denser). Tuned, equilibrated and sampled together (carlo.advance).
local function branch_systems(pressures, phase, seed)
  local systems = {}
  if phase == "fluid" then
    local args = { N = math.tointeger(opt.N_fluid), phi = 0.5 * guess(pressures[1], "fluid") * v0, device = opt.device,
                   quiet = true }
    local function make(sd) args.seed = sd; return carlo.hard_spheres(args) end
    local prep = make(seed)
    for k, P in ipairs(pressures) do
      local phi = guess(P, phase) * v0
      if phi > prep.phi then prep:compress{ phi = phi, quiet = true } end
      systems[k] = make(carlo.replica_seed(seed, k))
      systems[k]:assign(prep)
    end
    prep:close()
  else
    for k, P in ipairs(pressures) do
      local sys = carlo.hard_spheres{ N = math.tointeger(opt.N_solid), phi = opt.rho_ref * v0, init = "fcc",
                                      seed = carlo.replica_seed(seed, k), device = opt.device, quiet = true }
      local phi = guess(P, phase) * v0
      if phi > sys.phi then sys:compress{ phi = phi, quiet = true } end
      systems[k] = sys
    end
  end
  for k, sys in ipairs(systems) do
    sys.volume_moves = 5
    sys.pressure = pressures[k]
  end
  return systems
end

-- Both branches at once: every pressure of both one system, all advanced together.
local function branches()
  local fsys = branch_systems(P_fluid, "fluid", opt.seed)
  local ssys = branch_systems(P_solid, "fcc", opt.seed + 1)
  local systems, jobs = {}, {}
  for k, sys in ipairs(fsys) do
    systems[#systems + 1] = sys
    jobs[#jobs + 1] = { sys = sys, sweeps = sweeps, keys = { "rho" }, phase = "fluid", P = P_fluid[k] }
  end
  for k, sys in ipairs(ssys) do
    systems[#systems + 1] = sys
    jobs[#jobs + 1] = { sys = sys, sweeps = sweeps, keys = { "rho" }, phase = "fcc", P = P_solid[k] }
  end
  -- Widom insertion at the lowest fluid pressure: a check, never used
  local widom = math.tointeger(opt.widom)
  if widom and widom > 0 then jobs[1].keys[2], jobs[1].obs = "p_insert", { pressure = false, widom = widom } end
  fl.tune_together(systems, { target = 0.3, volume_target = 0.3, rounds = 10, sweeps = math.max(1, equil // 20) })
  carlo.advance(systems, equil)
  local got = fl.sample_together(jobs, every, { pressure = false })
  local fluid, solid = {}, {}
  for j, job in ipairs(jobs) do
    local s = got[j]
    local row = { P = job.P, rho = s.rho.mean, err = s.rho.err }
    if s.p_insert then -- beta mu_ex = -ln <p_insert>, its error to first order
      row.mu_ex = { mean = -math.log(s.p_insert.mean), err = s.p_insert.err / s.p_insert.mean }
    end
    local list = job.phase == "fluid" and fluid or solid
    list[#list + 1] = row
    points:row{ phase = job.phase, P = job.P, rho = s.rho, acceptance = s.acceptance,
                volume_acceptance = s.volume_acceptance }
    job.sys:close()
  end
  return fluid, solid
end
local fluid, solid = branches()

-- ---------- fluid: Z (1 - eta)^3 = 1 + eta + eta^2 + sum_k c_k eta^k (k = 3 .. K), eta = rho v0: the
-- first two terms are the exact second and third virial coefficients (Z = 1 + 4 eta + 10 eta^2
-- + ...), the rest fitted; beta f_ex = int_0^eta (Z - 1) / eta' deta', from eta = 0
local X, y, w = {}, {}, {}
for _, r in ipairs(fluid) do
  local e, row = r.rho * v0, {}
  for k = 3, degree do row[k - 2] = e ^ k end
  X[#X + 1], y[#y + 1] = row, (r.P / r.rho) * (1 - e) ^ 3 - 1 - e - e * e
  local yerr = r.P * r.err / (r.rho * r.rho) * (1 - e) ^ 3
  w[#w + 1] = 1 / math.max(yerr, 1e-9) ^ 2
end
local a, acov, chi2_fluid = lsq(X, y, w)
local function Zeta(c, e)
  local num = 1 + e + e * e
  for k = 1, #c do num = num + c[k] * e ^ (k + 2) end
  return num / (1 - e) ^ 3
end
local function Z_of(c, rho) return Zeta(c, rho * v0) end
local function fex_of(c, rho) -- Simpson on (Z - 1) / eta, whose limit at 0 is 4
  local e1, n = rho * v0, 200
  local h = e1 / n
  local function g(e) return e == 0 and 4 or (Zeta(c, e) - 1) / e end
  local s = g(0) + g(e1)
  for i = 1, n - 1 do s = s + (i % 2 == 1 and 4 or 2) * g(i * h) end
  return s * h / 3
end
local function rho_fluid(c, P) -- P = rho Z(rho), by Newton from the nearest measured point
  local rho, best = fluid[1].rho, math.huge
  for _, r in ipairs(fluid) do
    if math.abs(r.P - P) < best then rho, best = r.rho, math.abs(r.P - P) end
  end
  for _ = 1, 100 do
    local h = 1e-7
    local f = rho * Z_of(c, rho) - P
    local df = ((rho + h) * Z_of(c, rho + h) - (rho - h) * Z_of(c, rho - h)) / (2 * h)
    local step = f / df
    rho = rho - step
    if math.abs(step) < 1e-14 then break end
  end
  return rho
end
local function mu_fluid_c(c, P)
  local rho = rho_fluid(c, P)
  return math.log(rho) - 1 + fex_of(c, rho) + P / rho
end
local function mu_fluid(P) return mu_fluid_c(a, P), propagate(function(c) return mu_fluid_c(c, P) end, a, acov) end
local function cs(rho) -- Carnahan-Starling: Z and beta f_ex
  local e = rho * v0
  return (1 + e + e * e - e ^ 3) / (1 - e) ^ 3, (4 * e - 3 * e * e) / (1 - e) ^ 2
end

-- ---------- solid: rho(P) polynomial, anchored at rho_ref by Frenkel-Ladd
local sdeg = math.min(2, #solid - 1)
local Xs, ys, ws = {}, {}, {}
for _, r in ipairs(solid) do
  local row = {}
  for k = 0, sdeg do row[k + 1] = r.P ^ k end
  Xs[#Xs + 1], ys[#ys + 1], ws[#ws + 1] = row, r.rho, 1 / math.max(r.err, 1e-9) ^ 2
end
local b, bcov, chi2_solid = lsq(Xs, ys, ws)
local function rho_solid_c(c, P) local v = 0; for k = 1, #c do v = v + c[k] * P ^ (k - 1) end; return v end
local function P_ref_c(c) -- rho(P_ref) = rho_ref, by Newton from the nearest measured point
  local P, best = solid[1].P, math.huge
  for _, r in ipairs(solid) do
    if math.abs(r.rho - opt.rho_ref) < best then P, best = r.P, math.abs(r.rho - opt.rho_ref) end
  end
  for _ = 1, 100 do
    local h = 1e-6
    local d = (rho_solid_c(c, P + h) - rho_solid_c(c, P - h)) / (2 * h)
    local step = (rho_solid_c(c, P) - opt.rho_ref) / d
    P = P - step
    if math.abs(step) < 1e-13 then break end
  end
  return P
end
local function int_dP_over_rho(c, P1, P2) -- Simpson
  local n = 200
  local h = (P2 - P1) / n
  local s = 1 / rho_solid_c(c, P1) + 1 / rho_solid_c(c, P2)
  for i = 1, n - 1 do s = s + (i % 2 == 1 and 4 or 2) / rho_solid_c(c, P1 + i * h) end
  return s * h / 3
end

local N_s = math.tointeger(opt.N_solid)
local t
if opt.solid_fex > 0 then -- given (the N -> infinity value of hs_frenkel_ladd.lua, say)
  t = { fex = opt.solid_fex, integral_err = opt.solid_fex_err }
else
  t = fl.frenkel_ladd({ dim = 3, rho = opt.rho_ref, nodes = math.tointeger(opt.nodes), lambda_max = 2e4, c = 1,
                        sweeps = whole(opt.fl_sweeps), equilibrate = equil, every = every,
                        seed = opt.seed + 2, device = opt.device }, N_s)
end
local F_ref = t.fex + math.log(opt.rho_ref) - 1 -- beta F / N, Lambda = sigma
local function mu_solid_c(c, P)
  local Pr = P_ref_c(c)
  return F_ref + Pr / opt.rho_ref + int_dP_over_rho(c, Pr, P)
end
local function mu_solid(P)
  local m = mu_solid_c(b, P)
  return m, math.sqrt(propagate(function(c) return mu_solid_c(c, P) end, b, bcov) ^ 2 + t.integral_err ^ 2)
end

-- ---------- the crossing
local lo = math.max(P_fluid[1], P_solid[1])
local hi = math.min(P_fluid[#P_fluid], P_solid[#P_solid])
local function dmu(P) return mu_fluid_c(a, P) - mu_solid_c(b, P) end

print(("# hard spheres: fluid N = %d at %d pressures, fcc N = %d at %d pressures, %d sweeps each after %d; %s")
  :format(opt.N_fluid, #P_fluid, N_s, #P_solid, sweeps, equil, fluid[1] and opt.device or ""))
print(("# fluid fit Z (1 - eta)^3 = 1 + eta + eta^2 + sum_k c_k eta^k, k = 3 .. %d: c_3 = %.4f "
  .. "(Carnahan-Starling: -1; the exact B4 gives %.4f); chi^2/dof %.2f"):format(degree, a[1] or 0,
  18.3648 - 3 * 10 + 3 * 4 - 1, chi2_fluid))
print("P\trho_fluid\terr\tZ_fit\tZ_CS\tfex_fit\tfex_CS")
for _, r in ipairs(fluid) do
  local zc, fc = cs(r.rho)
  print(("%g\t%.5f\t%.5f\t%.4f\t%.4f\t%.4f\t%.4f"):format(r.P, r.rho, r.err, Z_of(a, r.rho), zc, fex_of(a, r.rho), fc))
end
if fluid[1].mu_ex then
  local r = fluid[1]
  print(("# Widom at P = %g: beta mu_ex = %.4f +- %.4f; the fit's %.4f; Carnahan-Starling %.4f")
    :format(r.P, r.mu_ex.mean, r.mu_ex.err, fex_of(a, r.rho) + Z_of(a, r.rho) - 1,
      cs(r.rho) - 1 + select(2, cs(r.rho))))
end
print(("# fcc: beta F_ex / N = %.5f +- %.5f at rho = %.4f (%s); P_ref = %.4f")
  :format(t.fex, t.integral_err, opt.rho_ref, opt.solid_fex > 0 and "given" or ("Frenkel-Ladd, N = " .. N_s),
    P_ref_c(b)))
print(("# fcc fit rho(P) quadratic: chi^2/dof %.2f"):format(chi2_solid))
print("P\trho_fcc\terr\trho_fit")
for _, r in ipairs(solid) do print(("%g\t%.5f\t%.5f\t%.5f"):format(r.P, r.rho, r.err, rho_solid_c(b, r.P))) end

local grid = carlo.log(opt.out .. ".tsv")
local n = 60
for i = 0, n do
  local P = P_solid[1] + (P_fluid[#P_fluid] - P_solid[1]) * i / n
  if P >= lo and P <= hi then
    local mf, ef = mu_fluid(P)
    local ms, es = mu_solid(P)
    grid:row{ P = P, mu_fluid = mf, mu_fluid_err = ef, mu_solid = ms, mu_solid_err = es,
              rho_fluid = rho_fluid(a, P), rho_solid = rho_solid_c(b, P) }
  end
end
grid:close()

local result
if dmu(lo) * dmu(hi) > 0 then
  print(("# no crossing of mu_fluid and mu_solid between P = %g and %g (mu_f - mu_s = %.4f and %.4f)")
    :format(lo, hi, dmu(lo), dmu(hi)))
else
  local l, h = lo, hi
  for _ = 1, 200 do
    local m = 0.5 * (l + h)
    if dmu(l) * dmu(m) <= 0 then h = m else l = m end
  end
  local Pc = 0.5 * (l + h)
  local mf, ef = mu_fluid(Pc)
  local ms, es = mu_solid(Pc)
  local rf, rs = rho_fluid(a, Pc), rho_solid_c(b, Pc)
  local eP = math.sqrt(ef * ef + es * es) / math.abs(1 / rf - 1 / rs)
  local drf = (rho_fluid(a, Pc + 1e-4) - rho_fluid(a, Pc - 1e-4)) / 2e-4
  local drs = (rho_solid_c(b, Pc + 1e-4) - rho_solid_c(b, Pc - 1e-4)) / 2e-4
  local erf = math.sqrt((drf * eP) ^ 2 + propagate(function(c) return rho_fluid(c, Pc) end, a, acov) ^ 2)
  local ers = math.sqrt((drs * eP) ^ 2 + propagate(function(c) return rho_solid_c(c, Pc) end, b, bcov) ^ 2)
  result = { P = Pc, eP = eP, rf = rf, erf = erf, rs = rs, ers = ers, mu = mf }
  print(("# coexistence: p* = %.3f +- %.3f (Vega & Noya 2007, N -> infinity: 11.54(4)); "
    .. "rho_fluid = %.4f +- %.4f, rho_solid = %.4f +- %.4f; beta mu = %.4f +- %.4f")
    :format(Pc, eP, rf, erf, rs, ers, mf, math.sqrt(ef * ef + es * es)))
end

-- ---------- the plot: mu(P) of both branches, and their difference
local gp = assert(io.open(opt.out .. ".gp", "w"))
gp:write(([[
set terminal png size 900,900 noenhanced
set output '%s.png'
set multiplot layout 2,1
set xlabel 'beta P sigma^3'
set ylabel 'beta mu'
set key top left
plot '%s.tsv' using 'P':'mu_fluid' with lines title 'fluid (EOS from rho = 0)', \
     '%s.tsv' using 'P':'mu_solid' with lines title 'fcc (Frenkel-Ladd + Gibbs-Duhem)'
set ylabel 'beta (mu_fluid - mu_solid)'
set xzeroaxis
plot '%s.tsv' using 'P':(column('mu_fluid') - column('mu_solid')):(sqrt(column('mu_fluid_err')**2 + column('mu_solid_err')**2)) with yerrorbars title '%s'
unset multiplot
]]):format(opt.out, opt.out, opt.out, opt.out,
  result and ("p* = %.3f +- %.3f"):format(result.P, result.eP) or "no crossing"))
gp:close()
if os.execute("command -v gnuplot >/dev/null 2>&1") then
  os.execute(("gnuplot %s.gp"):format(opt.out))
  print(("# wrote %s.tsv, %s_points.tsv, %s.gp and %s.png; %.0f s"):format(opt.out, opt.out, opt.out, opt.out,
    carlo.clock() - t0))
else
  print(("# wrote %s.tsv, %s_points.tsv and %s.gp (install gnuplot to draw %s.png); %.0f s"):format(opt.out,
    opt.out, opt.out, opt.out, carlo.clock() - t0))
end
return result and { P = result.P, P_err = result.eP, rho_fluid = result.rf, rho_fluid_err = result.erf,
                rho_solid = result.rs, rho_solid_err = result.ers, mu = result.mu }
