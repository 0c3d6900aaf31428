-- lua/shape_gsd — shape trajectories exported to GSD for viewers: particles/orientation as
-- quaternions (w, x, y, z) and particles/type_shapes (HOOMD's shape specification: Polygon,
-- ConvexPolyhedron, Ellipsoid) in every frame; the export read back by python3-gsd
-- (tests/lib/shape_gsd_check.py) against the trajectory and the shape's hull; sys:png of 2D
-- shapes, its pixels covered in the fraction phi.
local carlo = require "carlo"
local check = require "check"
local D = check.tmp .. "/lua-shape-gsd"
os.execute("mkdir -p " .. D)
local CARLO = os.getenv("CARLO") or "build/carlo"

local function json_list(v, dim)
  local rows = {}
  for i, p in ipairs(v) do
    local c = {}
    for a = 1, dim do c[a] = ("%.17g"):format(p[a]) end
    rows[i] = "[" .. table.concat(c, ", ") .. "]"
  end
  return "[" .. table.concat(rows, ", ") .. "]"
end

-- The frame's type_shapes chunk as a string (one row, NUL-terminated).
local function type_shapes(f)
  local a = f["particles/type_shapes"]
  if not a then return nil end
  local t = {}
  for i = 1, #a do
    if a[i] == 0 then break end
    t[#t + 1] = string.char(a[i])
  end
  return table.concat(t)
end

local cases = {
  { name = "pentagons", make = function()
      return carlo.hard_polygons{ vertices = carlo.shapes.pentagon.vertices, N = 30, phi = 0.3, seed = 3 }
    end, dim = 2, type = "Polygon", vertices = carlo.shapes.pentagon.vertices, r = 0 },
  { name = "rounded_cubes", make = function()
      return carlo.hard_polyhedra{ vertices = carlo.shapes.cube.vertices, sweep_radius = 0.1, N = 30,
                                   phi = 0.2, seed = 3 }
    end, dim = 3, type = "ConvexPolyhedron", vertices = carlo.shapes.cube.vertices, r = 0.1 },
  { name = "ellipsoids", make = function()
      return carlo.hard_ellipsoids{ a = 0.5, b = 0.8, c = 1.3, N = 30, phi = 0.2, seed = 3 }
    end, dim = 3, type = "Ellipsoid", axes = { 0.5, 0.8, 1.3 } },
  { name = "ellipses", make = function()
      return carlo.hard_ellipses{ a = 1.2, b = 0.4, N = 30, phi = 0.2, seed = 3 }
    end, dim = 2, type = "Ellipsoid", axes = { 1.2, 0.4, 0.4 } },
}

local names = {}
for _, c in ipairs(cases) do
  local s = c.make()
  local path = D .. "/" .. c.name .. ".ctr"
  local w = carlo.trajectory(path, "w")
  s:run{ sweeps = 6, every = 3, trajectory = w }
  w:close()
  local expect
  if c.axes then
    expect = ('{"dim": %d, "type": "Ellipsoid", "a": %.17g, "b": %.17g, "c": %.17g}'):format(c.dim, c.axes[1],
      c.axes[2], c.axes[3])
  else
    local hull = carlo.shape_hull(c.vertices)
    expect = ('{"dim": %d, "type": "%s", "rounding_radius": %.17g, "vertices": %s}'):format(c.dim, c.type, c.r,
      json_list(hull.vertices, c.dim))
  end
  local e = assert(io.open(D .. "/" .. c.name .. ".expect", "w"))
  e:write(expect, "\n")
  e:close()
  -- every frame of the trajectory carries the shape
  local tr = carlo.trajectory(path)
  local ok, why = #tr >= 2, "frames " .. #tr
  for k = 1, #tr do
    local js = type_shapes(tr:frame(k))
    if not (js and js:find('"type": "' .. c.type .. '"', 1, true)) then
      ok, why = false, ("frame %d: type_shapes %s"):format(k, tostring(js))
      break
    end
  end
  check.ok("lua/shape_gsd/frames-" .. c.name, ok, why)
  check.ok("lua/shape_gsd/export-" .. c.name,
    os.execute(("%s export --quiet %s %s"):format(CARLO, path, D .. "/" .. c.name .. ".gsd")))
  names[#names + 1] = c.name
end

local py = os.getenv("PYTHON") or "python3"
local here = debug.getinfo(1, "S").source:match("^@(.*)/tests/lua/") or "."

-- sys:png: a PNG of the configuration (2D), its coverage the packing fraction
do
  local s = carlo.hard_polygons{ vertices = carlo.shapes.pentagon.vertices, N = 200, phi = 0.45, seed = 8 }
  s:run{ sweeps = 5 }
  local path = D .. "/pentagons.png"
  s:png(path, { size = 400 })
  local f = io.open(path, "rb")
  local head = f and f:read(24)
  if f then f:close() end
  local w = head and string.unpack(">I4", head, 17)
  check.ok("lua/shape_gsd/png", head and head:sub(2, 4) == "PNG" and w == 400, "width " .. tostring(w))
  if os.execute(py .. " -c 'import zlib' 2>/dev/null") then
    io.stdout:flush()
    check.ok("lua/shape_gsd/png-checker-ran",
      os.execute(("%s %s/tests/lib/shape_gsd_check.py --png %s %.17g"):format(py, here, path, s.phi)))
  else
    check.skip("lua/shape_gsd/png-coverage", "python3 not found")
  end
  local e = carlo.hard_ellipses{ a = 1.2, b = 0.4, N = 100, phi = 0.3, seed = 8 }
  e:png(D .. "/ellipses.png", { size = 300, period = 1 })
  if os.execute(py .. " -c 'import zlib' 2>/dev/null") then
    io.stdout:flush()
    check.ok("lua/shape_gsd/png-checker-ran-ellipses", os.execute(("%s %s/tests/lib/shape_gsd_check.py --png %s %.17g")
      :format(py, here, D .. "/ellipses.png", e.phi)))
  end
  local c = carlo.hard_polyhedra{ vertices = carlo.shapes.cube.vertices, N = 8, phi = 0.1, seed = 1 }
  check.raises("lua/shape_gsd/png-3d", function() c:png(D .. "/c.png") end, "2D", "GSD")
  check.raises("lua/shape_gsd/png-size", function() s:png(D .. "/x.png", { size = 8 }) end, "size", "8")
end
if not os.execute(py .. " -c 'import numpy' 2>/dev/null") then
  check.skip("lua/shape_gsd/read", "python3 with numpy not found")
else
  io.stdout:flush()
  local ok = os.execute(("%s %s/tests/lib/shape_gsd_check.py %s %s"):format(py, here, D, table.concat(names, " ")))
  check.ok("lua/shape_gsd/checker-ran", ok)
end
