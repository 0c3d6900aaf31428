-- lua/traj: carlo.trajectory from Lua — tables of chunks, arrays of every type, reading
-- back, quantized positions, and the errors for impossible requests.
local carlo = require "carlo"
local check = require "check"
local D = check.tmp .. "/lua-traj"
os.execute("mkdir -p " .. D)

-- a jittered hexagonal layer of disks (diameter 1) at packing fraction phi
local function disks(n1, phi, jitter, seed)
  math.randomseed(seed)
  local rho = phi / (math.pi / 4)
  local a = math.sqrt(2 / (math.sqrt(3) * rho))
  local Lx, Ly = n1 * a, n1 * a * math.sqrt(3) / 2
  local pos = carlo.array("f32", { shape = { n1 * n1, 3 } })
  local i = 0
  for r = 0, n1 - 1 do
    for c = 0, n1 - 1 do
      local x = (c + 0.5 * (r % 2)) * a - Lx / 2 + (math.random() - 0.5) * 2 * jitter
      local y = (r + 0.5) * a * math.sqrt(3) / 2 - Ly / 2 + (math.random() - 0.5) * 2 * jitter
      x = x - Lx * math.floor(x / Lx + 0.5) -- periodic: inside [-Lx/2, Lx/2)
      pos[3 * i + 1], pos[3 * i + 2], pos[3 * i + 3] = x, y, 0
      i = i + 1
    end
  end
  return pos, { Lx, Ly, 0, 0, 0, 0 }
end

