-- validate/fe/potts-*: the q = 2 Potts model on a 32 x 32 torus against Kaufman's exact
-- partition function: MBAR over a 25-point beta ladder sampled by carlo.anneal (ln Z(beta) from
-- ln Z(0) = N ln 2, through the critical beta = 0.8814, and at betas between the sampled ones),
-- the multiple-histogram method on the same samples, the reweighted heat capacity against the
-- exact one (beta^2 d^2 ln Z / d beta^2 / N by central differences of the exact ln Z), and
-- thermodynamic integration of the energy on 10 Gauss-Legendre nodes. Within 3 error bars.
local carlo = require "carlo"
local check = require "check"
local exact = require "ising_exact"
carlo.threads(1)

local L = 32
local N = L * L
local sys = carlo.potts{ L = L, q = 2, beta = 0, algorithm = "heatbath", seed = 31, device = "cpu" }
local rows = carlo.anneal{ system = sys, schedule = carlo.ladder{ from = 0, to = 1.2, n = 25 },
                           control = "beta", equilibrate = 1000, measure = 40000, every = 4,
                           observe = { series = true }, quiet = true }
local mb = carlo.mbar{ samples = rows }
local hist = carlo.mbar{ samples = rows, method = "histogram" }
local function exact_C(b)
  local h = 1e-3
  local d2 = (exact.lnZ_potts2(b + h, L) - 2 * exact.lnZ_potts2(b, L) + exact.lnZ_potts2(b - h, L)) / (h * h)
  return b * b * d2 / N
end
for _, b in ipairs { 0.3, 0.625, 0.8814, 0.925, 1.1 } do
  local lnZ, err = mb:lnZ(b)
  local ref = exact.lnZ_potts2(b, L)
  check.within(("validate/fe/potts-mbar-lnZ-%.4g"):format(b), N * math.log(2) + lnZ, ref, err, 3)
  local hl, herr = hist:lnZ(b)
  check.within(("validate/fe/potts-histogram-lnZ-%.4g"):format(b), N * math.log(2) + hl, ref, herr, 3)
  local C, dC = mb:heat_capacity(b)
  check.within(("validate/fe/potts-mbar-C-%.4g"):format(b), C, exact_C(b), dC, 3)
end

local b1 = 0.8
local gl = carlo.gauss_legendre{ from = 0, to = b1, n = 10 }
local s2 = carlo.potts{ L = L, q = 2, beta = gl[1], algorithm = "heatbath", seed = 32, device = "cpu" }
local pts = carlo.anneal{ system = s2, schedule = gl, control = "beta", equilibrate = 1000,
                          measure = 40000, every = 4, quiet = true }
local y, dy = {}, {}
for i, s in ipairs(pts) do y[i], dy[i] = -s.e.mean * N, s.e.err * N end
local I, dI = carlo.integrate{ x = gl, y = y, dy = dy, rule = "gauss" }
check.within("validate/fe/potts-ti-lnZ-0.8", N * math.log(2) + I, exact.lnZ_potts2(b1, L), dI, 3)
