-- lua/kmc: the Lua API — clear errors for impossible input, snapshots and observables,
-- checkpoints that continue bit for bit, images, models where nothing (more) can happen, the
-- system layer's verbs (sample, controls, frames, walltime) and the old names that still work.
local carlo = require "carlo"
local check = require "check"
local models = require "kmc_models"

carlo.threads(1)

local function sos(args)
  local t = { model = "sos_growth", m = 16, n = 24, bond = 1, seed = 2 }
  for k, v in pairs(args or {}) do t[k] = v end
  return carlo.kmc(t)
end

-- ---------- impossible input ----------
check.raises("lua/kmc/error-m-not-tile-multiple", function() sos{ m = 100 } end,
  "carlo.kmc", "m must be a multiple of the tile size 8", "100")
check.raises("lua/kmc/error-n-not-tile-multiple", function() sos{ n = 12 } end,
  "n must be a multiple of the tile size 8")
check.raises("lua/kmc/error-m-zero", function() sos{ m = 0 } end, "m must be an integer from 1")
check.raises("lua/kmc/error-bond-required", function()
  carlo.kmc{ model = "sos_growth", m = 8, n = 8, seed = 1 }
end, "bond is required")
check.raises("lua/kmc/error-k2-positive", function() sos{ k2 = 0 } end, "k2 must be a number > 0")
check.raises("lua/kmc/error-bond-overflow", function() sos{ bond = 400 } end,
  "rates must be finite and > 0", "bond = 400")
check.raises("lua/kmc/error-unknown-key", function() sos{ temperature = 3 } end,
  "unknown key 'temperature'")
check.raises("lua/kmc/error-unknown-model", function() sos{ model = "ising" } end,
  "model must be one of \"sos_growth\"")
check.raises("lua/kmc/error-model-and-rates", function()
  sos{ states = 2, rates = models.glauber(1) }
end, "give either model")
check.raises("lua/kmc/error-halo-range", function() sos{ halo = 8 } end,
  "halo must be an integer from 1 to 7")
check.raises("lua/kmc/error-launch-tiles-per-block", function() sos():launch{ tiles_per_block = 9 } end,
  "kmc:launch", "tiles_per_block must be an integer from 1 to 8")
check.raises("lua/kmc/error-grow", function() sos{ grow = 0.9 } end, "grow must be a number > 1")
check.raises("lua/kmc/error-grow-initial", function() sos{ grow_initial = 1 } end,
  "grow_initial must be a number > 1")
check.raises("lua/kmc/error-shrink", function() sos{ shrink = 1 } end, "shrink must be a number in (0, 1)")
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
check.raises("lua/kmc/error-init-range", function() user{ init = 2 } end,
  "init must be", "an integer must lie from 0 to 1", "(got 2)")
check.raises("lua/kmc/error-init-shape", function() user{ init = carlo.array("i32", 10, 0) } end,
  "m x n = 8 x 8", "got 10 x 1")
check.raises("lua/kmc/error-init-element", function()
  local a = carlo.array("f64", 64, 0)
  a[5] = 0.5
  user{ init = a }
end, "element 5 is 0.5", "integers from 0 to 1")
check.raises("lua/kmc/error-init-name", function() user{ init = "ordered" } end,
  "init must be", "\"flat\"", "(got \"ordered\")")
check.raises("lua/kmc/error-init-random-sos", function() sos{ init = "random" } end,
  "init = \"random\" needs a user model")
check.raises("lua/kmc/error-init-both-names", function() user{ init = 0, initial = 0 } end,
  "give init, not both init and initial")
check.raises("lua/kmc/error-run-needs-one", function() sos():run{} end,
  "give exactly one of time (how long), events (how many) and upto (the time to reach)")
check.raises("lua/kmc/error-run-both", function() sos():run{ time = 1, events = 2 } end,
  "give exactly one of time")
check.raises("lua/kmc/error-run-time", function() sos():run{ time = -1 } end,
  "time must be a number in (0, ", "(got -1)")
check.raises("lua/kmc/error-run-sweeps", function() sos():run{ sweeps = 1 } end,
  "kmc:run", "KMC counts model time (time =, upto =) or events (events =), not sweeps")
