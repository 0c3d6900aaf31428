-- scripts/bench/hard_rates.lua — the two large hard-particle systems' GPU moves per second, for
-- same-run A/B comparisons of two builds: 1520^2 disks at phi = 0.698 from a square start and
-- 2^20 spheres at phi = 0.5 from fcc; 0.5 s of warm-up, then the median of 7 timed runs, moves
-- from the systems' counters.
--   build/carlo scripts/bench.lua hard_rates
local carlo = require "carlo"
if #carlo.devices().gpus == 0 then print("no GPU: this benchmark needs one"); return end
carlo.quiet(true)
local function square_disks(side, phi)
  local N = side * side
  local a = math.sqrt(N * math.pi / 4 / phi) / side
  local x = carlo.array("f64", { shape = { N, 3 } })
  local k, L = 1, a * side
  for j = 0, side - 1 do for i = 0, side - 1 do
    x[k] = (i + 0.5) * a - L / 2; x[k + 1] = (j + 0.5) * a - L / 2; x[k + 2] = 0; k = k + 3
  end end
  return carlo.hard_disks{ init = { position = x, box = { L, L } }, seed = 1, device = "gpu", quiet = true }
end
local function median(t) table.sort(t); return t[(#t + 1) // 2] end
local function rate(sys, sweeps, reps)
  local w0 = carlo.clock()
  repeat sys:run{ sweeps = 20 }; sys:sync() until carlo.clock() - w0 > 0.5
  local r = {}
  for _ = 1, reps do
    local before = sys:observe{ pressure = false }.tried
    sys:sync()
    local t0 = carlo.clock()
    sys:run{ sweeps = sweeps }
    sys:sync()
    r[#r + 1] = (sys:observe{ pressure = false }.tried - before) / (carlo.clock() - t0)
  end
  return median(r)
end
local d = square_disks(1520, 0.698)
local rd = rate(d, 100, 7)
d:close()
local s = carlo.hard_spheres{ N = 1048576, phi = 0.5, init = "fcc", seed = 1, device = "gpu", quiet = true }
local rs = rate(s, 50, 7)
s:close()
print(("disks 1520^2: %.4e   spheres 2^20: %.4e"):format(rd, rs))
