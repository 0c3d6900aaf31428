-- lua/hard tilt: hard disks and spheres in triclinic boxes (CPU, seconds):
--  * one configuration described by an orthorhombic box and by the same lattice with a tilt of
--    one lattice vector (xy Ly = Lx; xz Lz = Lx) gives the same psi6, Q4 and Q6 to 1e-5 and the
--    same pressures (g(r) and SDF) to 3e-3: the descriptions differ by the rounding of the box to
--    the cell grid and of the float coordinates in the cells (1e-7 relative), which now and then
--    moves a distance across the edge of a histogram bin 1e-4 wide (a count's weight in the
--    extrapolation to contact is about 1e-3 of P for these sizes); a wrong image or tilt changes
--    them by far more;
--  * hexagonal disks at phi = 0.72 in a box that needs its tilt (an odd number of rows, the
--    last shifted by half a spacing) and fcc spheres at phi = 0.55 in a tilted box give the
--    pressure of the untilted crystal within three combined error bars (short runs). At
--    phi = 0.698, a few hundred disks sit in the liquid-hexatic coexistence, where two short runs
--    of one orthorhombic system differ by five blocking error bars: that density is checked at
--    65536 disks on the GPU (tests/validation/hard_triclinic.lua);
--  * tilted systems run (invariants kept), keep their tilts in NPT and through snapshots and
--    checkpoints, and bad tilts are refused with messages naming them.
local carlo = require "carlo"
local check = require "check"
carlo.threads(2)

local function rel(a, b) return math.abs(a - b) / math.max(math.abs(a), math.abs(b), 1e-300) end

