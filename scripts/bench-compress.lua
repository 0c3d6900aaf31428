-- scripts/bench-compress.lua [DEVICE] [N ...] — what a random start costs: hard disks placed at
-- random at phi = 0.45 and compressed to phi = 0.698 (carlo-hard(7), init), hard spheres from
-- phi = 0.30 to 0.50, pentagons from 0.30 to 0.60 and cubes from 0.20 to 0.45 (carlo-shapes(7),
-- sys:compress), for each N (default 16384 65536 262144 1048576); prints the seconds, the sweeps
-- the compression took and whether the result has no overlap. DEVICE: cpu, gpu or auto
-- (default). KINDS (environment): a comma-separated choice of disks, spheres, pentagons, cubes.
--   build/carlo --quiet scripts/bench-compress.lua gpu 65536 1048576
--   KINDS=pentagons,cubes build/carlo --quiet scripts/bench-compress.lua cpu 1024 4096
local carlo = require "carlo"
local device = arg[1] or "auto"
assert(device == "cpu" or device == "gpu" or device == "auto",
  "bench-compress.lua: DEVICE must be cpu, gpu or auto (got " .. tostring(device) .. ")")
local sizes = {}
for i = 2, #arg do sizes[#sizes + 1] = assert(math.tointeger(tonumber(arg[i])), "bench-compress.lua: N must be an integer") end
if #sizes == 0 then sizes = { 16384, 65536, 262144, 1048576 } end
local function shapes(make, vertices)
  return function(p)
    p.vertices = vertices
    return make(p)
  end
end
local wanted = {}
for k in (os.getenv("KINDS") or "disks,spheres,pentagons,cubes"):gmatch("[^,]+") do wanted[k] = true end
for _, kind in ipairs{ { "disks", carlo.hard_disks, 0.45, 0.698 }, { "spheres", carlo.hard_spheres, 0.30, 0.50 },
                       { "pentagons", shapes(carlo.hard_polygons, carlo.shapes.pentagon.vertices), 0.30, 0.60 },
                       { "cubes", shapes(carlo.hard_polyhedra, carlo.shapes.cube.vertices), 0.20, 0.45 } } do
  local name, make, phi0, phi = kind[1], kind[2], kind[3], kind[4]
  for _, N in ipairs(wanted[name] and sizes or {}) do
    local t0 = carlo.clock()
    local s = make{ N = N, phi = phi0, seed = 1, device = device, quiet = true }
    local t1 = carlo.clock()
    s:compress{ phi = phi, quiet = true }
    s:sync()
    local t2 = carlo.clock()
    print(("%-9s N = %8d on %s: placed at phi = %.2f in %.2f s, compressed to %.3f in %.2f s, %d sweeps, %s")
      :format(name, N, s.device, phi0, t1 - t0, phi, t2 - t1, s.step, s:verify() and "no overlap" or "OVERLAPS"))
  end
end
