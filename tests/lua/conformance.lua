-- conformance.lua — one generic script run on every model: the system layer's verbs must mean
-- the same thing everywhere (man/carlo-lua.7, "THE SYSTEM VERBS"). A model that fails one verb
-- fails the suite. tests/gpu/conformance.lua runs the same script on the GPU.
local carlo = require "carlo"
local check = require "check"
local M = require "conformance_models"

local device = rawget(_G, "CONFORMANCE_DEVICE") or os.getenv("CARLO_CONFORMANCE_DEVICE") or "cpu"
local tier = device == "gpu" and "gpu" or "lua"
local tmp = check.tmp
local with, amount = M.with, M.amount

local function make(m, seed, init, extra)
  return M.make(m, { seed = seed, init = init, device = device, extra = extra })
end

local state_of, same_state = M.state_of, M.same_state

local function is_estimate(e)
  return type(e) == "table" and type(e.mean) == "number" and type(e.err) == "number" and
      type(e.tau) == "number" and type(e.plateau) == "boolean"
end

local function snapshot_ok(m, sys)
  local s = sys:snapshot()
  if type(s) ~= "table" or s.step ~= sys.step then return false, "no table or wrong step" end
  if m.kind == "particles" then
    local p = s.position
    if not p or p.type ~= "f64" or #p.shape ~= 2 or p.shape[1] ~= sys.N or p.shape[2] ~= m.dim then
      return false, "position must be N x d f64"
    end
    if s.N ~= sys.N then return false, "N" end
    if type(s.box) ~= "table" or #s.box ~= 6 then return false, "box must be the six GSD numbers" end
    for k = 1, 6 do if type(s.box[k]) ~= "number" then return false, "box entries" end end
  else
    local st = s.state
    if not st or type(s.shape) ~= "table" or #s.shape ~= 2 then return false, "state and shape" end
    if st.shape[1] ~= s.shape[1] or st.shape[2] ~= s.shape[2] then return false, "state shape" end
    if m.continuous and (type(s.t) ~= "number" or math.type(s.events) ~= "integer") then
      return false, "t and events"
    end
  end
  return true
end

