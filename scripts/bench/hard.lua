-- make bench: hard disks and spheres, trial moves per second (MPMC Table 4's unit).
--   1. disks at phi = 0.698, N = 253^2, 760^2, 1520^2, 3040^2 (the paper's sizes): the GPU
--      with its default launch, and one CPU thread (carlo.threads(1)), in the same run;
--   2. the GPU launch configurations at N = 1520^2 through sys:launch{} (thread block shape,
--      neighbour lists on or off, the active cell in registers or memory; n_M = 1 ... 8 for the
--      default block; a team of 2, 4 or 8 lanes per cell), so the fastest can be made the
--      default (a launch never changes the chain: tests/gpu/hard.lua checks each bit for bit);
--   3. spheres at phi = 0.5, N = 2^20, GPU and one CPU thread (the default launch, then each
--      team size and the one-thread launch configurations).
-- Each figure: warm-up sweeps first, then the median over repeats of (moves tried) / (time),
-- with sys:sync() before every clock reading. Usage:
--   build/carlo scripts/bench.lua hard            everything (a few minutes with a GPU)
--   build/carlo scripts/bench.lua hard quick      small sizes only, fewer repeats
local carlo = require "carlo"
local quick = arg and (arg[1] == "quick" or arg[2] == "quick")
local has_gpu = #carlo.devices().gpus > 0
local threads = carlo.threads()
carlo.quiet(true)

-- A square lattice filling a square box at packing fraction phi (non-overlapping below
-- pi/4 = 0.785); it melts during the warm-up. Random starts of millions of disks would spend
-- their time compressing, and N = 253^2 is odd, which no hexagonal lattice of even rows holds.
local function square_disks(side, phi, device)
  local N = side * side
  local a = math.sqrt(N * math.pi / 4 / phi) / side
  local x = carlo.array("f64", { shape = { N, 3 } })
  local k = 1
  local L = a * side
  for j = 0, side - 1 do
    for i = 0, side - 1 do
      x[k] = (i + 0.5) * a - L / 2
      x[k + 1] = (j + 0.5) * a - L / 2
      x[k + 2] = 0
      k = k + 3
    end
  end
  return carlo.hard_disks{ init = { position = x, box = { L, L } }, seed = 1, device = device, quiet = true }
end

local function median(t)
  table.sort(t)
  local n = #t
  return n % 2 == 1 and t[(n + 1) // 2] or 0.5 * (t[n // 2] + t[n // 2 + 1])
end

-- moves per second: `warm` sweeps (and at least 0.3 s, so that the launch tuner's first
-- measurements are not timed), then `repeats` timings of `sweeps` sweeps
local function rate(sys, warm, sweeps, repeats)
  local w0 = carlo.clock()
  repeat
    sys:run{ sweeps = warm }
    sys:sync()
  until carlo.clock() - w0 > 0.3
  local r = {}
  for _ = 1, repeats do
    local before = sys:observe{ pressure = false }.tried
    sys:sync()
    local t0 = carlo.clock()
    sys:run{ sweeps = sweeps }
    sys:sync()
    local dt = carlo.clock() - t0
    r[#r + 1] = (sys:observe{ pressure = false }.tried - before) / dt
  end
  return median(r)
end

local function row(...) print(table.concat({ ... }, "\t")) end
local function fmt(x) return x == x and ("%.3e"):format(x) or "-" end

print(("# hard particles, %s; %s"):format(has_gpu and carlo.devices().gpus[1].name or "no GPU",
  carlo.devices().cuda))
print("# disks, phi = 0.698, n_M = 4, delta = 0.16: trial moves per second (median)")
row("N", "gpu_moves_per_s", "cpu1_moves_per_s", "ratio", "gpu_block")
local sides = quick and { 253 } or { 253, 760, 1520, 3040 }
for _, side in ipairs(sides) do
  local N = side * side
  local g_rate, block = 0 / 0, "-"
  if has_gpu then
    local g = square_disks(side, 0.698, "gpu")
    g_rate = rate(g, 100, N > 3e6 and 50 or 100, quick and 3 or 11)
    block = table.concat(g:launch().block, "x")
    g:close()
  end
  carlo.threads(1)
  local c = square_disks(side, 0.698, "cpu")
  -- one CPU thread: fewer sweeps at large N (a 3040^2 sweep is 2e7 moves, ~3 s)
  local c_sweeps = math.max(1, math.floor(2e7 / (2.3 * N)))
  local c_rate = rate(c, math.max(1, c_sweeps // 2), c_sweeps, quick and 1 or 3)
  c:close()
  carlo.threads(threads)
  row(("%d^2"):format(side), fmt(g_rate), ("%.3e"):format(c_rate),
    has_gpu and ("%.1f"):format(g_rate / c_rate) or "-", block)
end

if has_gpu then
  local side = quick and 760 or 1520
  print(("# GPU launch configurations, disks N = %d^2, phi = 0.698: trial moves per second"):format(side))
  print("# (gather: neighbour lists per active cell; cell: registers or memory)")
  row("block", "gather", "cell", "n_M=1", "n_M=2", "n_M=4", "n_M=8")
  local g = square_disks(side, 0.698, "gpu")
  g:run{ sweeps = 100 }
  for _, ga in ipairs{ true, false } do
    for _, v in ipairs{ "registers", "memory" } do
      for _, b in ipairs{ { 32, 1 }, { 32, 2 }, { 32, 4 }, { 64, 2 }, { 64, 4 }, { 128, 1 }, { 256, 1 } } do
        if v == "registers" or b[1] * b[2] == 64 then
          g:launch{ gather = ga, variant = v, block = b }
          local cells = {}
          for _, m in ipairs{ 1, 2, 4, 8 } do
            if m == 4 or (b[1] == 64 and b[2] == 2 and v == "registers") then
              g.moves_per_cell = m
              cells[#cells + 1] = ("%.3e"):format(rate(g, 10, 40, quick and 3 or 5))
            else
              cells[#cells + 1] = "-"
            end
          end
          g.moves_per_cell = 4
          row(("%dx%d"):format(b[1], b[2]), tostring(ga), v, table.unpack(cells))
        end
      end
    end
  end
  -- a team of lanes per active cell (its own kernel: block, gather and cell do not apply)
  for _, t in ipairs{ 2, 4, 8 } do
    g:launch{ team = t }
    row(("team %d"):format(t), "-", "-", "-", "-", ("%.3e"):format(rate(g, 10, 40, quick and 3 or 5)), "-")
  end
  g:launch{ team = 1 }
  g:close()
end

print("# spheres, phi = 0.5, n_M = 4, delta = 0.16 (from fcc, melted): trial moves per second")
row("N", "gpu_moves_per_s", "cpu1_moves_per_s", "ratio", "gpu_block")
local n3 = quick and 4 * 24 ^ 3 or 4 * 64 ^ 3 -- 2^20
local g3 = 0 / 0
local block3 = "-"
if has_gpu then
  local g = carlo.hard_spheres{ N = n3, phi = 0.5, init = "fcc", seed = 1, device = "gpu", quiet = true }
  g3 = rate(g, 100, 100, quick and 3 or 11)
  local best = g3
  local l = g:launch()
  block3 = l.team > 1 and ("team %d"):format(l.team) or table.concat(l.block, "x")
  for _, t in ipairs{ 2, 4, 8 } do
    g:launch{ team = t }
    local r = rate(g, 10, 50, quick and 3 or 5)
    print(("#   team %d: %.3e moves/s"):format(t, r))
    if r > best then best = r; block3 = ("team %d (best)"):format(t) end
  end
  for _, ga in ipairs{ false, true } do
    for _, v in ipairs{ "memory", "registers" } do
      for _, b in ipairs{ { 32, 4 }, { 32, 2 }, { 64, 2 }, { 32, 8 }, { 128, 2 }, { 256, 1 } } do
        g:launch{ team = 1, gather = ga, variant = v, block = b }
        local r = rate(g, 10, 50, quick and 3 or 5)
        print(("#   gather %s, variant %s, block %dx%d: %.3e moves/s"):format(tostring(ga), v, b[1], b[2], r))
        if r > best then best = r; block3 = ("%dx%d %s gather=%s (best)"):format(b[1], b[2], v, tostring(ga)) end
      end
    end
  end
  g3 = best
  g:close()
end
carlo.threads(1)
local c = carlo.hard_spheres{ N = n3, phi = 0.5, init = "fcc", seed = 1, device = "cpu", quiet = true }
local c3 = rate(c, 2, math.max(1, math.floor(2e7 / (3 * n3))), quick and 1 or 3)
c:close()
carlo.threads(threads)
row(("%d"):format(n3), fmt(g3), ("%.3e"):format(c3), has_gpu and ("%.1f"):format(g3 / c3) or "-", block3)
