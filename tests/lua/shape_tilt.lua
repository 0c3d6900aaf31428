-- lua/shape_tilt — hard shapes in triclinic boxes (CPU, fixed seeds):
--  * one configuration described by two boxes of the same lattice (untilted, and tilted by a
--    whole lattice vector: xy = Lx / Ly in 2D, xy = Lx / Ly and yz = -Ly / Lz in 3D) gives the
--    same SDF pressure, psi, Q4, Q6 and S up to the rounding of the cells' float coordinates:
--    every minimum image, bin list and cell neighbourhood goes through the tilts;
--  * pentagons (2D) and cubes (3D) in a tilted box and in the untilted box at the same density
--    give the same SDF pressure within 3.5 combined error bars (the fluid has no shear modulus);
--    no overlaps after the runs (sys:verify: the cells against the plain bin list);
--  * bad boxes refused: non-finite or too large tilts, tilts too large for the cells, tilts a
--    2D box has not, both tilt forms at once;
--  * snapshots and checkpoints carry the tilts; trajectory frames hold the box as GSD's six
--    numbers; sys:png of a tilted box covers the fraction phi of the image;
--  * NPT length and shear moves: counted, tuned, the tilts kept within half a side by the
--    lattice reduction (which happens, and leaves no overlap), a checkpoint continues bit for
--    bit; bad box_moves refused.
local carlo = require "carlo"
local check = require "check"
carlo.threads(1)

local pent = carlo.shapes.pentagon.vertices
local cube = carlo.shapes.cube.vertices
local D = check.tmp .. "/lua-shape-tilt"
os.execute("mkdir -p " .. D)

local function rel(a, b) return math.abs(a - b) / math.max(math.abs(a), math.abs(b), 1e-300) end

-- ---------- the same lattice, two descriptions ----------

do
  local a = carlo.hard_polygons{ vertices = pent, N = 100, phi = 0.55, init = "hex", seed = 3 }
  a:run{ sweeps = 100 }
  local snap, L = a:snapshot(), a.box
  local b = carlo.hard_polygons{ vertices = pent, seed = 3, init = { position = snap.position,
    orientation = snap.orientation, box = { L[1], L[2], xy = L[1] / L[2] } } }
  check.ok("lua/shape_tilt/equivalent-2d-tilted", b.box[4] > 1 and b.cells.m[1] < a.cells.m[1],
    ("box %s, cells %s"):format(table.concat(b.box, " "), table.concat(b.cells.m, "x")))
  local oa, ob = a:observe{ psi = 5 }, b:observe{ psi = 5 }
  for _, k in ipairs{ "P", "psi", "psi6" } do
    check.ok("lua/shape_tilt/equivalent-2d-" .. k, rel(oa[k], ob[k]) < 1e-5,
      ("%.17g untilted, %.17g tilted"):format(oa[k], ob[k]))
  end
  b:run{ sweeps = 50 }
  check.ok("lua/shape_tilt/equivalent-2d-valid", b:verify())
end
do
  local c = carlo.hard_polyhedra{ vertices = cube, N = 216, phi = 0.5, init = "sc", seed = 3 }
  c:run{ sweeps = 30 }
  local snap, M = c:snapshot(), c.box
  local d = carlo.hard_polyhedra{ vertices = cube, seed = 3, init = { position = snap.position,
    orientation = snap.orientation, box = { M[1], M[2], M[3], xy = M[1] / M[2], yz = -M[2] / M[3] } } }
  local oc, od = c:observe{ steinhardt = true, nematic = true }, d:observe{ steinhardt = true, nematic = true }
  for _, k in ipairs{ "P", "Q4", "Q6", "S" } do
    check.ok("lua/shape_tilt/equivalent-3d-" .. k, rel(oc[k], od[k]) < 1e-5,
      ("%.17g untilted, %.17g tilted"):format(oc[k], od[k]))
  end
  d:run{ sweeps = 20 }
  check.ok("lua/shape_tilt/equivalent-3d-valid", d:verify())