for _, m in ipairs(M.list) do
  local name = ("%s/conformance/%s/"):format(tier, m.name)
  local ok, err = pcall(function()
    local sys = make(m, 11, m.init)
    check.ok(name .. "construct-init", sys.step == 0 and sys.model and sys.device == device,
      tostring(sys))
    check.ok(name .. "tostring", tostring(sys):find("^carlo%.") ~= nil, tostring(sys))

    -- run{ n } and run{ upto }
    local r = sys:run(amount(m, m.n))
    check.ok(name .. "run", type(r) == "table" and r.completed == true and r.step == sys.step and
      sys.step > 0, ("step %s"):format(sys.step))
    if m.continuous then
      local t0 = sys.t
      r = sys:run{ upto = t0 + 0.5 }
      check.ok(name .. "run-upto", r.completed and math.abs(sys.t - (t0 + 0.5)) < 1e-9,
        ("t %s"):format(sys.t))
    else
      local target = sys.step + m.n
      sys:run{ upto = target }
      sys:run{ upto = target - 1 } -- already past: nothing to do
      check.eq(name .. "run-upto", sys.step, target)
    end

    -- observe: a table of numbers (a list of them for an ensemble)
    local o = sys:observe()
    local first = (m.replicas and o[1]) or o
    local nums = 0
    for _, v in pairs(first) do if type(v) == "number" then nums = nums + 1 end end
    check.ok(name .. "observe", nums >= 2 and (not m.replicas or #o == m.replicas),
      ("%d numbers"):format(nums))

    -- sample: every declared observable with mean, err, tau, plateau
    local sa = sys:sample(with(m.continuous and { events = 4 * m.n, every = m.n } or
                               { sweeps = 4 * m.n, every = m.n }, { quiet = true }))
    local list = m.replicas and sa or { sa }
    local complete, missing = #list == (m.replicas or 1), nil
    for _, one in ipairs(list) do
      for _, key in ipairs(sys.observables) do
        if not is_estimate(one[key]) then complete, missing = false, key end
      end
      if one.samples ~= 4 then complete, missing = false, "samples" end
    end
    check.ok(name .. "sample", complete and #sys.observables >= 1, "missing " .. tostring(missing))

    -- snapshot shape
    local sok, why = snapshot_ok(m, sys)
    check.ok(name .. "snapshot", sok, why)

    -- save / carlo.load: bit-identical continuation
    local path = ("%s/conf-%s.ctr"):format(tmp, m.name)
    sys:save(path)
    local back = carlo.load(path, { device = device })
    check.ok(name .. "load", same_state(m, sys, back))
    sys:run(amount(m, m.n))
    back:run(amount(m, m.n))
    check.ok(name .. "save-load-bitwise", same_state(m, sys, back))
    back:close()

    -- init from a snapshot: the same configuration
    local snap_init = make(m, 12, sys:snapshot())
    local x, y = state_of(sys)[1], state_of(snap_init)[1]
    check.ok(name .. "init-snapshot", x == y)
    snap_init:close()

    -- trajectory frames every k units
    local tpath = ("%s/conf-%s-traj.ctr"):format(tmp, m.name)
    local tr = carlo.trajectory(tpath, "w")
    if m.continuous then
      local t0 = sys.t
      sys:run{ time = 2, every = 0.5, trajectory = tr }
      tr:close()
      tr = carlo.trajectory(tpath)
      check.ok(name .. "trajectory-every", #tr == 4 and math.abs(sys.t - t0 - 2) < 1e-9,
        ("%d frames"):format(#tr))
    else
      local every = 2
      local before = sys.step
      sys:run{ sweeps = 4 * every, every = every, trajectory = tr }
      tr:close()
      tr = carlo.trajectory(tpath)
      local f = tr:frame(#tr)
      -- frames at the multiples of every: four in any run of 4 * every units
      local last = (before + 4 * every) // every * every
      check.ok(name .. "trajectory-every", #tr == 4 and f["configuration/step"][1] == last,
        ("%d frames"):format(#tr))
    end
    tr:close()

    -- walltime + checkpoint: stops early, writes the checkpoint, resumes where it stopped
    local cpath = ("%s/conf-%s-wall.ctr"):format(tmp, m.name)
    local big = m.continuous and { events = 1 << 50 } or { sweeps = 1 << 40 }
    r = sys:run(with(big, { walltime = 0.3, checkpoint = cpath, quiet = true }))
    local resumed = carlo.load(cpath, { device = device })
    check.ok(name .. "walltime-checkpoint", r.completed == false and same_state(m, sys, resumed),
      ("completed %s"):format(tostring(r.completed)))
    resumed:close()

    -- unknown keys are named
    check.raises(name .. "unknown-run-key", function() sys:run(with(amount(m, 1), { bogus_key = 1 })) end,
      "bogus_key")
    check.raises(name .. "unknown-sample-key", function()
      sys:sample(with(amount(m, 2), { every = 1, bogus_key = 1 }))
    end, "bogus_key")
    check.raises(name .. "unknown-field", function() sys.bogus_field = 1 end, "bogus_field")
    check.raises(name .. "unknown-constructor-key", function() make(m, 1, m.init, { bogus_key = 1 }) end,
      "bogus_key")

    -- close: further use is an error, closing twice is fine
    sys:close()
    sys:close()
    check.raises(name .. "closed", function() sys:run(amount(m, 1)) end, "closed")
  end)
  if not ok then check.fail(name .. "script", err) end
end

-- Ctrl-C: a run in a child process stops at the next chunk, exits 130, and every frame
-- written before the interrupt is in the trajectory, closed properly (its index written).
-- timeout --foreground sends one SIGINT, as a terminal does; without it timeout signals the
-- child and its process group, and a second SIGINT kills at once, by design.
local carlo_cmd = os.getenv("CARLO")
if device == "cpu" and carlo_cmd and os.execute("command -v timeout >/dev/null 2>&1") then
  for i, m in ipairs(M.list) do
    local name = ("%s/conformance/%s/ctrl-c"):format(tier, m.name)
    local script = ("%s/conf-%s-int.lua"):format(tmp, m.name)
    local tpath = ("%s/conf-%s-int.ctr"):format(tmp, m.name)
    local f = assert(io.open(script, "w"))
    f:write(([[
local M = require "conformance_models"
local m = M.list[%d]
local sys = M.make(m, { seed = 3, init = m.init, device = "cpu" })
local tr = carlo.trajectory(%q, "w")
sys:run(M.with(m.continuous and { time = 1e7, every = 0.05 } or { sweeps = 1 << 40, every = 10 },
               { trajectory = tr, quiet = true }))
]]):format(i, tpath))
    f:close()
    local ok, how, code = os.execute(("timeout --foreground --preserve-status -s INT 1.5 %s --quiet %s >/dev/null 2>&1"):format(carlo_cmd, script))
    local frames, intact = 0, false
    local opened, tr = pcall(carlo.trajectory, tpath)
    if opened then
      frames = #tr
      intact = frames > 0 and tr:frame(frames)["configuration/step"] ~= nil and not tr.recovered
      tr:close()
    end
    check.ok(name, not ok and how == "exit" and code == 130 and intact,
      ("exit %s %s, %d frames"):format(tostring(how), tostring(code), frames))
  end
end
