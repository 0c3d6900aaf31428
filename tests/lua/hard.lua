-- lua/hard: hard disks and spheres through the Lua API: construction and its errors,
-- invariants after long runs (count, cells, overlaps), the cell-shift stress test, snapshots,
-- checkpoints (bit-identical continuation), psi6, and tuning. Fast cases only; the statistics
-- are in tests/unit/hard_serial.c and tests/lua/hard_pressure.lua.
local carlo = require "carlo"
local check = require "check"
carlo.threads(2)

local function disks(t) t.device = t.device or "cpu"; t.quiet = true; return carlo.hard_disks(t) end
local function spheres(t) t.device = t.device or "cpu"; t.quiet = true; return carlo.hard_spheres(t) end

-- construction
local s = disks{ N = 400, phi = 0.70, init = "hex", seed = 1 }
check.within("lua/hard/hex-phi", s.phi, 0.70, 1e-6, 1)
check.ok("lua/hard/hex-valid", s:verify())
local p6 = s:psi6{ rc = 1.4 }
check.ok("lua/hard/hex-psi6", math.abs(p6.global - 1) < 1e-9 and math.abs(p6["local"] - 1) < 1e-9,
  ("psi6 of a perfect hexagonal lattice: global %.12f, local %.12f"):format(p6.global, p6["local"]))

local f = spheres{ N = 4 * 6 * 6 * 6, phi = 0.55, init = "fcc", seed = 2 }
check.ok("lua/hard/fcc-valid", f:verify())
check.within("lua/hard/fcc-phi", f.phi, 0.55, 1e-6, 1)

local r = disks{ N = 128, phi = 0.68, seed = 3 } -- random start, compressed
check.ok("lua/hard/random-compressed", r:verify() and math.abs(r.phi - 0.68) < 1e-6 and r.step == 0,
  ("phi %.9f step %d"):format(r.phi, r.step))
local r3 = spheres{ N = 400, phi = 0.40, seed = 3 }
check.ok("lua/hard/random-compressed-3d", r3:verify() and math.abs(r3.phi - 0.40) < 1e-6)

-- errors: impossible input is a Lua error naming the key, never a hang or a crash
check.raises("lua/hard/err-close-packing", function() disks{ N = 100, phi = 0.91, seed = 1 } end,
  "phi must be")
check.raises("lua/hard/err-close-packing-3d", function() spheres{ N = 108, phi = 0.75, seed = 1 } end,
  "phi must be")
check.raises("lua/hard/err-both", function() disks{ N = 100, phi = 0.5, box = 20, seed = 1 } end,
  "exactly one of phi")
check.raises("lua/hard/err-unknown-key", function() disks{ N = 100, phi = 0.5, temperature = 1 } end,
  "unknown key 'temperature'")
check.raises("lua/hard/err-N", function() disks{ phi = 0.5, seed = 1 } end, "N is required")
check.raises("lua/hard/err-hex-N", function() disks{ N = 101, phi = 0.5, init = "hex", seed = 1 } end,
  "hexagonal lattice")
check.raises("lua/hard/err-small-box", function() disks{ N = 4, box = 3.0, seed = 1 } end,
  "cannot be cut")
check.raises("lua/hard/err-gpu", function()
  if check.has_gpu() then error("gpu present: this case is about its absence") end
  carlo.hard_disks{ N = 100, phi = 0.5, seed = 1, device = "gpu" }
end, "device")
check.raises("lua/hard/err-overlap-named", function()
  disks{ init = { position = { { 0, 0 }, { 3, 3 }, { 0.5, 0.2 } }, box = { 10, 10 } }, seed = 1 }
end, "overlapping pair", "(1, 3)")
check.raises("lua/hard/err-tilt", function()
  disks{ init = { position = { { 0, 0 } }, box = { 10, 10, 0, 0.1, 0, 0 } }, seed = 1 }
end, "tilted")
check.raises("lua/hard/err-z-in-2d", function()
  disks{ init = { position = { { 0, 0, 0.5 } }, box = { 10, 10 } }, seed = 1 }
end, "z = 0.5")
check.raises("lua/hard/err-d", function() s.d = -1 end, "d must be")
check.raises("lua/hard/err-set", function() s:subsweep(4) end, "set must be from 0 to 3")

