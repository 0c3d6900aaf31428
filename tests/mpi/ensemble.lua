-- tests/mpi/ensemble.lua OUT — 16 Potts replicas with replica exchange, spread over however
-- many ranks run this; rank 0 writes the per-temperature sample means and errors (exact, as
-- hexadecimal floats), the tempering counters and a save/load continuation to OUT.
-- tests/mpi/ensemble.sh runs it on 1, 2 and 4 ranks and in one plain process and compares.
local carlo = require "carlo"
local out = assert(arg[1], "usage: ensemble.lua OUT")
local T = {}
for k = 1, 16 do T[k] = 0.7 + 0.03 * (k - 1) end
local ens = carlo.ensemble{ model = "potts", args = { L = 8, q = 3, init = "random" }, seed = 11,
                            controls = { T = T }, device = "cpu" }
ens:run{ sweeps = 40, exchange_every = 2 }
local s = ens:sample{ sweeps = 60, every = 3, exchange_every = 2 }
local lines = {}
for k, row in ipairs(s) do
  lines[#lines + 1] = ("%d T=%a e=%a/%a m=%a/%a"):format(k, row.T, row.e.mean, row.e.err,
    row.m.mean, row.m.err)
end
local t = ens:tempering()
lines[#lines + 1] = "tried " .. table.concat(t.tried, ",")
lines[#lines + 1] = "map " .. table.concat(t.map, ",")
lines[#lines + 1] = "trips " .. table.concat(t.round_trips, ",")
-- a save, a load on this many ranks, and 20 more sweeps
local ck = out .. ".ens"
ens:save(ck)
local back = carlo.load_ensemble(ck)
back:run{ sweeps = 20, exchange_every = 2 }
ens:run{ sweeps = 20, exchange_every = 2 }
local a = back:sample{ sweeps = 6, every = 3, exchange_every = 2 }
local b = ens:sample{ sweeps = 6, every = 3, exchange_every = 2 }
for k = 1, #T do
  lines[#lines + 1] = ("after %d e=%a %s"):format(k, a[k].e.mean, a[k].e.mean == b[k].e.mean and "same" or "DIFFERENT")
end
-- population annealing: 12 members over the ranks, copies crossing between them
local rows = carlo.population_annealing{ model = "potts", args = { L = 8, q = 3 }, seed = 5, size = 12,
  beta = { 0.2, 0.5, 0.8, 1.1, 1.4 }, sweeps = 3, device = "cpu", quiet = true }
for _, row in ipairs(rows) do
  lines[#lines + 1] = ("pa beta=%a lnZ=%a e=%a/%a S=%a n=%a"):format(row.beta, row.lnZ, row.e.mean,
    row.e.err, row.family_entropy, row.effective_size)
end
require("check").rank0_write(out, lines)