check.raises("lua/kmc/error-bkl-clocks", function() sos{ algorithm = "bkl" }:clocks() end,
  "kmc:clocks", "keeps no clocks")
check.raises("lua/kmc/error-read-only", function() local s = sos(); s.t = 3 end, "read-only field 't'",
  "settable: bond, k2")
check.raises("lua/kmc/error-unknown-field", function() local s = sos(); s.temperature = 3 end,
  "unknown field 'temperature'")
check.raises("lua/kmc/error-user-no-controls", function() local s = user(); s.bond = 1 end,
  "unknown field 'bond'", "settable: none")
if not check.has_gpu() then
  check.raises("lua/kmc/error-no-gpu", function() sos{ device = "gpu" } end, "carlo.kmc")
end
check.raises("lua/kmc/error-serial-on-gpu", function() sos{ algorithm = "serial", device = "gpu" } end,
  "carlo.kmc")

-- ---------- what a system shows ----------
do
  local s = sos()
  check.ok("lua/kmc/fields", s.m == 16 and s.n == 24 and s.N == 384 and s.tiles == 6 and s.bond == 1
    and s.k2 == 1 and s.t == 0 and s.events == 0 and s.step == 0 and s.model == "kmc"
    and s.kind == "sos_growth" and s.algorithm == "tiled" and s.halo >= 1 and s.device == "cpu"
    and s.neighbourhood == 4 and s.unit == "events" and s.replicas == 1, tostring(s))
  local r = s:run{ events = 2000 }
  local snap = s:snapshot()
  local c = s:counters()
  check.ok("lua/kmc/run-result", r.events == s.events and r.events >= 2000 and r.t == s.t
    and r.time == s.t and r.step == s.step and r.completed and c.accepted > 0 and s.step == c.tried,
    ("events %d, t %g"):format(r.events, r.t))
  check.ok("lua/kmc/snapshot", snap.state.type == "i32" and snap.state.shape[1] == 16
    and snap.state.shape[2] == 24 and snap.shape[1] == 16 and snap.shape[2] == 24 and snap.t == s.t
    and snap.events == s.events and snap.step == s.step, "shape or fields")
  local sum = 0
  for i = 1, #snap.state do sum = sum + snap.state[i] end
  local o = s:observe()
  check.ok("lua/kmc/observe", sum == s.events and math.abs(o.mean - sum / 384) < 1e-12 and o.width > 0
    and o.step_fraction > 0 and o.step_fraction < 1 and o.min <= o.max and math.type(o.min) == "integer"
    and o.t == s.t and o.events == s.events and o.step == s.step,
    ("mean %g width %g"):format(o.mean, o.width))
  check.ok("lua/kmc/observables", table.concat(s.observables, ",") == "mean,width,min,max,step_fraction"
    and table.concat(s.controls, ",") == "bond,k2", table.concat(s.observables, ","))
  check.ok("lua/kmc/counters", c.accepted > 0 and c.tried == c.accepted + c.rejected
    and c.events == s.events and c.simulated >= c.events and c.work_per_event >= 1
    and math.abs(c.events_per_tile_step - c.events / (c.accepted * 6)) < 1e-9 and c.dt > 0 and c.grow > 1,
    "counters fields")
  local old = s:stats() -- the old name, warned once
  check.ok("lua/kmc/stats-alias", old.steps == c.tried and old.accepted == c.accepted and old.alpha == c.grow,
    "stats()")
  check.ok("lua/kmc/tostring", tostring(s):find("carlo.kmc(sos_growth, 16 x 24, bond = 1", 1, true) ~= nil
    and tostring(s):find("step " .. s.step, 1, true) ~= nil, tostring(s))
  local u = user{ states = 3, rates = function(x) return { { 1, (x + 1) % 3 } } end }
  u:run{ events = 1000 }
  local uo = u:observe()
  check.ok("lua/kmc/observe-user", uo.counts[1] + uo.counts[2] + uo.counts[3] == 64 and u.states == 3
    and uo.n_0 == uo.counts[1] and uo.n_2 == uo.counts[3] and u.kind == "user"
    and table.concat(u.observables, ",") == "mean,width,min,max,n_0,n_1,n_2" and #u.controls == 0,
    "counts")
