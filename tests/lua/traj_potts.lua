-- lua/traj/potts: Potts frames written by sys:run from C, checkpoints in the container that
-- continue bit for bit, and a restarted run appending to its trajectory so that it matches
-- the run that was never interrupted.
local carlo = require "carlo"
local check = require "check"
local D = check.tmp .. "/lua-traj-potts"
os.execute("mkdir -p " .. D)

local function same_frames(a, b)
  if #a ~= #b then return false, ("%d frames vs %d"):format(#a, #b) end
  for k = 1, #a do
    local fa, fb = a:frame(k), b:frame(k)
    for name, x in pairs(fa) do
      if not (fb[name] == x) then return false, ("frame %d, chunk %s differs"):format(k, name) end
    end
    for name in pairs(fb) do
      if not fa[name] then return false, ("frame %d: extra chunk %s"):format(k, name) end
    end
  end
  return true
end

-- frames every m sweeps, from C
do
  local sys = carlo.potts{ L = 32, q = 5, T = 0.9, seed = 4, device = "cpu" }
  local tr = carlo.trajectory(D .. "/run.ctr", "w")
  local r = sys:run{ sweeps = 95, every = 10, trajectory = tr }
  check.eq("lua/traj/potts-run-frames", #tr, 9)
  local steps, ok = {}, true
  for k = 1, #tr do
    steps[k] = tr:info(k).step
    ok = ok and steps[k] == 10 * k
  end
  check.ok("lua/traj/potts-run-steps", ok and r.step == 95, table.concat(steps, " "))
  local last = tr:frame(-1)
  sys:run{ sweeps = 5 } -- step 100: no trajectory now
  check.ok("lua/traj/potts-run-last-frame", tr:frame(9)["lattice/spins"] ~= sys:snapshot().state and
    last["configuration/step"][1] == 90 and last["lattice/q"][1] == 5 and
    last["lattice/temperature"][1] == sys.T)
  check.raises("lua/traj/potts-run-needs-every", function()
    sys:run{ sweeps = 10, trajectory = tr }
  end, "trajectory and every go together")
  check.raises("lua/traj/potts-run-every-needs-trajectory", function()
    sys:run{ sweeps = 10, every = 5 }
  end, "trajectory and every go together")
  check.raises("lua/traj/potts-run-bad-trajectory", function()
    sys:run{ sweeps = 10, every = 5, trajectory = "run.ctr" }
  end, "expected a carlo.trajectory")
  tr:close()
  local ro = carlo.trajectory(D .. "/run.ctr")
  check.raises("lua/traj/potts-run-read-only", function()
    sys:run{ sweeps = 10, every = 5, trajectory = ro }
  end, "open for reading")
  -- the frames are the lattices the run went through: rerun from the same seed and compare
  local twin = carlo.potts{ L = 32, q = 5, T = 0.9, seed = 4, device = "cpu" }
  local same = true
  for k = 1, #ro do
    twin:run{ sweeps = 10 }
    same = same and ro:frame(k)["lattice/spins"] == twin:snapshot().state
  end
  check.ok("lua/traj/potts-frames-are-the-run", same)
  ro:close()
end

-- checkpoints through the container continue bit for bit (single system and ensemble)
local function continues(name, make, n, run_opts)
  local a, b = make(), make()
  local opts = {}
  for k, v in pairs(run_opts or {}) do opts[k] = v end
  opts.sweeps = 2 * n
  a:run(opts)
  opts.sweeps = n
  b:run(opts)
  local path = D .. "/" .. name .. ".ctr"
  b:save(path)
  local c = carlo.load(path, { device = "cpu" })
  b:close()
  c:run(opts)
  local same = c.step == a.step
  for k = 1, a.R do same = same and a:snapshot(k).state == c:snapshot(k).state end
  if a.R > 1 then
    local ta, tc = a:tempering(), c:tempering()
    for k = 1, a.R do same = same and ta.map[k] == tc.map[k] end
    same = same and ta.exchanges == tc.exchanges
  end
  check.ok("lua/traj/potts-checkpoint-continues-bitwise-" .. name, same,
    ("steps %d and %d"):format(a.step, c.step))
  return path
end

local path = continues("single", function()
  return carlo.potts{ L = 48, q = 7, T = 0.75, seed = 21, device = "cpu", algorithm = "heatbath" }
end, 40)
continues("ensemble", function()
  return carlo.potts_ensemble{ L = 16, q = 4, temperatures = { 0.8, 0.85, 0.9, 0.95 }, seed = 5,
                               device = "cpu" }
end, 30, { exchange_every = 3 })

do -- the checkpoint is a one-frame container file naming its model
  local tr = carlo.trajectory(path)
  local f = tr:frame(1)
  local model = {}
  for i = 1, #f["carlo/model"] do model[i] = string.char(f["carlo/model"][i]) end
  check.ok("lua/traj/potts-checkpoint-is-a-container", #tr == 1 and table.concat(model) == "potts" and
    f["configuration/step"][1] == 40 and f["carlo/seed"][1] == 21)
  tr:close()
  check.raises("lua/traj/load-bad-device", function() carlo.load(path, { device = "tpu" }) end,
    "device must be one of")
  check.raises("lua/traj/load-missing", function() carlo.load(D .. "/nope.ctr") end,
    "nope.ctr", "No such file")
end

-- a run that stops at step 50 (its checkpoint) and at step 80 (killed, frames written to
-- 80), restarted from the checkpoint and appending: the same trajectory as one unbroken run
do
  local function make() return carlo.potts{ L = 24, q = 3, T = 1.1, seed = 77, device = "cpu" } end
  local whole = carlo.trajectory(D .. "/whole.ctr", "w")
  local u = make()
  u:run{ sweeps = 120, every = 10, trajectory = whole }
  whole:close()

  local broken = carlo.trajectory(D .. "/broken.ctr", "w")
  local s = make()
  s:run{ sweeps = 50, every = 10, trajectory = broken }
  s:save(D .. "/at50.ctr")
  s:run{ sweeps = 30, every = 10, trajectory = broken } -- frames 60..80, then "killed"
  broken:close()
  s:close()

  local again = carlo.trajectory(D .. "/broken.ctr", "a", { quiet = true })
  local r = carlo.load(D .. "/at50.ctr")
  r:run{ sweeps = 70, every = 10, trajectory = again } -- drops 60..80, writes 60..120
  again:close()
  local a, b = carlo.trajectory(D .. "/whole.ctr"), carlo.trajectory(D .. "/broken.ctr")
  local ok, why = same_frames(a, b)
  check.ok("lua/traj/potts-restart-append-equals-unbroken-run", ok, why)
  a:close()
  b:close()

  -- appending with a first frame at an older step drops the later frames first
  local tr = carlo.trajectory(D .. "/broken.ctr", "a", { quiet = true })
  local r2 = carlo.load(D .. "/at50.ctr")
  tr:write(r2)
  check.eq("lua/traj/potts-append-drops-later-frames", #tr, 5)
  tr:close()
  tr = carlo.trajectory(D .. "/broken.ctr", "a", { restart = 20, quiet = true })
  check.eq("lua/traj/append-restart-option", #tr, 2)
  tr:close()
end
