-- lua/potts_branches: workflows/potts_branches.lua in its quick mode (q = 9, L = 24, short
-- ladders on the CPU): a smoke test that the two branches are integrated, cross near the exact
-- Tc = 1/ln(1 + sqrt 9) and leave their files. Within 2 % of Tc only: at L = 24 the crossing
-- carries a finite-size shift and the runs are short (the measurement is the GPU validation at
-- L = 1024, see the workflow's header).
local check = require "check"
potts_branches_opts = { quick = 1, q = "9", out = check.tmp .. "/potts_branches", device = "cpu" }
arg = {}
local results = dofile("workflows/potts_branches.lua")
check.eq("lua/potts_branches/results", #results, 1)
local r = results[1]
check.ok("lua/potts_branches/crossing", r.Tc == r.Tc and math.abs(r.Tc - r.Tc_exact) < 0.02 * r.Tc_exact,
         ("Tc %.6f vs exact %.6f"):format(r.Tc, r.Tc_exact))
check.ok("lua/potts_branches/stable_fit",
         r.Tc_stable == r.Tc_stable and math.abs(r.Tc_stable - r.Tc_exact) < 0.02 * r.Tc_exact,
         ("Tc from the stable sides %.6f vs exact %.6f"):format(r.Tc_stable, r.Tc_exact))
check.ok("lua/potts_branches/latent", r.latent > 0 and r.latent < 2 * r.latent_exact,
         ("latent heat %.4f (exact %.4f)"):format(r.latent, r.latent_exact))
check.ok("lua/potts_branches/error_bars", r.Tc_err > 0 and r.Tc_err < 0.01,
         ("Tc error %.3g"):format(r.Tc_err))
local tsv = check.slurp(check.tmp .. "/potts_branches.tsv")
check.ok("lua/potts_branches/log", tsv and tsv:find("disordered", 1, true) and tsv:find("\tordered", 1, true),
         "potts_branches.tsv lacks a branch")
check.ok("lua/potts_branches/summary", check.slurp(check.tmp .. "/potts_branches_summary.tsv") ~= nil,
         "no summary written")
if os.execute("command -v gnuplot >/dev/null 2>&1") then
  check.ok("lua/potts_branches/png", check.slurp(check.tmp .. "/potts_branches_q9.png") ~= nil, "no PNG")
else
  check.skip("lua/potts_branches/png", "gnuplot not installed")
end