end

-- ---------- tilted against untilted at the same density: the SDF pressure ----------

local function pressure(ctor, t, sweeps)
  local s = ctor(t)
  s:tune{ rounds = 5, sweeps = 20 }
  s:run{ sweeps = 200 }
  local r = s:sample{ sweeps = sweeps, every = 10 }
  local ok, why = s:verify()
  return r.P.mean, r.P.err, ok, why, s
end

do
  local N, phi = 100, 0.5
  local L = math.sqrt(N / phi)
  local p0, e0 = pressure(carlo.hard_polygons, { vertices = pent, N = N, box = { L, L }, seed = 21 }, 2500)
  local p1, e1, ok, why, s = pressure(carlo.hard_polygons, { vertices = pent, N = N, box = { L, L, xy = -0.35 },
                                                             seed = 22 }, 2500)
  print(("# pentagons phi = %g: beta P %.4f +- %.4f untilted, %.4f +- %.4f at xy = -0.35"):format(phi, p0, e0, p1, e1))
  check.agree("lua/shape_tilt/pressure-pentagons", p1, e1, p0, e0, 3.5)
  check.ok("lua/shape_tilt/valid-pentagons", ok, why)
  check.ok("lua/shape_tilt/phi-pentagons", rel(s.phi, phi) < 1e-6, s.phi)
end
do
  local N, phi = 125, 0.3
  local L = (N / phi) ^ (1 / 3)
  local p0, e0 = pressure(carlo.hard_polyhedra, { vertices = cube, N = N, box = L, init = "sc", seed = 23 }, 2000)
  local p1, e1, ok, why = pressure(carlo.hard_polyhedra, { vertices = cube, N = N, init = "sc", seed = 24,
                                                           box = { L, L, L, xy = 0.3, xz = -0.2, yz = 0.4 } }, 2000)
  print(("# cubes phi = %g: beta P %.4f +- %.4f untilted, %.4f +- %.4f tilted"):format(phi, p0, e0, p1, e1))
  check.agree("lua/shape_tilt/pressure-cubes", p1, e1, p0, e0, 3.5)
  check.ok("lua/shape_tilt/valid-cubes", ok, why)
end

-- ---------- bad boxes ----------

do
  local function poly(box) return function() carlo.hard_polygons{ vertices = pent, N = 10, box = box, seed = 1 } end end
  local function cubes(box) return function() carlo.hard_polyhedra{ vertices = cube, N = 10, box = box, seed = 1 } end end
  check.raises("lua/shape_tilt/bad-nan", poly{ 20, 20, xy = 0 / 0 }, "tilt xy", "finite")
  check.raises("lua/shape_tilt/bad-inf", cubes{ 20, 20, 20, yz = math.huge }, "tilt yz", "finite")
  check.raises("lua/shape_tilt/bad-large", poly{ 20, 20, xy = 12 }, "tilt xy", "[-10, 10]", "12")
  check.raises("lua/shape_tilt/bad-type", poly{ 20, 20, xy = "0.1" }, "tilt xy", "number")
  check.raises("lua/shape_tilt/bad-thin", cubes{ 6, 6, 6, xy = 3 }, "too thin", "faces")
  check.raises("lua/shape_tilt/bad-2d-xz", poly{ 20, 20, xz = 0.1 }, "2D box", "xy only")
  check.raises("lua/shape_tilt/bad-both-forms", poly{ 20, 20, 0, 0.1, 0, 0, xy = 0.1 }, "either", "not both")
  check.raises("lua/shape_tilt/bad-2d-lz", poly{ 20, 20, 5, 0.1, 0, 0 }, "Lz = 0")
  local s = carlo.hard_polygons{ vertices = pent, N = 10, box = { 20, 20, 0, 0.25, 0, 0 }, seed = 1 }
  check.eq("lua/shape_tilt/six-numbers", s.box[4], 0.25)