end

-- ---------- old names: read one release, warned once ----------
do
  local a = carlo.kmc{ model = "sos_growth", m = 16, n = 16, phi = 1.5, seed = 3, alpha_initial = 8,
                       alpha = 1.05, beta = 0.4, initial = 2, tiles_per_block = 3, quiet = true }
  local b = carlo.kmc{ model = "sos_growth", m = 16, n = 16, bond = 1.5, seed = 3, grow_initial = 8,
                       grow = 1.05, shrink = 0.4, init = 2, quiet = true }
  b:launch{ tiles_per_block = 3 }
  a:run{ events = 3000 }
  b:run{ events = 3000 }
  check.ok("lua/kmc/old-names", a.phi == 1.5 and a.bond == 1.5 and a.tiles_per_block == 3
    and models.diff(models.full(a), models.full(b)) == 0 and a:counters().rejected == b:counters().rejected
    and a:counters().tried == b:counters().tried and a:snapshot().state[1] >= 2,
    "the old names did not mean the new ones")
  a.phi = 1.4
  check.eq("lua/kmc/old-name-phi-settable", a.bond, 1.4)
end

-- ---------- init: a number, a name, an array, a snapshot ----------
do
  local a = sos{ init = 5 }
  a:run{ events = 500 }
  local b = sos{ init = a:snapshot(), seed = 9 }
  local c = sos{ init = a:snapshot().state, seed = 9 }
  local flat = sos{ init = "flat" }
  local same = b.t == 0 and b.events == 0 and b.step == 0
  for i = 1, 16 * 24 do
    same = same and b:snapshot().state[i] == a:snapshot().state[i] and c:snapshot().state[i] == a:snapshot().state[i]
      and flat:snapshot().state[i] == 0
  end
  check.ok("lua/kmc/init-snapshot", same, "init = a snapshot, or its state array, is not that state")
  local r1 = user{ states = 4, init = "random", rates = function(x) return { { 1, (x + 1) % 4 } } end }
  local r2 = user{ states = 4, init = "random", rates = function(x) return { { 1, (x + 1) % 4 } } end }
  local counts = r1:observe().counts
  local st1, st2 = r1:snapshot().state, r2:snapshot().state
  local equal = true
  for i = 1, 64 do equal = equal and st1[i] == st2[i] end
  check.ok("lua/kmc/init-random", equal and counts[1] > 4 and counts[2] > 4 and counts[3] > 4 and counts[4] > 4
    and counts[1] + counts[2] + counts[3] + counts[4] == 64, "random states from the seed")
end

