-- tests/gpu/potts_mpi.lua [OUT [HALO [CHECKPOINT]]] — Potts lattices split into row slabs on
-- the GPUs of however many ranks run this (decompose = true, device = "gpu"), against the
-- same systems whole on one GPU and on the CPU, and split on the CPU: after 100 sweeps the
-- gathered lattices, the observables and the samples must be identical bit for bit. Cases:
-- L = 22 (rows that do not divide evenly over 4 ranks, one site a thread), L = 6 (one or two
-- rows a rank: no interior rows), L = 40 (four sites a word), L = 96 (16 sites a thread),
-- Metropolis and heat bath, q = 9, and a three-temperature ensemble with exchanges.
-- HALO: "staged" (the default) or "direct" (a CUDA-aware MPI; SKIP where the MPI is not).
-- Rank 0 writes the lattices to OUT (tests/gpu/potts_mpi.sh compares the files of 1, 2 and 4
-- ranks) and saves the first split system to OUT.ckpt. With CHECKPOINT, a checkpoint saved on
-- another number of ranks is loaded split on the GPUs and on the CPU here, and must continue
-- as the whole system does. Run alone (tests/run gpu), it is the one-rank case.
local carlo = require "carlo"
local checks = require "check"
local out, halo, load_from = arg[1], arg[2] or "staged", arg[3]
local me, n = carlo.mpi.rank, carlo.mpi.size
local tag = ("_np%d_%s%s"):format(n, halo, load_from and "_again" or "")
if not checks.gpu_or_skip("gpu/potts_mpi/split" .. tag) then return end

-- every rank makes every check; a check passes when it holds on all of them (rank 0 prints)
local check = checks.on_all_ranks("gpu/potts_mpi/", tag)
local function lattice(sys, k)
  local rows = {}
  for i, row in ipairs(sys:snapshot(k).state:totable()) do rows[i] = table.concat(row, ",") end
  return table.concat(rows, "/")
end
local with = checks.with

-- A CUDA-aware MPI takes halo = "direct"; any other says so at creation.
if halo == "direct" then
  local ok, err = pcall(carlo.potts, { L = 8, q = 3, T = 1, seed = 1, device = "gpu",
                                       decompose = true, halo = "direct" })
  if not ok then
    checks.skip("gpu/potts_mpi/direct" .. tag, tostring(err):match("[^\n]*"))
    return
  end
end

-- The rank -> GPU rule: the node-local rank modulo the GPUs seen (one node assumed here; a
-- CUDA_VISIBLE_DEVICES of one GPU a rank makes every rank's index 0).
do
  local g = carlo.potts{ L = 8, q = 3, T = 1, seed = 1, device = "gpu", decompose = true, halo = halo }
  local ngpu = #carlo.devices().gpus
  local single = os.getenv("CUDA_VISIBLE_DEVICES") and ngpu == 1
  check("rank_gpu", g.gpu == (single and 0 or me % ngpu) and g.halo == halo and
    tostring(g):find("GPU " .. tostring(g.gpu), 1, true) ~= nil,
    ("rank %d: gpu %s of %d, halo %s, %s"):format(me, tostring(g.gpu), ngpu, tostring(g.halo), tostring(g)))
  g:close()
end

local cases = {
  { name = "L22_metropolis", args = { L = 22, q = 9, T = 0.7, seed = 3 } },
  { name = "L6_metropolis", args = { L = 6, q = 3, T = 0.9, seed = 6 } },
  { name = "L40_metropolis", args = { L = 40, q = 9, T = 0.72, seed = 4, init = "ordered" } },
  { name = "L96_metropolis", args = { L = 96, q = 9, T = 0.71, seed = 7 } },
  { name = "L22_heatbath", args = { L = 22, q = 9, T = 0.7, seed = 5, algorithm = "heatbath" } },
  { name = "L96_heatbath", args = { L = 96, q = 4, T = 0.9, seed = 8, algorithm = "heatbath" } },
}
local lines, first = {}, nil
for _, c in ipairs(cases) do
  local split = carlo.potts(with(c.args, { decompose = true, device = "gpu", halo = halo }))
  local gpu = carlo.potts(with(c.args, { device = "gpu" }))
  local cpu = carlo.potts(with(c.args, { device = "cpu" }))
  local cpu_split = carlo.potts(with(c.args, { decompose = true, device = "cpu" }))
  first = first or split
  -- 50 sweeps, an observation in between (the streams' order), a colour at a time, 49 more
  for _, s in ipairs{ split, gpu, cpu, cpu_split } do
    s:run{ sweeps = 50 }
    s:observe()
    s:substep(0)
    s:substep(1)
    s:run{ sweeps = 49 }
  end
  local ls, lg, lc, lcs = lattice(split), lattice(gpu), lattice(cpu), lattice(cpu_split)
  check(c.name .. "_vs_one_gpu", ls == lg, "the split GPU lattice differs from the one-GPU one")
  check(c.name .. "_vs_cpu", ls == lc and ls == lcs, "the split GPU lattice differs from the CPU's")
  local os_, og = split:observe(), gpu:observe()
  check(c.name .. "_observe", os_.equal_bonds == og.equal_bonds and os_.nmax == og.nmax and
    os_.e == og.e and os_.m == og.m, ("e %.17g vs %.17g"):format(os_.e, og.e))
  lines[#lines + 1] = c.name .. " " .. ls
  if split ~= first then split:close() end
  gpu:close(); cpu:close(); cpu_split:close()
end

-- samples: the same numbers
do
  local a = carlo.potts{ L = 40, q = 9, T = 0.72, seed = 11, device = "gpu", decompose = true, halo = halo }
  local b = carlo.potts{ L = 40, q = 9, T = 0.72, seed = 11, device = "cpu" }
  local sa, sb = a:sample{ sweeps = 200, every = 10 }, b:sample{ sweeps = 200, every = 10 }
  check("sample", sa.e.mean == sb.e.mean and sa.m.mean == sb.m.mean and sa.C.mean == sb.C.mean,
    ("e %.17g vs %.17g"):format(sa.e.mean, sb.e.mean))
end

-- an ensemble of three temperatures with exchanges
do
  local t = { L = 24, q = 9, temperatures = { 0.68, 0.71, 0.74 }, seed = 8 }
  local ea = carlo.potts_ensemble(with(t, { decompose = true, device = "gpu", halo = halo }))
  local eb = carlo.potts_ensemble(with(t, { device = "cpu" }))
  ea:run{ sweeps = 100, exchange_every = 5 }
  eb:run{ sweeps = 100, exchange_every = 5 }
  local same = table.concat(ea.map, ",") == table.concat(eb.map, ",")
  for k = 1, 3 do same = same and lattice(ea, k) == lattice(eb, k) end
  check("ensemble", same, "lattices or exchanges differ")
  lines[#lines + 1] = "ensemble " .. lattice(ea, 1) .. " " .. table.concat(ea.map, ",")
end

if out then first:save(out .. ".ckpt") end -- one file, written by rank 0
if load_from then
  local whole = carlo.potts{ L = 22, q = 9, T = 0.7, seed = 3, device = "cpu" }
  whole:run{ sweeps = 150 }
  for _, dev in ipairs{ "gpu", "cpu" } do
    local c = carlo.load(load_from, { device = dev })
    c:run{ sweeps = 50 }
    check("load_" .. dev, c.decomposed and c.device == dev and c.step == 150 and
      lattice(c) == lattice(whole), "a checkpoint from another rank count did not continue as the whole run")
  end
end
if out and me == 0 then
  local f = assert(io.open(out, "w"))
  f:write(table.concat(lines, "\n"), "\n")
  f:close()
end
