-- tests/mpi/hard_split.lua OUT [CHECKPOINT] — hard disks and spheres split into slabs of cell
-- layers over however many ranks run this (decompose = true), against the same systems whole on
-- every rank: after 200 sweeps the gathered positions (a fingerprint of their exact bits), the
-- move counts and the pressure estimators must be identical; disks at phi = 0.698 with 16
-- layers (3 ranks do not divide them), spheres at phi = 0.5 with 8 layers (nor here), disks in
-- NPT (every volume move decided alike on every rank), a compression that takes layers away
-- (the slabs cut again), one from a random start past the closest pair, the tether, two split
-- systems advanced together, and the disks carried on to 1000 sweeps with no overlap and no
-- particle lost; a grid of fewer layers than ranks is refused. Rank 0 writes the fingerprints
-- to OUT (tests/mpi/hard_split.sh compares the files of 1 to 4 ranks) and the disks after 200
-- sweeps to OUT.ckpt. With CHECKPOINT, only this: a checkpoint saved on another number of ranks
-- is loaded, split over these ranks, continued 50 sweeps as the whole system would be, and
-- saved again to OUT.ckpt (the .sh chains 4 -> 2 -> 1 ranks).
local carlo = require "carlo"
local out, load_from = assert(arg[1], "usage: hard_split.lua OUT [CHECKPOINT]"), arg[2]
local n = carlo.mpi.size
local lines = {}
local checks = require "check"
-- a check passes when it holds on every rank
local check = checks.on_all_ranks("mpi/hard_split/", "_np" .. n .. (load_from and "_again" or ""))
local fingerprint = checks.position_fingerprint

local function pair(make, args)
  local split_args, whole_args = { decompose = true, device = "cpu" }, { device = "cpu" }
  for k, v in pairs(args) do split_args[k], whole_args[k] = v, v end
  return make(split_args), make(whole_args)
end

local function same_chain(name, a, b)
  local fa, fb = fingerprint(a), fingerprint(b)
  check(name .. "_positions", fa == fb, ("fingerprint %s split, %s whole"):format(fa, fb))
  local oa, ob = a:observe(), b:observe()
  check(name .. "_observe", oa.P_gr == ob.P_gr and oa.P_sdf == ob.P_sdf and oa.tried == ob.tried and
    oa.accepted == ob.accepted and oa.volume_accepted == ob.volume_accepted and oa.phi == ob.phi,
    ("P_gr %.17g vs %.17g, accepted %d vs %d"):format(oa.P_gr, ob.P_gr, oa.accepted, ob.accepted))
  lines[#lines + 1] = ("%s %s step %d P_gr %.17g accepted %d"):format(name, fa, a.step, oa.P_gr,
    oa.accepted)
end

local disks = { N = 400, phi = 0.698, init = "hex", seed = 3 }

local function cases()
-- disks at phi = 0.698: 16 x 16 cells
local da, db = pair(carlo.hard_disks, disks)
check("disks_split", da.decomposed and not db.decomposed and da.layers[2] - da.layers[1] + 1 >=
  da.cells.m[2] // n, "not decomposed")
da:run{ sweeps = 200 }
db:run{ sweeps = 200 }
same_chain("disks", da, db)
local wa, wb = da:observe{ widom = 2000, pressure = false }, db:observe{ widom = 2000, pressure = false }
check("disks_widom", wa.p_insert == wb.p_insert, ("%.17g vs %.17g"):format(wa.p_insert, wb.p_insert))
da:save(out .. ".ckpt") -- rank 0 writes it after a gather from every rank

-- spheres at phi = 0.5: 8 layers
local sa, sb = pair(carlo.hard_spheres, { N = 500, phi = 0.5, init = "fcc", seed = 4 })
sa:run{ sweeps = 200 }
sb:run{ sweeps = 200 }
same_chain("spheres", sa, sb)

-- NPT disks: a volume move after every sweep, the grid changing size on the way
local pa, pb = pair(carlo.hard_disks, { N = 400, phi = 0.6, init = "hex", seed = 5, pressure = 6 })
pa:run{ sweeps = 100 }
pb:run{ sweeps = 100 }
same_chain("disks_npt", pa, pb)
check("disks_npt_moved", pa:observe().volume_accepted > 0, "no volume move accepted")

-- compression: the grid loses layers on the way, and the slabs are cut again
local ca, cb = pair(carlo.hard_disks, { N = 400, phi = 0.5, init = "hex", seed = 7 })
local m0 = ca.cells.m[2]
ca:compress{ phi = 0.55 }
cb:compress{ phi = 0.55 }
check("disks_compress_layers", ca.cells.m[2] < m0 and ca.layers[2] <= ca.cells.m[2],
  ("%d layers before, %d after"):format(m0, ca.cells.m[2]))
ca:run{ sweeps = 50 }
cb:run{ sweeps = 50 }
same_chain("disks_compress", ca, cb)

-- compression past the closest pair (overlaps parted by the sweeps, on narrowed cells), from a
-- random start: the same shrinks on every rank
local qa, qb = pair(carlo.hard_disks, { N = 1024, phi = 0.45, seed = 9 })
checks.split_compress(check, same_chain, "disks_compress_deep", qa, qb, 0.7, 1e-6, 20)

-- the tether of Einstein crystals: its sites are by tag, the same on every rank
local ta, tb = pair(carlo.hard_disks, { N = 400, phi = 0.698, init = "hex", seed = 6, lambda = 40 })
ta:run{ sweeps = 100 }
tb:run{ sweeps = 100 }
same_chain("disks_tether", ta, tb)
check("disks_tether_msd", ta:observe().msd_site == tb:observe().msd_site, "msd_site differs")

-- carlo.advance of split systems stays on the main thread (their exchanges call MPI)
local xa, xb = {}, {}
for k = 1, 2 do
  xa[k], xb[k] = pair(carlo.hard_disks, { N = 192, phi = 0.5, init = "hex", seed = 20 + k })
end
carlo.advance(xa, 50)
carlo.advance(xb, 50)
check("advance_together", fingerprint(xa[1]) == fingerprint(xb[1]) and
  fingerprint(xa[2]) == fingerprint(xb[2]), "split systems advanced together differ")

-- a grid of fewer layers than ranks is refused, naming both
if n > 2 then
  local ok, err = pcall(carlo.hard_disks, { N = 2, phi = 0.3, seed = 1, decompose = true, device = "cpu" })
  check("too_few_layers", not ok and tostring(err):find("2 cell layers along y, fewer than the " .. n,
    1, true), tostring(err))
end

-- sample: the pressure's mean and error bar from the split system are the whole one's
checks.split_sample(check, "disks_sample", da, db, { sweeps = 100, every = 10 })

-- on to 1000 sweeps: every particle still there once, no overlap, the same chain
checks.split_carry_on(check, same_chain, "disks_1000", da, db, 700, 1000)
end

if load_from then
  local c = carlo.load(load_from)
  local whole = carlo.hard_disks(disks)
  check("load_split", c.decomposed and c.step >= 200, "a split system's checkpoint loaded unsplit")
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
