-- tests/mpi/potts_split.lua OUT [CHECKPOINT] — Potts lattices split into row slabs over
-- however many ranks run this (decompose = true), against the same systems unsplit on every
-- rank: after 100 sweeps the gathered lattices and the observables must be identical, for
-- L = 22 (rows that do not divide evenly, one site at a time) and L = 40 (four sites a word),
-- Metropolis and heat bath, and a two-temperature ensemble with exchanges; sys.halo and the
-- halo key's checks. (tests/gpu/potts_mpi.sh does the same on GPUs.) Rank 0 writes the
-- lattices to OUT (tests/mpi/potts_split.sh compares the files of 1 to 4 ranks) and saves the
-- first system to OUT.ckpt. With CHECKPOINT, a checkpoint saved on another number of ranks is
-- loaded here, split over these ranks, and must continue as the unsplit system does.
local carlo = require "carlo"
local out, load_from = assert(arg[1], "usage: potts_split.lua OUT [CHECKPOINT]"), arg[2]
local me, n = carlo.mpi.rank, carlo.mpi.size
local lines = {}
-- a check passes when it holds on every rank (check.lua)
local check = require("check").on_all_ranks("mpi/potts_split/", "_np" .. n .. (load_from and "_again" or ""))
local function lattice(sys, k)
  local rows = {}
  for i, row in ipairs(sys:snapshot(k).state:totable()) do rows[i] = table.concat(row, "") end
  return table.concat(rows, "/")
end

local cases = {
  { name = "L22_metropolis", args = { L = 22, q = 5, T = 0.9, seed = 3 } },
  { name = "L40_metropolis", args = { L = 40, q = 3, T = 1.1, seed = 4, init = "ordered" } },
  { name = "L22_heatbath", args = { L = 22, q = 4, T = 0.8, seed = 5, algorithm = "heatbath" } },
}
local first
for _, c in ipairs(cases) do
  local split_args, whole_args = { decompose = true, device = "cpu" }, { device = "cpu" }
  for k, v in pairs(c.args) do split_args[k], whole_args[k] = v, v end
  local a, b = carlo.potts(split_args), carlo.potts(whole_args)
  first = first or a
  check(c.name .. "_split", a.decomposed and not b.decomposed and
    a.rows[2] - a.rows[1] + 1 >= c.args.L // n and a.halo == "host" and b.halo == "none" and
    tostring(a):find(("rows %d-%d on rank %d of %d"):format(a.rows[1], a.rows[2], me, n), 1, true),
    "not decomposed, or sys.halo / tostring wrong: " .. tostring(a))
  a:run{ sweeps = 100 }
  b:run{ sweeps = 100 }
  local la, lb = lattice(a), lattice(b)
  check(c.name .. "_lattice", la == lb, "the split lattice differs from the unsplit one")
  local oa, ob = a:observe(), b:observe()
  check(c.name .. "_observe", oa.e == ob.e and oa.m == ob.m and oa.equal_bonds == ob.equal_bonds,
    ("e %.17g vs %.17g"):format(oa.e, ob.e))
  lines[#lines + 1] = c.name .. " " .. la
end

-- an ensemble of two temperatures with exchanges: the same exchanges split or not
local ea = carlo.potts_ensemble{ L = 24, q = 3, temperatures = { 0.9, 1.1 }, seed = 8,
                                 decompose = true, device = "cpu" }
local eb = carlo.potts_ensemble{ L = 24, q = 3, temperatures = { 0.9, 1.1 }, seed = 8, device = "cpu" }
ea:run{ sweeps = 100, exchange_every = 5 }
eb:run{ sweeps = 100, exchange_every = 5 }
check("ensemble", lattice(ea, 1) == lattice(eb, 1) and lattice(ea, 2) == lattice(eb, 2) and
  table.concat(ea.map, ",") == table.concat(eb.map, ","), "lattices or exchanges differ")
lines[#lines + 1] = "ensemble " .. lattice(ea, 1) .. " " .. table.concat(ea.map, ",")

-- carlo.advance of split systems stays on the main thread (their halo exchanges call MPI):
-- the same lattices as the unsplit systems advanced together
local sa, wa = {}, {}
for k = 1, 3 do
  sa[k] = carlo.potts{ L = 22, q = 3, T = 0.9 + 0.1 * k, seed = 10 + k, decompose = true, device = "cpu" }
  wa[k] = carlo.potts{ L = 22, q = 3, T = 0.9 + 0.1 * k, seed = 10 + k, device = "cpu" }
end
carlo.advance(sa, 50)
carlo.advance(wa, 50)
check("advance_together", lattice(sa[1]) == lattice(wa[1]) and lattice(sa[2]) == lattice(wa[2]) and
  lattice(sa[3]) == lattice(wa[3]), "split systems advanced together differ from the unsplit ones")

-- halo = "direct" is for GPU systems only; a bad halo is named
do
  local ok, err = pcall(carlo.potts, { L = 8, q = 3, T = 1, seed = 1, decompose = true,
                                       device = "cpu", halo = "direct" })
  check("halo_direct_cpu_refused", not ok and tostring(err):find('halo = "direct" is for a decomposed GPU', 1, true),
    tostring(err))
  ok, err = pcall(carlo.potts, { L = 8, q = 3, T = 1, seed = 1, decompose = true, halo = "fast" })
  check("halo_bad_named", not ok and tostring(err):find('halo must be one of "auto", "staged", "direct" (got "fast")', 1, true),
    tostring(err))
end

-- a checkpoint: written by rank 0 after a gather
first:save(out .. ".ckpt")
if load_from then
  local c = carlo.load(load_from)
  local whole = carlo.potts{ L = 22, q = 5, T = 0.9, seed = 3, device = "cpu" }
  whole:run{ sweeps = 150 }
  check("load_split", c.decomposed, "a split system's checkpoint loaded unsplit")
  c:run{ sweeps = 50 }
  check("load_continues", c.step == 150 and lattice(c) == lattice(whole),
    "a checkpoint from another rank count did not continue as the unsplit run")
end
require("check").rank0_write(out, lines)
-- every rank refuses a walltime for a split system (ranks' clocks differ)
if n > 1 then
  local ok, err = pcall(function() first:run{ sweeps = 10, walltime = 10 } end)
  check("walltime_refused", not ok and tostring(err):find("walltime is refused", 1, true), tostring(err))
end