-- a hand-made snapshot: overlaps() finds exactly the pairs built in
local ok_snap = disks{ init = { position = { { 0, 0 }, { 1.0, 0 }, { 3, 3 } }, box = { 10, 10 } }, seed = 1 }
local n0 = ok_snap:overlaps()
check.eq("lua/hard/overlaps-touching-is-not-overlap", n0, 0)

-- invariants after many sweeps at high density, and the cell-shift stress test:
-- 1e5 sweeps (each ending in a random cell shift) on a small dense system lose nothing
local d = disks{ N = 64, phi = 0.72, init = "hex", seed = 4 }
d:run{ sweeps = 100000 }
local okv, why = d:verify()
check.ok("lua/hard/stress-1e5-shifts", okv and d.N == 64 and d.step == 100000, why)
local o = d:observe()
check.ok("lua/hard/acceptance", o.acceptance.translation > 0.05 and o.acceptance.translation < 0.9,
  ("acceptance %.3f"):format(o.acceptance.translation))

local sp = spheres{ N = 500, phi = 0.50, init = "fcc", seed = 5 }
sp:run{ sweeps = 2000 }
okv, why = sp:verify()
check.ok("lua/hard/spheres-after-run", okv, why)

-- snapshots: GSD names and convention, positions inside [-L/2, L/2), z = 0 in 2D
local snap = d:snapshot()
local inside = snap.position.shape[1] == 64 and snap.position.shape[2] == 3
for i = 1, 64 do
  local x, y, z = snap.position[3 * i - 2], snap.position[3 * i - 1], snap.position[3 * i]
  inside = inside and x >= -snap.box[1] / 2 and x < snap.box[1] / 2 and y >= -snap.box[2] / 2
    and y < snap.box[2] / 2 and z == 0
