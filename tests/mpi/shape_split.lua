-- tests/mpi/shape_split.lua OUT [CHECKPOINT] — hard shapes split into slabs of cell layers over
-- however many ranks run this (decompose = true), against the same systems whole on every rank:
-- the gathered positions and orientations (a fingerprint of their exact bits), the move counts
-- and the pressure and order estimators must be identical. Pentagons at phi = 0.6 with 16
-- layers (3 ranks do not divide them), cubes at phi = 0.4 with 6 layers (nor do 4), ellipsoids,
-- pentagons in NPT (every volume move decided alike on every rank: tried on each rank's slab
-- and the verdicts added up while the cut stays, on the whole grid gathered when it changes),
-- cubes with length moves of the box, a compression that takes layers away (the slabs cut
-- again) and one past the closest pair from a random start, two split systems advanced
-- together, and the pentagons carried on to 500 sweeps with no overlap and no particle lost;
-- what cannot be split is refused. Rank 0 writes the fingerprints to OUT
-- (tests/mpi/shape_split.sh compares the files of 1 to 4 ranks) and the pentagons after 100
-- sweeps to OUT.ckpt. With CHECKPOINT, only this: a checkpoint saved on
-- another number of ranks is loaded, split over these ranks, continued 50 sweeps as the whole
-- system would be, and saved again to OUT.ckpt (the .sh chains 4 -> 2 -> 1 ranks).
-- SHAPE_SPLIT_DEVICE=gpu splits the systems over the ranks' GPUs (tests/gpu/shape_mpi.sh), the
-- whole ones staying on the CPU: the same chains, the GPU's being the CPU's bit for bit.
local carlo = require "carlo"
local out, load_from = assert(arg[1], "usage: shape_split.lua OUT [CHECKPOINT]"), arg[2]
local n = carlo.mpi.size
local dev = os.getenv("SHAPE_SPLIT_DEVICE") or "cpu"
local group = dev == "gpu" and "gpu/shape_mpi/" or "mpi/shape_split/"
local lines = {}
local checks = require "check"
-- a check passes when it holds on every rank
local check = checks.on_all_ranks(group, "_np" .. n .. (load_from and "_again" or ""))

-- the exact bits of every position and orientation, by tag
local function fingerprint(sys)
  local h = -3750763034362895579 -- 0xcbf29ce484222325
  local snap = sys:snapshot()
  for _, field in ipairs{ "position", "orientation" } do
    local t = snap[field]:totable()
    for _, row in ipairs(t) do
      for _, x in ipairs(type(row) == "table" and row or { row }) do
        local s = ("%a"):format(x)
        for i = 1, #s do h = (h ~ s:byte(i)) * 1099511628211 end
      end
    end
  end
  return ("%016x"):format(h)
end

local function pair(make, args)
  local split_args, whole_args = { decompose = true, device = dev }, { device = "cpu" }
  for k, v in pairs(args) do split_args[k], whole_args[k] = v, v end
  return make(split_args), make(whole_args)
end

