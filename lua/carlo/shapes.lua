-- carlo.shapes: vertex lists of common hard shapes for carlo.hard_polygons and
-- carlo.hard_polyhedra, each scaled to unit volume (unit area in 2D) and centred on its
-- centroid. The volume is computed from the vertices (the convex hull, carlo.shape_hull), never
-- typed in, and so are the circumradius and inradius.
--   local sh = carlo.shapes.pentagon
--   carlo.hard_polygons{ vertices = sh.vertices, N = 4096, phi = 0.676, init = "hex" }
-- Each entry: { name =, dim =, vertices = { {x, y [, z]}, ... }, volume = 1 (as computed),
-- circumradius =, inradius = }.
local carlo = require "carlo"

local shapes = {}

-- The raw points, scaled so that their hull has unit volume, recentred.
local function unit(name, dim, pts)
  local h = carlo.shape_hull(pts)
  local f = (1 / h.volume) ^ (1 / dim)
  local v = {}
  for i, p in ipairs(h.vertices) do
    local q = {}
    for a = 1, dim do q[a] = p[a] * f end
    v[i] = q
  end
  local g = carlo.shape_hull(v)
  shapes[name] = { name = name, dim = dim, vertices = g.vertices, volume = g.volume,
                   circumradius = g.circumradius, inradius = g.inradius }
end

-- Regular n-gon.
local function ngon(n)
  local p = {}
  for k = 0, n - 1 do p[#p + 1] = { math.cos(2 * math.pi * k / n), math.sin(2 * math.pi * k / n) } end
  return p
end

-- Every sign combination of (x, y, z) over the coordinates that are not zero.
local function signs(x, y, z, out)
  for _, sx in ipairs(x == 0 and { 1 } or { 1, -1 }) do
    for _, sy in ipairs(y == 0 and { 1 } or { 1, -1 }) do
      for _, sz in ipairs(z == 0 and { 1 } or { 1, -1 }) do
        out[#out + 1] = { sx * x, sy * y, sz * z }
      end
    end
  end
  return out
end

unit("pentagon", 2, ngon(5))
unit("square", 2, ngon(4))
unit("hexagon", 2, ngon(6))
unit("triangle", 2, ngon(3))
unit("cube", 3, signs(1, 1, 1, {}))
unit("tetrahedron", 3, { { 1, 1, 1 }, { 1, -1, -1 }, { -1, 1, -1 }, { -1, -1, 1 } })
unit("octahedron", 3, { { 1, 0, 0 }, { -1, 0, 0 }, { 0, 1, 0 }, { 0, -1, 0 }, { 0, 0, 1 }, { 0, 0, -1 } })
do
  local phi = (1 + math.sqrt(5)) / 2
  local p = signs(1, 1, 1, {})
  signs(0, 1 / phi, phi, p)
  signs(1 / phi, phi, 0, p)
  signs(phi, 0, 1 / phi, p)
  unit("dodecahedron", 3, p)
end
do -- every permutation of (0, 1, 2) with every sign
  local p = {}
  for _, t in ipairs({ { 0, 1, 2 }, { 0, 2, 1 }, { 1, 0, 2 }, { 1, 2, 0 }, { 2, 0, 1 }, { 2, 1, 0 } }) do
    signs(t[1], t[2], t[3], p)
  end
  unit("truncated_octahedron", 3, p)
end

carlo.shapes = shapes
return shapes