end
check.ok("lua/hard/snapshot", inside and snap.step == d.step and snap.box[3] == 0 and #snap.box == 6)
-- a snapshot makes a new system holding the same particles
local again = disks{ init = snap, seed = 9 }
local s2 = again:snapshot()
local same = true
for i = 1, 3 * 64 do same = same and s2.position[i] == snap.position[i] end
check.ok("lua/hard/snapshot-roundtrip", same and again:verify())

-- checkpoint: n sweeps, save, load, n more == 2n sweeps, bit for bit (the C path is tested in
-- tests/unit/hard_checkpoint.c; this is the Lua one, once carlo.load exists)
if carlo.load then
  local a = disks{ N = 256, phi = 0.65, seed = 6 }
  local b = disks{ N = 256, phi = 0.65, seed = 6 }
  a:run{ sweeps = 300 }
  b:run{ sweeps = 150 }
  local path = check.tmp .. "/hard.ckpt"
  b:save(path)
  local c = carlo.load(path, { device = "cpu" })
  c:run{ sweeps = 150 }
  local pa, pc = a:snapshot(), c:snapshot()
  same = c.step == a.step
  for i = 1, 3 * 256 do same = same and pa.position[i] == pc.position[i] end
  check.ok("lua/hard/checkpoint-bitwise", same, "the continued run differs from the straight one")
  local oa, oc = a:observe(), c:observe()
  check.ok("lua/hard/checkpoint-counters", oa.tried == oc.tried and oa.accepted == oc.accepted)
else
  check.skip("lua/hard/checkpoint-bitwise", "carlo.load is not in this build (unit/hard/checkpoint covers the C path)")
end

-- the same seed gives the same state whatever the number of threads
carlo.threads(1)
local t1 = disks{ N = 1024, phi = 0.70, init = "hex", seed = 7 }
t1:run{ sweeps = 50 }
carlo.threads(2)
local t2 = disks{ N = 1024, phi = 0.70, init = "hex", seed = 7 }
t2:run{ sweeps = 50 }
local q1, q2 = t1:snapshot(), t2:snapshot()
same = true
for i = 1, 3 * 1024 do same = same and q1.position[i] == q2.position[i] end
check.ok("lua/hard/threads-bitwise", same)

-- the two forms of the cell update (the cell in registers or read in memory; the GPU uses
-- the first for disks and the second for spheres) decide identically
for _, dim in ipairs{ 2, 3 } do
  local mk = dim == 2 and disks or spheres
  local t = dim == 2 and { N = 1024, phi = 0.7, init = "hex", seed = 5 }
    or { N = 500, phi = 0.5, init = "fcc", seed = 5 }
  local va, vb = mk(t), mk(t)
  va.variant = "memory"
  vb.variant = "registers"
  va:run{ sweeps = 100 }
  vb:run{ sweeps = 100 }
  check.ok(("lua/hard/variants-bitwise-%dd"):format(dim), va:snapshot().position == vb:snapshot().position
    and va:observe().accepted == vb:observe().accepted)
end

-- neighbour lists gathered once per active cell, or the neighbour cells scanned at every move:
-- the same decisions (dense spheres, where a cell's list may overflow and fall back to the scan)
for _, dim in ipairs{ 2, 3 } do
  local mk = dim == 2 and disks or spheres
  local t = dim == 2 and { N = 1024, phi = 0.72, init = "hex", seed = 15 }
    or { N = 864, phi = 0.60, init = "fcc", seed = 15 }
  local va, vb = mk(t), mk(t)
  check.eq(("lua/hard/gather-default-%dd"):format(dim), va.gather, dim == 2)
  va.gather = true
  vb.gather = false
  va:run{ sweeps = 100 }
  vb:run{ sweeps = 100 }
  check.ok(("lua/hard/gather-bitwise-%dd"):format(dim), va:snapshot().position == vb:snapshot().position
    and va:observe().accepted == vb:observe().accepted)
end
check.raises("lua/hard/gather-not-boolean", function() disks{ N = 64, phi = 0.5 }.gather = 1 end,
  "gather must be true or false")
-- the GPU team size: a launch choice with defaults per dimension (the GPU tests check that every
-- size gives the CPU's chain)
check.ok("lua/hard/team-defaults", disks{ N = 64, phi = 0.5, seed = 1 }.team == 1
  and spheres{ N = 256, phi = 0.5, seed = 1 }.team == 4)
check.raises("lua/hard/team-invalid", function() spheres{ N = 256, phi = 0.5, seed = 1 }.team = 3 end,
  "team must be 1, 2, 4 or 8")

-- compose the kernels: four sub-sweeps and a shift
local k = disks{ N = 256, phi = 0.6, init = "hex", seed = 8 }
for set = 0, 3 do k:subsweep(set) end
k:shift_cells()
check.ok("lua/hard/compose", k:verify())

-- tuning changes d during equilibration only, towards the target
local tu = disks{ N = 256, phi = 0.70, init = "hex", seed = 10 }
local dnew = tu:tune{ target = 0.25, rounds = 15, sweeps = 50 }
local before = tu:observe()
tu:run{ sweeps = 500 }
local after = tu:observe()
local acc = (after.accepted - before.accepted) / (after.tried - before.tried)
check.ok("lua/hard/tune", dnew ~= 0.16 and tu.d == dnew and math.abs(acc - 0.25) < 0.05,
  ("d %.4f, acceptance %.3f"):format(dnew, acc))

-- shuffle = false exists (MPMC Table 1) and runs
local ns = disks{ N = 256, phi = 0.7, init = "hex", seed = 11, shuffle = false }
ns:run{ sweeps = 100 }
check.ok("lua/hard/no-shuffle-runs", ns:verify() and ns.shuffle == false)

-- a frame for trajectories, with GSD names
check.ok("lua/hard/tostring", tostring(d):find("hard_disks", 1, true) ~= nil)

-- trajectories: run{ every =, trajectory = } writes the frames of the run from C
do
  local path = check.tmp .. "/hard-run.ctr"
  local sys = disks{ N = 64, phi = 0.5, seed = 21 }
  local tr = carlo.trajectory(path, "w")
  sys:run{ sweeps = 40, every = 10, trajectory = tr }
  tr:close()
  local rd = carlo.trajectory(path, "r")
  local last = rd:frame(-1)
  local snap = sys:snapshot()
  local same = #rd == 4 and last["configuration/step"][1] == 40
  for i = 1, 3 * 64 do same = same and last["particles/position"][i] == snap.position[i] end
  check.ok("lua/hard/run-writes-trajectory", same, ("%d frames"):format(#rd))
  rd:close()
end
