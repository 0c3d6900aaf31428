-- lua/protocols/*: schedules, carlo.anneal over any control with until and checkpoints (a
-- protocol killed with SIGKILL and resumed ends as one never stopped), carlo.hysteresis.
local carlo = require "carlo"
local check = require "check"
local tmp = check.tmp

-- schedules
do
  local r = carlo.ramp{ from = 1.0, to = 2.0, over = 100, every = 10 }
  check.ok("lua/protocols/ramp", #r == 10 and r[1] == 1.0 and r[10] == 2.0 and r.hold == 10,
    ("%d values, hold %s"):format(#r, tostring(r.hold)))
  local c = carlo.cycle{ from = 1, to = 3, n = 3 }
  check.ok("lua/protocols/cycle", #c == 6 and c[3] == 3 and c[4] == 3 and c[6] == 1 and c.turn == 3)
  local p = carlo.schedule{ { from = 2, to = 1, n = 3 }, { 1, 0.8 }, { from = 0.8, to = 0.5, step = 0.1 } }
  local want = { 2, 1.5, 1, 0.8, 0.7, 0.6, 0.5 }
  local same = #p == #want
  for i = 1, #want do same = same and math.abs(p[i] - want[i]) < 1e-12 end
  check.ok("lua/protocols/piecewise", same, table.concat(p, " "))
  local b = carlo.ladder{ from = 0.5, to = 2.0, n = 4, spacing = "beta" }
  check.ok("lua/protocols/beta-spacing", math.abs(1 / b[2] - 1 / b[1] - (1 / b[3] - 1 / b[2])) < 1e-12
    and b[4] == 2.0)
  check.raises("lua/protocols/ramp-every", function() carlo.ramp{ from = 1, to = 2, over = 10, every = 3 } end,
    "every must be an integer >= 1 dividing over")
  check.raises("lua/protocols/schedule-bad", function() carlo.schedule{ { 1, "x" } } end, "not a number")
end

-- until stops on an observable; a ramp logs observe() as it goes
do
  local sys = carlo.potts{ L = 16, q = 3, T = 0.5, seed = 3, init = "ordered", device = "cpu" }
  local res = carlo.anneal{ system = sys, schedule = carlo.ladder{ from = 0.6, to = 2.0, step = 0.2 },
                            equilibrate = 50, measure = 100, every = 5, quiet = true,
                            ["until"] = function(s) return s.m.mean < 0.5 end }
  check.ok("lua/protocols/until-stops", res.stopped_by_until and #res < 8 and res[#res].m.mean < 0.5
    and res[#res - 1].m.mean >= 0.5, ("%d points"):format(#res))
  local path = tmp .. "/ramp.tsv"
  local step0 = sys.step
  local rr = carlo.anneal{ system = sys, schedule = carlo.ramp{ from = 2.0, to = 0.5, over = 200, every = 2 },
                           every = 10, log = path, quiet = true }
  local rows = 0
  for line in io.lines(path) do if not line:find("^#") then rows = rows + 1 end end
  -- values 1, 11, ..., 91 and the last: 11 rows under the column row
  check.ok("lua/protocols/ramp-logs", #rr == 11 and rows == 12 and sys.step - step0 == 200,
    ("%d results, %d rows"):format(#rr, rows))
end

-- a protocol killed (SIGKILL) at random points and resumed each time ends as one never stopped:
-- the child arms its own kill -9 when it reaches point k, d seconds later (inside the next
-- point's run, its checkpoint, or its log row)
local carlo_cmd = os.getenv("CARLO")
if carlo_cmd then
  local script = tmp .. "/proto.lua"
  local f = assert(io.open(script, "w"))
  f:write([[
local dir, k, d = arg[1], tonumber(arg[2]), tonumber(arg[3])
local ladder = carlo.ladder{ from = 0.60, to = 0.80, n = 12 }
local sys = carlo.potts{ L = 48, q = 9, T = 0.5, seed = 9, init = "ordered", device = "cpu" }
local pid = io.open("/proc/self/stat"):read("n")
carlo.anneal{ system = sys, schedule = ladder, equilibrate = 200, measure = 400, every = 4,
              log = dir .. "/log.tsv", checkpoint = dir .. "/proto.ckpt", quiet = true,
              on_point = function(value)
                if k and value == ladder[k] then
                  os.execute(("(sleep %.3f; kill -9 %d) &"):format(d, pid))
                end
              end }
sys:save(dir .. "/final.ctr")
]])
  f:close()
  local function rows(path)
    local r = {}
    for line in io.lines(path) do if not line:find("^#") then r[#r + 1] = line end end
    return r
  end
  local ref, cut = tmp .. "/proto-ref", tmp .. "/proto-cut"
  os.execute(("rm -rf %s %s; mkdir -p %s %s"):format(ref, cut, ref, cut))
  check.ok("lua/protocols/restart-reference", os.execute(("%s --quiet %s %s"):format(carlo_cmd, script, ref)))
  math.randomseed(7)
  local kills, done = 0, false
  for _ = 1, 10 do
    local st = loadfile(cut .. "/proto.ckpt", "t", {})
    local at = st and st().point or 0
    -- point k at most 9: three points of work or more remain for the kill to land in
    local k = math.min(at + math.random(1, 2), 9)
    local killed = not os.execute(("%s --quiet %s %s %d %.3f 2>/dev/null")
      :format(carlo_cmd, script, cut, k, 0.02 * math.random()))
    kills = kills + (killed and 1 or 0)
  end
  done = os.execute(("%s --quiet %s %s"):format(carlo_cmd, script, cut))
  local a, b = rows(ref .. "/log.tsv"), done and rows(cut .. "/log.tsv") or {}
  local same = done and #a == #b and #a == 13
  for i = 1, #a do same = same and a[i] == b[i] end
  check.ok("lua/protocols/restart-same-log", same and kills >= 5,
    ("%d kills, finished %s, %d vs %d rows"):format(kills, tostring(done), #a, #b))
  if done then
    local x, y = carlo.load(ref .. "/final.ctr"), carlo.load(cut .. "/final.ctr")
    check.ok("lua/protocols/restart-same-state", x.step == y.step and x:snapshot().state == y:snapshot().state
      and x.T == y.T)
  else
    check.fail("lua/protocols/restart-same-state", "the killed protocol never finished")
  end
else
  check.skip("lua/protocols/restart", "no carlo command")
end

-- hysteresis: a small Ising lattice cycled slowly through Tc has no loop (area within errors)
do
  local sys = carlo.potts{ L = 8, q = 2, T = 0.8, seed = 4, init = "ordered", device = "cpu",
                           algorithm = "heatbath" }
  local h = carlo.hysteresis{ system = sys, control = "T", schedule = carlo.ladder{ from = 0.8, to = 1.6, n = 5 },
                              observable = "e", equilibrate = 500, measure = 4000, every = 2, quiet = true }
  check.ok("lua/protocols/hysteresis-branches", #h.out.mean == 5 and #h.back.mean == 5 and
    h.out.values[5] == 1.6 and h.back.values[1] == 0.8 and h.jump.out and h.jump.back)
  check.ok("lua/protocols/hysteresis-no-loop-in-equilibrium", h.area_err > 0 and
    math.abs(h.area) < 4 * h.area_err, ("area %.4g +- %.3g"):format(h.area, h.area_err))
  local q9 = carlo.potts{ L = 32, q = 9, T = 0.66, seed = 4, init = "ordered", device = "cpu" }
  local fast = carlo.hysteresis{ system = q9, control = "T", schedule = carlo.ladder{ from = 0.66, to = 0.78, n = 7 },
                                 equilibrate = 20, measure = 40, every = 2, quiet = true }
  check.ok("lua/protocols/hysteresis-loop-when-fast", fast.area < -5 * fast.area_err,
    ("area %.4g +- %.3g"):format(fast.area, fast.area_err))
end

-- observe = { ... }: the model's own sample options reach every point (hard disks' psi6 added,
-- the pressures left out), in the ladder's samples and in a ramp's observes
do
  local d = carlo.hard_disks{ N = 256, phi = 0.6, init = "hex", seed = 5, pressure = 6, device = "cpu",
                              quiet = true }
  local r = carlo.anneal{ system = d, control = "pressure", schedule = { 6, 6.5 }, measure = 20, every = 10,
                          observe = { psi6 = true, pressure = false }, quiet = true }
  check.ok("lua/protocols/observe-options", r[2].psi6 ~= nil and r[2].psi6.mean > 0 and r[2].P_sdf == nil,
    "psi6 missing or the pressures still measured")
  local plain = carlo.anneal{ system = d, control = "pressure", schedule = { 6.5 }, measure = 20, every = 10,
                              quiet = true }
  check.ok("lua/protocols/observe-default", plain[1].psi6 == nil and plain[1].P_sdf ~= nil)
  local ramp = carlo.anneal{ system = d, control = "pressure", schedule = carlo.ramp{ from = 6.5, to = 6, over = 4 },
                             observe = { psi6 = true }, quiet = true }
  check.ok("lua/protocols/observe-ramp", ramp[#ramp].psi6 ~= nil and type(ramp[#ramp].psi6) == "number")
  check.raises("lua/protocols/observe-refused", function()
    carlo.anneal{ system = d, control = "pressure", schedule = { 6 }, measure = 20, every = 10, observe = { every = 2 } }
  end, "observe must not set every")
  check.raises("lua/protocols/observe-type", function()
    carlo.anneal{ system = d, control = "pressure", schedule = { 6 }, measure = 20, every = 10, observe = 1 }
  end, "observe must be a table")
  d:close()
end

-- hysteresis with a checkpoint, killed (SIGKILL) at random moments and run again until done,
-- ends with the result (both branches, area, jumps, every sample) and the final state of a run
-- never stopped, bit for bit: a watcher the child starts kills it d seconds after the state
-- file names point k or later (inside a point's run, its record, its checkpoint, or the
-- restore), and the points run before a kill come back from the anneal's record
if carlo_cmd then
  local script = tmp .. "/hys.lua"
  local f = assert(io.open(script, "w"))
  f:write([[
local dir, k, d = arg[1], tonumber(arg[2]), tonumber(arg[3])
if k then
  local pid = io.open("/proc/self/stat"):read("n")
  os.execute(([=[(while kill -0 %d 2>/dev/null; do
    p=$(sed -n 's/^return { point = \([0-9]*\),.*/\1/p' %s/h.ckpt 2>/dev/null)
    if [ "${p:-0}" -ge %d ]; then sleep %.3f; kill -9 %d; break; fi
    sleep 0.01; done) >/dev/null 2>&1 &]=]):format(pid, dir, k, d, pid))
