-- Hard spheres in the fcc crystal: 131072 spheres at phi = 0.60 (HPMC, Anderson et al. 2016,
-- Table 1: P* = beta P v0 = 9.3134(2) on one GPU, 9.3135(4) serial; two standard errors).
-- Started on the lattice, equilibrated, then sampled with both pressure estimators (g(r)
-- extrapolation and the scale distribution function), blocking error bars.
--   carlo workflows/hard_spheres_pressure.lua                  a few minutes on one GPU
--   carlo workflows/hard_spheres_pressure.lua sweeps=5e6       longer
-- Arguments (key=value): N (131072 = 4 * 32^3), phi (0.60), sweeps (500000), equilibrate
-- (50000), every (10), seed (1), device (auto).
local carlo = require "carlo"

local opt = { N = 131072, phi = 0.60, sweeps = 5e5, equilibrate = 5e4, every = 10, seed = 1,
              device = "auto" }
for _, a in ipairs(arg or {}) do
  local k, v = a:match("^(%w+)=(.+)$")
  if not k or opt[k] == nil then
    error(("hard_spheres_pressure: unknown argument '%s' (key=value: N, phi, sweeps, equilibrate, "
      .. "every, seed, device)"):format(a))
  end
  opt[k] = tonumber(v) or v
end
local every = math.tointeger(opt.every)
local sweeps = math.floor(opt.sweeps)
sweeps = sweeps - sweeps % every

local here = (arg and arg[0] or "workflows/hard_spheres_pressure.lua"):match("^(.*)/[^/]*$") or "."
local ref = {}
for line in io.lines(here .. "/data/hard_shapes_pressure.tsv") do
  local f = {}
  for x in line:gmatch("[^\t]+") do f[#f + 1] = x end
  if f[1] == "sphere" then ref = { N = f[2], phi = f[3], serial = f[5], gpu1 = f[7] } end
end

local t0 = carlo.clock()
local sys = carlo.hard_spheres{ N = math.tointeger(opt.N), phi = opt.phi, init = "fcc", seed = opt.seed,
                                device = opt.device }
-- HPMC's rule of thumb: tune the move size to 20% acceptance during equilibration, then fix it
-- (tune says on stderr when it cannot get there)
sys:tune{ target = 0.2, rounds = 20, sweeps = math.max(1, math.floor(opt.equilibrate / 40)) }
sys:run{ sweeps = math.floor(opt.equilibrate) }
local s = sys:sample{ sweeps = sweeps, every = every }
local v0 = math.pi / 6
print(("# hard spheres N = %d, phi = %.6f (fcc start), %d sweeps measured after %d, %s, %.0f s")
  :format(sys.N, sys.phi, sweeps, math.floor(opt.equilibrate), sys.device, carlo.clock() - t0))
print("# P* = beta P v0; errors: one standard error (blocking); HPMC's are two standard errors")
print("estimator\tP*\terr\ttau_sweeps\tHPMC_gpu1\tHPMC_serial")
for _, k in ipairs{ "P_gr", "P_sdf" } do
  print(("%s\t%.5f\t%.5f\t%.0f\t%s\t%s"):format(k, s[k].mean * v0, s[k].err * v0, s[k].tau,
    ref.gpu1 or "-", ref.serial or "-"))
end
print(("# acceptance %.3f, delta = %.3f; the two estimators differ by %.5f +- %.5f (beta P v0)")
  :format(s.acceptance, sys.delta, s.P_diff.mean * v0, s.P_diff.err * v0))
