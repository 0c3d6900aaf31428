-- validate/fe/lj-*: workflows/lj_free_energy.lua in its quick mode (N = 108, rc = 2.5, CPU):
-- beta A_ex / N by thermodynamic integration from the ideal gas against the Johnson-Zollweg-
-- Gubbins equation of state at (T, rho) = (2.0, 0.5) and (1.2, 0.7), and beta mu_ex from it
-- against Widom insertion; then the liquid NIST state point (T = 0.85, rho = 0.776, rc = 3 with
-- tail corrections, N = 256) the same way. Within 3 combined error bars; the JZG comparison
-- allows besides a systematic 0.01 in beta A_ex / N (the equation of state's own fit error and
-- this N's finite-size term; JZG quote ~1 % in A at liquid densities).
local carlo = require "carlo"
local check = require "check"
carlo.threads(1)
arg = {}

local function run(opts)
  lj_free_energy_opts = opts
  return dofile("workflows/lj_free_energy.lua")
end

local rows = run{ quick = true, device = "cpu", quiet = true, out = check.tmp .. "/lj_fe_quick.tsv" }
local rows2 = run{ quick = true, device = "cpu", quiet = true, targets = "0.85:0.776", N = 256,
                   rc = 3.0, nodes_rho = 6, nodes_T = 5, equilibrate = 1000, measure = 6000,
                   widom = 50, out = check.tmp .. "/lj_fe_nist.tsv" }
rows[#rows + 1] = rows2[1]
for _, r in ipairs(rows) do
  local tag = ("T%.3g-rho%.3g"):format(r.T, r.rho)
  local sys_err = 0.01
  check.ok("validate/fe/lj-jzg-" .. tag,
    math.abs(r.betaA_ex - r.betaA_jzg) <= 3 * math.sqrt(r.betaA_ex_err ^ 2) + sys_err,
    ("beta A_ex/N %.5f +- %.5f vs JZG %.5f (allowed 3 err + %.2g)")
      :format(r.betaA_ex, r.betaA_ex_err, r.betaA_jzg, sys_err))
  check.agree("validate/fe/lj-widom-" .. tag, r.betamu_ti, r.betamu_ti_err, r.betamu_widom,
    r.betamu_widom_err, 3)
end
