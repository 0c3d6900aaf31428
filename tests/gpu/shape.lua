-- gpu/shape: the CUDA backend of hard shapes against the CPU backend, bit for bit (the same
-- kernel, src/shape/shape_kernel.h, in double without contraction): positions, orientations and
-- move counts after NVT sweeps of pentagons, spheropentagons, dodecahedra and ellipsoids; a GPU
-- checkpoint continued on the CPU; invariants after a longer run; NPT chains of pentagons and
-- ellipsoids (the box and volume-move counts too); triclinic boxes: NVT pentagons and cubes in
-- tilted boxes, NPT length and shear moves (box, tilts and counts too, a checkpoint continued on
-- the CPU); every launch of a sub-sweep (one thread or a team of 2, 4, 8 lanes per cell, a
-- team's list overflowing into the one-thread update). Prints the trial-move rate of each device
-- (information, not a check).
local carlo = require "carlo"
local check = require "check"
if not check.gpu_or_skip("gpu/shape/bitwise") then return end

local function pair(ctor, t)
  t.device = "cpu"
  local c = ctor(t)
  t.device = "gpu"
  local g = ctor(t)
  return c, g
end

local function same(name, c, g)
  local sc, sg = c:snapshot(), g:snapshot()
  local oc, og = c:observe{ pressure = false }, g:observe{ pressure = false }
  local ok = sc.position == sg.position and sc.orientation == sg.orientation and c.step == g.step
    and oc.tried == og.tried and oc.accepted == og.accepted
  local first
  if not ok then
    for i = 1, #sc.position do
      if sc.position[i] ~= sg.position[i] then first = i; break end
    end
  end
  return check.ok(name, ok, ("CPU and GPU differ (first coordinate %s; tried %d / %d, accepted %d / %d)")
    :format(tostring(first), oc.tried, og.tried, oc.accepted, og.accepted))
end

local function timed(sys, sweeps)
  local o0 = sys:observe{ pressure = false }
  local t = carlo.clock()
  sys:run{ sweeps = sweeps }
  sys:sync()
  local dt = carlo.clock() - t
  local o1 = sys:observe{ pressure = false }
  return (o1.tried - o0.tried) / dt
end

local pent = carlo.shapes.pentagon
do
  local c, g = pair(carlo.hard_polygons, { vertices = pent.vertices, N = 4096, phi = 0.676, init = "hex", seed = 1,
                                           delta = 0.05, rotate = 0.2 })
  local rc, rg = timed(c, 50), timed(g, 50)
  same("gpu/shape/bitwise-pentagons", c, g)
  print(("INFO pentagons N = 4096 phi = 0.676: CPU %.3g, GPU %.3g trial moves/s"):format(rc, rg))
end
do
  local c, g = pair(carlo.hard_polygons, { vertices = pent.vertices, sweep_radius = 0.1, N = 1024, phi = 0.5,
                                           seed = 2 })
  c:run{ sweeps = 100 }
  g:run{ sweeps = 100 }
  same("gpu/shape/bitwise-spheropentagons", c, g)
end
do
  local dod = carlo.shapes.dodecahedron.vertices
  local start = carlo.hard_polyhedra{ vertices = dod, N = 512, phi = 0.25, seed = 3, device = "cpu" }
  start:compress{ phi = 0.45, sweeps_between = 2 }
  local c, g = pair(carlo.hard_polyhedra, { vertices = dod, init = start:snapshot(), seed = 3, delta = 0.05,
                                            rotate = 0.1 })
  local rc, rg = timed(c, 20), timed(g, 20)
  same("gpu/shape/bitwise-dodecahedra", c, g)
  print(("INFO dodecahedra N = 512 phi = 0.45: CPU %.3g, GPU %.3g trial moves/s"):format(rc, rg))
  local path = check.tmp .. "/shape_gpu.carlo"
  g:save(path)
  local back = carlo.load(path, { device = "cpu" })
  back:run{ sweeps = 10 }
  g:run{ sweeps = 10 }
  same("gpu/shape/checkpoint-gpu-to-cpu", back, g)
end
do
  local c, g = pair(carlo.hard_ellipsoids, { a = 1, b = 0.6, c = 0.4, N = 500, phi = 0.3, seed = 4 })
  c:run{ sweeps = 50 }
  g:run{ sweeps = 50 }
  same("gpu/shape/bitwise-ellipsoids", c, g)
end
do
  local g = carlo.hard_polygons{ vertices = pent.vertices, N = 65536, phi = 0.676, init = "hex", seed = 5,
                                 device = "gpu" }
  g:run{ sweeps = 500 }
  local ok, why = g:verify()
  check.ok("gpu/shape/invariants", ok, why)
  -- compression on the GPU: the same chain as on the CPU
  local c2, g2 = pair(carlo.hard_polygons, { vertices = pent.vertices, N = 256, phi = 0.4, seed = 6 })
  c2:compress{ phi = 0.6, sweeps_between = 2 }
  g2:compress{ phi = 0.6, sweeps_between = 2 }
  same("gpu/shape/bitwise-compress", c2, g2)
  -- past the closest pair from a random start (overlapping pairs on narrowed cells)
  local c3, g3 = pair(carlo.hard_polygons, { vertices = pent.vertices, N = 2048, phi = 0.3, seed = 7 })
  c3:compress{ phi = 0.65, quiet = true }
  g3:compress{ phi = 0.65, quiet = true }
  same("gpu/shape/bitwise-compress-deep", c3, g3)
end
-- NPT: volume moves (host side on both devices, the cells re-gridded with the box) keep the chains
-- identical; the box, the volume-move counts and a GPU checkpoint continued on the CPU too
local function same_npt(name, c, g)
  local oc, og = c:observe{ pressure = false }, g:observe{ pressure = false }
  local ok = c.volume == g.volume and oc.volume_tried == og.volume_tried and oc.volume_accepted == og.volume_accepted
    and oc.volume_accepted > 0
  check.ok(name .. "-box", ok, ("volume %.17g / %.17g, volume moves accepted %d / %d of %d / %d"):format(c.volume,
    g.volume, oc.volume_accepted, og.volume_accepted, oc.volume_tried, og.volume_tried))
  return same(name, c, g)
end
do
  local c, g = pair(carlo.hard_polygons, { vertices = pent.vertices, N = 1024, phi = 0.6, init = "hex", seed = 7,
                                           pressure = 5, dlnV = 0.002, volume_moves = 2 })
  c:run{ sweeps = 100 }
  g:run{ sweeps = 100 }
  same_npt("gpu/shape/bitwise-npt-pentagons", c, g)
  local path = check.tmp .. "/shape_gpu_npt.carlo"
  g:save(path)
  local back = carlo.load(path, { device = "cpu" })
  back:run{ sweeps = 20 }
  g:run{ sweeps = 20 }
  same_npt("gpu/shape/checkpoint-npt-gpu-to-cpu", back, g)
end
do
  local c, g = pair(carlo.hard_ellipsoids, { a = 1, b = 0.6, c = 0.4, N = 500, phi = 0.3, seed = 8, pressure = 2,
                                             dlnV = 0.005 })
  c:run{ sweeps = 50 }
  g:run{ sweeps = 50 }
  same_npt("gpu/shape/bitwise-npt-ellipsoids", c, g)
end
-- triclinic boxes: the kernels see the cells' skew separations through the tilts, the same
-- double arithmetic on both devices
do
  local c, g = pair(carlo.hard_polygons, { vertices = pent.vertices, N = 2048, box = { 80, 70, xy = 0.37 }, seed = 9,
                                           delta = 0.1, rotate = 0.2 })
  c:run{ sweeps = 100 }
  g:run{ sweeps = 100 }
  same("gpu/shape/bitwise-tilted-pentagons", c, g)
end
do
  local cube = carlo.shapes.cube.vertices
  local c, g = pair(carlo.hard_polyhedra, { vertices = cube, N = 1000, box = { 13, 13.5, 14, xy = 0.2, xz = -0.3,
                                            yz = 0.45 }, init = "sc", seed = 10 })
  c:run{ sweeps = 50 }
  g:run{ sweeps = 50 }
  same("gpu/shape/bitwise-tilted-cubes", c, g)
end
local function same_box(name, c, g)
  local oc, og = c:observe{ pressure = false }, g:observe{ pressure = false }
  local bc, bg = c.box, g.box
  local ok = oc.length_tried == og.length_tried and oc.length_accepted == og.length_accepted
    and oc.shear_tried == og.shear_tried and oc.shear_accepted == og.shear_accepted
    and oc.length_accepted > 0 and oc.shear_accepted > 0
  for k = 1, 6 do ok = ok and bc[k] == bg[k] end
  check.ok(name .. "-box", ok, ("box %s / %s, length moves %d / %d, shear moves %d / %d accepted"):format(
    table.concat(bc, " "), table.concat(bg, " "), oc.length_accepted, og.length_accepted, oc.shear_accepted,
    og.shear_accepted))
  return same(name, c, g)
end
do
  local c, g = pair(carlo.hard_polygons, { vertices = pent.vertices, N = 1024, phi = 0.6, init = "hex", seed = 11,
                                           pressure = 5, box_moves = "triclinic", dlnL = 0.004, dtilt = 0.004,
                                           volume_moves = 2 })
  c:run{ sweeps = 100 }
  g:run{ sweeps = 100 }
  same_box("gpu/shape/bitwise-npt-triclinic-pentagons", c, g)
  local path = check.tmp .. "/shape_gpu_tri.carlo"
  g:save(path)
  local back = carlo.load(path, { device = "cpu" })
  back:run{ sweeps = 20 }
  g:run{ sweeps = 20 }
  same_box("gpu/shape/checkpoint-triclinic-gpu-to-cpu", back, g)
end
do
  local cube = carlo.shapes.cube.vertices
  local c, g = pair(carlo.hard_polyhedra, { vertices = cube, N = 216, phi = 0.55, init = "sc", seed = 12,
                                            pressure = 7, box_moves = "triclinic", dlnL = 0.005, dtilt = 0.01,
                                            volume_moves = 3 })
  c:run{ sweeps = 60 }
  g:run{ sweeps = 60 }
  same_box("gpu/shape/bitwise-npt-triclinic-cubes", c, g)
end
do
  -- a gas near the reduction bound: shear moves cross it and the box is reduced (the move then
  -- placed anew from the host on both devices), the other moves re-gridded on each device
  local c, g = pair(carlo.hard_polygons, { vertices = pent.vertices, N = 1024, box = { 90, 90, xy = 0.49 }, seed = 13,
                                           pressure = 0.1, box_moves = "triclinic", dlnL = 0.005, dtilt = 0.02,
                                           volume_moves = 4 })
  c:run{ sweeps = 150 }
  g:run{ sweeps = 150 }
  local oc, og = c:observe{ pressure = false }, g:observe{ pressure = false }
  check.ok("gpu/shape/triclinic-reductions", oc.reductions > 0 and oc.reductions == og.reductions,
    ("reductions %d CPU, %d GPU"):format(oc.reductions, og.reductions))
  same_box("gpu/shape/bitwise-npt-triclinic-reduced", c, g)
  local ok, why = g:verify()
  check.ok("gpu/shape/triclinic-invariants", ok, why)
end
-- every launch of a sub-sweep (one thread per cell; teams of 2, 4 and 8 lanes sharing a cell's
-- overlap tests) takes the CPU's decisions: dense pentagons, spheropentagons, dodecahedra,
-- ellipsoids, cubes in a tilted box, and a dense cluster of dodecahedra in a box eight times
-- its volume, whose crowded cells overflow the team's list (sized by the mean density) and go
-- to the one-thread update; and the launch reads back as set
do
  local dod = carlo.shapes.dodecahedron.vertices
  local start = carlo.hard_polyhedra{ vertices = dod, N = 256, phi = 0.3, seed = 14, device = "cpu" }
  start:compress{ phi = 0.5, sweeps_between = 2 }
  local snap = start:snapshot()
  local L = snap.box
  local cases = {
    { "pentagons", carlo.hard_polygons, { vertices = pent.vertices, N = 4096, phi = 0.676, init = "hex", seed = 15,
                                          delta = 0.05, rotate = 0.2 }, 30 },
    { "spheropentagons", carlo.hard_polygons, { vertices = pent.vertices, sweep_radius = 0.1, N = 1024, phi = 0.5,
                                                seed = 16 }, 30 },
    { "dodecahedra", carlo.hard_polyhedra, { vertices = dod, init = snap, seed = 17, delta = 0.05, rotate = 0.1 }, 10 },
    { "ellipsoids", carlo.hard_ellipsoids, { a = 1, b = 0.6, c = 0.4, N = 500, phi = 0.3, seed = 18 }, 20 },
    { "tilted-cubes", carlo.hard_polyhedra, { vertices = carlo.shapes.cube.vertices, N = 1000,
                                              box = { 13, 13.5, 14, xy = 0.2, xz = -0.3, yz = 0.45 }, init = "sc",
                                              seed = 19 }, 20 },
    { "overflow", carlo.hard_polyhedra, { vertices = dod, init = { position = snap.position, orientation = snap.orientation,
                                          box = { 2 * L[1], 2 * L[2], 2 * L[3] } }, seed = 20, delta = 0.05,
                                          rotate = 0.1 }, 10 },
  }
  for _, la in ipairs{ { team = 1 }, { team = 2 }, { team = 4 }, { team = 8 }, { team = 8, capped = true },
                       { team = 4, capped = true } } do
    for _, k in ipairs(cases) do
      local name, ctor, args, sweeps = k[1], k[2], k[3], k[4]
      local c, g = pair(ctor, args)
      if not la.capped or g.dim == 3 then
        local tag = ("team%d%s-%s"):format(la.team, la.capped and "-capped" or "", name)
        local got = g:launch(la)
        check.ok("gpu/shape/launch-" .. tag, got.team == la.team and g:launch().capped == (la.capped or false),
          ("launch reads team %s"):format(tostring(got.team)))
        c:run{ sweeps = sweeps }
        g:run{ sweeps = sweeps }
        same("gpu/shape/bitwise-" .. tag, c, g)
      end
      c:close()
      g:close()
    end
  end
end
