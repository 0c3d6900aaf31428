-- scripts/bench/lj.lua — Lennard-Jones trial moves per second, GPU and one CPU thread in the
-- same run.
--   1. Decomposition mode at the sizes of Hailat et al. (2013) Table 6 (V = 2N, so rho = 0.5;
--      T = 1.5, rc = 2.5, fcc start): every GPU kernel variant (sys:launch{ kernel = }) and
--      both energy sums, so that the fastest can be chosen from one run.
--   2. Checkerboard mode at rho = 0.8, T = 1, rc = 2.5 (fcc start, delta tuned to 40 %
--      acceptance on the CPU copy first), N = 2^12 ... 2^20, both sum orders (near: 32 lanes,
--      one warp per cell; cell: 128 lanes, one block per cell).
--   build/carlo scripts/bench.lua lj            both tables
--   build/carlo scripts/bench.lua lj quick      fewer sizes
--   3. (only when asked) checkerboard at N = 2^20, sum order near, passes = 1, 2, 4 (trial moves
--      per particle and sub-sweep): the share of a sub-sweep's cost that does not grow with its moves.
--   build/carlo scripts/bench.lua lj checkerboard | decomposition    one table
--   build/carlo scripts/bench.lua lj passes                          the third
local carlo = require "carlo"
local opt = ...
local quick = opt == "quick"
local only = (opt == "checkerboard" or opt == "decomposition" or opt == "passes") and opt or nil

local gpus = carlo.devices().gpus
local has_gpu = #gpus > 0
print(("GPU: %s; CPU: 1 thread; %s"):format(has_gpu and gpus[1].name or "none", carlo.devices().cuda))

-- trial moves per second of sys: a warm-up, then the median of 3 timed runs of about
-- `seconds` (in moves for decomposition, in whole sweeps of N moves for the checkerboard)
local function rate(sys, seconds)
  local cb = sys.mode == "checkerboard"
  local function go(n)
    if cb then sys:run{ sweeps = n, check_every = 0 } else sys:trial(n) end
  end
  local n = cb and 1 or 64
  while true do -- warm-up and calibration
    local t0 = carlo.clock()
    go(n)
    sys:sync()
    local dt = carlo.clock() - t0
    if dt > 0.05 or n >= 1 << 30 then
      n = math.max(cb and 1 or 16, math.floor(n * seconds / dt))
      break
    end
    n = n * 4
  end
  local r = {}
  for k = 1, 3 do
    local t0 = carlo.clock()
    go(n)
    sys:sync()
    r[k] = n * (cb and sys.N * sys.passes or 1) / (carlo.clock() - t0)
  end
  table.sort(r)
  return r[2]
end

-- The paper's GTX 480 times for 10^6 moves (Table 6, CUDA with 128 threads per block).
local paper = { [256] = 11.0, [512] = 11.3, [1024] = 11.5, [2048] = 12.5, [4096] = 14.0,
  [8192] = 17.1, [16384] = 26.7, [32768] = 44.7, [65536] = 74.3, [131072] = 136.4, [262144] = 243.7 }

local function system(N, device, sum)
  return carlo.lj{ N = N, rho = 0.5, T = 1.5, rc = 2.5, seed = 1, device = device,
                   energy_sum = sum, delta = 0.15 }
end

local function fmt(x) return x and ("%.3g"):format(x) or "-" end

if only == nil or only == "decomposition" then
print("\n== decomposition mode: trial moves per second ==")
print(("%-8s %-6s %-11s %12s %12s %8s %12s"):format("N", "sum", "gpu kernel", "GPU", "CPU 1 thr",
  "GPU/CPU", "paper GTX480"))
