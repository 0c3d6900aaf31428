-- tests/gpu/kmc_mpi.lua [OUT [CHECKPOINT STAGE]] — KMC lattices split into slabs of tile rows on
-- the GPUs of however many ranks run this (decompose = true, device = "gpu"), against the same
-- systems whole on one GPU, whole on the CPU and split on the CPU: after runs of events, single
-- steps, a time stop and a change of bond, the gathered lattices, clocks and draw counters, t,
-- the event and step counters and the observables must be identical bit for bit. The CPU
-- systems get the GPU's halo (tests/gpu/kmc.lua's rule: the default halos differ, 4 on the CPU
-- and 3 on the GPU; the state at a model time does not depend on the halo, the steps do, and a
-- run of events stops at the first step boundary past its count). Cases: sos_growth at
-- bond = 0.3 and bond = 1 (rejected steps) on m = 40 (five tile rows: uneven slabs, one tile
-- row a rank on 4), an 8-neighbour user model (diagonal halo cells), halo = 7 (the whole halo
-- tile row read), and a 256 x 256 lattice; another seed or another halo must give another
-- state (the comparisons can fail). Rank 0 writes fingerprints to OUT (tests/gpu/kmc_mpi.sh
-- compares the files of 1, 2 and 4 ranks) and saves the first split system, after its first
-- run, to OUT.ckpt. With CHECKPOINT, a checkpoint that has STAGE such runs behind it (saved on
-- another number of ranks) is loaded split on the GPUs here, runs once more and must equal the
-- whole CPU system, at the checkpoint's halo, that made the same STAGE + 1 runs (one run of
-- the total would stop at another step). Run alone (tests/run gpu), it is the one-rank case.
local carlo = require "carlo"
local checks = require "check"
local models = require "kmc_models"
local fingerprint, state = models.fingerprint, models.split_state
local out, load_from = arg[1], arg[2]
local stage = tonumber(arg[3] or "0")
local me, n = carlo.mpi.rank, carlo.mpi.size
local tag = ("_np%d%s"):format(n, load_from and "_stage" .. stage or "")
if not checks.gpu_or_skip("gpu/kmc_mpi/split" .. tag) then return end

-- every rank makes every check; a check passes when it holds on all of them (rank 0 prints)
local check = checks.on_all_ranks("gpu/kmc_mpi/", tag)

