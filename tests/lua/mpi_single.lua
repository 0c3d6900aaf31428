-- tests/lua/mpi_single.lua — carlo.mpi in one process (any build, not under mpirun): rank 0 of
-- 1, the collectives as copies; a Potts lattice split over that one rank (decompose = true)
-- equals the unsplit one bit for bit (its halo rows wrap onto its own rows) and its checkpoint
-- loads split again.
local carlo = require "carlo"
local check = require "check"
local mpi = carlo.mpi

check.eq("lua/mpi/rank", mpi.rank, 0)
check.eq("lua/mpi/size", mpi.size, 1)
check.ok("lua/mpi/built_is_boolean", type(mpi.built) == "boolean")
local all, counts = mpi.allgather({ 1, 2.5 })
check.ok("lua/mpi/allgather", #all == 2 and all[2] == 2.5 and counts[1] == 2)
check.eq("lua/mpi/sum", mpi.sum(3), 3.0)
check.eq("lua/mpi/broadcast", mpi.broadcast("x"), "x")
check.raises("lua/mpi/broadcast_root", function() mpi.broadcast(1, 1) end, "root must be a rank from 0 to 0", "got 1")
check.raises("lua/mpi/allgather_type", function() mpi.allgather("a") end, "carlo.mpi.allgather", "list of numbers")
check.ok("lua/mpi/print_all", mpi.print_all() == true)
mpi.barrier()

local function lattice(sys)
  local rows = {}
  for i, row in ipairs(sys:snapshot().state:totable()) do rows[i] = table.concat(row, "") end
  return table.concat(rows, "/")
end
for _, L in ipairs { 10, 16 } do -- one site at a time, four sites a word
  local a = carlo.potts{ L = L, q = 4, T = 0.95, seed = 21, decompose = true, device = "cpu" }
  local b = carlo.potts{ L = L, q = 4, T = 0.95, seed = 21, device = "cpu" }
  check.ok("lua/mpi/decomposed_" .. L, a.decomposed and not b.decomposed and a.rows[1] == 1 and a.rows[2] == L)
  a:run{ sweeps = 30 }
  b:run{ sweeps = 30 }
  check.ok("lua/mpi/split_one_rank_" .. L, lattice(a) == lattice(b) and a:observe().e == b:observe().e,
    "the split lattice differs from the unsplit one")
  local path = check.tmp .. "/split" .. L .. ".ckpt"
  a:save(path)
  local c = carlo.load(path)
  c:run{ sweeps = 10 }
  b:run{ sweeps = 10 }
  check.ok("lua/mpi/split_load_" .. L, c.decomposed and lattice(c) == lattice(b))
end
check.raises("lua/mpi/decompose_type", function() carlo.potts{ L = 8, q = 3, T = 1, decompose = 1 } end,
  "decompose")
if check.has_gpu() then -- a GPU lattice split over this one rank: the unsplit GPU lattice
  local a = carlo.potts{ L = 16, q = 3, T = 1, seed = 4, decompose = true, device = "gpu" }
  local b = carlo.potts{ L = 16, q = 3, T = 1, seed = 4, device = "gpu" }
  a:run{ sweeps = 20 }
  b:run{ sweeps = 20 }
  check.ok("lua/mpi/decompose_gpu", a:snapshot().state == b:snapshot().state, "lattices differ")
end
-- a carlo.log is written in one process as ever; own = true is accepted
local log = carlo.log(check.tmp .. "/own.tsv", { own = true })
log:row{ x = 1 }
log:close()
check.ok("lua/mpi/log_own", check.slurp(check.tmp .. "/own.tsv"):find("\n1\n", 1, true) ~= nil)
-- an ensemble's replicas are spread over the ranks, never split over them
check.raises("lua/mpi/ensemble_no_decompose", function()
  carlo.ensemble{ model = "potts", args = { L = 8, q = 3, decompose = true }, seed = 1, controls = { T = { 1, 2 } } }
end, "carlo.ensemble: args.decompose")
