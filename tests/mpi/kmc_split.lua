-- tests/mpi/kmc_split.lua OUT [CHECKPOINT STAGE] — KMC lattices split into slabs of tile rows
-- over however many ranks run this (decompose = true), against the same systems unsplit (run
-- on rank 0, their results broadcast): after 1e5 events of sos_growth (bond = 0.3 and
-- bond = 1, both with rejected steps and tiles stepped again) and 2e4 of an 8-neighbour user model, the gathered
-- lattices, clocks and draw counters, t, events, the step counters and the observables must be
-- identical (and another seed or halo must not be). m = 40 is five tile rows: 2, 3 and 4 ranks
-- get uneven slabs. Rank 0 writes fingerprints to OUT (tests/mpi/kmc_split.sh compares the
-- files of 1 to 4 ranks) and saves the first system, after one run of 1e5 events, to OUT.ckpt.
-- With CHECKPOINT, a checkpoint that has STAGE such runs behind it (saved on another number of
-- ranks) is loaded here, split over these ranks, runs once more and must equal the unsplit
-- system that made the same STAGE + 1 runs; it is saved to OUT.ckpt for the next stage.
local carlo = require "carlo"
local models = require "kmc_models"
local fingerprint, state = models.fingerprint, models.split_state
local out, load_from = assert(arg[1], "usage: kmc_split.lua OUT [CHECKPOINT STAGE]"), arg[2]
local stage = tonumber(arg[3] or "0")
local me, n = carlo.mpi.rank, carlo.mpi.size
local lines = {}
local function check(name, cond, why)
  print(((cond and "PASS %s" or "FAIL %s: %s")):format("mpi/kmc_split/" .. name .. "_np" .. n ..
    (load_from and "_stage" .. stage or ""), why))
end

-- f() on rank 0 alone, its string on every rank: the unsplit references run once, not on
-- every rank (they call no MPI)
local function on_root(f)
  return carlo.mpi.broadcast(me == 0 and f() or "")
end

local SOS = models.SOS
local function make(base, extra, split)
  local t = { device = "cpu", decompose = split or nil }
  for k, v in pairs(base) do t[k] = v end
  for k, v in pairs(extra or {}) do t[k] = v end
  return carlo.kmc(t)
end

local cases = models.split_cases()

