-- lua/lj/*: carlo.lj's arguments, properties, observables of known configurations, snapshots.
local carlo = require "carlo"
local check = require "check"

local function lj(t)
  t.seed = t.seed or 1
  t.device = t.device or "cpu"
  return carlo.lj(t)
end

-- impossible input: a Lua error naming the key
check.raises("lua/lj/error-rho", function() lj{ N = 100, rho = -0.5, T = 1 } end, "rho", "> 0")
check.raises("lua/lj/error-rho-zero", function() lj{ N = 100, rho = 0, T = 1 } end, "rho")
check.raises("lua/lj/error-T", function() lj{ N = 100, rho = 0.5, T = 0 } end, "T", "> 0")
check.raises("lua/lj/error-T-missing", function() lj{ N = 100, rho = 0.5 } end, "T is required")
check.raises("lua/lj/error-rc", function() lj{ N = 100, rho = 0.8, T = 1, rc = 3 } end,
  "rc must be at most half the shortest box length")
check.raises("lua/lj/error-rc-box", function() lj{ N = 100, box = { 20, 20, 4.8 }, T = 1 } end,
  "rc must be at most half")
check.raises("lua/lj/error-unknown-key", function() lj{ N = 100, rho = 0.5, T = 1, temp = 2 } end,
  "unknown key 'temp'")
check.raises("lua/lj/error-rho-and-box", function() lj{ N = 100, rho = 0.5, box = 10, T = 1 } end,
  "exactly one of rho")
check.raises("lua/lj/error-N", function() lj{ N = 1, rho = 0.5, T = 1 } end, "N must be")
check.raises("lua/lj/error-shift-tail", function()
  lj{ N = 100, rho = 0.5, T = 1, shift = true, tail = true } end, "tail must be false")
check.raises("lua/lj/error-delta", function() lj{ N = 100, rho = 0.5, T = 1, delta = 5 } end,
  "delta must be at most")
check.raises("lua/lj/error-energy-sum", function()
  lj{ N = 200, rho = 0.8, T = 1, energy_sum = "cells" } end, "needs at least 3 cells")
check.raises("lua/lj/error-mode", function() lj{ N = 100, rho = 0.5, T = 1, mode = "fast" } end,
  "mode must be one of")
check.raises("lua/lj/error-dim", function() lj{ N = 100, box = { 10, 10 }, dim = 3, T = 1 } end,
  "dim = 3 but the box lists 2")
check.raises("lua/lj/error-init", function() lj{ N = 100, rho = 0.5, T = 1, init = "bcc" } end,
  "init must be one of")
if not check.has_gpu() then
  check.raises("lua/lj/error-no-gpu", function() lj{ N = 100, rho = 0.5, T = 1, device = "gpu" } end,
    "device")
end

-- properties
local s = lj{ N = 500, rho = 0.776, T = 0.85, rc = 3.0 }
check.eq("lua/lj/N", s.N, 500)
check.ok("lua/lj/rho", math.abs(s.rho - 0.776) < 1e-14, s.rho)
check.eq("lua/lj/default-mode", s.mode, "decomposition")
check.eq("lua/lj/auto-sum-small", s.energy_sum, "all")
check.eq("lua/lj/tail-default", s.tail, true)
check.eq("lua/lj/dim", s.dim, 3)
local big = lj{ N = 4000, rho = 0.776, T = 0.85 }
check.eq("lua/lj/auto-sum-large", big.energy_sum, "cells")
check.eq("lua/lj/shift-no-tail", lj{ N = 100, rho = 0.5, T = 1, shift = true }.tail, false)
check.raises("lua/lj/error-kernel-cpu", function() s.kernel = "graph" end, "GPU")
check.raises("lua/lj/error-set-delta", function() s.delta = -1 end, "delta")
check.raises("lua/lj/error-readonly", function() s.N = 3 end, "read-only")
s.T = 0.9
check.ok("lua/lj/set-T", s.T == 0.9 and math.abs(s.beta - 1 / 0.9) < 1e-15)
s.T = 0.85

-- the energy and pressure of the starting lattice, summed here pair by pair
local function brute(sys, rc, shift)
  local snap = sys:snapshot()
  local p, L, d = snap.position, snap.box, 3
  local n = sys.N
  local U, W = 0, 0
  local us = 0
  if shift then us = 4 * (rc ^ -12 - rc ^ -6) end
  for i = 1, n do
    for j = i + 1, n do
      local r2 = 0
      for a = 1, sys.dim do
        local x = p[(j - 1) * d + a] - p[(i - 1) * d + a]
        x = x - L[a] * math.floor(x / L[a] + 0.5)
        r2 = r2 + x * x
      end
      if r2 < rc * rc then
        local s6 = r2 ^ -3
        U = U + 4 * (s6 * s6 - s6) - us
        W = W + 24 * (2 * s6 * s6 - s6)
      end
    end
  end
  return U, W
end

local U, W = brute(s, 3.0)
local V = s.volume
local o = s:observe()
check.ok("lua/lj/fcc-energy", math.abs(o.U - (U / 500 + s.tail_energy)) < 1e-12,
  ("%.15g vs %.15g"):format(o.U, U / 500 + s.tail_energy))
check.ok("lua/lj/fcc-pressure",
  math.abs(o.P - (0.776 * 0.85 + W / (3 * V) + s.tail_pressure)) < 1e-12,
  ("%.15g vs %.15g"):format(o.P, 0.776 * 0.85 + W / (3 * V) + s.tail_pressure))
-- tail corrections: (8/3) pi rho (rc^-9/3 - rc^-3) and (16/3) pi rho^2 ((2/3) rc^-9 - rc^-3)
check.ok("lua/lj/tail-values",
  math.abs(s.tail_energy - 8 / 3 * math.pi * 0.776 * (3 ^ -9 / 3 - 3 ^ -3)) < 1e-14 and
  math.abs(s.tail_pressure - 16 / 3 * math.pi * 0.776 ^ 2 * (2 / 3 * 3 ^ -9 - 3 ^ -3)) < 1e-14)

-- a 2D shifted system in a rectangle, after some moves
local s2 = lj{ N = 300, box = { 18, 21 }, T = 1.2, shift = true, init = "random", seed = 4 }
check.eq("lua/lj/2d-dim", s2.dim, 2)
s2:run{ moves = 20000 }
local U2, W2 = brute(s2, 2.5, true)
local o2 = s2:observe()
check.ok("lua/lj/2d-shifted-energy", math.abs(o2.U - U2 / 300) < 1e-10,
  ("%.15g vs %.15g"):format(o2.U, U2 / 300))
check.ok("lua/lj/2d-pressure", math.abs(o2.P - (300 / (18 * 21) * 1.2 + W2 / (2 * 18 * 21))) < 1e-10)

-- snapshots: a system built from one starts from the same configuration
local snap = s2:snapshot()
check.ok("lua/lj/snapshot-shape", #snap.position == 900 and #snap.box == 6 and snap.box[3] == 0 and
  snap.dimensions == 2 and snap.step == s2.step)
local s3 = lj{ init = snap, T = 1.2, shift = true }
check.ok("lua/lj/snapshot-restart", s3.N == 300 and s3.dim == 2 and math.abs(s3.U - s2.U) < 1e-12
  and s3.step == s2.step, ("%s vs %s"):format(s3.U, s2.U))
check.raises("lua/lj/error-snapshot-rho", function() lj{ init = snap, rho = 0.5, T = 1 } end,
  "the box comes from the snapshot")
-- positions outside the box are periodic images: wrapped, not refused
local shifted = carlo.array("f64", { shape = { 300, 2 } })
for i = 1, 300 do
  shifted[2 * i - 1] = snap.position[3 * i - 2] + 18
  shifted[2 * i] = snap.position[3 * i - 1] - 21
end
local s4 = lj{ init = { position = shifted, box = { 18, 21 } }, T = 1.2, shift = true }
check.ok("lua/lj/snapshot-images", math.abs(s4.U - s2.U) < 1e-12, ("%s vs %s"):format(s4.U, s2.U))
-- coincident particles: refused, naming them
local bad = carlo.array("f64", { shape = { 3, 3 } })
for i = 1, 9 do bad[i] = 1.0 end
bad[7], bad[8], bad[9] = 4, 4, 4
check.raises("lua/lj/error-overlap", function()
  lj{ init = { position = bad, box = { 10, 10, 10 } }, T = 1 } end, "particles 1 and 2 overlap")

-- g(r) of the perfect fcc lattice: 12 nearest neighbours, none closer
local f = lj{ N = 500, rho = 0.9, T = 1 }
local a = (4 / 0.9) ^ (1 / 3)
local g = f:rdf{ bins = 200, rmax = 0.5 * f.box[1] }
local n1, n0 = 0, 0
for b = 1, 200 do
  local r = g.r[b]
  local shell = 4 / 3 * math.pi * ((r + 0.5 * f.box[1] / 400) ^ 3 - (r - 0.5 * f.box[1] / 400) ^ 3)
  local n = g.g[b] * 499 / f.volume * shell
  if r < 0.9 * a / math.sqrt(2) then n0 = n0 + n elseif r < 0.5 * (a / math.sqrt(2) + a) then n1 = n1 + n end
end
check.ok("lua/lj/rdf-fcc-coordination", math.abs(n1 - 12) < 1e-9 and n0 == 0, ("%g, %g"):format(n1, n0))

-- sampling returns estimates with errors; Widom and g(r) when asked
local t = lj{ N = 256, rho = 0.5, T = 1.5, init = "random" }
t:tune{ sweeps = 20, target = 0.4 }
local r = t:sample{ sweeps = 40, every = 2, widom = 10, rdf = { bins = 50 } }
check.ok("lua/lj/sample-fields", r.U.err > 0 and r.P.err > 0 and r.mu_ex.err > 0 and r.samples == 20
  and #r.rdf.g == 50 and r.acceptance > 0 and r.acceptance < 1, "missing or empty estimates")
check.ok("lua/lj/tune", math.abs(r.acceptance - 0.4) < 0.1 and t.delta > 0 and t.delta <= t.delta_max,
  ("acceptance %g after tuning to 0.4, delta %g"):format(r.acceptance, t.delta))
check.raises("lua/lj/error-sample", function() t:sample{ sweeps = 10, every = 3 } end, "multiple of every")
check.raises("lua/lj/error-run", function() t:run{ sweeps = 1, moves = 2 } end, "exactly one of")

-- checkpoints are written atomically
local path = check.tmp .. "/lj-api.ckpt"
t:save(path)
check.ok("lua/lj/save", carlo.load(path).step == t.step)

-- trajectories: run{ every =, trajectory = } writes the frames of the run from C
do
  local path = check.tmp .. "/lj-run.ctr"
  local sys = carlo.lj{ N = 108, rho = 0.5, T = 1.5, rc = 2.5, seed = 31, device = "cpu" }
  local tr = carlo.trajectory(path, "w")
  sys:run{ sweeps = 20, every = 5, trajectory = tr }
  tr:close()
  local rd = carlo.trajectory(path, "r")
  local last = rd:frame(-1)
  local snap = sys:snapshot()
  local same = #rd == 4 and last["configuration/step"][1] == sys.step
  local function f32(x) return (string.unpack("f", string.pack("f", x))) end -- frames store f32
  for i = 1, 3 * 108 do same = same and last["particles/position"][i] == f32(snap.position[i]) end
  check.ok("lua/lj/run-writes-trajectory", same, ("%d frames"):format(#rd))
  rd:close()
end
