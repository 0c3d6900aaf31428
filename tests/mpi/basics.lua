-- tests/mpi/basics.lua DIR — carlo.mpi on however many ranks run it: rank and size, the
-- collectives, which rank writes which file. Every rank checks; each prints its verdicts with
-- print_all on, prefixed by the rank, and tests/mpi/basics.sh reads them.
local carlo = require "carlo"
local mpi = carlo.mpi
local dir = assert(arg[1], "usage: basics.lua DIR")
local n, me = mpi.size, mpi.rank
local results = {}
local function ok(name, cond, why)
  results[#results + 1] = (cond and "PASS " or "FAIL ") .. "mpi/basics/" .. name ..
    (cond and "" or (": rank " .. me .. ": " .. tostring(why)))
end

ok("built", mpi.built == true, "carlo.mpi.built is not true")
ok("rank_in_range", math.type(me) == "integer" and me >= 0 and me < n, me)
local all, counts = mpi.allgather({ me, me * me })
local want_all = true
for r = 0, n - 1 do
  want_all = want_all and all[2 * r + 1] == r and all[2 * r + 2] == r * r and counts[r + 1] == 2
end
ok("allgather", want_all and #all == 2 * n, table.concat(all, ","))
-- uneven contributions: rank r gives r + 1 numbers
local uneven, c2 = mpi.allgather((function() local t = {} for i = 1, me + 1 do t[i] = me end return t end)())
ok("allgather_uneven", #uneven == n * (n + 1) // 2 and c2[n] == n and uneven[#uneven] == n - 1, #uneven)
ok("sum", mpi.sum(me + 1) == n * (n + 1) / 2, mpi.sum(me + 1))
local v = mpi.sum({ 1, me })
ok("sum_list", v[1] == n and v[2] == n * (n - 1) / 2, table.concat(v, ","))
ok("broadcast_string", mpi.broadcast(me == n - 1 and "last" or nil, n - 1) == "last")
local b = mpi.broadcast(me == 0 and { 1.5, 2.5 } or nil)
ok("broadcast_list", type(b) == "table" and b[1] == 1.5 and b[2] == 2.5)
ok("broadcast_root_range", not pcall(mpi.broadcast, 1, n), "root = size accepted")
ok("sum_mismatch", n == 1 or not pcall(mpi.sum, me == 0 and { 1 } or { 1, 2 }), "no error")
mpi.barrier()

-- files: a system made alike on every rank is written by rank 0 alone ...
local sys = carlo.potts{ L = 8, q = 3, T = 1, seed = 5 }
sys:save(("%s/shared.%d.ckpt"):format(dir, me))
local tr = carlo.trajectory(("%s/shared.%d.ctr"):format(dir, me), "w")
sys:run{ sweeps = 4, trajectory = tr, every = 2 }
tr:write(sys)
tr:close()
local otr = carlo.trajectory(("%s/own.%d.ctr"):format(dir, me), "w", { own = true })
otr:write(sys)
otr:close()
local log = carlo.log(("%s/shared.%d.tsv"):format(dir, me))
log:row{ step = sys.step }
log:close()
-- ... and a system or log of this rank's own by this rank
local mine = mpi.own(carlo.potts{ L = 8, q = 3, T = 1, seed = 5 + me })
mine:save(("%s/own.%d.ckpt"):format(dir, me))
local own_log = carlo.log(("%s/own.%d.tsv"):format(dir, me), { own = true })
own_log:row{ step = 0 }
own_log:close()
mpi.barrier()
local function exists(p) local f = io.open(p) if f then f:close() end return f ~= nil end
local shared_ok, own_ok = true, true
for r = 0, n - 1 do
  for _, ext in ipairs { "ckpt", "ctr", "tsv" } do
    shared_ok = shared_ok and exists(("%s/shared.%d.%s"):format(dir, r, ext)) == (r == 0)
  end
  for _, ext in ipairs { "ckpt", "ctr", "tsv" } do
    own_ok = own_ok and exists(("%s/own.%d.%s"):format(dir, r, ext))
  end
end
ok("files_rank0_only", shared_ok, "a rank other than 0 wrote a shared system's file, or rank 0 did not")
ok("files_own", own_ok, "an owned system's or log's file is missing")
ok("writes", mpi.writes(mine) and mpi.writes(sys) == (me == 0))

-- print: silent on ranks other than 0 until print_all(true)
ok("print_all_default", mpi.print_all() == (me == 0))
mpi.print_all(true)
for _, line in ipairs(results) do print(line) end
