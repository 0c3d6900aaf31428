-- lua/shape — hard convex shapes on the CPU: the shape library's volumes, free rotation
-- sampling the uniform measure (a single pentagon, a single cube), the checkerboard chain
-- against the serial reference (SDF pressure of pentagons), no overlaps after many sweeps (an
-- all-pairs separating-axis check written here), reproducible chains, checkpoints, bad input.
local carlo = require "carlo"
local check = require "check"

local pent = carlo.shapes.pentagon

-- ---------- the shape library ----------

-- Area by the shoelace formula over the hull's vertices sorted by angle (independent of the C hull).
local function area(v)
  local cx, cy = 0, 0
  for _, p in ipairs(v) do cx, cy = cx + p[1] / #v, cy + p[2] / #v end
  local s = {}
  for i, p in ipairs(v) do s[i] = { p[1], p[2], math.atan(p[2] - cy, p[1] - cx) } end
  table.sort(s, function(a, b) return a[3] < b[3] end)
  local A = 0
  for i = 1, #s do
    local a, b = s[i], s[i % #s + 1]
    A = A + a[1] * b[2] - b[1] * a[2]
  end
  return A / 2
end

for _, name in ipairs({ "pentagon", "square", "hexagon", "triangle" }) do
  local sh = carlo.shapes[name]
  check.ok("lua/shape/area_" .. name, math.abs(area(sh.vertices) - 1) < 1e-12 and math.abs(sh.volume - 1) < 1e-12,
    ("shoelace %.15g, library %.15g"):format(area(sh.vertices), sh.volume))
end
-- 3D: unit volume, and the known ratios of circumradius to edge (cube sqrt(3)/2, octahedron 1/sqrt 2)
do
  local c = carlo.shapes.cube
  local e = 0
  for _, p in ipairs(c.vertices) do e = math.max(e, math.abs(p[1])) end
  check.ok("lua/shape/cube_unit", math.abs(2 * e - 1) < 1e-12 and math.abs(c.volume - 1) < 1e-12,
    ("edge %.15g volume %.15g"):format(2 * e, c.volume))
  local o = carlo.shapes.octahedron -- V = sqrt(2)/3 a^3, R = a / sqrt 2
  local a = (3 / math.sqrt(2)) ^ (1 / 3)
  check.ok("lua/shape/octahedron_unit", math.abs(o.circumradius - a / math.sqrt(2)) < 1e-12,
    ("R %.15g want %.15g"):format(o.circumradius, a / math.sqrt(2)))
  local t = carlo.shapes.truncated_octahedron -- V = 8 sqrt(2) a^3, R = a sqrt(10) / 2
  local at = (1 / (8 * math.sqrt(2))) ^ (1 / 3)
  check.ok("lua/shape/truncated_octahedron_unit", math.abs(t.circumradius - at * math.sqrt(10) / 2) < 1e-12
    and #t.vertices == 24, ("R %.15g want %.15g"):format(t.circumradius, at * math.sqrt(10) / 2))
end

-- ---------- free rotation is uniform ----------

-- Pearson's chi-square of counts against expected; the 0.999 quantile for dof degrees of freedom
-- (Wilson-Hilferty).
local function chi2(counts, expect)
  local x = 0
  for i = 1, #counts do x = x + (counts[i] - expect[i]) ^ 2 / expect[i] end
  local k = #counts - 1
  local q = k * (1 - 2 / (9 * k) + 3.09 * math.sqrt(2 / (9 * k))) ^ 3
  return x, q
end

do
  local s = carlo.hard_polygons{ vertices = pent.vertices, N = 1, box = 4, seed = 5, rotate = math.pi }
  local bins, n = {}, 4000
  for i = 1, 20 do bins[i] = 0 end
  for _ = 1, n do
    s:run{ sweeps = 2 }
    local t = s:snapshot().orientation[1] -- 2D: a 1-D array of angles
    local b = math.floor(t / (2 * math.pi) * 20) + 1
    bins[b] = bins[b] + 1
  end
  local e = {}
  for i = 1, 20 do e[i] = n / 20 end
  local x, q = chi2(bins, e)
  check.ok("lua/shape/single_pentagon_uniform", x < q, ("chi2 %.1f above the 0.999 quantile %.1f"):format(x, q))
end

do -- a cube: w of the unit quaternion has density (2/pi) sqrt(1 - w^2) on [-1, 1] (uniform on S^3),
  -- and the turned z axis's z component is uniform on [-1, 1]
  local s = carlo.hard_polyhedra{ vertices = carlo.shapes.cube.vertices, N = 1, box = 4, seed = 9, rotate = math.pi }
  local nb, n = 16, 4000
  local bw, bz = {}, {}
  for i = 1, nb do bw[i], bz[i] = 0, 0 end
  for _ = 1, n do
    s:run{ sweeps = 4 }
    local q = s:snapshot().orientation -- 3D: N x 4, flat
    local w, x, y = q[1], q[2], q[3]
    local z = 1 - 2 * (x * x + y * y)
    local i = math.min(nb, math.floor((w + 1) / 2 * nb) + 1)
    local j = math.min(nb, math.floor((z + 1) / 2 * nb) + 1)
    bw[i], bz[j] = bw[i] + 1, bz[j] + 1
  end
  local ew, ez = {}, {}
  local function F(w) return (w * math.sqrt(1 - w * w) + math.asin(w)) / math.pi end -- CDF up to a constant
  for i = 1, nb do
    local a, b = -1 + 2 * (i - 1) / nb, -1 + 2 * i / nb
    ew[i] = n * (F(b) - F(a))
    ez[i] = n / nb
  end
  local x1, q1 = chi2(bw, ew)
  local x2, q2 = chi2(bz, ez)
  check.ok("lua/shape/single_cube_uniform", x1 < q1 and x2 < q2,
    ("chi2 of w %.1f (limit %.1f), of the z axis %.1f (limit %.1f)"):format(x1, q1, x2, q2))
end

-- ---------- no overlaps: an all-pairs separating-axis test over the snapshot ----------

local function world(v, x, t)
  local c, s, out = math.cos(t), math.sin(t), {}
  for i, p in ipairs(v) do out[i] = { x[1] + c * p[1] - s * p[2], x[2] + s * p[1] + c * p[2] } end
  return out
end

local function separated(a, b)
  for _, poly in ipairs({ a, b }) do
    for i = 1, #poly do
      local p, q = poly[i], poly[i % #poly + 1]
      local nx, ny = q[2] - p[2], p[1] - q[1]
      local amin, amax, bmin, bmax = math.huge, -math.huge, math.huge, -math.huge
      for _, r in ipairs(a) do local d = r[1] * nx + r[2] * ny; amin, amax = math.min(amin, d), math.max(amax, d) end
      for _, r in ipairs(b) do local d = r[1] * nx + r[2] * ny; bmin, bmax = math.min(bmin, d), math.max(bmax, d) end
      if amax <= bmin or bmax <= amin then return true end
    end
  end
  return false
end

local function count_overlaps(snap, v)
  local L, P, O = snap.box, snap.position, snap.orientation
  if type(P) ~= "table" then P, O = P:totable(), O:totable() end
  local n = 0
  for i = 1, snap.N do
    for j = i + 1, snap.N do
      local dx, dy = P[j][1] - P[i][1], P[j][2] - P[i][2]
      dx = dx - L[1] * math.floor(dx / L[1] + 0.5)
      dy = dy - L[2] * math.floor(dy / L[2] + 0.5)
      if dx * dx + dy * dy < 4 then
        local a = world(v, { 0, 0 }, O[i])
        local b = world(v, { dx, dy }, O[j])
        if not separated(a, b) then n = n + 1 end
      end
    end
  end
  return n
end

do
  local s = carlo.hard_polygons{ vertices = pent.vertices, N = 120, phi = 0.68, init = "hex", seed = 3 }
  s:tune{ rounds = 5, sweeps = 20 }
  s:run{ sweeps = 300 }
  local snap = s:snapshot()
  local n = count_overlaps(snap, pent.vertices)
  local acc = s:observe{ pressure = false }
  check.ok("lua/shape/no_overlaps", n == 0 and s:verify() and acc.accepted > 0.1 * acc.tried,
    ("%d overlapping pairs after 300 sweeps (acceptance %.3f)"):format(n, acc.accepted / acc.tried))
  -- the check can fail: the same snapshot with one pentagon pushed onto its neighbour
  local P = snap.position:totable()
  P[2][1], P[2][2] = P[1][1] + 0.3, P[1][2]
  local bad = { position = P, orientation = snap.orientation:totable(), box = { snap.box[1], snap.box[2] }, N = snap.N }
  check.ok("lua/shape/no_overlaps_detects", count_overlaps(bad, pent.vertices) > 0, "a planted overlap was missed")
  check.raises("lua/shape/planted_overlap_refused", function()
    carlo.hard_polygons{ vertices = pent.vertices, init = bad, seed = 1 }
  end, "overlapping pair")
  local again = carlo.hard_polygons{ vertices = pent.vertices, init = snap, seed = 1 }:snapshot()
  local worst, turned = 0, 0
  for i = 1, #snap.position do worst = math.max(worst, math.abs(again.position[i] - snap.position[i])) end
  for i = 1, snap.N do turned = turned + (again.orientation[i] ~= snap.orientation[i] and 1 or 0) end
  check.ok("lua/shape/snapshot_init", worst < 1e-5 and turned == 0 and again.step == snap.step,
    ("positions moved by %.3g, %d orientations changed"):format(worst, turned))
end

-- ---------- reproducible chains, checkpoints ----------

local function same(a, b)
  for _, key in ipairs({ "position", "orientation" }) do
    local x, y = a[key], b[key]
    if #x ~= #y then return false end
    for i = 1, #x do if x[i] ~= y[i] then return false end end
  end
  return true
end

for _, kind in ipairs({ "polygons", "polyhedra" }) do
  local function make(seed)
    if kind == "polygons" then
      return carlo.hard_polygons{ vertices = pent.vertices, N = 60, phi = 0.6, init = "hex", seed = seed }
    end
    return carlo.hard_polyhedra{ vertices = carlo.shapes.dodecahedron.vertices, N = 27, phi = 0.3, init = "sc", seed = seed }
  end
  local a, b, c = make(11), make(11), make(12)
  a:run{ sweeps = 40 }
  b:run{ sweeps = 40 }
  c:run{ sweeps = 40 }
  check.ok("lua/shape/reproducible_" .. kind, same(a:snapshot(), b:snapshot()) and not same(a:snapshot(), c:snapshot()),
    "the same seed gave different chains, or different seeds the same")
  local path = check.tmp .. "/shape_" .. kind .. ".carlo"
  b:save(path)
  local d = carlo.load(path)
  a:run{ sweeps = 25 }
  d:run{ sweeps = 25 }
  check.ok("lua/shape/checkpoint_" .. kind, same(a:snapshot(), d:snapshot()) and d.step == a.step,
    "a loaded checkpoint continued differently")
end

-- ---------- trajectory frames: positions and orientations as quaternions ----------

do
  local s = carlo.hard_polygons{ vertices = pent.vertices, N = 20, phi = 0.3, seed = 13 }
  local path = check.tmp .. "/shape.ctr"
  local w = carlo.trajectory(path, "w")
  s:run{ sweeps = 10, every = 5, trajectory = w }
  w:close()
  local f = carlo.trajectory(path):frame(-1)
  local snap = s:snapshot()
  local worst = 0
  for i = 1, snap.N do
    local t = snap.orientation[i]
    local q = { f["particles/orientation"][4 * i - 3], f["particles/orientation"][4 * i] }
    worst = math.max(worst, math.abs(q[1] - math.cos(t / 2)), math.abs(q[2] - math.sin(t / 2)))
    for a = 1, 2 do
      worst = math.max(worst, math.abs(f["particles/position"][3 * (i - 1) + a] - snap.position[2 * (i - 1) + a]))
    end
  end
  check.ok("lua/shape/trajectory", worst < 1e-5 and f["configuration/step"][1] == 10,
    ("frame and snapshot differ by %.3g"):format(worst))
end

-- ---------- the checkerboard against the serial reference ----------

do
  local function pressure(serial)
    local s = carlo.hard_polygons{ vertices = pent.vertices, N = 30, phi = 0.55, init = "hex", seed = 21,
                                   serial = serial, delta = 0.15, rotate = 0.5 }
    s:run{ sweeps = 500 }
    -- a coarse SDF fit: the same estimator on both sides, less noisy than the default
    local r = s:sample{ sweeps = serial and 12000 or 6000, every = serial and 4 or 2,
                        sdf = { dx = 2e-3, xmax = 0.06, degree = 2 } }
    return r.P.mean, r.P.err
  end
  local a, ea = pressure(false)
  local b, eb = pressure(true)
  check.agree("lua/shape/serial_vs_checkerboard", a, ea, b, eb, 3)
  check.ok("lua/shape/serial_vs_checkerboard_errors", ea < 0.03 * a and eb < 0.03 * b,
    ("error bars %.3g, %.3g too wide to mean anything"):format(ea, eb))
end

-- ---------- 3D shapes and ellipsoids run ----------

do
  local s = carlo.hard_ellipsoids{ a = 1, b = 0.6, c = 0.4, N = 40, phi = 0.3, seed = 2 }
  s:run{ sweeps = 50 }
  local e = carlo.hard_ellipses{ a = 0.5, b = 0.5, N = 50, phi = 0.5, init = "hex", seed = 2 }
  e:run{ sweeps = 50 }
  local p = carlo.hard_polyhedra{ vertices = carlo.shapes.tetrahedron.vertices, sweep_radius = 0.05, N = 80,
                                  phi = 0.2, seed = 4 }
  p:run{ sweeps = 50 }
  check.ok("lua/shape/others_run", s:verify() and e:verify() and p:verify() and s.step == 50,
    "a 3D or ellipse system broke")
end

-- ---------- compression ----------

do
  local s = carlo.hard_polygons{ vertices = pent.vertices, N = 60, phi = 0.3, seed = 8 }
  local phi = s:compress{ phi = 0.6, sweeps_between = 2 }
  local snap = s:snapshot()
  check.ok("lua/shape/compress", math.abs(phi - 0.6) < 1e-5 and math.abs(s.phi - phi) < 1e-12
    and count_overlaps(snap, pent.vertices) == 0 and s:verify(),
    ("phi %.9g after compression, %d overlaps"):format(phi, count_overlaps(snap, pent.vertices)))
end

-- past the closest pair: 1024 pentagons from 0.3 to 0.65 within 1500 sweeps (a shrink that
-- overlaps nothing is bounded by the closest of N pairs: 8257 sweeps reached only 0.6 that way)
do
  local s = carlo.hard_polygons{ vertices = pent.vertices, N = 1024, phi = 0.3, seed = 3 }
  local ok, err = pcall(function() return s:compress{ phi = 0.65, max_sweeps = 1500, quiet = true } end)
  local n = count_overlaps(s:snapshot(), pent.vertices)
  check.ok("lua/shape/compress-past-closest-pair", ok and math.abs(s.phi - 0.65) < 1e-5 and n == 0 and s:verify(),
    ("phi %.6f after %d sweeps, %d overlaps: %s"):format(s.phi, s.step, n, tostring(err)))
  -- stopped on the way, with pairs overlapping on its narrowed cells: an error, and the box
  -- grown until none overlaps
  local ok_st, err_st = pcall(function() return s:compress{ phi = 0.75, max_sweeps = 3, quiet = true } end)
  n = count_overlaps(s:snapshot(), pent.vertices)
  check.ok("lua/shape/compress-stopped-valid", not ok_st and tostring(err_st):find("after 3 sweeps", 1, true)
    and n == 0 and s:verify() and s.phi > 0.64 and s.phi < 0.75, ("%s; %d overlaps"):format(tostring(err_st), n))
  -- jammed (64 pentagons cannot reach 0.9 from a random packing): an error, no overlap left
  local jam = carlo.hard_polygons{ vertices = pent.vertices, N = 64, phi = 0.5, seed = 5 }
  local ok_jam, err_jam = pcall(function() return jam:compress{ phi = 0.9, quiet = true } end)
  n = count_overlaps(jam:snapshot(), pent.vertices)
  check.ok("lua/shape/compress-jammed-valid", not ok_jam and tostring(err_jam):find("jammed at phi", 1, true)
    and n == 0 and jam:verify() and jam.phi > 0.5 and jam.phi < 0.9, ("%s; %d overlaps"):format(tostring(err_jam), n))
end

-- Ctrl-C in a long compression (a child process, one SIGINT as a terminal sends): it stops
-- within the round and exits 130
local r = check.interrupt("shape-compress-int", [[
local s = carlo.hard_polygons{ vertices = carlo.shapes.pentagon.vertices, N = 16384, phi = 0.3, seed = 1 }
io.stderr:write("compressing\n")
s:compress{ phi = 0.69, quiet = true }
io.stderr:write("finished\n")
]], 2, true)
if r then
  check.ok("lua/shape/ctrl-c-compress", not r.ok and r.how == "exit" and r.code == 130 and r.took < 10
    and r.said:find("compressing", 1, true) and r.said:find("interrupted", 1, true)
    and not r.said:find("finished", 1, true), r.why)
end

-- ---------- the bcc start: truncated octahedra in their crystal ----------

do
  local t = carlo.hard_polyhedra{ vertices = carlo.shapes.truncated_octahedron.vertices, N = 2 * 3 ^ 3, phi = 0.7,
                                  init = "bcc", seed = 1 }
  t:run{ sweeps = 20 }
  check.ok("lua/shape/bcc", t:verify() and math.abs(t.phi - 0.7) < 1e-6, "the bcc crystal broke")
  check.raises("lua/shape/bcc_count", function()
    carlo.hard_polyhedra{ vertices = carlo.shapes.truncated_octahedron.vertices, N = 50, phi = 0.5, init = "bcc" }
  end, "N = 2 n^3")
end

-- ---------- bad input ----------

check.raises("lua/shape/unknown_key", function()
  carlo.hard_polygons{ vertices = pent.vertices, N = 4, phi = 0.1, colour = 1 }
end, "colour")
check.raises("lua/shape/no_vertices", function() carlo.hard_polygons{ N = 4, phi = 0.1 } end, "vertices")
check.raises("lua/shape/flat", function()
  carlo.hard_polygons{ vertices = { { 0, 0 }, { 1, 0 }, { 2, 0 } }, N = 4, phi = 0.1 }
end, "no area")
if not check.has_gpu() then
  check.raises("lua/shape/gpu", function()
    carlo.hard_polygons{ vertices = pent.vertices, N = 4, phi = 0.1, device = "gpu", seed = 1 }
  end, "device = \"gpu\"")
end
check.raises("lua/shape/serial_gpu", function()
  carlo.hard_polygons{ vertices = pent.vertices, N = 4, phi = 0.1, serial = true, device = "cpu", seed = 1, moves_per_cell = 0 }
end, "moves_per_cell")
check.raises("lua/shape/delta", function()
  carlo.hard_polygons{ vertices = pent.vertices, N = 4, phi = 0.1, delta = -1 }
end, "delta")
check.raises("lua/shape/lattice_too_dense", function()
  carlo.hard_polygons{ vertices = pent.vertices, N = 100, phi = 0.95, init = "hex" }
end, "overlapping")
check.raises("lua/shape/rotate_set", function()
  local s = carlo.hard_polygons{ vertices = pent.vertices, N = 4, phi = 0.1, seed = 1 }
  s.rotate = 4
end, "rotate must be in (0, pi]")