-- ---------- sample: every observable with an error bar ----------
do
  -- bond = 0 is random deposition: the mean height grows at rate k2 = 1; the width of a
  -- Poisson surface is sqrt(t)
  local s = carlo.kmc{ model = "sos_growth", m = 64, n = 64, bond = 0, seed = 5 }
  s:run{ time = 50 }
  local t0 = s.t
  local a = s:sample{ time = 20, every = 0.5 }
  local ok = a.samples == 40 and math.abs(s.t - t0 - 20) < 1e-9 and a.t == s.t and a.events == s.events
  for _, k in ipairs(s.observables) do
    local e = a[k]
    ok = ok and type(e) == "table" and type(e.mean) == "number" and e.err >= 0 and e.tau > 0
      and type(e.plateau) == "boolean"
  end
  check.ok("lua/kmc/sample-time", ok and a.acceptance == 1, "fields")
  -- samples at t0 + 0.5, ..., t0 + 20: mean height t0 + 10.25, each within sqrt(t / N) = 0.12
  check.within("lua/kmc/sample-mean-height", a.mean.mean, t0 + 10.25, 0.125, 4)
  local e = s:sample{ events = 4096 * 10, every = 4096, series = true }
  check.ok("lua/kmc/sample-events", e.samples == 10 and #e.series.mean == 10 and e.width.mean > 0,
    ("%d samples"):format(e.samples))
  local u = user{ states = 3, m = 16, n = 16, rates = models.three_state(0.2), neighbourhood = 8 }
  local us = u:sample{ time = 10, every = 0.5 }
  check.ok("lua/kmc/sample-user-populations", math.abs(us.n_0.mean + us.n_1.mean + us.n_2.mean - 256) < 1e-9
    and us.n_0.err > 0, "populations")
  -- Glauber at beta = 0: independent spins flipping at rate 1/2 each way, so n_1 relaxes at rate
  -- 1 around N / 2 with variance N / 4; its mean over a time T has variance 2 (N / 4) / T
  local g = user{ states = 2, m = 16, n = 16, rates = models.glauber(0), seed = 21 }
  g:run{ time = 10 }
  local gs = g:sample{ time = 400, every = 0.5 }
  local sd = math.sqrt(2 * 64 / 400)
  check.within("lua/kmc/sample-glauber-population", gs.n_1.mean, 128, sd, 4)
  check.ok("lua/kmc/sample-glauber-error-bar", gs.n_1.err > sd / 2 and gs.n_1.err < sd * 2
    and gs.n_1.tau > 0.3 and gs.n_1.tau < 3, ("err %g (theory %g), tau %g (theory 1)")
    :format(gs.n_1.err, sd, gs.n_1.tau))
  check.raises("lua/kmc/sample-not-multiple", function() s:sample{ time = 1, every = 0.3 } end,
    "time must be a multiple of every", "every = 0.3")
  check.raises("lua/kmc/sample-sweeps", function() s:sample{ sweeps = 4, every = 2 } end,
    "kmc:sample", "not sweeps")
end

-- ---------- controls: bond and k2 mid-run ----------
do
  -- the tiled system and the serial reference change bond at the same time: still bit for bit
  local a = carlo.kmc{ model = "sos_growth", m = 32, n = 32, bond = 1, seed = 6 }
  local b = carlo.kmc{ model = "sos_growth", m = 32, n = 32, bond = 1, seed = 6, algorithm = "serial" }
  a:run{ time = 5 }
  b:run{ time = 5 }
  local before = models.full(a)
  a.bond = 2
  b.bond = 2
  local after = models.full(a)
  -- sites with n_b = 2 keep their clocks (k2 exp(0) does not depend on bond); others redraw
  local kept, redrawn = 0, 0
  for i = 1, 32 * 32 do
    if after.tau[i] == before.tau[i] and after.draws[i] == before.draws[i] then kept = kept + 1
    elseif after.draws[i] == before.draws[i] + 1 then redrawn = redrawn + 1 end
  end
  a:run{ time = 5 }
  b:run{ time = a.t - b.t }
  check.ok("lua/kmc/control-bond-exact", models.diff(models.full(a), models.full(b)) == 0 and a.t == b.t
    and a.bond == 2 and kept > 0 and redrawn > 0 and kept + redrawn == 1024,
    ("%d kept, %d redrawn"):format(kept, redrawn))
  a.k2 = 3
  local ev = a.events
  a:run{ time = 1 }
  check.ok("lua/kmc/control-k2", a.k2 == 3 and a.events > ev, ("k2 %s"):format(a.k2))
  check.raises("lua/kmc/control-bond-range", function() a.bond = 200 end,
    "bond must be a number with bond in [-177, 177] (got 200)")
  check.raises("lua/kmc/control-bond-rates", function() a.k2 = 1e300; a.bond = 100 end,
    "rates must be finite and > 0")
  check.ok("lua/kmc/control-refused-keeps", a.bond == 2 and a.k2 == 1e300, ("bond %s"):format(a.bond))
  check.raises("lua/kmc/control-k2-range", function() a.k2 = 0 end, "k2 must be a number with k2 > 0 (got 0)")
  check.raises("lua/kmc/control-nan", function() a.bond = 0 / 0 end, "bond must be a number")
  -- bkl: the tree of rates is rebuilt
  local k = carlo.kmc{ model = "sos_growth", m = 16, n = 16, bond = 0, seed = 6, algorithm = "bkl" }
  k:run{ time = 1 }
  k.bond = 0.5
  k:run{ time = 1 }
  check.ok("lua/kmc/control-bkl", k.bond == 0.5 and k.events > 0, "bkl")
