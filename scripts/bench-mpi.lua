-- scripts/bench-mpi.lua PART [HALO] — one row of scripts/bench-mpi's tables, on the ranks
-- mpirun started (one GPU each). PART:
--   weak     Potts q = 9, Metropolis, T = 0.72, random start, 2^30 spins a GPU: L = 32768 on
--            one GPU (whole, no halos), L = 46336 over 2 (the model's lattices are square: the
--            nearest L with L/2 a multiple of 16, 0.02% fewer spins), L = 65536 over 4
--   strong   the same, L = 32768 over however many ranks
--   split1   L = 32768 split over one rank (its halos sent to itself: the exchange's cost)
--   lj       LJ N = 65536, rho = 0.8, rc = 2.5, checkerboard, 64 replicas at T = 1.0 .. 1.6
--            (carlo.ensemble across the ranks), exchanges every 5 sweeps
-- HALO: auto, staged or direct (decompose = true's halo key). Timing: a warm-up, then the
-- median of 3 repeats, each from a barrier to a device sync and a barrier on every rank (the
-- slowest rank's time). Prints "ROW part ranks L value halo gpu" on rank 0.
local carlo = require "carlo"
local part, halo = arg[1], arg[2] or "auto"
local R = carlo.mpi.size
local gpus = carlo.devices().gpus
assert(#gpus > 0, "bench-mpi: no GPU")

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

local function row(L, value, how)
  print(("ROW %s %d %d %.6g %s %s"):format(part, R, L, value, how, (gpus[1].name:gsub(" ", "_"))))
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
else
  error("bench-mpi.lua: PART must be weak, strong, split1 or lj (got " .. tostring(part) .. ")")
end
