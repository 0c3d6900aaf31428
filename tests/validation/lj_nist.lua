-- validate/lj/nist-*: workflows/lj_nist.lua at validation length (2000 sweeps of equilibration,
-- 20000 of sampling per density; about ten minutes on one CPU core, far less on a GPU): every
-- NIST density within three combined error bars (the message says when the blocking found no
-- plateau: the error is then a lower bound, and the comparison only stricter).
local check = require "check"
lj_nist_opts = { equilibrate = 2000, measure = 20000, every = 5, device = "auto",
                 out = check.tmp .. "/lj_nist.tsv" }
arg = {}
local rows = dofile("workflows/lj_nist.lua")
check.eq("validate/lj/nist-densities", #rows, 10)
for _, r in ipairs(rows) do
  check.ok(("validate/lj/nist-rho-%g"):format(r.rho), r.ok,
    ("U %.6f +- %.2g vs %.6f (%.2f combined errors), P %.6f +- %.2g vs %.6f (%.2f)%s")
      :format(r.U.mean, r.U.err, r.U_nist, r.U_dev, r.P.mean, r.P.err, r.P_nist, r.P_dev,
              r.plateau and "" or ", no blocking plateau"))
  check.ok(("validate/lj/nist-drift-rho-%g"):format(r.rho), r.drift <= 1e-9, ("drift %g"):format(r.drift))
end