local function same_chain(name, a, b, opt)
  local fa, fb = fingerprint(a), fingerprint(b)
  check(name .. "_state", fa == fb, ("fingerprint %s split, %s whole"):format(fa, fb))
  local oa, ob = a:observe(opt), b:observe(opt)
  local same = true
  for k, v in pairs(ob) do
    if oa[k] ~= v then same = false end
  end
  check(name .. "_observe", same and oa.tried == ob.tried,
    ("P %.17g vs %.17g, accepted %d vs %d"):format(oa.P, ob.P, oa.accepted, ob.accepted))
  lines[#lines + 1] = ("%s %s step %d P %.17g accepted %d"):format(name, fa, a.step, oa.P, oa.accepted)
end

local pent = carlo.shapes.pentagon
local pentagons = { vertices = pent.vertices, N = 400, phi = 0.6, init = "hex", seed = 3 }

local function cases()
  -- pentagons: 24 x 16 cells
  local pa, pb = pair(carlo.hard_polygons, pentagons)
  check("pentagons_split", pa.decomposed and not pb.decomposed and
    pa.layers[2] - pa.layers[1] + 1 >= pa.cells.m[2] // n, "not decomposed")
  pa:run{ sweeps = 100 }
  pb:run{ sweeps = 100 }
  same_chain("pentagons", pa, pb, { psi = 5 })
  pa:save(out .. ".ckpt") -- rank 0 writes it after a gather from every rank

  -- cubes from fcc: 6 layers along z
  local ca, cb = pair(carlo.hard_polyhedra, { vertices = carlo.shapes.cube.vertices, N = 500, phi = 0.4,
    init = "fcc", seed = 4, rotate = 0.3 })
  check("cubes_layers", ca.cells.m[3] == 6, ("%d layers"):format(ca.cells.m[3]))
  ca:run{ sweeps = 40 }
  cb:run{ sweeps = 40 }
  same_chain("cubes", ca, cb, { steinhardt = true, nematic = true })

  -- ellipsoids
  local ea, eb = pair(carlo.hard_ellipsoids, { a = 1, b = 0.6, c = 0.4, N = 500, phi = 0.3, init = "fcc",
    seed = 5 })
  ea:run{ sweeps = 40 }
  eb:run{ sweeps = 40 }
  same_chain("ellipsoids", ea, eb)

  -- NPT pentagons: a volume move after every sweep, the grid changing size on the way
  local na, nb = pair(carlo.hard_polygons, { vertices = pent.vertices, N = 400, phi = 0.55, init = "hex",
    seed = 6, pressure = 4, dlnV = 0.01 })
  na:run{ sweeps = 100 }
  nb:run{ sweeps = 100 }
  same_chain("pentagons_npt", na, nb)
  check("pentagons_npt_moved", na:observe().volume_accepted > 0 and na:observe().volume_accepted <
    na:observe().volume_tried, "no volume move accepted, or all")

  -- NPT pentagons at a low pressure: the box grows, and the grid gains layers on the way (those
  -- box moves gather the whole grid; the others are tried on each rank's slab)
  local ga, gb = pair(carlo.hard_polygons, { vertices = pent.vertices, N = 400, phi = 0.55, init = "hex",
    seed = 9, pressure = 0.3, dlnV = 0.005 })
  local g0 = ga.cells.m[2]
  ga:run{ sweeps = 100 }
  gb:run{ sweeps = 100 }
  same_chain("pentagons_npt_grow", ga, gb)
  check("pentagons_npt_grow_layers", ga.cells.m[2] > g0 and ga.layers[2] <= ga.cells.m[2],
    ("%d layers before, %d after"):format(g0, ga.cells.m[2]))

  -- cubes with length moves of the box (it stays orthorhombic)
  local la, lb = pair(carlo.hard_polyhedra, { vertices = carlo.shapes.cube.vertices, N = 500, phi = 0.4,
    init = "fcc", seed = 7, pressure = 1, box_moves = "anisotropic", dlnL = 0.01 })
  la:run{ sweeps = 30 }
  lb:run{ sweeps = 30 }
  same_chain("cubes_lengths", la, lb)
  local bl, bw = la.box, lb.box
  check("cubes_lengths_box", bl[1] == bw[1] and bl[2] == bw[2] and bl[3] == bw[3] and bl[1] ~= bl[3],
    ("box %.17g %.17g %.17g"):format(bl[1], bl[2], bl[3]))

  -- compression: the grid loses layers on the way, and the slabs are cut again
  local xa, xb = pair(carlo.hard_polygons, { vertices = pent.vertices, N = 400, phi = 0.45, init = "hex",
    seed = 8 })
  local m0 = xa.cells.m[2]
  xa:compress{ phi = 0.55 }
  xb:compress{ phi = 0.55 }
  check("pentagons_compress_layers", xa.cells.m[2] < m0 and xa.layers[2] <= xa.cells.m[2],
    ("%d layers before, %d after"):format(m0, xa.cells.m[2]))
  xa:run{ sweeps = 30 }
  xb:run{ sweeps = 30 }
  same_chain("pentagons_compress", xa, xb)
  -- compression past the closest pair (overlaps parted by the sweeps, on cells planned for
  -- them), from a random start: every rank takes the same steps
  local qa, qb = pair(carlo.hard_polygons, { vertices = pent.vertices, N = 400, phi = 0.3, seed = 9 })
  checks.split_compress(check, same_chain, "pentagons_compress_deep", qa, qb, 0.65, 1e-5, 10)

  -- carlo.advance of split systems stays on the main thread (their exchanges call MPI)
  local va, vb = {}, {}
  for k = 1, 2 do
    va[k], vb[k] = pair(carlo.hard_polygons, { vertices = pent.vertices, N = 200, phi = 0.5, init = "hex",
      seed = 20 + k })
  end
  carlo.advance(va, 30)
  carlo.advance(vb, 30)
  check("advance_together", fingerprint(va[1]) == fingerprint(vb[1]) and
    fingerprint(va[2]) == fingerprint(vb[2]), "split systems advanced together differ")

  -- sample: the pressure's mean and error bar from the split system are the whole one's
  checks.split_sample(check, "pentagons_sample", pa, pb, { sweeps = 50, every = 10 })

  -- on to 500 sweeps: every particle still there once, no overlap, the same chain
  checks.split_carry_on(check, same_chain, "pentagons_500", pa, pb, 350, 500)

  -- what cannot be split is refused, saying why
  local function refused(name, args, want)
    local t = { decompose = true, device = dev }
    for k, v in pairs(args) do t[k] = v end
    local okc, err = pcall(carlo.hard_polygons, t)
    check(name, not okc and tostring(err):find(want, 1, true), tostring(err))
  end
  refused("refuse_serial", { vertices = pent.vertices, N = 100, phi = 0.3, serial = true }, "serial reference")
  refused("refuse_triclinic", { vertices = pent.vertices, N = 100, phi = 0.3, pressure = 1,
    box_moves = "triclinic" }, "triclinic")
  refused("refuse_tilted", { vertices = pent.vertices, N = 100, box = { 20, 20, xy = 0.2 } }, "orthorhombic box")
  if n > 2 then
    refused("refuse_too_few_layers", { vertices = pent.vertices, N = 2, box = { 40, 5 } }, -- 30 x 2 cells
      "2 cell layers along y, fewer than the " .. n .. " MPI ranks")
  end
  local sa = carlo.hard_polygons{ vertices = pent.vertices, N = 100, phi = 0.3, seed = 2, device = dev,
    decompose = true }
  local okt, errt = pcall(function() sa.box_moves = "triclinic" end)
  check("refuse_triclinic_later", not okt and tostring(errt):find("decompose", 1, true), tostring(errt))
end

if load_from then
  local c = carlo.load(load_from, { device = dev })
  local _, whole = pair(carlo.hard_polygons, pentagons)
  check("load_device", c.device == dev, c.device)
  check("load_split", c.decomposed and c.step >= 100, "a split system's checkpoint loaded unsplit")
  c:run{ sweeps = 50 }
  whole:run{ sweeps = c.step }
  local fc, fw = fingerprint(c), fingerprint(whole)
  check("load_continues", fc == fw, ("step %d: fingerprint %s loaded, %s whole"):format(c.step, fc, fw))
  c:save(out .. ".ckpt")
  lines[#lines + 1] = ("loaded %s step %d"):format(fc, c.step)
else
  cases()
end
checks.rank0_write(out, lines)
