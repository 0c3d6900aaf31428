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
