-- lua/lj/*: carlo.lj's arguments, properties, observables of known configurations, snapshots,
-- the model's own methods (trial, substep, tune, launch) and the old names.
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
check.raises("lua/lj/error-T-missing", function() lj{ N = 100, rho = 0.5 } end, "exactly one of T")
check.raises("lua/lj/error-T-and-beta", function() lj{ N = 100, rho = 0.5, T = 1, beta = 1 } end,
  "exactly one of T")
-- a bad value is printed (was garbled: lua_pushfstring knows no %g)
check.raises("lua/lj/error-box-value", function() lj{ box = { 0, 10, 10 }, T = 1, N = 64 } end,
  "box[1] must be a number > 0 (got 0.0)")
check.raises("lua/lj/error-box-tilt", function() lj{ box = { 10, 10, 10, 0.5, 0, 0 }, T = 1, N = 64 } end,
  "got 0.5, 0.0, 0.0")
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
check.raises("lua/lj/error-kernel-cpu", function() s:launch{ kernel = "graph" } end, "GPU")
check.raises("lua/lj/error-kernel-field", function() s.kernel = "graph" end, "sys:launch")
check.eq("lua/lj/launch-cpu", s:launch().kernel, "cpu")
check.raises("lua/lj/error-set-delta", function() s.delta = -1 end, "delta")
check.raises("lua/lj/error-readonly", function() s.N = 3 end, "read-only", "settable: T, beta, lambda, delta")
check.raises("lua/lj/error-unknown-field", function() s.bogus = 3 end, "unknown field 'bogus'")
s.T = 0.9
check.ok("lua/lj/set-T", s.T == 0.9 and math.abs(s.beta - 1 / 0.9) < 1e-15)
s.beta = 2
check.ok("lua/lj/set-beta", s.beta == 2 and s.T == 0.5)
check.raises("lua/lj/error-set-T", function() s.T = -1 end, "T must be a number", "got -1")
s.T = 0.85
check.ok("lua/lj/controls", #s.controls == 3 and s.controls[1] == "T" and s.controls[2] == "beta" and
  s.controls[3] == "lambda" and
  #s.observables == 2 and s.observables[1] == "U" and s.observables[2] == "P")

-- the energy and pressure of the starting lattice, summed here pair by pair
local function brute(sys, rc, shift)
  local snap = sys:snapshot()
  local p, L, d = snap.position, snap.box, sys.dim
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
s2:trial(20000)
local U2, W2 = brute(s2, 2.5, true)
local o2 = s2:observe()
check.ok("lua/lj/2d-shifted-energy", math.abs(o2.U - U2 / 300) < 1e-10,
  ("%.15g vs %.15g"):format(o2.U, U2 / 300))
check.ok("lua/lj/2d-pressure", math.abs(o2.P - (300 / (18 * 21) * 1.2 + W2 / (2 * 18 * 21))) < 1e-10)

-- snapshots: a system built from one starts from the same configuration
local snap = s2:snapshot()
check.ok("lua/lj/snapshot-shape", #snap.position == 600 and snap.position.shape[1] == 300 and
  snap.position.shape[2] == 2 and #snap.box == 6 and snap.box[3] == 0 and snap.N == 300 and
  snap.step == s2.step)
local s3 = lj{ init = snap, T = 1.2, shift = true }
check.ok("lua/lj/snapshot-restart", s3.N == 300 and s3.dim == 2 and math.abs(s3.U - s2.U) < 1e-12
  and s3.step == s2.step, ("%s vs %s"):format(s3.U, s2.U))
check.raises("lua/lj/error-snapshot-rho", function() lj{ init = snap, rho = 0.5, T = 1 } end,
  "rho = 0.5 does not match the snapshot's density")
-- the snapshot's own positions come back bit for bit, with rho or box given as well
local s5 = lj{ init = snap, rho = 300 / (18 * 21), box = { 18, 21 }, T = 1.2, shift = true }
check.ok("lua/lj/snapshot-roundtrip", s5:snapshot().position == snap.position and s5.step == s2.step)
-- positions outside the box are periodic images: wrapped, not refused
local shifted = carlo.array("f64", { shape = { 300, 2 } })
for i = 1, 300 do
  shifted[2 * i - 1] = snap.position[2 * i - 1] + 18
  shifted[2 * i] = snap.position[2 * i] - 21
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
  and r.boltzmann.err > 0 and r.U.plateau ~= nil and #r.rdf.g == 50 and r.acceptance > 0 and
  r.acceptance < 1 and r.T == 1.5 and math.abs(r.rho - 0.5) < 1e-12 and r.delta == t.delta,
  "missing or empty estimates")
-- mu_ex = -T ln <exp(-beta dU)>: the derived estimate of the sampled Boltzmann factors
check.ok("lua/lj/sample-mu-ex", math.abs(r.mu_ex.mean + 1.5 * math.log(r.boltzmann.mean)) < 1e-12 and
  math.abs(r.mu_ex.err - 1.5 * r.boltzmann.err / r.boltzmann.mean) < 0.5 * r.mu_ex.err,
  ("mu_ex %g +- %g, boltzmann %g +- %g"):format(r.mu_ex.mean, r.mu_ex.err, r.boltzmann.mean, r.boltzmann.err))
check.ok("lua/lj/tune", math.abs(r.acceptance - 0.4) < 0.1 and t.delta > 0 and t.delta <= t.delta_max,
  ("acceptance %g after tuning to 0.4, delta %g"):format(r.acceptance, t.delta))
check.raises("lua/lj/error-sample", function() t:sample{ sweeps = 10, every = 3 } end, "multiple of every")
check.raises("lua/lj/error-run", function() t:run{ sweeps = 1, upto = 2 } end, "exactly one of")
check.raises("lua/lj/error-run-moves", function() t:run{ moves = 2 } end, "sys:trial(n)")
check.raises("lua/lj/error-sample-moves", function() t:sample{ moves = 2, sweeps = 2 } end, "sys:trial(n)")

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

-- tune returns { delta, acceptance, target, reached }; a target out of reach says so
do
  local u = lj{ N = 256, rho = 0.5, T = 1.5, init = "random", seed = 3 }
  local tu = u:tune{ sweeps = 30, target = 0.4 }
  check.ok("lua/lj/tune-table", tu.target == 0.4 and tu.reached == true and tu.delta == u.delta and
    math.abs(tu.acceptance - 0.4) < 0.1, ("%s %s %s"):format(tu.acceptance, tu.delta, tu.reached))
  -- a dilute gas accepts more than 10 % of its moves even at the largest delta
  local gas = lj{ N = 64, rho = 0.01, T = 2, seed = 3, quiet = true }
  local tg = gas:tune{ sweeps = 40, target = 0.1 }
  check.ok("lua/lj/tune-unreachable", tg.reached == false and gas.delta == gas.delta_max and
    tg.acceptance > 0.1, ("reached %s, delta %g of %g"):format(tostring(tg.reached), gas.delta, gas.delta_max))
end

-- single trial moves: N of them are a sweep, and the step follows; moves is tried's old name
do
  local a = lj{ N = 200, rho = 0.7, T = 1, init = "random", seed = 8 }
  local b = lj{ N = 200, rho = 0.7, T = 1, init = "random", seed = 8 }
  a:run{ sweeps = 7 }
  b:trial(450); b:trial(950)
  check.ok("lua/lj/trial-composes-run", a:snapshot().position == b:snapshot().position and a.U == b.U and
    a.step == 7 and b.step == 7 and b.tried == 1400 and b.moves == 1400, ("step %d, tried %d"):format(b.step, b.tried))
  local c = lj{ N = 200, rho = 0.7, T = 1, init = "random", seed = 8 }
  for _ = 1, 7 do c:sweep() end
  check.ok("lua/lj/sweep-composes-run", c:snapshot().position == a:snapshot().position and c.step == 7)
  check.raises("lua/lj/error-substep-decomposition", function() c:substep(0) end, "checkerboard")
  check.raises("lua/lj/error-trial-n", function() c:trial(-1) end, "got -1")
  local o = c:observe{ widom = 20, rdf = { bins = 10 } }
  check.ok("lua/lj/observe-fields", o.U == c.U and o.P == c.P and o.W == c.W and o.step == 7 and
    o.boltzmann >= 0 and o.tried == c.tried and #o.rdf.g == 10 and o.T == 1 and o.acceptance == c.acceptance)
end

-- the checkerboard: sum_order by the system's size (never the machine), lanes its old name;
-- sub-sweeps in the sweep's set order are the sweep
do
  local small = lj{ N = 500, rho = 0.776, T = 0.85, mode = "checkerboard" }
  check.ok("lua/lj/sum-order-default", small.sum_order == "cell" and small:launch().lanes == 128 and
    small.energy_sum == nil and lj{ N = 1 << 17, rho = 0.8, T = 1, mode = "checkerboard" }.sum_order == "near")
  check.eq("lua/lj/lanes-alias", lj{ N = 500, rho = 0.776, T = 0.85, mode = "checkerboard", lanes = 32 }.sum_order, "near")
  check.raises("lua/lj/error-lanes-launch", function() small:launch{ lanes = 32 } end, "sum_order")
  check.raises("lua/lj/error-sum-order", function()
    lj{ N = 500, rho = 0.776, T = 0.85, mode = "checkerboard", sum_order = "far" } end, "sum_order must be one of")
  check.raises("lua/lj/error-sum-order-decomposition", function()
    lj{ N = 500, rho = 0.776, T = 0.85, sum_order = "near" } end, "belongs to mode = \"checkerboard\"")
  for _, order in ipairs{ "near", "cell" } do
    local function make() return lj{ N = 2000, rho = 0.7, T = 1, dim = 2, mode = "checkerboard",
                                     init = "random", seed = 4, sum_order = order } end
    local a, b = make(), make()
    a:run{ sweeps = 3 }
    for _ = 1, 3 do for _, set in ipairs(b.set_order) do b:substep(set) end end
    check.ok("lua/lj/substeps-are-a-sweep-" .. order, a:snapshot().position == b:snapshot().position and
      a.U == b.U and a.W == b.W and a.tried == b.tried and b.step == 3)
    -- half a sweep, saved and loaded: the run finishes it first
    local first = b.set_order
    b:substep(first[1]); b:substep(first[2])
    check.ok("lua/lj/substep-sets-done-" .. order, #b.sets_done == 2 and b.step == 3)
    check.raises("lua/lj/error-substep-twice-" .. order, function() b:substep(first[1]) end, "already")
    local path = check.tmp .. "/lj-half-sweep.ckpt"
    b:save(path)
    local c = carlo.load(path)
    a:run{ sweeps = 2 }; b:run{ sweeps = 2 }; c:run{ sweeps = 2 }
    check.ok("lua/lj/substep-checkpoint-" .. order, c:snapshot().position == b:snapshot().position and
      b.step == 5 and c.step == 5 and #c.sets_done == 0 and c.U == b.U)
  end
  check.raises("lua/lj/error-substep-range", function() small:substep(8) end, "from 0 to 7", "got 8")
end

-- ---------- Ctrl-C stops a long sys:widom ----------
-- 2^24 insertions into 4000 particles take minutes on one core in either mode; a SIGINT
-- after 1 s must end the call at once with "interrupted" (exit 130; SIGKILL 20 s later,
-- should it not). --foreground: one SIGINT to the child, as a terminal sends it.
for _, mode in ipairs{ "decomposition", "checkerboard" } do
  local r = check.interrupt("lj-widom-int-" .. mode, ([[
local s = carlo.lj{ N = 4000, rho = 0.8, T = 1.5, seed = 2, device = "cpu", mode = %q }
io.stderr:write("inserting\n")
s:widom(16777216)
io.stderr:write("finished\n")
]]):format(mode), 1, true)
  if r then
    check.ok("lua/lj/ctrl-c-widom-" .. mode, not r.ok and r.how == "exit" and r.code == 130 and r.took < 6
      and r.said:find("inserting", 1, true) and r.said:find("interrupted", 1, true)
      and not r.said:find("finished", 1, true), r.why)
  end
end