-- halo: given to a CPU system that follows a GPU one (nil: the case's, or the device's default)
local function make(base, extra, device, split, halo)
  local t = { device = device, decompose = split or nil }
  for k, v in pairs(base) do t[k] = v end
  for k, v in pairs(extra or {}) do t[k] = v end
  t.halo = halo or t.halo
  -- the repair on both devices unless a case says (the GPU's default leaves it off on small
  -- lattices, the CPU's does not)
  if t.repair == nil then t.repair = true end
  return carlo.kmc(t)
end

local SOS = models.SOS
local cases = models.split_cases()
cases[#cases + 1] = { name = "sos_halo7", base = { model = "sos_growth", m = 32, n = 24, seed = 12 },
                      extra = { bond = 2, halo = 7 }, events = 30000 }
cases[#cases + 1] = { name = "sos_256", base = { model = "sos_growth", m = 256, n = 256, seed = 13 },
                      extra = { bond = 1 }, events = 1000000 }

-- the rank -> GPU rule: the node-local rank modulo the GPUs seen (one node assumed here; a
-- CUDA_VISIBLE_DEVICES of one GPU a rank makes every rank's index 0)
do
  local g = make(SOS, { bond = 1 }, "gpu", true)
  local ngpu = #carlo.devices().gpus
  local single = os.getenv("CUDA_VISIBLE_DEVICES") and ngpu == 1
  check("rank_gpu", g.decomposed and g.device == "gpu" and g.gpu == (single and 0 or me % ngpu) and
    tostring(g):find("GPU " .. tostring(g.gpu), 1, true) ~= nil and
    tostring(g):find(("rank %d of %d"):format(me, n), 1, true) ~= nil,
    ("rank %d: gpu %s of %d, %s"):format(me, tostring(g.gpu), ngpu, tostring(g)))
  g:close()
end

local lines, first = {}, nil
if not load_from then
  for _, c in ipairs(cases) do
    local split = make(c.base, c.extra, "gpu", true)
    local gpu = make(c.base, c.extra, "gpu", false)
    local cpu = make(c.base, c.extra, "cpu", false, split.halo)
    local cpu_split = make(c.base, c.extra, "cpu", true, split.halo)
    check(c.name .. "_halo", split.halo == gpu.halo and cpu.halo == gpu.halo and cpu_split.halo == gpu.halo,
      ("split GPU halo %d, one GPU %d, CPU %d"):format(split.halo, gpu.halo, cpu.halo))
    first = first or split
    local s = {}
    for k, sys in ipairs{ split, gpu, cpu, cpu_split } do
      sys:run{ events = c.events }
      if sys == first and out then sys:save(out .. ".ckpt") end -- one file, written by rank 0
      s[k] = state(sys)
    end
    check(c.name .. "_run_vs_one_gpu", s[1] == s[2], "split GPU " .. s[1] .. " vs one GPU " .. s[2])
    check(c.name .. "_run_vs_cpu", s[1] == s[3] and s[1] == s[4],
      "split GPU " .. s[1] .. " vs CPU " .. s[3] .. " vs split CPU " .. s[4])
    if c.name == "sos_bond1" then
      check(c.name .. "_rejections", split:counters().rejected > 0, "no step was rejected")
      check(c.name .. "_repairs", split:counters().repaired > 0, "no tile was stepped again")
    elseif c.name == "sos_bond1_no_repair" then
      check(c.name .. "_none", not split.repair and split:counters().repaired == 0 and split:counters().rejected > 0,
        "repaired without the repair, or nothing rejected")
    end
    lines[#lines + 1] = c.name .. " " .. s[1]
    -- single steps, a time stop and a change of bond
    local function steps(sys)
      local r = { sys:try_step(0.05) }
      local q = { sys:substep() }
      sys:run{ time = 0.5 }
      if sys.kind == "sos_growth" then
        sys.bond = 0.7
        sys:run{ events = 5000 }
      end
      return ("%s %s %s %s %s %s"):format(r[1], r[2], r[3], q[1], q[2], state(sys))
    end
    local a, b, d, e = steps(split), steps(gpu), steps(cpu), steps(cpu_split)
    check(c.name .. "_steps", a == b and a == d and a == e,
      "split GPU " .. a .. " vs one GPU " .. b .. " vs CPU " .. d .. " vs split CPU " .. e)
    lines[#lines + 1] = c.name .. "_steps " .. a
    if split ~= first then split:close() end
    gpu:close(); cpu:close(); cpu_split:close()
  end

  -- the comparisons can fail: another seed, or another halo (the same trajectory in time, other
  -- steps, so a run of events stops elsewhere), split on the GPUs, gives another state than the
  -- one GPU's; the CPU at its own default halo gives the one GPU's state only if the halos agree
  do
    local c = cases[1]
    local ref = make(c.base, c.extra, "gpu", false)
    ref:run{ events = c.events }
    local want = state(ref)
    local seed = make(c.base, { bond = c.extra.bond, seed = c.base.seed + 1 }, "gpu", true)
    local halo = make(c.base, c.extra, "gpu", true, ref.halo - 1)
    local cpu = make(c.base, c.extra, "cpu", false)
    for _, sys in ipairs{ seed, halo, cpu } do sys:run{ events = c.events } end
    local ss, sh, sc = state(seed), state(halo), state(cpu)
    check("detects_other_seed", ss ~= want, "seed " .. seed.seed .. " gave the same " .. ss)
    check("detects_other_halo", halo.halo ~= ref.halo and sh ~= want,
      ("halo %d gave the same %s as halo %d"):format(halo.halo, sh, ref.halo))
    check("detects_cpu_default_halo", (cpu.halo == ref.halo) == (sc == want),
      ("CPU at halo %d, GPU at halo %d: %s vs %s"):format(cpu.halo, ref.halo, sc, want))
    ref:close(); seed:close(); halo:close(); cpu:close()
  end

  -- frames (gathered, written by rank 0) and samples (observations reduced over the ranks): a
  -- time stop and frames at model times do not depend on the halo, the CPU keeps its default
  local function frames_and_sample(sys, path)
    local tr = carlo.trajectory(path, "w")
    sys:run{ time = 10, every = 2, trajectory = tr }
    tr:close()
    local smp = sys:sample{ time = 5, every = 0.5 }
    return ("%.17g %.17g %.17g %.17g"):format(smp.mean.mean, smp.mean.err, smp.width.mean,
      smp.step_fraction.mean)
  end
  local tmp = out or (checks.tmp .. "/kmc_mpi")
  local ts = frames_and_sample(make(SOS, { bond = 1, seed = 30 }, "gpu", true), tmp .. ".a.traj")
  -- the whole system on rank 0 (its frames are rank 0's file), its verdict to every rank
  local tw = carlo.mpi.broadcast(me == 0 and (function()
    local got = frames_and_sample(make(SOS, { bond = 1, seed = 30 }, "cpu", false), tmp .. ".b.traj")
    local ta, tb = carlo.trajectory(tmp .. ".a.traj"), carlo.trajectory(tmp .. ".b.traj")
    local frames = {}
    for k = 1, #tb do
      local fa, fb = ta:frame(k), tb:frame(k)
      frames[k] = #ta == #tb and fingerprint(fa["lattice/height"]:totable()) ==
        fingerprint(fb["lattice/height"]:totable()) and
        fa["log/t"]:totable()[1] == fb["log/t"]:totable()[1] and "=" or "frame " .. k .. " differs"
    end
    return got .. " " .. #tb .. " frames " .. table.concat(frames)
  end)() or "")
  check("frames_and_sample", tw == ts .. " 6 frames ======", "split GPU " .. ts .. " vs CPU " .. tw)
  lines[#lines + 1] = "sample " .. ts

  -- split GPU systems advanced together stay on the main thread (they call MPI)
  local sa, sw = {}, {}
  for k = 1, 2 do
    sa[k] = make(SOS, { bond = 0.5, seed = 20 + k }, "gpu", true)
    sw[k] = make(SOS, { bond = 0.5, seed = 20 + k }, "cpu", false, sa[k].halo)
  end
  carlo.advance(sa, 10000)
  carlo.advance(sw, 10000)
  check("advance_together", state(sa[1]) .. state(sa[2]) == state(sw[1]) .. state(sw[2]),
    "split GPU systems advanced together differ from the CPU ones")
else
  local c = carlo.load(load_from, { device = "gpu" })
  check("load_split", c.decomposed and c.device == "gpu", "a split checkpoint loaded unsplit or on the CPU")
  c:run{ events = cases[1].events }
  -- the whole system on the CPU at the checkpoint's halo, made of the same runs
  local whole = make(cases[1].base, cases[1].extra, "cpu", false, c.halo)
  for _ = 0, stage do whole:run{ events = cases[1].events } end
  local sa, sb = state(c), state(whole)
  check("load_continues", sa == sb, "loaded " .. sa .. " vs whole " .. sb)
  if out then c:save(out .. ".ckpt") end
end

if out and me == 0 and #lines > 0 then
  local f = assert(io.open(out, "w"))
  f:write(table.concat(lines, "\n"), "\n")
  f:close()
end
