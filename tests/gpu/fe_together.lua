-- gpu/fe/together: the free-energy workflows' systems advanced together on the GPU (carlo.advance:
-- a host thread and stream each) give the CPU's numbers one system after another, bit for bit:
-- a Frenkel-Ladd ladder of two sizes (workflows/hs_frenkel_ladd.lua) and tuning of NPT hard
-- spheres together (hard:tune's rule, delta and dlnV). Seconds.
local carlo = require "carlo"
local check = require "check"
if not check.gpu_or_skip("gpu/fe/together") then return end

local fl = assert(loadfile("workflows/hs_frenkel_ladd.lua"))("--module")
local function ladder(device, together)
  local rows = {}
  local o = { dim = 3, rho = 1.0409, nodes = 4, lambda_max = 2e4, c = 1, sweeps = 400, equilibrate = 200,
              every = 4, seed = 13, device = device, together = together,
              log = { row = function(_, r) rows[#rows + 1] = r end } }
  return fl.frenkel_ladd_sizes(o, { 108, 256, 864 }), rows
end
local g, rg = ladder("gpu", true)
local c, rc = ladder("cpu", false)
local same, why = #rg == #rc and #rg == 12, ("%d and %d nodes"):format(#rg, #rc)
for i = 1, math.min(#rg, #rc) do
  if rg[i].msd_site.mean ~= rc[i].msd_site.mean or rg[i].delta ~= rc[i].delta or rg[i].acceptance ~= rc[i].acceptance then
    same, why = false, ("node %d: msd %.17g vs %.17g, delta %.9g vs %.9g"):format(i, rg[i].msd_site.mean,
      rc[i].msd_site.mean, rg[i].delta, rc[i].delta)
  end
end
check.ok("gpu/fe/together-fl-nodes", same, why)
for s = 1, #c do
  check.ok(("gpu/fe/together-fl-fex-%d"):format(c[s].N), g[s] and g[s].fex == c[s].fex,
    ("%.17g vs %.17g"):format(g[s] and g[s].fex or 0 / 0, c[s].fex))
end

-- NPT: eight systems tuned together on the GPU, one of them against sys:tune on the CPU
local systems = {}
for k = 1, 8 do
  systems[k] = carlo.hard_spheres{ N = 256, phi = 0.45, init = "fcc", seed = 20 + k, device = "gpu", quiet = true }
  systems[k].pressure = 6 + k * 0.5
end
local ref = carlo.hard_spheres{ N = 256, phi = 0.45, init = "fcc", seed = 28, device = "cpu", quiet = true }
ref.pressure = 10
fl.tune_together(systems, { target = 0.3, volume_target = 0.3, rounds = 5, sweeps = 20 })
ref:tune{ target = 0.3, volume_target = 0.3, rounds = 5, sweeps = 20, quiet = true }
local a, b = systems[8], ref
check.ok("gpu/fe/together-npt-tune", a.delta == b.delta and a.dlnV == b.dlnV and a.volume == b.volume,
  ("delta %.9g vs %.9g, dlnV %.9g vs %.9g, V %.17g vs %.17g"):format(a.delta, b.delta, a.dlnV, b.dlnV, a.volume, b.volume))
for _, s in ipairs(systems) do s:close() end
ref:close()