end

-- ---------- snapshots, checkpoints, frames, png ----------

do
  local s = carlo.hard_polyhedra{ vertices = cube, N = 64, box = { 8, 8.5, 9, xy = 0.1, xz = -0.3, yz = 0.2 }, seed = 5 }
  s:run{ sweeps = 10 }
  local snap = s:snapshot()
  local b = snap.box
  check.ok("lua/shape_tilt/snapshot-box", b[4] == 0.1 and b[5] == -0.3 and b[6] == 0.2, table.concat(b, " "))
  local t = carlo.hard_polyhedra{ vertices = cube, init = snap, seed = 5 }
  local u = t:snapshot()
  local worst = 0
  for i = 1, #snap.position do worst = math.max(worst, math.abs(u.position[i] - snap.position[i])) end
  check.ok("lua/shape_tilt/snapshot-roundtrip", worst < 1e-5 and t.box[5] == -0.3, "positions moved by " .. worst)
  local path = D .. "/tilted.carlo"
  s:save(path)
  local back = carlo.load(path)
  back:run{ sweeps = 15 }
  s:run{ sweeps = 15 }
  check.ok("lua/shape_tilt/checkpoint", back:snapshot().position == s:snapshot().position and back.box[6] == 0.2)
  local tp = D .. "/tilted.ctr"
  local w = carlo.trajectory(tp, "w")
  s:run{ sweeps = 2, every = 1, trajectory = w }
  w:close()
  local f = carlo.trajectory(tp):frame(1)
  local fb = f["configuration/box"]
  check.ok("lua/shape_tilt/frame-box", #fb == 6 and math.abs(fb[4] - 0.1) < 1e-7 and math.abs(fb[5] + 0.3) < 1e-7
    and math.abs(fb[6] - 0.2) < 1e-7, fb and table.concat({ fb[1], fb[2], fb[3], fb[4], fb[5], fb[6] }, " "))
end
do
  local py = os.getenv("PYTHON") or "python3"
  local here = debug.getinfo(1, "S").source:match("^@(.*)/tests/lua/") or "."
  local s = carlo.hard_polygons{ vertices = pent, N = 200, box = { 25, 20, xy = 0.45 }, seed = 8 }
  s:run{ sweeps = 5 }
  local path = D .. "/tilted.png"
  s:png(path, { size = 400 })
  if os.execute(py .. " -c 'import zlib' 2>/dev/null") then
    io.stdout:flush()
    check.ok("lua/shape_tilt/png-checker-ran",
      os.execute(("%s %s/tests/lib/shape_gsd_check.py --png %s %.17g"):format(py, here, path, s.phi)))
  else
    check.skip("lua/shape_tilt/png-coverage", "python3 not found")
  end
end

-- ---------- NPT: length and shear moves, lattice reduction ----------

local function reduced(b)
  local ok = math.abs(b[4] * b[2]) <= 0.5 * b[1] * (1 + 1e-12)
  if b[3] > 0 then
    ok = ok and math.abs(b[5] * b[3]) <= 0.5 * b[1] * (1 + 1e-12) and math.abs(b[6] * b[3]) <= 0.5 * b[2] * (1 + 1e-12)
  end
  return ok
end

