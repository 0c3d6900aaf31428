-- validate/hard/frenkel-ladd: the excess free energy of the defect-free fcc hard-sphere crystal at
-- rho = 1.0409 by the tether (workflows/hs_frenkel_ladd.lua, Einstein molecule), N = 108, 256,
-- 864, 1372 and 2048 extrapolated as f + a ln(N)/N + b/N, against Polson et al. (2000),
-- 5.91889(4) (workflows/data/hs_free_energy.tsv): within three combined error bars. On the GPU
-- (SKIP without one); a long run. The error bars are statistical (blocking through the
-- quadrature and the fit); the Gauss-Legendre rule's own error is not in them.
local carlo = require "carlo"
local check = require "check"
if not check.gpu_or_skip("validate/hard/frenkel-ladd") then return end

local fl = assert(loadfile("workflows/hs_frenkel_ladd.lua"))("--module")
local want, want_err
for line in io.lines("workflows/data/hs_free_energy.tsv") do
  local v, e = line:match("^betaFex_per_N_fcc\t(%d+%.%d+)%((%d+)%)")
  if v then
    want = tonumber(v)
    want_err = tonumber(e) * 10 ^ -(#v - v:find("%.", 1, false))
  end
end
assert(want, "hs_free_energy.tsv: no betaFex_per_N_fcc")

local rows = {}
for _, N in ipairs{ 108, 256, 864, 1372, 2048 } do
  local t = fl.frenkel_ladd({ dim = 3, rho = 1.0409, nodes = 16, lambda_max = 2e4, c = 1, sweeps = 50000,
                              equilibrate = 10000, every = 5, seed = 3, device = "gpu" }, N)
  print(("# N = %d: beta F_ex / N = %.5f +- %.5f (msd at the top node / ideal: %.5f)")
    :format(N, t.fex, t.integral_err, t.top_ratio))
  check.ok(("validate/hard/frenkel-ladd-top-%d"):format(N), math.abs(t.top_z) < 4,
    ("the strongest tether is not ideal: msd %.5f of the ideal, %.1f error bars"):format(t.top_ratio, t.top_z))
  rows[#rows + 1] = { N = N, f = t.fex, e = t.integral_err }
end
local f, err = fl.extrapolate(rows)
print(("# N -> infinity: %.5f +- %.5f; Polson et al. %.5f +- %.5f"):format(f, err, want, want_err))
check.agree("validate/hard/frenkel-ladd-polson", f, err, want, want_err, 3)
