-- validate/fe/lj-gpu-*: workflows/lj_free_energy.lua at its defaults on the GPU (N = 500, rc = 3
-- with tail corrections, 8 density + 6 temperature nodes, 20000 sweeps a state point, all 30
-- state points advanced together): beta A_ex / N against the Johnson-Zollweg-Gubbins equation of
-- state at (T, rho) = (2.0, 0.5) and (1.2, 0.7), and beta mu_ex from it against Widom insertion,
-- within 3 combined error bars (the JZG comparison allowing besides 0.01 for the equation of
-- state's fit and the finite size, as tests/validation/fe_lj.lua does). SKIP without a GPU;
-- arguments after the file name go to the workflow (measure=40000 ...).
local carlo = require "carlo"
local check = require "check"
if not check.gpu_or_skip("validate/fe/lj-gpu") then return end

local saved = arg
arg = { "device=gpu", "out=" .. check.tmp .. "/lj_fe_gpu.tsv" }
for _, a in ipairs(saved or {}) do arg[#arg + 1] = a end
local rows = dofile("workflows/lj_free_energy.lua")
arg = saved
for _, r in ipairs(rows) do
  local tag = ("T%.3g-rho%.3g"):format(r.T, r.rho)
  check.ok("validate/fe/lj-gpu-jzg-" .. tag, math.abs(r.betaA_ex - r.betaA_jzg) <= 3 * r.betaA_ex_err + 0.01,
    ("beta A_ex/N %.5f +- %.5f vs JZG %.5f (allowed 3 err + 0.01)"):format(r.betaA_ex, r.betaA_ex_err, r.betaA_jzg))
  check.agree("validate/fe/lj-gpu-widom-" .. tag, r.betamu_ti, r.betamu_ti_err, r.betamu_widom, r.betamu_widom_err, 3)
end