end
local sys = carlo.potts{ L = 48, q = 9, T = 0.68, seed = 5, init = "ordered", device = "cpu" }
local h = carlo.hysteresis{ system = sys, control = "T", schedule = carlo.ladder{ from = 0.68, to = 0.76, n = 5 },
                            observable = "e", equilibrate = 200, measure = 800, every = 4,
                            log = dir .. "/h.tsv", checkpoint = dir .. "/h.ckpt", quiet = true }
local out = assert(io.open(dir .. "/result.txt", "w"))
local function put(...) out:write(table.concat({ ... }, " "), "\n") end
local function x(v) return ("%a"):format(v) end
for i = 1, 5 do
  put("point", i, x(h.out.values[i]), x(h.out.mean[i]), x(h.out.err[i]), x(h.back.values[i]),
      x(h.back.mean[i]), x(h.back.err[i]))
end
put("area", x(h.area), x(h.area_err))
for _, b in ipairs{ "out", "back" } do
  local j = h.jump[b]
  put("jump", b, x(j.at), x(j.from), x(j.to), x(j.size), x(j.err))
end
for i, s in ipairs(h.samples) do
  put("sample", i, x(s.T), s.step, s.samples, x(s.e.mean), x(s.e.err), x(s.e.tau), x(s.m.mean),
      x(s.m.err), x(s.C.mean), x(s.chi.err))