-- tables of chunks: every element type, scalars, lists, strings, booleans
do
  local path = D .. "/table.ctr"
  local tr = carlo.trajectory(path, "w")
  local arrays = {}
  for _, t in ipairs { "u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f32", "f64" } do
    local a = carlo.array(t, { shape = { 5, 4 } })
    for i = 1, #a do a[i] = (i * 37) % 100 - (t:sub(1, 1) == "u" and 0 or 50) end
    arrays["lattice/" .. t] = a
  end
  for k = 1, 4 do
    local f = { ["configuration/step"] = k * 10, ["log/energy"] = -1.25 * k, ["log/count"] = k,
                ["log/series"] = { 1, 2.5, k }, ["log/note"] = "frame " .. k, ["log/flag"] = k % 2 == 0 }
    for name, a in pairs(arrays) do f[name] = a end
    tr:write(f)
  end
  check.eq("lua/traj/count", #tr, 4)
  tr:close()
  tr = carlo.trajectory(path)
  check.eq("lua/traj/reopen-count", #tr, 4)
  check.eq("lua/traj/indexed-after-close", tr.recovered, false)
  local f = tr:frame(-1)
  local same = true
  for name, a in pairs(arrays) do same = same and f[name] == a end
  check.ok("lua/traj/arrays-bitexact", same, "an array differs after the round trip")
  check.eq("lua/traj/step", f["configuration/step"][1], 40)
  check.eq("lua/traj/float-scalar", f["log/energy"][1], -5.0)
  check.ok("lua/traj/integer-scalar", f["log/count"][1] == 4 and f["log/count"].type == "i64")
  check.ok("lua/traj/list", #f["log/series"] == 3 and f["log/series"][2] == 2.5)
  check.eq("lua/traj/boolean", f["log/flag"][1], 1)
  local info = tr:info(2)
  check.ok("lua/traj/info", info.step == 20 and info.chunks["lattice/i16"].type == "i16" and
    info.chunks["lattice/i16"].rows == 5 and info.chunks["lattice/i16"].cols == 4 and
    info.chunks["lattice/i16"].precision == 0 and #info.names == 16, "info table wrong")
  check.raises("lua/traj/frame-out-of-range", function() tr:frame(5) end, "frame 5 out of range 1..4")
  check.raises("lua/traj/read-only", function() tr:write { ["log/x"] = 1 } end,
    "opened for reading")
  tr:close()
  check.raises("lua/traj/closed", function() return #tr end, "closed")
end

-- quantized positions: within half the precision, inside the box, precision recorded
do
  local pos, box = disks(30, 0.7, 0.05, 11)
  local path = D .. "/disks.ctr"
  local tr = carlo.trajectory(path, "w", { precision = 1e-3 })
  tr:write { ["configuration/step"] = 0, ["configuration/box"] = box, ["particles/position"] = pos,
             ["particles/types"] = { "A" } }
  tr:close()
  tr = carlo.trajectory(path, "r")
  local f = tr:frame(1)
  local q = f["particles/position"]
  local worst, outside = 0, 0
  for i = 1, #q do
    local d = math.abs(q[i] - pos[i])
    if d > worst then worst = d end
  end
  local b = f["configuration/box"] -- the box as stored (single precision)
  for i = 0, #q // 3 - 1 do
    local x, y = q[3 * i + 1], q[3 * i + 2]
    if x < -b[1] / 2 or x >= b[1] / 2 or y < -b[2] / 2 or y >= b[2] / 2 then outside = outside + 1 end
  end
  -- half the grid plus one rounding of a float32 near |x| < 16
  check.ok("lua/traj/quantized-within-half-precision", worst <= 0.5e-3 + 2 ^ -20 and worst > 0.25e-3,
    ("worst error %g"):format(worst))
  check.eq("lua/traj/quantized-inside-box", outside, 0)
  check.eq("lua/traj/N-added", f["particles/N"][1], 900)
  local info = tr:info(1)
  check.ok("lua/traj/precision-recorded", info.chunks["particles/position"].precision == 1e-3 and
    info.chunks["particles/position"].codec == "quantized")
  tr:close()
  -- lossless by default
  tr = carlo.trajectory(D .. "/exact.ctr", "w")
  tr:write { ["configuration/box"] = box, ["particles/position"] = pos }
  check.ok("lua/traj/positions-exact-by-default", tr:frame(1)["particles/position"] == pos)
  local st = tr:stats()
  check.ok("lua/traj/stats", st.raw > 0 and st.stored > 0 and st.ratio > 1,
    ("raw %d stored %d"):format(st.raw, st.stored))
  tr:close()
end

-- a system's frame plus log values, and what may go with it
do
  local sys = carlo.potts{ L = 16, q = 3, T = 1.0, seed = 2, device = "cpu" }
  local tr = carlo.trajectory(D .. "/sys.ctr", "w", { threads = 0 })
  tr:write(sys, { ["log/energy"] = sys:observe().e })
  local f = tr:frame(1)
  check.ok("lua/traj/system-frame", f["lattice/spins"] == sys:snapshot().state and
    f["log/energy"][1] == sys:observe().e and f["lattice/q"][1] == 3)
  check.raises("lua/traj/system-logs-only", function() tr:write(sys, { ["lattice/x"] = 1 }) end,
    "log/... chunks only", "lattice/x")
  sys:close()
  check.raises("lua/traj/closed-system", function() tr:write(sys) end, "closed")
  tr:close()
end

-- impossible requests
do
  local tr = carlo.trajectory(D .. "/bad.ctr", "w")
  check.raises("lua/traj/unknown-chunk-name", function() tr:write { ["particles/colour"] = 1 } end,
    "unknown chunk name 'particles/colour'", "allowed: log/...")
  check.raises("lua/traj/mismatched-type", function()
    tr:write { ["particles/position"] = carlo.array("u8", { shape = { 4, 3 } }) }
  end, "particles/position must be an f32 or f64 array of N x 3 (got u8 4 x 3)")
  check.raises("lua/traj/N-mismatch", function()
    tr:write { ["particles/position"] = carlo.array("f32", { shape = { 4, 3 } }),
               ["particles/typeid"] = carlo.array("u32", 5) }
  end, "has 5 rows but particles/position says N = 4")
  check.raises("lua/traj/bad-box", function() tr:write { ["configuration/box"] = { 1, 2 } } end,
    "configuration/box must be 6 numbers")
  check.raises("lua/traj/bad-step", function() tr:write { ["configuration/step"] = -3 } end,
    "configuration/step must be an integer from 0")
  check.raises("lua/traj/empty-frame", function() tr:write {} end, "no chunks")
  check.raises("lua/traj/not-a-frame", function() tr:write(42) end, "expected a carlo system or a table")
  check.eq("lua/traj/nothing-written-on-error", #tr, 0)
  tr:close()
  check.raises("lua/traj/bad-mode", function() carlo.trajectory(D .. "/x.ctr", "rw") end,
    "mode must be \"r\", \"w\" or \"a\"")
  check.raises("lua/traj/unknown-option", function() carlo.trajectory(D .. "/x.ctr", "w", { precison = 1 }) end,
    "unknown key 'precison'")
  check.raises("lua/traj/bad-precision", function() carlo.trajectory(D .. "/x.ctr", "w", { precision = -1 }) end,
    "precision must be")
  check.raises("lua/traj/precision-when-reading", function() carlo.trajectory(D .. "/bad.ctr", "r", { precision = 1 }) end,
    "precision applies when writing")
  check.raises("lua/traj/unwritable-path", function() carlo.trajectory("/nonexistent-dir/t.ctr", "w") end,
    "/nonexistent-dir/t.ctr", "No such file or directory")
  check.raises("lua/traj/missing-file", function() carlo.trajectory(D .. "/none.ctr") end,
    "none.ctr", "No such file")
  local f = io.open(D .. "/text.ctr", "w"); f:write("not a trajectory at all\n"); f:close()
  check.raises("lua/traj/not-a-container", function() carlo.trajectory(D .. "/text.ctr") end,
    "is not a carlo trajectory")
  check.raises("lua/traj/disk-full", function() carlo.trajectory("/dev/full", "w") end,
    "No space left on device")
  check.raises("lua/traj/load-not-a-checkpoint", function() carlo.load(D .. "/table.ctr") end,
    "not a checkpoint")
end

-- process exit flushes: a script that never closes its trajectory still leaves an index
do
  local path = D .. "/exit.ctr"
  local script = D .. "/exit.lua"
  local f = io.open(script, "w")
  f:write(([[
local tr = carlo.trajectory(%q, "w", { threads = 2 })
for k = 1, 20 do tr:write { ["configuration/step"] = k, ["log/x"] = carlo.array("f64", 5000, k) } end
os.exit(0) -- no close, no collection: the exit handler finishes the file
]]):format(path))
  f:close()
  local ok = os.execute(os.getenv("CARLO") .. " --quiet " .. script)
  local tr = carlo.trajectory(path)
  check.ok("lua/traj/exit-flushes", ok and #tr == 20 and not tr.recovered and
    tr:frame(20)["log/x"][5000] == 20, ("%d frames, recovered %s"):format(#tr, tostring(tr.recovered)))
  tr:close()
end
