-- lua/kmc: the Lua API — clear errors for impossible input, snapshots and observables,
-- checkpoints that continue bit for bit, images, and models where nothing (more) can happen.
local carlo = require "carlo"
local check = require "check"
local models = require "kmc_models"

carlo.threads(1)

local function sos(args)
  local t = { model = "sos_growth", m = 16, n = 24, phi = 1, seed = 2 }
  for k, v in pairs(args or {}) do t[k] = v end
  return carlo.kmc(t)
end

-- ---------- impossible input ----------
check.raises("lua/kmc/error-m-not-tile-multiple", function() sos{ m = 100 } end,
  "carlo.kmc", "m must be a multiple of the tile size 8", "100")
check.raises("lua/kmc/error-n-not-tile-multiple", function() sos{ n = 12 } end,
  "n must be a multiple of the tile size 8")
check.raises("lua/kmc/error-m-zero", function() sos{ m = 0 } end, "m must be an integer from 1")
check.raises("lua/kmc/error-phi-required", function()
  carlo.kmc{ model = "sos_growth", m = 8, n = 8, seed = 1 }
end, "phi is required")
check.raises("lua/kmc/error-k2-positive", function() sos{ k2 = 0 } end, "k2 must be a number > 0")
check.raises("lua/kmc/error-phi-overflow", function() sos{ phi = 400 } end,
  "rates must be finite and > 0")
check.raises("lua/kmc/error-unknown-key", function() sos{ temperature = 3 } end,
  "unknown key 'temperature'")
check.raises("lua/kmc/error-unknown-model", function() sos{ model = "ising" } end,
  "model must be one of \"sos_growth\"")
check.raises("lua/kmc/error-model-and-rates", function()
  sos{ states = 2, rates = models.glauber(1) }
end, "give either model")
check.raises("lua/kmc/error-halo-range", function() sos{ halo = 8 } end,
  "halo must be an integer from 1 to 7")
check.raises("lua/kmc/error-tiles-per-block", function() sos{ tiles_per_block = 9 } end,
  "tiles_per_block must be an integer from 1 to 8")
check.raises("lua/kmc/error-alpha", function() sos{ alpha = 0.9 } end, "alpha must be a number > 1")
check.raises("lua/kmc/error-beta", function() sos{ beta = 1 } end, "beta must be a number in (0, 1)")
check.raises("lua/kmc/error-algorithm", function() sos{ algorithm = "fast" } end,
  "algorithm must be one of \"tiled\", \"serial\", \"bkl\"")

local function user(args)
  local t = { states = 2, m = 8, n = 8, seed = 1, rates = models.glauber(0.5) }
  for k, v in pairs(args or {}) do t[k] = v end
  return carlo.kmc(t)
end
check.raises("lua/kmc/error-states", function() user{ states = 1 } end,
  "states must be an integer from 2 to 256")
check.raises("lua/kmc/error-neighbourhood", function() user{ neighbourhood = 6 } end,
  "neighbourhood must be 4 or 8")
check.raises("lua/kmc/error-rates-required", function() user{ rates = 3 } end, "rates is required")
check.raises("lua/kmc/error-table-too-large", function()
  user{ states = 5, neighbourhood = 8, rates = function() return {} end }
end, "rate table would have", "5^9", "at most 1048576")
check.raises("lua/kmc/error-rate-negative", function()
  user{ rates = function(x) return { { -1, 1 - x } } end }
end, "rates(0, {0, 0, 0, 0})", "rate -1", "finite numbers >= 0")
check.raises("lua/kmc/error-rate-nan", function()
  user{ rates = function(x) return { { 0 / 0, 1 - x } } end }
end, "rates must be finite")
check.raises("lua/kmc/error-rate-inf", function()
  user{ rates = function(x) return { { math.huge, 1 - x } } end }
end, "rates must be finite")
check.raises("lua/kmc/error-rates-not-a-list", function()
  user{ rates = function() return 1 end }
end, "must return a list of {rate, new_state}", "got a number")
check.raises("lua/kmc/error-event-not-a-table", function()
  user{ rates = function() return { 1 } end }
end, "event 1 must be a table")
check.raises("lua/kmc/error-new-state-range", function()
  user{ rates = function() return { { 1, 2 } } end }
end, "goes to state 2", "from 0 to 1")
check.raises("lua/kmc/error-new-state-same", function()
  user{ rates = function(x) return { { 1, x } } end }
end, "other than the site's own state")
check.raises("lua/kmc/error-initial-range", function() user{ initial = 2 } end,
  "initial must be an integer from 0 to 1")
