-- lua/hard: hard disks and spheres through the Lua API: construction and its errors,
-- invariants after long runs (count, cells, overlaps), the cell-shift stress test, snapshots,
-- checkpoints (bit-identical continuation), psi6, tuning, the ensembles (NVT with the lambda control,
-- NPT with the pressure), the observables of the shared sample, the launch choice (benchmarks
-- only) and the old names that stay one release. Fast cases only; the statistics are in
-- tests/unit/hard_serial.c and tests/lua/hard_pressure.lua.
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

-- compression past the closest pair: 4096 disks from phi = 0.45 to 0.698 within 1000 sweeps (it
-- takes about 260; bounded by the closest pair every shrink, they were at phi = 0.48 after
-- 1000), with no overlap at the end
local big = disks{ N = 4096, phi = 0.45, seed = 5 }
local ok_big, phi_big = pcall(function() return big:compress{ phi = 0.698, max_sweeps = 1000, quiet = true } end)
check.ok("lua/hard/compress-past-closest-pair", ok_big and math.abs(big.phi - 0.698) < 1e-6 and big:verify()
  and big.step <= 1000, ("%s, phi %.9f after %d sweeps"):format(tostring(phi_big), big.phi, big.step))
-- stopped with overlaps on the way (3 sweeps): the box grows until none is left
local stopped = disks{ N = 1024, phi = 0.6, seed = 5 }
local ok_st, err_st = pcall(function() return stopped:compress{ phi = 0.8, max_sweeps = 3, quiet = true } end)
check.ok("lua/hard/compress-stopped-valid", not ok_st and tostring(err_st):find("stopped after 3 sweeps", 1, true)
  and stopped:verify() and stopped.phi > 0.6 and stopped.phi < 0.8, tostring(err_st))
-- jammed (64 disks cannot reach phi = 0.89 from a random packing): an error, no overlap left
local jam = disks{ N = 64, phi = 0.6, seed = 5 }
local ok_jam, err_jam = pcall(function() return jam:compress{ phi = 0.89, quiet = true } end)
check.ok("lua/hard/compress-jammed-valid", not ok_jam and tostring(err_jam):find("jammed at phi", 1, true)
  and jam:verify() and jam.phi > 0.6 and jam.phi < 0.89, tostring(err_jam))

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
check.raises("lua/hard/err-tilt", function() -- tilted boxes run (hard_tilt.lua), within half a side
  disks{ init = { position = { { 0, 0 } }, box = { 10, 10, 0, 0.6, 0, 0 } }, seed = 1 }
end, "xy must be a number in [-0.5, 0.5] (got 0.6)")
check.raises("lua/hard/err-z-in-2d", function()
  disks{ init = { position = { { 0, 0, 0.5 } }, box = { 10, 10 } }, seed = 1 }
end, "z = 0.5")
check.raises("lua/hard/err-delta", function() s.delta = -1 end, "delta must be", "(got -1")
check.raises("lua/hard/err-set", function() s:substep(4) end, "set must be from 0 to 3", "(got 4)")
check.raises("lua/hard/err-moves-per-cell", function() s.moves_per_cell = 1.5 end,
  "moves_per_cell must be an integer", "1.5")
check.raises("lua/hard/err-read-only", function() s.phi = 0.5 end, "read-only field 'phi'",
  "settable: lambda, delta, moves_per_cell, shuffle, dlnV, volume_moves, pressure")
check.raises("lua/hard/err-both-delta-and-d", function() disks{ N = 64, phi = 0.5, delta = 0.1, d = 0.1 } end,
  "give delta, not both delta and d")

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
check.ok("lua/hard/acceptance", o.acceptance > 0.05 and o.acceptance < 0.9 and
  o.acceptance == o.accepted / o.tried and o.volume_acceptance == nil,
  ("acceptance %s"):format(tostring(o.acceptance)))

local sp = spheres{ N = 500, phi = 0.50, init = "fcc", seed = 5 }
sp:run{ sweeps = 2000 }
okv, why = sp:verify()
check.ok("lua/hard/spheres-after-run", okv, why)

