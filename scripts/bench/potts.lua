-- Potts benchmark (make bench): ns per attempted spin update, q = 9 near Tc, for
-- L = 1024 ... 32768 on the GPU, on one CPU thread and on all CPU threads, in one run;
-- plus the cost of driving sweeps one Lua call at a time. Timing: warm-up, then the
-- median of repeats, each ended by sys:sync() before the clock is read.
--   build/carlo scripts/bench.lua potts [Lmax] [repeats]
local carlo = require "carlo"
local a1, a2 = ...
local Lmax = tonumber(a1) or 32768
local repeats = tonumber(a2) or 5

local function median(t)
  table.sort(t)
  local n = #t
  return n % 2 == 1 and t[(n + 1) // 2] or (t[n // 2] + t[n // 2 + 1]) / 2
end

-- ns per flip of `sweeps` sweeps, median over repeats
local function time_sweeps(sys, sweeps, reps)
  sys:run{ sweeps = math.max(1, sweeps // 4), quiet = true } -- warm-up
  sys:sync()
  local t = {}
  for r = 1, reps do
    local t0 = carlo.clock()
    sys:run{ sweeps = sweeps, quiet = true }
    sys:sync()
    t[r] = (carlo.clock() - t0) / (sweeps * sys.N) * 1e9
  end
  return median(t)
end

local has_gpu = #carlo.devices().gpus > 0
local threads = carlo.threads()
print(("Potts q = 9, T = 0.72, Metropolis, random start; %s; %d CPU threads")
  :format(has_gpu and carlo.devices().gpus[1].name or "no GPU", threads))
print(("%6s %12s %12s %12s %14s %14s"):format("L", "gpu ns/flip", "1-thread", "all-threads",
                                              "gpu flips/ns", "gpu/1-thread"))
local L = 1024
while L <= Lmax do
  local gpu = 0 / 0
  if has_gpu then
    local g = carlo.potts{ L = L, q = 9, T = 0.72, seed = 1, device = "gpu" }
    local sweeps = math.max(10, math.floor(2e10 / (L * L)))
    gpu = time_sweeps(g, sweeps, repeats)
    g:close()
  end
  local c = carlo.potts{ L = L, q = 9, T = 0.72, seed = 1, device = "cpu" }
  local csweeps = math.max(1, math.floor(1e8 / (L * L)))
  carlo.threads(1)
  local one = time_sweeps(c, csweeps, 3)
  carlo.threads(threads)
  local all = time_sweeps(c, csweeps, 3)
  c:close()
  collectgarbage()
  print(("%6d %12.5f %12.3f %12.4f %14.1f %14.0f"):format(L, gpu, one, all, 1 / gpu, one / gpu))
  L = L * 2
end

if has_gpu then
  -- Driving sweeps from Lua: n calls of run{ sweeps = 1 } against one run{ sweeps = n }.
  local s = carlo.potts{ L = 4096, q = 9, T = 0.72, seed = 2, device = "gpu" }
  local n = 400
  s:run{ sweeps = 50 }
  s:sync()
  local one, many = {}, {}
  for r = 1, repeats do
    local t0 = carlo.clock()
    s:run{ sweeps = n }
    s:sync()
    one[r] = carlo.clock() - t0
    t0 = carlo.clock()
    for _ = 1, n do s:run{ sweeps = 1 } end
    s:sync()
    many[r] = carlo.clock() - t0
  end
  local a, b = median(one), median(many)
  print(("L = 4096: run{sweeps=%d} %.2f ms; %d x run{sweeps=1} %.2f ms; overhead %.1f%%")
    :format(n, a * 1e3, n, b * 1e3, (b / a - 1) * 100))
end
