-- scripts/bench/hard_rates.lua — the two large hard-particle systems' GPU moves per second, for
-- same-run A/B comparisons of two builds: 1520^2 disks at phi = 0.698 from a square start and
-- 2^20 spheres at phi = 0.5 from fcc; 0.5 s of warm-up, then the median of 7 timed runs, moves
-- from the systems' counters. With "tilted": hexagonal disks (1024 x 1024 at phi = 0.698) and
-- fcc spheres (48 x 48 x 48 x 2 at phi = 0.5) in an orthorhombic box and in a box tilted by a
-- quarter of its side (xy), each with the launch the tuner picks.
--   build/carlo scripts/bench.lua hard_rates [tilted]
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
if (...) == "tilted" then
  local function hex(nx, rows, phi, tilt)
    local a = math.sqrt(math.pi / 4 / phi * 2 / math.sqrt(3))
    local h = a * math.sqrt(3) / 2
    local x = carlo.array("f64", { shape = { nx * rows, 2 } })
    for j = 0, rows - 1 do for i = 0, nx - 1 do
      x[2 * (j * nx + i) + 1] = (i + 0.5 * j) * a - 0.5 * nx * a
      x[2 * (j * nx + i) + 2] = (j + 0.5) * h - 0.5 * rows * h
    end end
    -- the images' shift tilt L_y made a whole number of lattice spacings: the crystal stays whole
    local m = math.floor(tilt * rows * h / a + 0.5)
    return carlo.hard_disks{ init = { position = x, box = { nx * a, rows * h, xy = m * a / (rows * h) } },
                             seed = 1, device = "gpu", quiet = true }
  end
  local function fcc(n, phi, tilt) -- n^3 cubic cells of 4 spheres, the box sheared by xy = tilt
    local a = (4 * math.pi / 6 / phi) ^ (1 / 3)
    local L = n * a
    local x = carlo.array("f64", { shape = { 4 * n ^ 3, 3 } })
    local basis = { { 0, 0, 0 }, { 0.5, 0.5, 0 }, { 0.5, 0, 0.5 }, { 0, 0.5, 0.5 } }
    local k = 1
    for i = 0, n - 1 do for j = 0, n - 1 do for l = 0, n - 1 do
      for _, b in ipairs(basis) do
        local sy, sz = (j + b[2] + 0.25) * a - L / 2, (l + b[3] + 0.25) * a - L / 2
        x[k] = (i + b[1] + 0.25) * a - L / 2 + tilt * sy; x[k + 1] = sy; x[k + 2] = sz; k = k + 3
      end
    end end end
    return carlo.hard_spheres{ init = { position = x, box = { L, L, L, tilt, 0, 0 } }, seed = 1, device = "gpu",
                               quiet = true }
  end
  for _, tilt in ipairs{ 0, 0.25 } do
    local d = hex(1024, 1024, 0.698, tilt)
    local rd = rate(d, 100, 7)
    local ld = d:launch()
    d:close()
    local s = fcc(48, 0.5, tilt)
    local rs = rate(s, 50, 7)
    local ls = s:launch()
    s:close()
    print(("xy = %.2f: disks 1024^2 %.4e (team %d)   spheres 4 x 48^3 %.4e (team %d)"):format(tilt, rd, ld.team, rs, ls.team))
  end
  return
end
local d = square_disks(1520, 0.698)
local rd = rate(d, 100, 7)
d:close()
local s = carlo.hard_spheres{ N = 1048576, phi = 0.5, init = "fcc", seed = 1, device = "gpu", quiet = true }
local rs = rate(s, 50, 7)
s:close()
print(("disks 1520^2: %.4e   spheres 2^20: %.4e"):format(rd, rs))