if not load_from then
  local first
  for _, c in ipairs(cases) do
    local a = make(c.base, c.extra, true)
    local b = me == 0 and make(c.base, c.extra, false)
    first = first or a
    check(c.name .. "_split", a.decomposed and (me > 0 or not b.decomposed) and
      a.rows[2] - a.rows[1] + 1 >= 8 * (40 // 8 // n), "not decomposed")
    a:run{ events = c.events }
    if c == cases[1] then a:save(out .. ".ckpt") end
    local sa = state(a)
    local sb = on_root(function() b:run{ events = c.events } return state(b) end)
    check(c.name .. "_run", sa == sb, "split " .. sa .. " vs unsplit " .. sb)
    if c.name == "sos_bond1" then
      check(c.name .. "_rejections", a:counters().rejected > 0, "no step was rejected")
      check(c.name .. "_repairs", a:counters().repaired > 0, "no tile was stepped again")
    elseif c.name == "sos_bond1_no_repair" then
      check(c.name .. "_none", not a.repair and a:counters().repaired == 0 and a:counters().rejected > 0,
        "repaired without the repair, or nothing rejected")
    end
    lines[#lines + 1] = c.name .. " " .. sa
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
    sa = steps(a)
    sb = on_root(function() return steps(b) end)
    check(c.name .. "_steps", sa == sb, "split " .. sa .. " vs unsplit " .. sb)
    lines[#lines + 1] = c.name .. "_steps " .. sa
  end

  -- the comparisons can fail: another seed, or another halo (the same trajectory in time, other
  -- steps, so a run of events stops elsewhere; the default is 4), split, ends in another state
  -- than the first case
  local c1 = cases[1]
  for _, other in ipairs{ { name = "seed", seed = c1.base.seed + 1 }, { name = "halo", halo = 5 } } do
    local o = make(c1.base, { bond = c1.extra.bond, seed = other.seed, halo = other.halo }, true)
    o:run{ events = c1.events }
    local so = state(o)
    check("detects_other_" .. other.name, c1.name .. " " .. so ~= lines[1],
      ("seed %d halo %d gave the same %s"):format(o.seed, o.halo, so))
  end

  -- split systems advanced together stay on the main thread (they call MPI)
  local sa = {}
  for k = 1, 2 do sa[k] = make(SOS, { bond = 0.5, seed = 20 + k }, true) end
  carlo.advance(sa, 10000)
  local got = state(sa[1]) .. " " .. state(sa[2])
  local want = on_root(function()
    local wa = {}
    for k = 1, 2 do wa[k] = make(SOS, { bond = 0.5, seed = 20 + k }, false) end
    carlo.advance(wa, 10000)
    return state(wa[1]) .. " " .. state(wa[2])
  end)
  check("advance_together", got == want, "split systems advanced together differ from the unsplit ones")

  -- frames (gathered, written by rank 0) and samples (observations reduced over the ranks)
  local function frames_and_sample(sys, path)
    local tr = carlo.trajectory(path, "w")
    sys:run{ time = 10, every = 2, trajectory = tr }
    tr:close()
    local smp = sys:sample{ time = 5, every = 0.5 }
    return ("%.17g %.17g %.17g %.17g"):format(smp.mean.mean, smp.mean.err, smp.width.mean,
      smp.step_fraction.mean)
  end
  local ts = frames_and_sample(make(SOS, { bond = 1, seed = 30 }, true), out .. ".a.traj")
  local tw = on_root(function()
    local got = frames_and_sample(make(SOS, { bond = 1, seed = 30 }, false), out .. ".b.traj")
    local ta, tb = carlo.trajectory(out .. ".a.traj"), carlo.trajectory(out .. ".b.traj")
    local heights = {}
    for k = 1, #tb do
      local fa, fb = ta:frame(k), tb:frame(k)
      heights[k] = #ta == #tb and fingerprint(fa["lattice/height"]:totable()) ==
        fingerprint(fb["lattice/height"]:totable()) and
        fa["log/t"]:totable()[1] == fb["log/t"]:totable()[1] and "=" or "frame " .. k .. " differs"
    end
    return got .. " " .. #tb .. " frames " .. table.concat(heights)
  end)
  check("frames_and_sample", tw == ts .. " 6 frames ======", "split " .. ts .. " vs unsplit " .. tw)

  -- what decompose refuses
  local function refused(name, args, want)
    local ok, err = pcall(make, SOS, args, true)
    check("refuses_" .. name, not ok and tostring(err):find(want, 1, true), tostring(err))
  end
  refused("bkl", { bond = 1, algorithm = "bkl" }, "decompose = true needs algorithm = \"tiled\"")
  refused("serial", { bond = 1, algorithm = "serial" }, "decompose = true needs algorithm = \"tiled\"")
  if n > 1 then
    refused("too_few_tile_rows", { bond = 1, m = 8 * (n - 1) },
      ("%d tile rows of 8, fewer than the %d MPI ranks"):format(n - 1, n))
    local ok, err = pcall(function() first:run{ events = 10, walltime = 10 } end)
    check("walltime_refused", not ok and tostring(err):find("walltime is refused", 1, true), tostring(err))
  end
  check("not_split_by_default", not make(SOS, { bond = 1 }).decomposed, "decomposed without decompose")
else
  local c = carlo.load(load_from)
  check("load_split", c.decomposed, "a split system's checkpoint loaded unsplit")
  c:run{ events = cases[1].events }
  local sa = state(c)
  local sb = on_root(function()
    local whole = make(SOS, cases[1].extra, false)
    for _ = 0, stage do whole:run{ events = cases[1].events } end
    return state(whole)
  end)
  check("load_continues", sa == sb, "loaded " .. sa .. " vs unsplit " .. sb)
  if #carlo.devices().gpus > 0 then -- loaded on the GPUs, split again, it goes on alike
    local g = carlo.load(load_from, { device = "gpu" })
    g:run{ events = cases[1].events }
    local sg = state(g)
    check("load_gpu", g.decomposed and sg == sb, "on the GPU " .. sg .. " vs " .. sb)
  end
  c:save(out .. ".ckpt")
end

if #lines > 0 then require("check").rank0_write(out, lines) end
