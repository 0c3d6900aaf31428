-- validate/potts_branches/*: workflows/potts_branches.lua at L = 1024 for q = 9 and q = 15 (the
-- default ladders: 32 coarse and 20 fine steps a branch, 2000 + 4000 sweeps a point): the
-- crossing of the ordered and disordered free-energy branches within 2e-4 of the exact
-- Tc = 1/ln(1 + sqrt q) (the statistical error bar, printed, is far smaller: what remains is
-- the integration's and the ladders'); the latent heat printed beside Baxter's. Needs a GPU (a few minutes there; hours on a CPU): SKIP without one.
local check = require "check"
if not check.has_gpu() then
  check.skip("validate/potts_branches/L1024", "no GPU (this validation runs L = 1024 lattices)")
  return
end
potts_branches_opts = { q = "9,15", L = 1024, device = "gpu", out = check.tmp .. "/potts_branches" }
arg = {}
local results = dofile("workflows/potts_branches.lua")
for _, r in ipairs(results) do
  local dev = r.Tc - r.Tc_exact
  check.ok(("validate/potts_branches/Tc_q%d"):format(r.q), math.abs(dev) <= 2e-4,
           ("Tc %.6f +- %.2g vs exact %.6f (deviation %.2e, allowed 2e-4; from the stable "
            .. "sides alone %.6f)"):format(r.Tc, r.Tc_err, r.Tc_exact, dev, r.Tc_stable or 0 / 0))
  print(("q = %d: latent heat %.5f +- %.5f, exact %.5f; a branch left its phase at %d of the "
    .. "shared nodes"):format(r.q, r.latent, r.latent_err, r.latent_exact, #(r.left or {})))
end