do
  -- a 2D gas near the reduction bound: shear moves cross it, the box is reduced
  local s = carlo.hard_polygons{ vertices = pent, N = 100, box = { 30, 30, xy = 0.49 }, seed = 5, pressure = 0.2,
                                 box_moves = "triclinic", dtilt = 0.05, dlnL = 0.02, volume_moves = 4 }
  local ok = true
  for _ = 1, 10 do
    s:run{ sweeps = 25 }
    ok = ok and reduced(s.box)
  end
  local o = s:observe{ pressure = false }
  check.ok("lua/shape_tilt/npt-reduced-2d", ok and o.reductions > 0, ("reductions %d, box %s"):format(o.reductions,
    table.concat(s.box, " ")))
  check.ok("lua/shape_tilt/npt-counted", o.length_tried + o.shear_tried == 4 * s.step and o.length_accepted > 0
    and o.shear_accepted > 0 and o.volume_tried == 0, ("length %d/%d, shear %d/%d, volume %d"):format(
    o.length_accepted, o.length_tried, o.shear_accepted, o.shear_tried, o.volume_tried))
  check.ok("lua/shape_tilt/npt-valid-2d", s:verify())
  local c = carlo.hard_polyhedra{ vertices = cube, N = 64, box = { 8, 8, 8, xy = 0.45, xz = -0.45, yz = 0.45 }, seed = 5,
                                  pressure = 0.2, box_moves = "triclinic", dtilt = 0.05, dlnL = 0.02, volume_moves = 4 }
  ok = true
  for _ = 1, 8 do
    c:run{ sweeps = 25 }
    ok = ok and reduced(c.box)
  end
  local oc = c:observe{ pressure = false }
  check.ok("lua/shape_tilt/npt-reduced-3d", ok and oc.reductions > 0, ("reductions %d, box %s"):format(oc.reductions,
    table.concat(c.box, " ")))
  check.ok("lua/shape_tilt/npt-valid-3d", c:verify())
  -- a checkpoint continues bit for bit, box moves and all
  local path = D .. "/npt.carlo"
  c:save(path)
  local back = carlo.load(path)
  back:run{ sweeps = 20 }
  c:run{ sweeps = 20 }
  local bb, cb = back.box, c.box
  local same = back:snapshot().position == c:snapshot().position
  for k = 1, 6 do same = same and bb[k] == cb[k] end
  check.ok("lua/shape_tilt/npt-checkpoint", same and back:observe{ pressure = false }.shear_tried == c:observe{
    pressure = false }.shear_tried and back.box_moves == "triclinic")
end
do
  -- anisotropic: the tilts stay 0, the sides change one at a time; tune moves dlnL only
  local s = carlo.hard_polyhedra{ vertices = cube, N = 64, phi = 0.3, init = "sc", seed = 6, pressure = 1,
                                  box_moves = "anisotropic", volume_moves = 2 }
  local t = s:tune{ rounds = 4, sweeps = 20 }
  local b = s.box
  check.ok("lua/shape_tilt/anisotropic", b[4] == 0 and b[5] == 0 and b[6] == 0 and (b[1] ~= b[2] or b[2] ~= b[3])
    and t.dlnL and t.length_acceptance and not t.dtilt and t.dlnL ~= 0.1 / 64, table.concat(b, " "))
  s.box_moves = "triclinic"
  t = s:tune{ rounds = 4, sweeps = 20, shear_target = 0.4 }
  check.ok("lua/shape_tilt/tune-shear", t.dtilt and t.shear_acceptance and s.dtilt == t.dtilt and s.dtilt ~= 0.1 / 64,
    tostring(t.dtilt))
  check.ok("lua/shape_tilt/npt-valid-anisotropic", s:verify())
  check.raises("lua/shape_tilt/bad-box-moves", function() s.box_moves = "shear" end, "box_moves", "triclinic")
  check.raises("lua/shape_tilt/bad-dtilt", function() s.dtilt = 2 end, "dtilt", "(0, 1]")
  check.raises("lua/shape_tilt/bad-box-moves-ctor", function()
    carlo.hard_polygons{ vertices = pent, N = 10, phi = 0.1, seed = 1, box_moves = "sheared" }
  end, "box_moves")
  check.raises("lua/shape_tilt/serial-box-moves", function()
    carlo.hard_polygons{ vertices = pent, N = 10, phi = 0.1, seed = 1, serial = true, box_moves = "anisotropic" }
  end, "serial")
end
