-- tests/gpu/hard_mpi.lua [OUT [CHECKPOINT STAGE]] — hard disks and spheres split into slabs of
-- cell layers on the GPUs of however many ranks run this (decompose = true, device = "gpu"),
-- against the same systems whole on one GPU and whole on the CPU: after runs of sweeps, the
-- positions (a fingerprint of their exact bits, by tag), the move counts, the volume-move counts
-- and the pressure estimators must be identical bit for bit, with no overlap and every particle
-- there. Cases: NVT disks at phi = 0.698 (16 layers: uneven slabs on 3 ranks, 4 a rank on 4),
-- NVT spheres at phi = 0.5 (8 layers, 2 a rank on 4) with the team kernel and with the
-- one-thread kernel, disks with the team kernel, NPT disks (volume moves, the grid changing size on the way), a compression
-- (layers taken away, the slabs cut again) and the tether; another seed must give another chain
-- (the comparisons can fail). With frozen edges (decompose = "frozen"), the GPUs' chain must be the
-- CPU's split over as many ranks. Rank 0 writes the fingerprints to OUT (tests/gpu/hard_mpi.sh
-- compares the files of 1, 2 and 4 ranks) and the split disks after 200 sweeps to OUT.ckpt.
-- With CHECKPOINT, a checkpoint that has STAGE runs of 50 sweeps behind the first 200 (saved on
-- another number of ranks) is loaded split on the GPUs here, runs 50 sweeps more, must equal the
-- whole CPU system of as many sweeps, and is saved again to OUT.ckpt.
-- HARD_MPI_DEVICE=cpu runs the same script with the CPU in the GPU's place (a check of the
-- script itself where there is no GPU).
local carlo = require "carlo"
local checks = require "check"
local out, load_from = arg[1], arg[2]
local stage = tonumber(arg[3] or "0")
local n = carlo.mpi.size
local dev = os.getenv("HARD_MPI_DEVICE") or "gpu"
local tag = ("_np%d%s"):format(n, load_from and "_stage" .. stage or "")
if dev == "gpu" and not checks.gpu_or_skip("gpu/hard_mpi/split" .. tag) then return end

-- every rank makes every check; a check passes when it holds on all of them
local check = checks.on_all_ranks("gpu/hard_mpi/", tag)

local fingerprint = checks.position_fingerprint

-- everything that must agree between a split system and a whole one
local function state(sys)
  local o = sys:observe()
  return ("%s step=%d tried=%d accepted=%d vtried=%d vaccepted=%d phi=%.17g P_gr=%.17g P_sdf=%.17g"):format(
    fingerprint(sys), sys.step, o.tried, o.accepted, o.volume_tried or -1, o.volume_accepted or -1, o.phi,
    o.P_gr, o.P_sdf)
end

local function make(ctor, args, device, split)
  local t = { device = device, decompose = split or nil }
  for k, v in pairs(args) do t[k] = v end
  return carlo[ctor](t)
end

local DISKS = { N = 400, phi = 0.698, init = "hex", seed = 3 }
local cases = {
  { name = "disks", ctor = "hard_disks", args = DISKS, sweeps = 200 },
  { name = "spheres", ctor = "hard_spheres", args = { N = 500, phi = 0.5, init = "fcc", seed = 4 },
    sweeps = 200 },
  { name = "spheres_team1", ctor = "hard_spheres", args = { N = 500, phi = 0.5, init = "fcc", seed = 8 },
    sweeps = 100, launch = { team = 1 } },
  { name = "disks_team4", ctor = "hard_disks", args = { N = 400, phi = 0.698, init = "hex", seed = 9 },
    sweeps = 100, launch = { team = 4 } },
  { name = "disks_npt", ctor = "hard_disks", args = { N = 400, phi = 0.6, init = "hex", seed = 5, pressure = 6 },
    sweeps = 150 },
  { name = "disks_tether", ctor = "hard_disks", args = { N = 400, phi = 0.698, init = "hex", seed = 6,
    lambda = 40 }, sweeps = 100 },
}