check.raises("lua/kmc/error-initial-shape", function() user{ initial = carlo.array("i32", 10, 0) } end,
  "m x n = 8 x 8")
check.raises("lua/kmc/error-run-needs-one", function() sos():run{} end,
  "give exactly one of time (how long) and events (how many)")
check.raises("lua/kmc/error-run-both", function() sos():run{ time = 1, events = 2 } end,
  "give exactly one of time")
check.raises("lua/kmc/error-run-time", function() sos():run{ time = -1 } end,
  "time must be a number > 0")
check.raises("lua/kmc/error-bkl-clocks", function()
  sos{ algorithm = "bkl" }:snapshot{ clocks = true }
end, "keeps no clocks")
check.raises("lua/kmc/error-read-only", function() local s = sos(); s.t = 3 end, "read-only")
if not check.has_gpu() then
  check.raises("lua/kmc/error-no-gpu", function() sos{ device = "gpu" } end, "carlo.kmc")
end
check.raises("lua/kmc/error-serial-on-gpu", function() sos{ algorithm = "serial", device = "gpu" } end,
  "carlo.kmc")

-- ---------- what a system shows ----------
do
  local s = sos()
  check.ok("lua/kmc/fields", s.m == 16 and s.n == 24 and s.N == 384 and s.tiles == 6 and s.phi == 1
    and s.k2 == 1 and s.t == 0 and s.events == 0 and s.model == "sos_growth" and s.algorithm == "tiled"
    and s.halo >= 1 and s.device == "cpu" and s.neighbourhood == 4, tostring(s))
  local r = s:run{ events = 2000 }
  local snap = s:snapshot()
  check.ok("lua/kmc/run-result", r.events == s.events and r.events >= 2000 and r.t == s.t and r.steps > 0,
    ("events %d, t %g"):format(r.events, r.t))
  check.ok("lua/kmc/snapshot", snap.state.type == "i32" and snap.state.shape[1] == 16
    and snap.state.shape[2] == 24 and snap.t == s.t and snap.events == s.events, "shape or fields")
  local sum = 0
  for i = 1, #snap.state do sum = sum + snap.state[i] end
  local o = s:observe()
  check.ok("lua/kmc/observe", sum == s.events and math.abs(o.mean - sum / 384) < 1e-12 and o.width > 0
    and o.step_fraction > 0 and o.step_fraction < 1 and o.min <= o.max,
    ("mean %g width %g"):format(o.mean, o.width))
  local st = s:stats()
  check.ok("lua/kmc/stats", st.accepted > 0 and st.steps == st.accepted + st.rejected
    and st.events == s.events and st.simulated >= st.events and st.work_per_event >= 1
    and math.abs(st.events_per_tile_step - st.events / (st.accepted * 6)) < 1e-9 and st.dt > 0,
    "stats fields")
  check.ok("lua/kmc/tostring", tostring(s):find("carlo.kmc(sos_growth, 16 x 24", 1, true) ~= nil, tostring(s))
  local u = user{ states = 3, rates = function(x) return { { 1, (x + 1) % 3 } } end }
  u:run{ events = 1000 }
  local uo = u:observe()
  check.ok("lua/kmc/observe-user", uo.counts[1] + uo.counts[2] + uo.counts[3] == 64 and u.states == 3,
    "counts")
end

-- ---------- checkpoints continue bit for bit ----------
do
  local path = check.tmp .. "/kmc.ckpt"
  local cases = {
    { "tiled", function() return sos{ m = 32, n = 32, phi = 1 } end },
    { "serial", function() return sos{ m = 32, n = 32, phi = 1, algorithm = "serial" } end },
    { "bkl", function() return sos{ m = 32, n = 32, phi = 1, algorithm = "bkl" } end },
    { "user", function()
        return carlo.kmc{ states = 3, neighbourhood = 8, rates = models.three_state(0.3), m = 16, n = 16,
                          seed = 6 }
      end },
  }
  for _, case in ipairs(cases) do
    local name, make = case[1], case[2]
    local a, b = make(), make()
    a:run{ time = 30 }
    a:run{ time = 30 }
    b:run{ time = 30 }
    b:save(path)
    b = nil
    collectgarbage()
    local c = carlo.load(path)
    c:run{ time = 30 }
    local sa, sc = a:snapshot{ clocks = name ~= "bkl" }, c:snapshot{ clocks = name ~= "bkl" }
    local bad = 0
    for i = 1, #sa.state do
      if sa.state[i] ~= sc.state[i] or (sa.tau and sa.tau[i] ~= sc.tau[i]) then bad = bad + 1 end
    end
    local same_stats = name == "bkl" or name == "serial" or
      (a:stats().accepted == c:stats().accepted and a:stats().rejected == c:stats().rejected)
    check.ok("lua/kmc/checkpoint-continues-" .. name, bad == 0 and sa.t == sc.t and sa.events == sc.events
      and same_stats and c.algorithm == a.algorithm,
      ("%d sites differ, t %.17g vs %.17g"):format(bad, sa.t, sc.t))
  end
  local f = io.open(path, "wb")
  f:write("CARLOCK1 truncated")
  f:close()
  check.raises("lua/kmc/checkpoint-corrupt", function() carlo.load(path) end, "carlo.load")
