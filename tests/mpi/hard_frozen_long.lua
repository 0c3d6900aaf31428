-- tests/mpi/hard_frozen_long.lua MODE SEED — one run of tests/validation/hard_frozen_mpi.sh:
-- 1024 hard disks at phi = 0.698 (the issue's state point, next to the hexatic transition) from a
-- random start, whole (MODE whole) or split with frozen edges (MODE frozen, on the ranks mpirun
-- started); 5000 sweeps, then the pressure sampled over 20000. Rank 0 prints "MODE SEED P err".
local carlo = require "carlo"
local mode, seed = assert(arg[1], "usage: MODE SEED"), assert(math.tointeger(tonumber(arg[2])), "usage: MODE SEED")
assert(mode == "whole" or mode == "frozen", "MODE: whole or frozen")
local sys = carlo.hard_disks{ N = 1024, phi = 0.698, init = "random", seed = seed, device = "cpu",
                              decompose = mode == "frozen" and "frozen" or nil }
sys:run{ sweeps = tonumber(os.getenv("FROZEN_EQUIL") or "5000") }
local q = sys:sample{ sweeps = tonumber(os.getenv("FROZEN_SWEEPS") or "20000"), every = 10 }
if carlo.mpi.rank == 0 then print(("%s %d %.17g %.17g"):format(mode, seed, q.P.mean, q.P.err)) end