-- one configuration, two descriptions (disks): a fluid equilibrated in an orthorhombic box
do
  local N, phi, Lx = 128, 0.62, 9.0
  local Ly = N * math.pi / 4 / phi / Lx -- about 2 Lx: xy = Lx / Ly is below 1/2
  local s = carlo.hard_disks{ N = N, box = { Lx, Ly }, seed = 3, device = "cpu", quiet = true }
  s:run{ sweeps = 300 }
  local snap = s:snapshot()
  local t = carlo.hard_disks{ init = { position = snap.position,
    box = { snap.box[1], snap.box[2], xy = snap.box[1] / snap.box[2] } }, seed = 4, device = "cpu", quiet = true }
  check.ok("lua/hard/tilt-box-carried", t.box[4] > 0.4 and t.box[4] == t:snapshot().box[4] and s.box[4] == 0,
    ("xy %s"):format(tostring(t.box[4])))
  local a, b = s:observe{ psi6 = true }, t:observe{ psi6 = true }
  local worst, what = 0, ""
  for _, k in ipairs{ "P_gr", "P_sdf", "psi6", "psi6_local", "phi" } do
    local r = rel(a[k], b[k]) / (k:sub(1, 2) == "P_" and 300 or 1)
    if r > worst then worst, what = r, k end
  end
  print(("# disks, one configuration: P_gr %.9g / %.9g, P_sdf %.9g / %.9g, psi6 %.9g / %.9g")
    :format(a.P_gr, b.P_gr, a.P_sdf, b.P_sdf, a.psi6, b.psi6))
  check.ok("lua/hard/tilt-same-configuration-disks", worst < 1e-5,
    ("%s differs by %.3g of its allowance"):format(what, worst * 1e5))
  local ok, why = t:verify()
  check.ok("lua/hard/tilt-verify-disks", ok, why)
  -- a trajectory frame holds the box as GSD's six numbers and the positions of the snapshot
  local tp = check.tmp .. "/hard-tilt.ctr"
  local w = carlo.trajectory(tp, "w")
  t:run{ sweeps = 2, every = 1, trajectory = w }
  w:close()
  local f = carlo.trajectory(tp):frame(-1)
  local fb, fp, sp = f["configuration/box"], f["particles/position"], t:snapshot().position
  local near = #fp == 3 * N
  for i = 1, N do
    near = near and math.abs(fp[3 * i - 2] - sp[2 * i - 1]) < 1e-5 and math.abs(fp[3 * i - 1] - sp[2 * i]) < 1e-5
  end
  check.ok("lua/hard/tilt-frame", #fb == 6 and math.abs(fb[4] - t.box[4]) < 1e-7 and fb[5] == 0 and fb[6] == 0 and near,
    ("box %s, %d coordinates"):format(table.concat({ fb[1], fb[2], fb[3], fb[4], fb[5], fb[6] }, " "), #fp))
  t:run{ sweeps = 200 }
  ok, why = t:verify()
  check.ok("lua/hard/tilt-run-disks", ok and t.box[4] == snap.box[1] / snap.box[2], why)
end

-- spheres: an fcc crystal of 4 x 4 x 10 cubic cells, the third lattice vector tilted by the
-- first (xz = Lx / Lz = 0.4; cells of parallelepipeds that hold at most 12 centres need box
-- sides that can be cut finely enough, which this one can)
do
  local s = carlo.hard_spheres{ N = 4 * 4 * 4 * 10, box = { 4 * 1.64, 4 * 1.64, 10 * 1.64 }, init = "fcc", seed = 5,
                                device = "cpu", quiet = true }
  s:run{ sweeps = 200 }
  local snap = s:snapshot()
  local t = carlo.hard_spheres{ init = { position = snap.position, box = { snap.box[1], snap.box[2], snap.box[3],
    xz = snap.box[1] / snap.box[3] } }, seed = 6, device = "cpu", quiet = true }
  local a, b = s:observe{ steinhardt = true }, t:observe{ steinhardt = true }
  local worst, what = 0, ""
  for _, k in ipairs{ "P_gr", "P_sdf", "Q4", "Q6", "phi" } do
    local r = rel(a[k], b[k]) / (k:sub(1, 2) == "P_" and 300 or 1)
    if r > worst then worst, what = r, k end
  end
  print(("# spheres, one configuration: P_gr %.9g / %.9g, P_sdf %.9g / %.9g, Q6 %.9g / %.9g")
    :format(a.P_gr, b.P_gr, a.P_sdf, b.P_sdf, a.Q6, b.Q6))
  check.ok("lua/hard/tilt-same-configuration-spheres", worst < 1e-5,
    ("%s differs by %.3g of its allowance"):format(what, worst * 1e5))
  -- Widom insertion sees the same free volume (the same test points are not drawn: the cells
  -- differ, so the comparison is statistical)
  local wa = s:observe{ widom = 200000, pressure = false }
  local wb = t:observe{ widom = 200000, pressure = false }
  local pa, pb = wa.p_insert, wb.p_insert
  local err = math.sqrt(pa * (1 - pa) / 200000 + pb * (1 - pb) / 200000)
  check.within("lua/hard/tilt-widom-spheres", pb, pa, err, 4)
end

-- hexagonal disks that need the tilt: nx = 16 per row, 15 rows (odd), the box's second lattice
-- vector shifted by 4.5 spacings; against 16 x 16 in an orthorhombic box (phi = 0.72: measured
-- 8.99 +- 0.12 tilted, 9.07 +- 0.11 and 9.01 +- 0.11 orthorhombic, seeds 3, 2 and 5)
local function hex_tilted(nx, rows, shift, phi)
  local a = math.sqrt(math.pi / 4 / phi * 2 / math.sqrt(3))
  local h = a * math.sqrt(3) / 2
  local Lx, Ly = nx * a, rows * h
  local x = {}
  for j = 0, rows - 1 do
    for i = 0, nx - 1 do
      -- row j sits j / 2 spacings along (the triangular lattice), the box's tilt carries row
      -- `rows` onto row 0
      local px = (i + 0.5 * j) * a - 0.5 * Lx
      local py = (j + 0.5) * h - 0.5 * Ly
      x[#x + 1] = { px, py }
    end
  end
  return x, { Lx, Ly, xy = shift * a / Ly }
end
do
  local phi = 0.72
  local x, box = hex_tilted(16, 15, 4.5, phi)
  local t = carlo.hard_disks{ init = { position = x, box = box }, seed = 7, device = "cpu", quiet = true }
  local u = carlo.hard_disks{ N = 16 * 16, phi = phi, init = "hex", seed = 8, device = "cpu", quiet = true }
  for _, s in ipairs{ t, u } do s:run{ sweeps = 2000 } end
  local pt = t:sample{ sweeps = 10000, every = 5, quiet = true }
  local pu = u:sample{ sweeps = 10000, every = 5, quiet = true }
  print(("# hex disks phi %.3f: tilted (xy %.4f, N %d) P %.4f +- %.4f; orthorhombic (N %d) P %.4f +- %.4f")
    :format(phi, t.box[4], t.N, pt.P.mean, pt.P.err, u.N, pu.P.mean, pu.P.err))
  check.agree("lua/hard/tilt-pressure-hex-disks", pt.P.mean, pt.P.err, pu.P.mean, pu.P.err, 3)
  check.agree("lua/hard/tilt-pressure-hex-disks-gr", pt.P_gr.mean, pt.P_gr.err, pu.P_gr.mean, pu.P_gr.err, 3)
  local ok, why = t:verify()
  check.ok("lua/hard/tilt-hex-verify", ok, why)
  local o = t:observe{ psi6 = true }
  check.ok("lua/hard/tilt-hex-psi6", o.psi6 > 0.6, ("psi6 %.3f: the tilted crystal melted or psi6 sees a wrong image")
    :format(o.psi6))
end

-- fcc spheres at phi = 0.55 as close-packed layers ABC, the layers' hexagonal rows in a tilted
-- box (7 rows, the seventh carried onto the first by xy), against the cubic fcc cell
local function fcc_tilted(nx, rows, layers, shift, phi)
  local a = (math.pi / 6 / phi * math.sqrt(2)) ^ (1 / 3) -- nearest-neighbour distance
  local h, c = a * math.sqrt(3) / 2, a * math.sqrt(2 / 3)
  local Lx, Ly, Lz = nx * a, rows * h, layers * c
  local x = {}
  for l = 0, layers - 1 do
    local ox, oy = (l % 3) * 0.5 * a, (l % 3) * a / (2 * math.sqrt(3))
    for j = 0, rows - 1 do
      for i = 0, nx - 1 do
        x[#x + 1] = { (i + 0.5 * j) * a + ox - 0.5 * Lx, (j + 0.25) * h + oy - 0.5 * Ly, (l + 0.5) * c - 0.5 * Lz }
      end
    end
  end
  return x, { Lx, Ly, Lz, shift * a / Ly, 0, 0 }
end
do
  local phi = 0.55
  local x, box = fcc_tilted(6, 7, 9, 2.5, phi)
  local t = carlo.hard_spheres{ init = { position = x, box = box }, seed = 9, device = "cpu", quiet = true }
  local u = carlo.hard_spheres{ N = 4 * 4 * 4 * 4, phi = phi, init = "fcc", seed = 10, device = "cpu", quiet = true }
  for _, s in ipairs{ t, u } do s:run{ sweeps = 500 } end
  local pt = t:sample{ sweeps = 4000, every = 4, quiet = true }
  local pu = u:sample{ sweeps = 4000, every = 4, quiet = true }
  print(("# fcc spheres phi %.2f: tilted (xy %.4f, N %d) P %.4f +- %.4f; cubic (N %d) P %.4f +- %.4f")
    :format(phi, t.box[4], t.N, pt.P.mean, pt.P.err, u.N, pu.P.mean, pu.P.err))
  check.agree("lua/hard/tilt-pressure-fcc-spheres", pt.P.mean, pt.P.err, pu.P.mean, pu.P.err, 3)
  local q = t:observe{ steinhardt = true }
  check.ok("lua/hard/tilt-fcc-q6", q.Q6 > 0.45, ("Q6 %.3f: not an fcc crystal"):format(q.Q6))
  -- NPT keeps the tilt factors: volume moves scale the box along
  t.pressure = pt.P.mean
  t.dlnV = 2 / t.N
  local L0 = t.box[1]
  t:run{ sweeps = 300 }
  local ok, why = t:verify()
  local vo = t:observe{ pressure = false }
  check.ok("lua/hard/tilt-npt-keeps-tilt", ok and vo.volume_accepted > 0 and t.box[1] ~= L0 and t.box[4] == box[4]
    and t.box[5] == 0 and t.box[6] == 0, why or ("volume moves accepted %d; tilts %s, %s, %s")
    :format(vo.volume_accepted, tostring(t.box[4]), tostring(t.box[5]), tostring(t.box[6])))
  -- a checkpoint continues bit for bit, its tilts with it
  if carlo.load then
    local path = check.tmp .. "/hard-tilt.ckpt"
    t:save(path)
    local z = carlo.load(path, { device = "cpu" })
    t:run{ sweeps = 50 }
    z:run{ sweeps = 50 }
    check.ok("lua/hard/tilt-checkpoint", z.box[4] == t.box[4] and z:snapshot().position == t:snapshot().position)
  end
end

-- compression in a tilted box: the box shrinks with its tilt factors, the cells re-cut
do
  local x = {}
  for j = 0, 11 do for i = 0, 11 do x[#x + 1] = { (i + 0.3 * j) * 2.0 - 12, j * 2.0 - 12 } end end
  local t = carlo.hard_disks{ init = { position = x, box = { 24, 24, xy = 0.3 } }, seed = 11, device = "cpu", quiet = true }
  local phi = t:compress{ phi = 0.65, quiet = true }
  local ok, why = t:verify()
  check.ok("lua/hard/tilt-compress", ok and math.abs(phi - 0.65) < 1e-6 and t.box[4] == 0.3,
    why or ("phi %.9g, xy %s"):format(phi, tostring(t.box[4])))
end

-- bad tilts
local function refused(name, f, pattern)
  local ok, err = pcall(f)
  check.ok(name, not ok and tostring(err):find(pattern) ~= nil, ok and "accepted" or tostring(err))
end
local pos2 = { { 0, 0 }, { 2, 0 }, { 0, 2 }, { 2, 2 } }
refused("lua/hard/tilt-refuse-large", function()
  carlo.hard_disks{ init = { position = pos2, box = { 6, 6, xy = 0.7 } }, device = "cpu", quiet = true }
end, "xy must be a number in %[%-0.5, 0.5%] %(got 0.7")
refused("lua/hard/tilt-refuse-2d-xz", function()
  carlo.hard_disks{ init = { position = pos2, box = { 6, 6, 0, 0.1, 0.2, 0 } }, device = "cpu", quiet = true }
end, "2D box has the tilt xy only")
refused("lua/hard/tilt-refuse-nan", function()
  carlo.hard_disks{ init = { position = pos2, box = { 6, 6, xy = 0 / 0 } }, device = "cpu", quiet = true }
end, "box.xy must be a finite number")
refused("lua/hard/tilt-refuse-both-forms", function()
  carlo.hard_disks{ init = { position = pos2, box = { 6, 6, 0, 0.1, 0, 0, xy = 0.1 } }, device = "cpu", quiet = true }
end, "either as the six GSD numbers")
refused("lua/hard/tilt-refuse-lattice-start", function()
  carlo.hard_disks{ N = 64, box = { 10, 10, xy = 0.2 }, init = "hex", device = "cpu", quiet = true }
end, "starts from given positions only")
refused("lua/hard/tilt-refuse-thin", function()
  carlo.hard_disks{ init = { position = { { 0, 0 } }, box = { 2.1, 2.1, xy = 0.5 } }, device = "cpu", quiet = true }
end, "has no grid of cells")
refused("lua/hard/tilt-refuse-tether", function()
  local d = carlo.hard_disks{ init = { position = pos2, box = { 7, 7, xy = 0.25 } }, device = "cpu", quiet = true }
  d.lambda = 10
end, "tether")
refused("lua/hard/tilt-refuse-decompose", function()
  carlo.hard_disks{ init = { position = pos2, box = { 7, 7, xy = 0.25 } }, device = "cpu", quiet = true, decompose = true }
end, "decompose = true needs an orthorhombic box")