end

-- ---------- checkpoints continue bit for bit ----------
do
  local path = check.tmp .. "/kmc.ckpt"
  local cases = {
    { "tiled", function() return sos{ m = 32, n = 32, bond = 1 } end },
    { "serial", function() return sos{ m = 32, n = 32, bond = 1, algorithm = "serial" } end },
    { "bkl", function() return sos{ m = 32, n = 32, bond = 1, algorithm = "bkl" } end },
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
    local sa, sc = a:snapshot(), c:snapshot()
    if name ~= "bkl" then sa, sc = models.full(a), models.full(c) end
    local bad = 0
    for i = 1, #sa.state do
      if sa.state[i] ~= sc.state[i] or (sa.tau and (sa.tau[i] ~= sc.tau[i] or sa.draws[i] ~= sc.draws[i])) then
        bad = bad + 1
      end
    end
    local ca, cc = a:counters(), c:counters()
    check.ok("lua/kmc/checkpoint-continues-" .. name, bad == 0 and sa.t == sc.t and sa.events == sc.events
      and sa.step == sc.step and ca.accepted == cc.accepted and ca.rejected == cc.rejected
      and ca.dt == cc.dt and c.algorithm == a.algorithm and c.device == "cpu",
      ("%d sites differ, t %.17g vs %.17g"):format(bad, sa.t, sc.t))
  end
  -- a changed control is part of the checkpoint
  local a = sos{ m = 32, n = 32, bond = 1 }
  a:run{ time = 10 }
  a.bond = 0.5
  a.k2 = 2
  a:save(path)
  local c = carlo.load(path)
  a:run{ time = 10 }
  c:run{ time = 10 }
  check.ok("lua/kmc/checkpoint-controls", c.bond == 0.5 and c.k2 == 2
    and models.diff(models.full(a), models.full(c)) == 0 and a.step == c.step, "after a control change")
  local f = io.open(path, "wb")
  f:write("CARLOCK1 truncated")
  f:close()
  check.raises("lua/kmc/checkpoint-corrupt", function() carlo.load(path) end, "carlo.load")
end

-- ---------- walltime: stop early with a checkpoint, resume bit for bit ----------
do
  local function make() return sos{ m = 64, n = 64, bond = 1, seed = 12 } end
  local probe = make()
  local t0 = carlo.clock()
  probe:run{ events = 20000 }
  local rate = 20000 / math.max(carlo.clock() - t0, 1e-3)
  local E = math.floor(rate * 3) -- a run of about 3 s, stopped after about 0.5
  local path = check.tmp .. "/kmc-wall.ckpt"
  local a = make()
  local r = a:run{ events = E, walltime = 1.0, checkpoint = path, quiet = true }
  local b = carlo.load(path)
  local same = models.diff(models.full(a), models.full(b)) == 0 and a.step == b.step and a.t == b.t
  b:run{ events = E - b.events }
  local ref = make()
  ref:run{ events = E }
  local cb, cr = b:counters(), ref:counters()
  check.ok("lua/kmc/walltime-checkpoint-resume", not r.completed and r.events < E and same
    and models.diff(models.full(b), models.full(ref)) == 0 and b.t == ref.t and b.step == ref.step
    and cb.accepted == cr.accepted and cb.dt == cr.dt,
    ("completed %s after %d of %d events; resumed t %.17g vs %.17g"):format(tostring(r.completed),
      r.events, E, b.t, ref.t))
end

-- ---------- single steps: substep, and the launch shape ----------
do
  local s = sos{ m = 32, n = 32, bond = 1, seed = 14 }
  local ref = sos{ m = 32, n = 32, bond = 1, seed = 14, algorithm = "serial" }
  local accepted, rejected, events = 0, 0, 0
  for k = 1, 40 do
    local ok, ev = s:substep()
    if ok then accepted = accepted + 1; events = events + ev else rejected = rejected + 1 end
    if s.step ~= k then accepted = -1 end
  end
  ref:run{ time = s.t }
  check.ok("lua/kmc/substep", accepted > 20 and events == s.events
    and models.diff(models.full(s), models.full(ref)) == 0 and s:counters().accepted == accepted,
    ("%d accepted, %d rejected, %d events"):format(accepted, rejected, events))
  check.raises("lua/kmc/substep-needs-tiled", function() ref:substep() end, "kmc:substep", "tiled")
  check.raises("lua/kmc/substep-frozen", function() user{ rates = function() return {} end }:substep() end,
    "no event can happen")
  -- the launch shape: read back, set, never the chain
  local a, b = sos{ seed = 15 }, sos{ seed = 15 }
  local before = a:launch()
  local after = b:launch{ tiles_per_block = 5 }
  a:run{ events = 3000 }
  b:run{ events = 3000 }
  check.ok("lua/kmc/launch", before.tiles_per_block == 2 and after.tiles_per_block == 5
    and b:launch().tiles_per_block == 5 and models.diff(models.full(a), models.full(b)) == 0
    and a.step == b.step, "launch")
  check.raises("lua/kmc/launch-unknown-key", function() a:launch{ halo = 3 } end, "unknown key 'halo'")
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
  check.ok("lua/kmc/zero-rates-time", frozen.t == 5 and frozen.events == 0 and frozen.step == 0,
    ("t %g"):format(frozen.t))
  check.raises("lua/kmc/zero-rates-events", function() frozen:run{ events = 10 } end,
    "no event can happen: every rate is zero")
  -- frames due at model times are written, events or not
  local path = check.tmp .. "/kmc-frozen.ctr"
  local tr = carlo.trajectory(path, "w")
  frozen:run{ time = 2, every = 0.5, trajectory = tr }
  tr:close()
  tr = carlo.trajectory(path)
  check.ok("lua/kmc/zero-rates-frames", #tr == 4 and tr:frame(4)["log/t"][1] == 7 and frozen.t == 7,
    ("%d frames"):format(#tr))
  tr:close()
  -- 0 -> 1 only: after 64 events nothing is left to happen
  for _, alg in ipairs{ "tiled", "serial", "bkl" } do
    local once = user{ rates = function(x) if x == 0 then return { { 1, 1 } } end return {} end,
                       algorithm = alg }
    check.raises("lua/kmc/absorbing-state-" .. alg, function() once:run{ events = 100 } end,
      "no event can happen any more", "after 64 events")
    local t1 = once.t
    once:run{ time = 10 }
    check.ok("lua/kmc/absorbing-state-time-" .. alg, once.events == 64 and once:observe().counts[2] == 64
      and once.t == t1 + 10, ("%d events"):format(once.events))
  end
end

-- ---------- trajectories: a frame at every multiple of every in model time, from t = 0 ----------
do
  local path = check.tmp .. "/kmc-run.ctr"
  local sys = carlo.kmc{ model = "sos_growth", m = 16, n = 16, bond = 1, seed = 4, device = "cpu" }
  local tr = carlo.trajectory(path, "w")
  sys:run{ time = 2.0, every = 0.5, trajectory = tr }
  tr:close()
  local rd = carlo.trajectory(path, "r")
  local last = rd:frame(-1)
  local snap = sys:snapshot()
  local same = #rd == 5 and last["log/t"][1] == sys.t and last["configuration/step"][1] == sys.step
    and last["log/events"][1] == sys.events and rd:frame(2)["log/t"][1] == 0.5
  for i = 1, 16 * 16 do same = same and last["lattice/height"][i] == snap.state[i] end
  check.ok("lua/kmc/run-writes-trajectory", same, ("%d frames, t %s"):format(#rd, tostring(last["log/t"][1])))
  -- the first frame is the initial configuration at t = 0 (flat: every height 0, no event)
  local first = rd:frame(1)
  local flat = first["log/t"][1] == 0 and first["log/events"][1] == 0 and first["configuration/step"][1] == 0
  for i = 1, 16 * 16 do flat = flat and first["lattice/height"][i] == 0 end
  check.ok("lua/kmc/run-frame-at-t0", flat, ("first frame at t = %s"):format(tostring(first["log/t"][1])))
  rd:close()
  -- a run that goes on from t = 2 does not repeat the frame there
  tr = carlo.trajectory(path, "a")
  sys:run{ time = 1.0, every = 0.5, trajectory = tr }
  tr:close()
  rd = carlo.trajectory(path, "r")
  local ts = {}
  for k = 1, #rd do ts[k] = rd:frame(k)["log/t"][1] end
  check.ok("lua/kmc/run-frames-continue", #rd == 7 and ts[5] == 2 and ts[6] == 2.5 and ts[7] == 3,
    ("%d frames, t = %s"):format(#rd, table.concat(ts, ", ")))
  rd:close()
  -- algorithms and runs for events start with the same frame
  for _, alg in ipairs{ "serial", "bkl" } do
    local s2 = carlo.kmc{ model = "sos_growth", m = 16, n = 16, bond = 1, seed = 4, algorithm = alg }
    local p2 = check.tmp .. "/kmc-run-" .. alg .. ".ctr"
    local t2 = carlo.trajectory(p2, "w")
    s2:run{ events = 2000, every = 0.5, trajectory = t2 }
    t2:close()
    t2 = carlo.trajectory(p2, "r")
    local ok = #t2 >= 1 and t2:frame(1)["log/t"][1] == 0 and t2:frame(1)["log/events"][1] == 0
    for k = 2, #t2 do ok = ok and t2:frame(k)["log/t"][1] == 0.5 * (k - 1) end
    check.ok("lua/kmc/run-frame-at-t0-" .. alg, ok, ("%d frames"):format(#t2))
    t2:close()
  end
  check.raises("lua/kmc/run-every-without-trajectory", function() sys:run{ time = 1, every = 0.5 } end,
               "trajectory and every go together")
  -- absurd frame intervals are refused before anything runs
  local t_before = sys.t
  tr = carlo.trajectory(path, "w")
  check.raises("lua/kmc/run-every-absurd-time", function()
    sys:run{ time = 1, every = 1e-300, trajectory = tr }
  end, "every = 1e-300 would write", "at most 1e9")
  check.raises("lua/kmc/run-every-absurd-events", function()
    sys:run{ events = 1000, every = 1e-300, trajectory = tr }
  end, "every = 1e-300 would write at least", "at most 1e9")
  tr:close()
  check.eq("lua/kmc/run-every-absurd-nothing-ran", sys.t, t_before)
end

-- ---------- Ctrl-C stops a long single step, not only between steps ----------
-- bond = 0, k2 = 1: a step of 60000 (the range allows 65536) is 4e9 events on 256 x 256,
-- minutes of work; SIGINT after 1.5 s must end it at once (SIGKILL 20 s later, should it not)
local r = check.interrupt("kmc-int", [[
local s = carlo.kmc{ model = "sos_growth", m = 256, n = 256, bond = 0, seed = 1, quiet = true }
io.stderr:write("stepping\n")
s:try_step(60000)
io.stderr:write("finished\n")
]], 1.5)
if r then
  check.ok("lua/kmc/ctrl-c-inside-a-step", not r.ok and r.how == "exit" and r.code == 130 and r.took < 10
    and r.said:find("stepping", 1, true) and not r.said:find("finished", 1, true), r.why)
end

-- the default halo: 1 when no event depends on the neighbours, else 4
do
  local function halo(t) t.seed = 1; t.device = "cpu"; return carlo.kmc(t).halo end
  check.ok("lua/kmc/default-halo",
    halo{ model = "sos_growth", m = 16, n = 16, bond = 0 } == 1 and
    halo{ model = "sos_growth", m = 16, n = 16, bond = 1 } == 4 and
    halo{ states = 2, m = 16, n = 16, rates = function(x) return { { 1 + x, 1 - x } } end } == 1 and
    halo{ states = 2, m = 16, n = 16, rates = function(x, nb) return { { 1 + nb[1], 1 - x } } end } == 4 and
    halo{ model = "sos_growth", m = 16, n = 16, bond = 0, halo = 3 } == 3)
end