-- snapshots: f64 positions N x d in GSD's convention, inside [-L/2, L/2); the six GSD box
-- numbers (Lz = 0 in 2D)
local snap = d:snapshot()
local inside = snap.position.shape[1] == 64 and snap.position.shape[2] == 2 and snap.position.type == "f64"
for i = 1, 64 do
  local x, y = snap.position[2 * i - 1], snap.position[2 * i]
  inside = inside and x >= -snap.box[1] / 2 and x < snap.box[1] / 2 and y >= -snap.box[2] / 2
    and y < snap.box[2] / 2
end
check.ok("lua/hard/snapshot", inside and snap.step == d.step and snap.N == 64 and snap.box[3] == 0
  and #snap.box == 6 and snap.dimensions == nil)
do
  local s3 = sp:snapshot()
  check.ok("lua/hard/snapshot-3d", s3.position.shape[1] == 500 and s3.position.shape[2] == 3
    and s3.N == 500 and s3.box[3] > 0)
end
-- a snapshot makes a new system holding the same particles, bit for bit (f64 positions are the
-- cells' exactly), with its step; phi or N given along must agree with it
local again = disks{ init = snap, seed = 9 }
local s2 = again:snapshot()
check.ok("lua/hard/snapshot-roundtrip", s2.position == snap.position and again:verify() and
  again.step == snap.step)
local with_phi = disks{ init = snap, N = 64, phi = d.phi, seed = 9 }
check.ok("lua/hard/snapshot-with-phi", with_phi:snapshot().position == snap.position)
check.raises("lua/hard/snapshot-phi-mismatch", function() disks{ init = snap, phi = 0.5, seed = 9 } end,
  "phi = 0.5 does not match the snapshot")
check.raises("lua/hard/snapshot-N-mismatch", function() disks{ init = snap, N = 65, seed = 9 } end,
  "N = 65 does not match the snapshot's 64")
local same

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
  same = c.step == a.step and pa.position == pc.position
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
check.ok("lua/hard/threads-bitwise", q1.position == q2.position)

-- the two forms of the cell update (the cell in registers or read in memory; the GPU uses
-- the first for disks and the second for spheres) decide identically
for _, dim in ipairs{ 2, 3 } do
  local mk = dim == 2 and disks or spheres
  local t = dim == 2 and { N = 1024, phi = 0.7, init = "hex", seed = 5 }
    or { N = 500, phi = 0.5, init = "fcc", seed = 5 }
  local va, vb = mk(t), mk(t)
  va:launch{ variant = "memory" }
  vb:launch{ variant = "registers" }
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
  check.eq(("lua/hard/gather-default-%dd"):format(dim), va:launch().gather, dim == 2)
  va:launch{ gather = true }
  vb:launch{ gather = false }
  va:run{ sweeps = 100 }
  vb:run{ sweeps = 100 }
  check.ok(("lua/hard/gather-bitwise-%dd"):format(dim), va:snapshot().position == vb:snapshot().position
    and va:observe().accepted == vb:observe().accepted)
end
check.raises("lua/hard/gather-not-boolean", function() disks{ N = 64, phi = 0.5 }:launch{ gather = 1 } end,
  "gather must be true or false")
-- the launch choice: private, with measured defaults per dimension; sys:launch{} overrides it for
-- benchmarks only (the GPU tests check that every choice gives the CPU's chain)
do
  local l2, l3 = disks{ N = 64, phi = 0.5, seed = 1 }:launch(), spheres{ N = 256, phi = 0.5, seed = 1 }:launch()
  check.ok("lua/hard/launch-defaults", l2.team == 1 and l2.variant == "registers" and l2.gather == true
    and l2.block[1] == 64 and l2.block[2] == 2 and l3.team == 4 and l3.variant == "memory"
    and l3.gather == false and l3.block[1] == 32 and l3.block[2] == 4)
  local sys = spheres{ N = 256, phi = 0.5, seed = 1 }
  local now = sys:launch{ team = 2, block = { 64, 2 } }
  check.ok("lua/hard/launch-set", now.team == 2 and now.block[1] == 64 and sys:launch().team == 2
    and now.variant == "memory")
  check.raises("lua/hard/team-invalid", function() sys:launch{ team = 3 } end, "team must be 1, 2, 4 or 8",
    "got 3")
  check.raises("lua/hard/block-invalid", function() sys:launch{ block = { 3, 5 } } end,
    "block must be { x, y }", "{ 3, 5 }")
  check.raises("lua/hard/launch-unknown", function() sys:launch{ warps = 2 } end, "unknown key 'warps'")
  check.raises("lua/hard/launch-not-a-field", function() sys.team = 4 end, "sys:launch{ team")
  check.raises("lua/hard/launch-not-a-field-read", function() return sys.block end, "sys:launch().block")
end

-- compose the kernels: four sub-sweeps and a shift, then a sweep: the step counts sweeps only
local k = disks{ N = 256, phi = 0.6, init = "hex", seed = 8 }
for set = 0, 3 do k:substep(set) end
k:shift_cells()
check.ok("lua/hard/compose", k:verify() and k.step == 0)
k:sweep()
check.eq("lua/hard/sweep-step", k.step, 1)

-- tuning changes delta during equilibration only, towards the target, and says whether it got
-- there
local tu = disks{ N = 256, phi = 0.70, init = "hex", seed = 10 }
local tr = tu:tune{ target = 0.25, rounds = 15, sweeps = 50 }
local before = tu:observe()
tu:run{ sweeps = 500 }
local after = tu:observe()
local acc = (after.accepted - before.accepted) / (after.tried - before.tried)
check.ok("lua/hard/tune", tr.delta ~= 0.16 and tu.delta == tr.delta and math.abs(acc - 0.25) < 0.05
  and tr.reached == true and tr.target == 0.25 and math.abs(tr.acceptance - 0.25) < 0.05
  and tr.dlnV == nil and tr.volume_acceptance == nil,
  ("delta %.4f, acceptance %.3f, reached %s"):format(tr.delta, acc, tostring(tr.reached)))
-- a dilute system cannot come down to 20%: delta stops at its cap and tune says so
local dil = disks{ N = 64, phi = 0.05, seed = 12 }
local td = dil:tune{ target = 0.2, rounds = 8, sweeps = 5, quiet = true }
check.ok("lua/hard/tune-unreachable", td.reached == false and td.delta == 1 and td.acceptance > 0.2,
  ("delta %.3f, acceptance %.3f, reached %s"):format(td.delta, td.acceptance, tostring(td.reached)))
-- NPT: the volume move size too
local tn = disks{ N = 256, phi = 0.65, init = "hex", seed = 13, pressure = 7 }
local tv = tn:tune{ target = 0.3, volume_target = 0.3, rounds = 10, sweeps = 50, quiet = true }
check.ok("lua/hard/tune-npt", tv.dlnV == tn.dlnV and tv.dlnV ~= 0.1 / 256 and type(tv.volume_acceptance)
  == "number" and type(tv.reached) == "boolean", ("dlnV %s"):format(tostring(tv.dlnV)))

-- shuffle = false exists (MPMC Table 1) and runs
local ns = disks{ N = 256, phi = 0.7, init = "hex", seed = 11, shuffle = false }
ns:run{ sweeps = 100 }
check.ok("lua/hard/no-shuffle-runs", ns:verify() and ns.shuffle == false)

check.ok("lua/hard/tostring", tostring(d):find("carlo.hard(disks, N = 64", 1, true) ~= nil
  and tostring(d):find("NVT, step 100000, cpu)", 1, true) ~= nil, tostring(d))

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
  local function f32(x) return (string.unpack("f", string.pack("f", x))) end
  for i = 1, 64 do
    same = same and last["particles/position"][3 * i - 2] == f32(snap.position[2 * i - 1])
      and last["particles/position"][3 * i - 1] == f32(snap.position[2 * i])
      and last["particles/position"][3 * i] == 0
  end
  check.ok("lua/hard/run-writes-trajectory", same, ("%d frames"):format(#rd))
  rd:close()
end

-- ensembles: an NVT system's one control is the tether's lambda; pressure = p (constructor or
-- field) makes it NPT, with the pressure its first control (range-checked), and pressure = nil
-- makes it NVT again
do
  local nvt = disks{ N = 64, phi = 0.6, init = "hex", seed = 30 }
  check.ok("lua/hard/nvt-controls", #nvt.controls == 1 and nvt.controls[1] == "lambda" and nvt.lambda == 0
    and nvt.pressure == nil and nvt.npt == false)
  nvt.pressure = 8
  check.ok("lua/hard/field-makes-npt", nvt.npt and nvt.pressure == 8 and nvt.controls[1] == "pressure"
    and #nvt.controls == 2)
  nvt.pressure = 9
  check.eq("lua/hard/pressure-control", nvt.pressure, 9)
  check.raises("lua/hard/pressure-range", function() nvt.pressure = -1 end, "pressure must be",
    "pressure > 0", "got -1")
  nvt.pressure = nil
  check.ok("lua/hard/nil-makes-nvt", not nvt.npt and nvt.pressure == nil and #nvt.controls == 1)
  local npt = spheres{ N = 256, phi = 0.45, seed = 31, pressure = 5, dlnV = 0.003 }
  check.ok("lua/hard/constructor-npt", npt.npt and npt.pressure == 5 and npt.dlnV == 0.003
    and tostring(npt):find("NPT at pressure = 5", 1, true) ~= nil, tostring(npt))
  check.raises("lua/hard/constructor-pressure-range", function() disks{ N = 64, phi = 0.5, pressure = -2 } end,
    "pressure must be", "got -2")
  -- the same chain as setting the pressure on an NVT system before the first sweep
  local a = disks{ N = 200, phi = 0.6, seed = 32, pressure = 6, dlnV = 0.01 }
  local b = disks{ N = 200, phi = 0.6, seed = 32 }
  b.pressure = 6
  b.dlnV = 0.01
  a:run{ sweeps = 100 }
  b:run{ sweeps = 100 }
  check.ok("lua/hard/npt-constructor-same-chain", a:snapshot().position == b:snapshot().position
    and a.volume == b.volume and a:observe().volume_accepted > 0)
  -- NPT checkpoints continue bit for bit, pressure and all
  local c = disks{ N = 200, phi = 0.6, seed = 32, pressure = 6, dlnV = 0.01 }
  c:run{ sweeps = 50 }
  local path = check.tmp .. "/hard-npt.ckpt"
  c:save(path)
  local r = carlo.load(path)
  r:run{ sweeps = 50 }
  check.ok("lua/hard/npt-checkpoint-bitwise", r.npt and r.pressure == 6 and r.controls[1] == "pressure"
    and r:snapshot().position == a:snapshot().position and r.volume == a.volume)
end

-- observables: what the shared sample estimates, by ensemble, dimension and option
do
  local function names(sys, t)
    local l = {}
    for _, k in ipairs(sys.observables) do l[#l + 1] = k end
    return table.concat(l, ",")
  end
  local d2 = disks{ N = 64, phi = 0.6, init = "hex", seed = 40 }
  check.eq("lua/hard/observables-nvt", names(d2), "phi,rho,P_gr,P_sdf,P_diff,P")
  d2.pressure = 8
  check.eq("lua/hard/observables-npt", names(d2), "phi,rho,volume,P_gr,P_sdf,P_diff,P")
  d2.pressure = nil
  local r = d2:sample{ sweeps = 40, every = 2, psi6 = true, rc = 1.4 }
  local complete = r.samples == 20
  for _, k in ipairs{ "phi", "rho", "P_gr", "P_sdf", "P_diff", "P", "psi6", "psi6_local" } do
    local e = r[k]
    complete = complete and type(e) == "table" and type(e.mean) == "number" and type(e.err) == "number"
      and type(e.tau) == "number" and type(e.plateau) == "boolean"
  end
  check.ok("lua/hard/sample-fields-2d", complete and r.P.mean == r.P_sdf.mean and r.volume == nil
    and r.Pv0 == nil and r.compressibility == nil and type(r.acceptance) == "number"
    and r.volume_acceptance == nil)
  local q = d2:sample{ sweeps = 10, every = 5, pressure = false }
  check.ok("lua/hard/sample-no-pressure", q.P == nil and q.P_gr == nil and q.phi ~= nil)
  local o = d2:observe{ pressure = false }
  check.ok("lua/hard/observe", o.P == nil and o.phi == d2.phi and o.volume == d2.volume and o.N == 64
    and #o.box == 6 and o.delta == d2.delta and o.step == d2.step and o.tried > 0, tostring(o.volume))
  local op = d2:observe()
  check.ok("lua/hard/observe-pressure", op.P == op.P_sdf and op.P_diff == op.P_gr - op.P_sdf)
  check.raises("lua/hard/psi6-spheres", function() sp:sample{ sweeps = 2, psi6 = true } end,
    "psi6 is the hexatic order of disks")
  check.raises("lua/hard/fit-bad", function() d2:sample{ sweeps = 2, gr = { degree = 20 } } end,
    "degree must be an integer from 0 to 10", "20")
  check.raises("lua/hard/sample-unknown", function() d2:sample{ sweeps = 2, psi7 = true } end,
    "unknown key 'psi7'")
  -- 3D: beta P v0 (HPMC's unit) derived from P; NPT: the compressibility from the volume's
  -- fluctuations, (<V^2> - <V>^2) / <V>
  local s3 = spheres{ N = 256, phi = 0.45, seed = 41, pressure = 6, dlnV = 0.004 }
  local r3 = s3:sample{ sweeps = 400, every = 4, series = true }
  local V = r3.series.volume
  local m1, m2 = 0, 0
  for i = 1, #V do m1 = m1 + V[i]; m2 = m2 + V[i] * V[i] end
  m1, m2 = m1 / #V, m2 / #V
  local kappa = (m2 - m1 * m1) / m1
  check.ok("lua/hard/sample-npt-3d", math.abs(r3.Pv0.mean / (r3.P.mean * math.pi / 6) - 1) < 1e-12
    and r3.Pv0.err > 0 and math.abs(r3.compressibility.mean / kappa - 1) < 1e-9
    and r3.compressibility.err > 0 and type(r3.volume_acceptance) == "number"
    and math.abs(r3.volume.mean * r3.rho.mean / 256 - 1) < 0.01,
    ("compressibility %s vs %s"):format(r3.compressibility.mean, kappa))
end

-- old names stay one release, with a warning: d, moves, P, V, subsweep
do
  local old = disks{ N = 64, phi = 0.6, init = "hex", seed = 50, d = 0.1, moves = 2 }
  check.ok("lua/hard/alias-constructor", old.delta == (string.unpack("f", string.pack("f", 0.1)))
    and old.moves_per_cell == 2)
  check.ok("lua/hard/alias-fields", old.d == old.delta and old.moves == 2 and old.V == old.volume)
  old.P = 7
  check.ok("lua/hard/alias-P", old.pressure == 7 and old.npt and old.P == 7)
  old.P = nil
  check.ok("lua/hard/alias-P-nil", not old.npt)
  old.d = 0.2
  check.eq("lua/hard/alias-d-set", old.delta, (string.unpack("f", string.pack("f", 0.2))))
  local new = disks{ N = 64, phi = 0.6, init = "hex", seed = 50, delta = 0.2, moves_per_cell = 2 }
  old:subsweep(1)
  new:substep(1)
  check.ok("lua/hard/alias-subsweep", old:snapshot().position == new:snapshot().position)
end

-- runs through the shared driver: upto, walltime with a checkpoint, and an unknown key named
do
  local w = disks{ N = 256, phi = 0.6, init = "hex", seed = 60 }
  w:run{ upto = 30 }
  check.eq("lua/hard/run-upto", w.step, 30)
  local path = check.tmp .. "/hard-wall.ckpt"
  local r = w:run{ sweeps = 1 << 40, walltime = 0.3, checkpoint = path, quiet = true }
  local back = carlo.load(path)
  check.ok("lua/hard/walltime-checkpoint", r.completed == false and back.step == w.step
    and back:snapshot().position == w:snapshot().position)
  check.raises("lua/hard/run-unknown", function() w:run{ sweeps = 1, temperature = 2 } end,
    "unknown key 'temperature'")
end