local sizes = {}
if quick then sizes = { 256, 4096, 65536, 262144 } else
  for e = 8, 18 do sizes[#sizes + 1] = 1 << e end
end
local best = {}
for _, N in ipairs(sizes) do
  -- the sums this size allows: cells need at least 3 cells per axis
  local sums = { "all" }
  if pcall(system, N, "cpu", "cells") then sums[2] = "cells" end
  local auto = system(N, "cpu").energy_sum
  carlo.threads(1)
  local cpu = {}
  for _, sum in ipairs(sums) do
    -- the all-particle sum on one CPU core is slow at large N: shorter timing there
    cpu[sum] = rate(system(N, "cpu", sum), N > 65536 and sum == "all" and 0.3 or 0.5)
  end
  carlo.threads(carlo.devices().cpu.threads)
  for _, sum in ipairs(sums) do
    for _, kernel in ipairs{ "persistent", "launch", "graph" } do
      local g
      if has_gpu then
        local s = system(N, "gpu", sum)
        s:launch{ kernel = kernel }
        g = rate(s, 0.5)
        s:close()
        collectgarbage()
        if not best[N] or g > best[N].rate then best[N] = { rate = g, sum = sum, kernel = kernel } end
      end
      print(("%-8d %-6s %-11s %12s %12s %8s %12s"):format(N, sum .. (sum == auto and "*" or ""), kernel,
        fmt(g), kernel == "persistent" and fmt(cpu[sum]) or "", g and kernel == "persistent" and
        fmt(g / cpu[sum]) or "", kernel == "persistent" and sum == "all" and fmt(1e6 / paper[N]) or ""))
      if not has_gpu then break end
    end
  end
end
print("(* = the sum carlo chooses by itself; CPU is one thread, the same sum)")
if has_gpu then
  print("\nfastest GPU variant per size:")
  for _, N in ipairs(sizes) do
    local b = best[N]
    print(("  N = %-7d %s over %s: %.3g moves/s"):format(N, b.kernel, b.sum, b.rate))
  end
  local b = best[262144]
  if b then
    print(("target at N = 262144: >= 2e5 moves/s on an H100; measured %.3g (%s)"):format(b.rate,
      b.rate >= 2e5 and "met" or "NOT met"))
  end
end
end

if only == nil or only == "checkerboard" then
print("\n== checkerboard mode (rho = 0.8, T = 1, rc = 2.5): trial moves per second ==")
print(("%-8s %-6s %-7s %12s %12s %8s %10s"):format("N", "order", "cells", "GPU", "CPU 1 thr", "GPU/CPU",
  "acceptance"))
local csizes = quick and { 4096, 32768, 1 << 20 } or { 4096, 8192, 16384, 32768, 65536, 131072, 262144,
  524288, 1 << 20 }
local best_cb
for _, N in ipairs(csizes) do
  local function make(device, order)
    return carlo.lj{ N = N, rho = 0.8, T = 1.0, rc = 2.5, seed = 1, mode = "checkerboard",
                     device = device, sum_order = order }
  end
  -- tune the move size once on the CPU; every system then uses it
  local tuner = make("cpu")
  tuner:tune{ sweeps = N >= 262144 and 2 or 10, target = 0.4 }
  local delta, auto = tuner.delta, tuner.sum_order
  local cells = ("%d^3"):format(tuner.cells[1])
  tuner:close()
  carlo.threads(1)
  local cs = make("cpu")
  cs.delta = delta
  local cpu = rate(cs, N >= 262144 and 1.0 or 0.5)
  local acc = cs.acceptance
  cs:close()
  carlo.threads(carlo.devices().cpu.threads)
  for _, order in ipairs{ "near", "cell" } do
    local g
    if has_gpu then
      local s = make("gpu", order)
      s.delta = delta
      g = rate(s, 0.5)
      s:close()
      collectgarbage()
      if N == 1 << 20 and (not best_cb or g > best_cb.rate) then best_cb = { rate = g, order = order } end
    end
    print(("%-8d %-6s %-7s %12s %12s %8s %10.3f"):format(N, order .. (order == auto and "*" or ""),
      order == "near" and cells or "", fmt(g), order == "near" and fmt(cpu) or "",
      g and fmt(g / cpu) or "", acc))
    if not has_gpu then break end
  end
end
print("(* = the sum order carlo chooses by itself (by the size only); the CPU runs that one, one thread)")
if best_cb then
  print(("target at N = 2^20: >= 1e9 moves/s on an H100; measured %.3g with sum order %s (%s)")
    :format(best_cb.rate, best_cb.order, best_cb.rate >= 1e9 and "met" or "NOT met"))
end
end

if only == "passes" and has_gpu then
  print("\n== checkerboard, N = 2^20, sum order near (rho = 0.8, T = 1, rc = 2.5): passes ==")
  print(("%-7s %12s %10s"):format("passes", "GPU", "acceptance"))
  local N = 1 << 20
  local tuner = carlo.lj{ N = N, rho = 0.8, T = 1.0, rc = 2.5, seed = 1, mode = "checkerboard", device = "gpu" }
  tuner:tune{ sweeps = 4, target = 0.4 }
  local delta = tuner.delta
  tuner:close()
  for _, passes in ipairs{ 1, 2, 4 } do
    local s = carlo.lj{ N = N, rho = 0.8, T = 1.0, rc = 2.5, seed = 1, mode = "checkerboard", device = "gpu",
                        sum_order = "near", passes = passes }
    s.delta = delta
    print(("%-7d %12s %10.3f"):format(passes, fmt(rate(s, 0.5)), s.acceptance))
    s:close()
    collectgarbage()
  end
end
