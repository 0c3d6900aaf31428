-- scripts/bench/ensemble.lua — replica ensembles and protocols on one GPU, with the one-CPU-thread
-- figure of the same work in the same run:
--   1. LJ: R systems of N = 4096 (rho = 0.5, T = 1.5, rc = 2.5, decomposition mode) advanced
--      together by carlo.advance (what carlo.ensemble does), total trial moves per second,
--      against one system run alone; R = 1, 8, 16, 32, 64.
--   2. Potts q = 9: an ensemble of 32 replicas at L = 256 (one system, one launch per colour for
--      all replicas) and 32 separate L = 256 systems advanced together, against one L = 1448
--      system (the same number of spins), flips per ns.
--   3. Protocol overhead: a 100-point carlo.anneal of 1000^2 hard disks (NPT, a pressure
--      ladder, every observable logged with its errors) against plain runs of the same sweeps.
-- Timing: a warm-up, then the median of repeats, each ended by a sync before the clock is read.
--   build/carlo scripts/bench.lua ensemble [lj|potts|anneal]
local carlo = require "carlo"
local only = ...
local gpus = carlo.devices().gpus
if #gpus == 0 then print("no GPU: the ensemble benchmark needs one"); return end
print(("GPU: %s; %s"):format(gpus[1].name, carlo.devices().cuda))

