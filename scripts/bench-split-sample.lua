-- scripts/bench-split-sample.lua [MODE] — what sampling costs a split GPU system: hard disks at
-- phi = 0.698, 1520 x 1520 a rank (one GPU each, as scripts/bench-mpi's hard part), 500 sweeps
-- from the lattice, then the milliseconds a sweep of sys:run{} and of sys:sample{ every = 20 }
-- (the pressure histograms of each sample; psi6 off), each timed once from a device sync and a
-- barrier to a device sync and a barrier on every rank. MODE: frozen (default), exact
-- (decompose = true) or whole (not split: run it without mpirun).
--   mpirun --bind-to none -np 4 build/carlo --quiet scripts/bench-split-sample.lua frozen
local carlo = require "carlo"
local R = carlo.mpi.size
local mode = arg[1] or "frozen"
assert(mode == "frozen" or mode == "exact" or mode == "whole", "MODE: frozen, exact or whole")
local nx, ny = 1520, 1520 * R
local phi = 0.698
local a = math.sqrt(math.pi / 4 / phi * 2 / math.sqrt(3)) -- the spacing of hexagonal rows at phi
local sys = carlo.hard_disks{ N = nx * ny, box = { nx * a, ny * a * math.sqrt(3) / 2 }, init = "hex", seed = 1,
  device = "gpu", decompose = mode == "frozen" and "frozen" or (mode == "exact" or nil), quiet = true }
sys:run{ sweeps = 500, quiet = true }
local function timed(fn)
  sys:sync()
  carlo.mpi.barrier()
  local t0 = carlo.clock()
  fn()
  sys:sync()
  carlo.mpi.barrier()
  return carlo.clock() - t0
end
local tr = timed(function() sys:run{ sweeps = 400, quiet = true } end)
local ts = timed(function() sys:sample{ sweeps = 400, every = 20, psi6 = false } end)
local ts2 = timed(function() sys:sample{ sweeps = 400, every = 20, psi6 = false } end)
if carlo.mpi.rank == 0 then
  print(("R=%d %s: run %.3f ms/sweep, sample(every 20) %.3f / %.3f ms/sweep"):format(R, mode, tr / 400 * 1e3,
    ts / 400 * 1e3, ts2 / 400 * 1e3))
end