end
out:close()
sys:save(dir .. "/final.ctr")
]])
  f:close()
  local ref, cut = tmp .. "/hys-ref", tmp .. "/hys-cut"
  os.execute(("rm -rf %s %s; mkdir -p %s %s"):format(ref, cut, ref, cut))
  check.ok("lua/protocols/hysteresis-restart-reference",
    os.execute(("%s --quiet %s %s"):format(carlo_cmd, script, ref)))
  math.randomseed(11)
  local kills = 0
  for _ = 1, 8 do
    local st = loadfile(cut .. "/h.ckpt", "t", {})
    local at = st and st().point or 0
    -- point k at most 7 of the cycle's 10: the kill lands before the cycle ends
    local k = math.min(at + math.random(1, 2), 7)
    local killed = not os.execute(("%s --quiet %s %s %d %.3f 2>/dev/null")
      :format(carlo_cmd, script, cut, k, 0.05 * math.random()))
    kills = kills + (killed and 1 or 0)
  end
  local done = os.execute(("%s --quiet %s %s 2>/dev/null"):format(carlo_cmd, script, cut))
  local a, b = check.slurp(ref .. "/result.txt"), done and check.slurp(cut .. "/result.txt")
  check.ok("lua/protocols/hysteresis-restart-same-result", a and a == b and kills >= 4,
    ("%d kills, finished %s, results %s"):format(kills, tostring(done),
      a and b and (a == b and "equal" or "differ") or "missing"))
  local la, lb = check.slurp(ref .. "/h.tsv"), done and check.slurp(cut .. "/h.tsv")
  local function rows(s)
    local r = {}
    for line in (s or ""):gmatch("[^\n]+") do if not line:find("^#") then r[#r + 1] = line end end
    return table.concat(r, "\n")
  end
  check.ok("lua/protocols/hysteresis-restart-same-log", done and rows(la) == rows(lb) and #rows(la) > 0)
  if done then
    local x, y = carlo.load(ref .. "/final.ctr"), carlo.load(cut .. "/final.ctr")
    check.ok("lua/protocols/hysteresis-restart-same-state", x.step == y.step
      and x:snapshot().state == y:snapshot().state and x.T == y.T)
    -- run once more on the finished checkpoint: nothing left to run, the same result
    os.remove(cut .. "/result.txt")
    local again = os.execute(("%s --quiet %s %s 2>/dev/null"):format(carlo_cmd, script, cut))
    check.ok("lua/protocols/hysteresis-restart-finished", again and check.slurp(cut .. "/result.txt") == a)
  else
    check.fail("lua/protocols/hysteresis-restart-same-state", "the killed hysteresis never finished")
  end
else
  check.skip("lua/protocols/hysteresis-restart", "no carlo command")
end

-- the record of a checkpointed anneal: run again on its finished checkpoint, it runs no point
-- and gives back every sample of the first run as earlier, each number bit for bit; a ramp's
-- observes too; a fresh protocol under the same checkpoint path starts a new record
do
  local ckpt = tmp .. "/earlier.ckpt"
  for _, s in ipairs{ "", ".0", ".1", ".points" } do os.remove(ckpt .. s) end
  local function run(schedule, extra)
    local sys = carlo.potts{ L = 8, q = 3, T = 0.9, seed = 2, device = "cpu" }
    local args = { system = sys, schedule = schedule, checkpoint = ckpt, quiet = true }
    for k, v in pairs(extra) do args[k] = v end
    return carlo.anneal(args), sys
  end
  local function same(a, b)
    if type(a) ~= type(b) then return false end
    if type(a) ~= "table" then return a == b or (a ~= a and b ~= b) end
    for k, v in pairs(a) do if k ~= "series" and not same(v, b[k]) then return false end end
    for k in pairs(b) do if a[k] == nil then return false end end
    return true
  end
  local ladder = carlo.ladder{ from = 0.9, to = 1.1, n = 3 }
  local first = run(ladder, { measure = 20, every = 2, equilibrate = 4 })
  local again, sys = run(ladder, { measure = 20, every = 2, equilibrate = 4 })
  local ok = #again == 0 and again.resumed_at == 3 and again.earlier and #again.earlier == 3
  for i = 1, 3 do ok = ok and same(first[i], again.earlier[i]) end
  check.ok("lua/protocols/anneal-earlier", ok and math.type(again.earlier[1].step) == "integer"
    and sys.step == 3 * 24, ("%d run, %d earlier"):format(#again, again.earlier and #again.earlier or -1))
  for _, s in ipairs{ "", ".0", ".1" } do os.remove(ckpt .. s) end -- the record alone is stale
  local ramp = carlo.ramp{ from = 1.1, to = 0.9, over = 12, every = 3 }
  local r1 = run(ramp, { every = 2 })
  local r2 = run(ramp, { every = 2 })
  ok = #r1 == 3 and #r2 == 0 and r2.earlier and #r2.earlier == 3
  for i = 1, 3 do ok = ok and same(r1[i], r2.earlier[i]) end
  check.ok("lua/protocols/anneal-earlier-ramp", ok,
    ("%d observes, %d earlier"):format(#r1, r2.earlier and #r2.earlier or -1))
end