local function median(t)
  table.sort(t)
  local n = #t
  return n % 2 == 1 and t[(n + 1) // 2] or (t[n // 2] + t[n // 2 + 1]) / 2
end

-- seconds of fn(), median of `reps` after one warm-up call
local function timed(fn, reps)
  fn()
  local t = {}
  for r = 1, reps do
    local t0 = carlo.clock()
    fn()
    t[r] = carlo.clock() - t0
  end
  return median(t)
end

if not only or only == "lj" then
  print("\n== LJ N = 4096, rho = 0.5, T = 1.5, decomposition: R systems advanced together ==")
  local function lj(device, seed)
    return carlo.lj{ N = 4096, rho = 0.5, T = 1.5, rc = 2.5, seed = seed, device = device,
                     delta = 0.15, quiet = true }
  end
  carlo.threads(1)
  local c = lj("cpu", 1)
  local cpu = 4096 * 2 / timed(function() c:run{ sweeps = 2, quiet = true } end, 3)
  c:close()
  carlo.threads("auto")
  local one
  print(("%4s %14s %12s %14s"):format("R", "moves/s", "vs R = 1", "vs 1 CPU thr"))
  for _, R in ipairs({ 1, 8, 16, 32, 64 }) do
    local list = {}
    for r = 1, R do list[r] = lj("gpu", r) end
    local sweeps = 8
    local rate
    if R == 1 then
      rate = 4096 * sweeps / timed(function() list[1]:run{ sweeps = sweeps, quiet = true }; list[1]:sync() end, 3)
      one = rate
    else
      rate = R * 4096 * sweeps / timed(function() carlo.advance(list, sweeps) end, 3)
    end
    print(("%4d %14.3g %12.2f %14.1f"):format(R, rate, rate / one, rate / cpu))
    for r = 1, R do list[r]:close() end
    collectgarbage()
  end
  print(("one CPU thread, one system: %.3g moves/s"):format(cpu))
end

if not only or only == "potts" then
  print("\n== Potts q = 9, Metropolis: 32 x L = 256 against one L = 1448 (flips per ns) ==")
  local Tc = 1 / math.log(1 + 3)
  local temps = {}
  for k = 1, 32 do temps[k] = Tc * (0.98 + 0.04 * (k - 1) / 31) end
  local sweeps = 200
  local big = carlo.potts{ L = 1448, q = 9, T = Tc, seed = 1, device = "gpu" }
  local t_big = timed(function() big:run{ sweeps = sweeps, quiet = true }; big:sync() end, 5)
  local f_big = big.N * sweeps / t_big / 1e9
  big:close()
  local ens = carlo.potts_ensemble{ L = 256, q = 9, temperatures = temps, seed = 1, device = "gpu" }
  local t_ens = timed(function() ens:run{ sweeps = sweeps, quiet = true }; ens:sync() end, 5)
  local f_ens = 32 * 256 * 256 * sweeps / t_ens / 1e9
  ens:close()
  local list = {}
  for k = 1, 32 do list[k] = carlo.potts{ L = 256, q = 9, T = temps[k], seed = k, device = "gpu" } end
  local t_sep = timed(function() carlo.advance(list, sweeps) end, 5)
  local f_sep = 32 * 256 * 256 * sweeps / t_sep / 1e9
  for k = 1, 32 do list[k]:close() end
  carlo.threads(1)
  local c = carlo.potts_ensemble{ L = 256, q = 9, temperatures = temps, seed = 1, device = "cpu" }
  local t_cpu = timed(function() c:run{ sweeps = 2, quiet = true } end, 3)
  local f_cpu = 32 * 256 * 256 * 2 / t_cpu / 1e9
  c:close()
  carlo.threads("auto")
  print(("one L = 1448 system:                 %8.1f flips/ns"):format(f_big))
  print(("ensemble of 32 x L = 256 (one system): %6.1f flips/ns = %.0f%% of L = 1448"):format(f_ens, 100 * f_ens / f_big))
  print(("32 separate L = 256, carlo.advance:  %8.1f flips/ns = %.0f%% of L = 1448"):format(f_sep, 100 * f_sep / f_big))
  print(("ensemble of 32 x L = 256, one CPU thread: %.3f flips/ns (GPU ensemble / CPU = %.0fx)"):format(f_cpu, f_ens / f_cpu))
end

if not only or only == "anneal" then
  print("\n== protocol overhead: 100-point anneal of 1000^2 hard disks (NPT) on the GPU ==")
  print("(each point: 20 sweeps, then 100 sampled every 10; the plain loop does the same sweeps,")
  print(" pressures and observes, without the protocol's statistics, log and bookkeeping)")
  local tmp = os.tmpname()
  local eq, meas, every, points = 20, 100, 10, 100
  local function disks()
    local d = carlo.hard_disks{ N = 1000000, phi = 0.70, init = "hex", seed = 3, device = "gpu",
                                pressure = 9.0, quiet = true }
    d:run{ sweeps = 200, quiet = true }; d:sync() -- warm-up (and the launch tuner)
    return d
  end
  local function pressure(k) return 9.0 + 0.5 * (k - 1) / (points - 1) end
  for _, obs in ipairs({ { pressure = false }, {} }) do
    local label = obs.pressure == false and "phi, rho, volume" or "with the pressures (g(r), SDF)"
    local s = disks()
    local t0 = carlo.clock()
    carlo.anneal{ system = s, control = "pressure", schedule = carlo.ladder{ from = 9.0, to = 9.5, n = points },
                  equilibrate = eq, measure = meas, every = every, log = tmp, quiet = true, observe = obs }
    s:sync()
    local t_anneal = carlo.clock() - t0
    s:close()
    local p = disks()
    local t_sweeps, t_obs = 0, 0
    t0 = carlo.clock()
    for k = 1, points do
      p.pressure = pressure(k)
      local a = carlo.clock()
      p:run{ sweeps = eq, quiet = true }
      for _ = 1, meas // every do
        p:run{ sweeps = every, quiet = true }
        p:sync()
        local b = carlo.clock()
        t_sweeps = t_sweeps + (b - a)
        p:observe(obs)
        a = carlo.clock()
        t_obs = t_obs + (a - b)
      end
    end
    p:sync()
    local t_plain = carlo.clock() - t0
    p:close()
    print(("%s: anneal %.3f s, plain %.3f s (sweeps %.3f s, observes %.3f s); protocol: %.2f%%, "
           .. "outside the sweeps: %.1f%%")
      :format(label, t_anneal, t_plain, t_sweeps, t_obs, 100 * (t_anneal - t_plain) / t_anneal,
              100 * (t_anneal - t_sweeps) / t_anneal))
  end
  os.remove(tmp)
end
