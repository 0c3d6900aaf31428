-- scripts/bench-mpi.lua PART [HALO] — one row of scripts/bench-mpi's tables, on the ranks
-- mpirun started (one GPU each). PART:
--   weak     Potts q = 9, Metropolis, T = 0.72, random start, 2^30 spins a GPU: L = 32768 on
--            one GPU (whole, no halos), L = 46336 over 2 (the model's lattices are square: the
--            nearest L with L/2 a multiple of 16, 0.02% fewer spins), L = 65536 over 4
--   strong   the same, L = 32768 over however many ranks
--   split1   L = 32768 split over one rank (its halos sent to itself: the exchange's cost)
--   lj       LJ N = 65536, rho = 0.8, rc = 2.5, checkerboard, 64 replicas at T = 1.0 .. 1.6
--            (carlo.ensemble across the ranks), exchanges every 5 sweeps
--   kmc      KMC sos_growth at bond = 1 (the paper's phi = 1), 4096 x 4096 sites a GPU: m =
--            4096 R rows, n = 4096, whole on one GPU, decompose = true over several; from a
--            flat start it grows for 10 x 4096^2 R events, then three runs of 5 x 4096^2 R
--            events are timed (events per second and steps per second: the medians of the three)
--   kmc_split1  the same 4096 x 4096 split over one rank (its halo rows sent to itself: the
--            cost of deciding every step on the host)
--   kmc_big  one rank, one GPU, the lattice of KMC_COPIES (4) GPUs whole: 4096 KMC_COPIES x
--            4096 (the adaptive step shrinks as the lattice grows: fewer events a site a step)
--   hard     hard disks at phi = 0.698, 1520 x 1520 R disks on R GPUs (hexagonal rows, 1520 a
--            row, 1520 R rows along y, the split axis), whole on one GPU, decompose = true over
--            several; 500 sweeps from the lattice, then the timing of 200 sweeps (trial moves per
--            second, from the move counters summed over the ranks)
--   hard_split1  the same 1520 x 1520 split over one rank (its edge layers staged through
--            the host and sent to itself: the cost of the halo exchange)
--   hard_npt the hard part in NPT at beta P = 9 (a volume move after each sweep)
--   hard_frozen  the hard part with decompose = "frozen" on every number of ranks, one too (each
--            slab's first and last cell layer sit out a sweep, and the halos cross only after a
--            shift along y; the moves counted are those tried, none in the frozen layers)
--   hard_sample  what sampling costs: the hard part's disks (MODE, the second argument: frozen,
--            exact for decompose = true, or whole, not split: run it without mpirun), then the
--            milliseconds a sweep of sys:run{} and of sys:sample{ every = 20 } (the pressure
--            histograms of each sample; psi6 off), 400 sweeps each timed once, the sampling twice;
--            prints its own line, not a ROW (scripts/bench-mpi does not run it)
--   shapes   pentagons at phi = 0.676 (HPMC's benchmark state), 2^19 R on R GPUs from a
--            hexagonal start, whole on one GPU, decompose = true over several (halos staged
--            through the host); 500 sweeps, then the timing of 20 (trial moves per second)
--   shapes_npt  the same in NPT at beta P = 10 (a volume move after each sweep, tried on each
--            rank's slab while the cut along y stays)
--   shapes_frozen  the shapes part with decompose = "frozen" on every number of ranks, one too
-- HALO: auto, staged or direct (decompose = true's halo key). Timing: a warm-up, then the
-- median of 3 repeats, each from a barrier to a device sync and a barrier on every rank (the
-- slowest rank's time). Prints "ROW part ranks L value halo gpu" on rank 0 (kmc parts:
-- "ROW part ranks m events/s lattice steps/s gpu").
-- The kmc parts take KMC_HALO (the model's halo; its default when unset) and KMC_REPAIR (0: no
-- repair of mismatched tiles, the paper's scheme; 1: the repair; its default when unset;
-- carlo-kmc(7)).
-- For a quick check without GPUs, the kmc parts take KMC_SIDE (4096; a multiple of 8) and
-- DEVICE=cpu: `mpirun -np 2 build/carlo scripts/bench-mpi.lua kmc` with KMC_SIDE=64 DEVICE=cpu;
-- the hard parts HARD_SIDE (1520; even) and DEVICE=cpu likewise, the shapes part SHAPES_N (2^19).
local carlo = require "carlo"
local part, halo = arg[1], arg[2] or "auto"
local R = carlo.mpi.size
local gpus = carlo.devices().gpus
local device = os.getenv("DEVICE") or "gpu"
assert(device == "gpu" or (device == "cpu" and (part:find("^kmc") or part:find("^hard") or part:find("^shapes"))),
  "bench-mpi.lua: DEVICE must be gpu, or cpu for the kmc, hard and shapes parts (got " .. device .. ")")
assert(device == "cpu" or #gpus > 0, "bench-mpi: no GPU")

-- The hard and shapes parts' warm-up: long enough for the GPU launch tuner (core/sys.h: 4
-- candidates, 2 rounds of at least 0.01 s each, the chunks synced while it measures) to have
-- settled on every rank before the clock starts: at 0.25 ms a sweep (1520^2 disks, or 2^19
-- pentagons with the team kernel of 2026-11-27) it needs over 300 sweeps. A shorter warm-up
-- timed candidates under trial.
local WARM_SWEEPS = 500

local function median(t)
  table.sort(t)
  local n = #t
  return n % 2 == 1 and t[(n + 1) // 2] or (t[n // 2] + t[n // 2 + 1]) / 2
end

-- seconds of fn() on the slowest rank: median of 3 after one warm-up
local function timed(fn, sync)
  fn()
  sync()
  local t = {}
  for r = 1, 3 do
    carlo.mpi.barrier()
    local t0 = carlo.clock()
    fn()
    sync()
    carlo.mpi.barrier()
    t[r] = carlo.clock() - t0
  end
  return median(t)
end

-- The median over 3 timed runs of run() of the rates of the counters count() returns (a list),
-- each run from a barrier to a device sync and a barrier, the counters read outside the clock.
local function counted(sys, run, count)
  local rates = {}
  for r = 1, 3 do
    sys:sync()
    local c0 = count()
    carlo.mpi.barrier()
    local t0 = carlo.clock()
    run()
    sys:sync()
    carlo.mpi.barrier()
    local t = carlo.clock() - t0
    for k, c in ipairs(count()) do
      rates[k] = rates[k] or {}
      rates[k][r] = (c - c0[k]) / t
    end
  end
  for k = 1, #rates do rates[k] = median(rates[k]) end
  return table.unpack(rates)
end

local function row(L, value, how)
  local name = device == "gpu" and gpus[1].name or "cpu"
  print(("ROW %s %d %d %.6g %s %s"):format(part, R, L, value, how, (name:gsub(" ", "_"))))
end

if part == "weak" or part == "strong" or part == "split1" then
  local L = part == "weak" and ({ [1] = 32768, [2] = 46336, [4] = 65536 })[R] or 32768
  assert(L, "bench-mpi weak: 1, 2 or 4 ranks")
  local split = R > 1 or part == "split1"
  local sys = carlo.potts{ L = L, q = 9, T = 0.72, seed = 1, device = "gpu", decompose = split,
                           halo = split and halo or nil, quiet = true }
  local sweeps = 100
  local t = timed(function() sys:run{ sweeps = sweeps, quiet = true } end,
                  function() sys:sync() end)
  row(L, sys.N * sweeps / t / 1e9, split and sys.halo or "whole")
elseif part == "lj" then
  local temps = {}
  for k = 1, 64 do temps[k] = 1.0 + 0.6 * (k - 1) / 63 end
  local ens = carlo.ensemble{ model = "lj", args = { N = 65536, rho = 0.8, rc = 2.5,
                              mode = "checkerboard", delta = 0.15 }, seed = 3,
                              controls = { T = temps }, device = "gpu", quiet = true }
  local sweeps = 20
  local t = timed(function() ens:run{ sweeps = sweeps, exchange_every = 5 } end,
                  function() for _, s in ipairs(ens.mine) do s:sync() end end)
  row(65536, 64 * 65536 * sweeps / t, "ensemble")
elseif part == "kmc" or part == "kmc_split1" or part == "kmc_big" then
  local n = math.tointeger(tonumber(os.getenv("KMC_SIDE") or "4096"))
  assert(n and n >= 8 and n % 8 == 0, "bench-mpi.lua: KMC_SIDE must be a multiple of 8 (got " ..
    tostring(os.getenv("KMC_SIDE")) .. ")")
  local copies = part == "kmc_big" and math.tointeger(tonumber(os.getenv("KMC_COPIES") or "4")) or R
  assert(copies and copies >= 1, "bench-mpi.lua: KMC_COPIES must be a positive integer (got " ..
    tostring(os.getenv("KMC_COPIES")) .. ")")
  assert(part ~= "kmc_big" or R == 1, "bench-mpi.lua: kmc_big runs on one rank")
  local split = R > 1 or part == "kmc_split1"
  local halo = os.getenv("KMC_HALO") and math.tointeger(tonumber(os.getenv("KMC_HALO")))
  local repair = nil -- the model's default unless KMC_REPAIR is set
  if os.getenv("KMC_REPAIR") then repair = os.getenv("KMC_REPAIR") ~= "0" end
  local sys = carlo.kmc{ model = "sos_growth", bond = 1, m = n * copies, n = n, seed = 1, device = device,
                         decompose = split, quiet = true, halo = halo, repair = repair }
  local per = n * n * copies
  sys:run{ events = 10 * per, quiet = true }
  local rate, steps = counted(sys, function() sys:run{ events = 5 * per, quiet = true } end,
    function() return { sys.events, sys.step } end) -- counters only: nothing copied from the device
  -- events and steps a second (a larger lattice's steps hold fewer events a site)
  row(n * copies, rate, (split and "split" or "whole") .. (" %.6g"):format(steps))
elseif part == "hard" or part == "hard_split1" or part == "hard_npt" or part == "hard_frozen" or
       part == "hard_sample" then
  local side = math.tointeger(tonumber(os.getenv("HARD_SIDE") or "1520"))
  assert(side and side >= 8 and side % 2 == 0, "bench-mpi.lua: HARD_SIDE must be even, at least 8 (got " ..
    tostring(os.getenv("HARD_SIDE")) .. ")")
  local nx, ny = side, side * R
  local phi = 0.698
  local a = math.sqrt(math.pi / 4 / phi * 2 / math.sqrt(3)) -- the spacing of hexagonal rows at phi
  local mode = part == "hard_sample" and (arg[2] or "frozen") or nil
  assert(not mode or mode == "frozen" or mode == "exact" or mode == "whole",
    "bench-mpi.lua hard_sample: MODE must be frozen, exact or whole (got " .. tostring(mode) .. ")")
  local frozen = part == "hard_frozen" or mode == "frozen"
  local split = frozen or mode == "exact" or (not mode and (R > 1 or part == "hard_split1"))
  local sys = carlo.hard_disks{ N = nx * ny, box = { nx * a, ny * a * math.sqrt(3) / 2 }, init = "hex",
                                seed = 1, device = device, decompose = frozen and "frozen" or split, quiet = true,
                                pressure = part == "hard_npt" and 9 or nil }
  sys:run{ sweeps = WARM_SWEEPS, quiet = true }
  if mode then
    local function once(fn)
      sys:sync()
      carlo.mpi.barrier()
      local t0 = carlo.clock()
      fn()
      sys:sync()
      carlo.mpi.barrier()
      return (carlo.clock() - t0) / 400 * 1e3
    end
    local tr = once(function() sys:run{ sweeps = 400, quiet = true } end)
    local ts = once(function() sys:sample{ sweeps = 400, every = 20, psi6 = false } end)
    local ts2 = once(function() sys:sample{ sweeps = 400, every = 20, psi6 = false } end)
    print(("R=%d %s: run %.3f ms/sweep, sample(every 20) %.3f / %.3f ms/sweep"):format(R, mode, tr, ts, ts2))
    return
  end
  local sweeps = 200
  local moves = 0
  local t = timed(function()
    local m0 = sys:observe{ pressure = false }.tried
    sys:run{ sweeps = sweeps, quiet = true }
    moves = sys:observe{ pressure = false }.tried - m0
  end, function() sys:sync() end)
  row(ny, moves / t, frozen and "frozen" or split and "split" or "whole")
elseif part == "shapes" or part == "shapes_npt" or part == "shapes_frozen" then
  local n1 = math.tointeger(tonumber(os.getenv("SHAPES_N") or tostring(1 << 19)))
  local frozen = part == "shapes_frozen"
  local sys = carlo.hard_polygons{ vertices = carlo.shapes.pentagon.vertices, N = n1 * R, phi = 0.676,
                                   init = "hex", seed = 1, device = device,
                                   decompose = frozen and "frozen" or R > 1 or nil,
                                   pressure = part == "shapes_npt" and 10 or nil }
  sys:run{ sweeps = WARM_SWEEPS, quiet = true }
  local rate = counted(sys, function() sys:run{ sweeps = 20, quiet = true } end,
    function() return { sys:observe{ pressure = false }.tried } end)
  row(n1 * R, rate, frozen and "frozen" or R > 1 and "split" or "whole")
else
  error("bench-mpi.lua: PART must be weak, strong, split1, lj, kmc, kmc_split1, kmc_big, hard, hard_split1, hard_npt, " ..
    "hard_frozen, hard_sample, shapes, shapes_npt or shapes_frozen (got " ..
    tostring(part) .. ")")
end