end

-- ---------- images ----------
do
  local s = sos()
  s:run{ time = 5 }
  local path = check.tmp .. "/kmc.png"
  s:png(path, { scale = 2 })
  local f = io.open(path, "rb")
  local head = f and f:read(8)
  if f then f:close() end
  check.eq("lua/kmc/png", head, "\137PNG\r\n\26\n")
  local u = user{ states = 3, rates = function(x) return { { 1, (x + 1) % 3 } } end }
  u:png(path)
  f = io.open(path, "rb")
  check.ok("lua/kmc/png-user", f and f:read(8) == "\137PNG\r\n\26\n", "no PNG written")
  if f then f:close() end
end

-- ---------- nothing can happen ----------
do
  local frozen = user{ rates = function() return {} end }
  frozen:run{ time = 5 }
  check.ok("lua/kmc/zero-rates-time", frozen.t == 5 and frozen.events == 0, ("t %g"):format(frozen.t))
  check.raises("lua/kmc/zero-rates-events", function() frozen:run{ events = 10 } end,
    "no event can happen: every rate is zero")
  -- 0 -> 1 only: after 64 events nothing is left to happen
  for _, alg in ipairs{ "tiled", "serial", "bkl" } do
    local once = user{ rates = function(x) if x == 0 then return { { 1, 1 } } end return {} end,
                       algorithm = alg }
    check.raises("lua/kmc/absorbing-state-" .. alg, function() once:run{ events = 100 } end,
      "no event can happen any more", "after 64 events")
    once:run{ time = 10 }
    check.ok("lua/kmc/absorbing-state-time-" .. alg, once.events == 64 and once:observe().counts[2] == 64,
      ("%d events"):format(once.events))
  end
end

-- trajectories: run{ time =, every =, trajectory = } writes a frame at every multiple of every
do
  local path = check.tmp .. "/kmc-run.ctr"
  local sys = carlo.kmc{ model = "sos_growth", m = 16, n = 16, phi = 1, seed = 4, device = "cpu" }
  local tr = carlo.trajectory(path, "w")
  sys:run{ time = 2.0, every = 0.5, trajectory = tr }
  tr:close()
  local rd = carlo.trajectory(path, "r")
  local last = rd:frame(-1)
  local snap = sys:snapshot()
  local same = #rd == 4 and last["log/t"][1] == sys.t and last["configuration/step"][1] == sys.events
  for i = 1, 16 * 16 do same = same and last["lattice/height"][i] == snap.state[i] end
  check.ok("lua/kmc/run-writes-trajectory", same, ("%d frames, t %s"):format(#rd, tostring(last["log/t"][1])))
  rd:close()
  check.raises("lua/kmc/run-every-without-trajectory", function() sys:run{ time = 1, every = 0.5 } end,
               "trajectory and every go together")
end

-- the default halo: 1 when no event depends on the neighbours, else 4
do
  local function halo(t) t.seed = 1; t.device = "cpu"; return carlo.kmc(t).halo end
  check.ok("lua/kmc/default-halo",
    halo{ model = "sos_growth", m = 16, n = 16, phi = 0 } == 1 and
    halo{ model = "sos_growth", m = 16, n = 16, phi = 1 } == 4 and
    halo{ states = 2, m = 16, n = 16, rates = function(x) return { { 1 + x, 1 - x } } end } == 1 and
    halo{ states = 2, m = 16, n = 16, rates = function(x, nb) return { { 1 + nb[1], 1 - x } } end } == 4 and
    halo{ model = "sos_growth", m = 16, n = 16, phi = 0, halo = 3 } == 3)
end