local lines = {}
if not load_from then
  for _, c in ipairs(cases) do
    local split, gpu, cpu = make(c.ctor, c.args, dev, true), make(c.ctor, c.args, dev, false),
      make(c.ctor, c.args, "cpu", false)
    if c.launch then split:launch(c.launch); gpu:launch(c.launch) end
    check(c.name .. "_split", split.decomposed and split.device == dev and
      split.layers[2] - split.layers[1] + 1 >= split.cells.m[#split.cells.m] // n, "not decomposed")
    for _, sys in ipairs{ split, gpu, cpu } do sys:run{ sweeps = c.sweeps } end
    if c.name == "disks" and out then split:save(out .. ".ckpt") end -- written by rank 0
    local a, b, d = state(split), state(gpu), state(cpu)
    check(c.name .. "_vs_one_gpu", a == b, "split " .. a .. " vs one GPU " .. b)
    check(c.name .. "_vs_cpu", a == d, "split " .. a .. " vs CPU " .. d)
    local ok, why = split:verify() -- N particles, each in its cell once, no overlap
    check(c.name .. "_verify", ok and split:overlaps() == 0, tostring(why))
    if c.args.pressure then
      check(c.name .. "_moved", split:observe().volume_accepted > 0, "no volume move accepted")
    end
    if c.args.lambda then
      check(c.name .. "_msd", split:observe().msd_site == cpu:observe().msd_site, "msd_site differs")
    end
    lines[#lines + 1] = c.name .. " " .. a
    split:close(); gpu:close(); cpu:close()
  end

  -- single sets and shifts driven from the script (a shift first), a Widom test and a sample
  do
    local split, cpu = make("hard_disks", DISKS, dev, true), make("hard_disks", DISKS, "cpu", false)
    for _, sys in ipairs{ split, cpu } do
      sys:shift_cells() -- first of all: a split GPU system's side stream made for it
      for set = 3, 0, -1 do sys:substep(set) end
      sys:shift_cells()
      sys:substep(1)
      sys:run{ sweeps = 20 }
    end
    local a, d = state(split), state(cpu)
    check("steps", a == d, "split " .. a .. " vs CPU " .. d)
    local wa, wd = split:observe{ widom = 2000, pressure = false }, cpu:observe{ widom = 2000, pressure = false }
    check("widom", wa.p_insert == wd.p_insert, ("%.17g vs %.17g"):format(wa.p_insert, wd.p_insert))
    local qa, qd = split:sample{ sweeps = 50, every = 10 }, cpu:sample{ sweeps = 50, every = 10 }
    check("sample", qa.P.mean == qd.P.mean and qa.P.err == qd.P.err,
      ("P %.17g +- %.3g vs %.17g +- %.3g"):format(qa.P.mean, qa.P.err, qd.P.mean, qd.P.err))
    lines[#lines + 1] = "steps " .. state(split)
    split:close(); cpu:close()
  end

  -- compression: the grid loses layers on the way, and the slabs are cut again
  do
    local args = { N = 400, phi = 0.5, init = "hex", seed = 7 }
    local split, cpu = make("hard_disks", args, dev, true), make("hard_disks", args, "cpu", false)
    local m0 = split.cells.m[2]
    split:compress{ phi = 0.55 }
    cpu:compress{ phi = 0.55 }
    check("compress_layers", split.cells.m[2] < m0 and split.layers[2] <= split.cells.m[2],
      ("%d layers before, %d after"):format(m0, split.cells.m[2]))
    split:run{ sweeps = 50 }
    cpu:run{ sweeps = 50 }
    local a, d = state(split), state(cpu)
    check("compress", a == d, "split " .. a .. " vs CPU " .. d)
    lines[#lines + 1] = "compress " .. a
    split:close(); cpu:close()
  end

  -- split systems advanced together stay on the main thread (they call MPI)
  do
    local sa, sw = {}, {}
    for k = 1, 2 do
      local args = { N = 192, phi = 0.5, init = "hex", seed = 20 + k }
      sa[k], sw[k] = make("hard_disks", args, dev, true), make("hard_disks", args, "cpu", false)
    end
    carlo.advance(sa, 50)
    carlo.advance(sw, 50)
    check("advance_together", state(sa[1]) .. state(sa[2]) == state(sw[1]) .. state(sw[2]),
      "split systems advanced together differ from the CPU ones")
  end

  -- the launch tuner (core/sys.h) times a split system's chunks on its slowest rank, so every
  -- rank tries the same launch at the same chunk and keeps the same one (on its own, each rank
  -- would choose by its own clock); the chunks themselves are the same on every rank
  do
    local split = make("hard_disks", { N = 400, phi = 0.698, init = "hex", seed = 11 }, dev, true)
    local alike, seen = true, {}
    for _ = 1, 10 do
      split:run{ sweeps = 500 }
      local la = split:launch()
      local code = la.block[1] * 10000 + la.block[2] * 100 + la.team
      local all = carlo.mpi.allgather{ code }
      for r = 2, #all do alike = alike and all[r] == all[1] end
      seen[#seen + 1] = table.concat(all, "/")
    end
    check("launch_alike", alike, "the ranks' launches (block x, y, team) differ: " .. table.concat(seen, " "))
    split:close()
  end

  -- a launch set by hand on rank 0 alone: the tuning stops on every rank (a rank tuning on its
  -- own would wait in a reduction over the ranks that the others never make)
  do
    local args = { N = 400, phi = 0.698, init = "hex", seed = 12 }
    local split, cpu = make("hard_disks", args, dev, true), make("hard_disks", args, "cpu", false)
    if carlo.mpi.rank == 0 then split:launch{ team = 1 } end
    split:run{ sweeps = 3000 }
    cpu:run{ sweeps = 3000 }
    local a, d = state(split), state(cpu)
    check("launch_one_rank", a == d, "split " .. a .. " vs CPU " .. d)
    split:close(); cpu:close()
  end

  -- frozen edges (decompose = "frozen"): the chain is the ranks' own, so the GPUs' must be the
  -- CPU's split over as many ranks, bit for bit (not written to OUT: it differs between rank
  -- counts); NVT disks, NPT disks and spheres
  for _, c in ipairs{
    { name = "frozen_disks", ctor = "hard_disks", args = DISKS, sweeps = 200 },
    { name = "frozen_npt", ctor = "hard_disks", args = { N = 400, phi = 0.6, init = "hex", seed = 5, pressure = 6 },
      sweeps = 150 },
    { name = "frozen_spheres", ctor = "hard_spheres", args = { N = 4000, phi = 0.5, init = "fcc", seed = 4 },
      sweeps = 60 },
  } do
    local split, cpu = make(c.ctor, c.args, dev, "frozen"), make(c.ctor, c.args, "cpu", "frozen")
    check(c.name .. "_flag", split.frozen_edges and cpu.frozen_edges, "frozen_edges not set")
    split:run{ sweeps = c.sweeps }
    cpu:run{ sweeps = c.sweeps }
    local a, d = state(split), state(cpu)
    check(c.name .. "_vs_cpu", a == d, "split " .. a .. " vs CPU " .. d)
    local ok, why = split:verify()
    check(c.name .. "_verify", ok and split:overlaps() == 0, tostring(why))
    split:close(); cpu:close()
  end
  do -- the shapes' sweep (cuda/shape.cu) with frozen edges
    local args = { vertices = carlo.shapes.pentagon.vertices, N = 400, phi = 0.6, init = "hex", seed = 3 }
    local split, cpu = make("hard_polygons", args, dev, "frozen"), make("hard_polygons", args, "cpu", "frozen")
    split:run{ sweeps = 100 }
    cpu:run{ sweeps = 100 }
    local function brief(sys)
      local o = sys:observe()
      return ("%s tried=%d accepted=%d"):format(fingerprint(sys), o.tried, o.accepted)
    end
    local a, d = brief(split), brief(cpu)
    check("frozen_pentagons_vs_cpu", split.frozen_edges and a == d, "split " .. a .. " vs CPU " .. d)
    split:close(); cpu:close()
  end

  -- the comparisons can fail: another seed, split, gives another chain
  do
    local other = { N = 400, phi = 0.698, init = "hex", seed = 4 }
    local split, cpu = make("hard_disks", other, dev, true), make("hard_disks", DISKS, "cpu", false)
    split:run{ sweeps = 20 }
    cpu:run{ sweeps = 20 }
    check("detects_other_seed", fingerprint(split) ~= fingerprint(cpu), "seed 4 gave seed 3's positions")
  end
else
  local c = carlo.load(load_from, { device = dev })
  check("load_split", c.decomposed and c.device == dev and c.step == 200 + 50 * stage,
    ("decomposed %s, device %s, step %d"):format(tostring(c.decomposed), c.device, c.step))
  c:run{ sweeps = 50 }
  local whole = make("hard_disks", DISKS, "cpu", false)
  whole:run{ sweeps = 200 }
  for _ = 0, stage do whole:run{ sweeps = 50 } end
  local a, d = state(c), state(whole)
  check("load_continues", a == d, "loaded " .. a .. " vs whole " .. d)
  if out then c:save(out .. ".ckpt") end
  lines[#lines + 1] = "loaded " .. a
end

if out and #lines > 0 then require("check").rank0_write(out, lines) end
