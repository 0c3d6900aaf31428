-- carlo.anneal: a protocol along a schedule of one control parameter of any model (Ferrero et
-- al. 2012, Sec. 3, for the Potts temperature): the system carries its state from one point of
-- the schedule to the next; at each point it equilibrates, then samples, and one row with every
-- observable the model declares and its error bar goes to the log.
--   carlo.anneal{ system = sys, schedule = carlo.ladder{...}, control = "T", equilibrate = 20000,
--                 measure = 50000, every = 50, log = "heating.tsv" | carlo.log(...),
--                 until = function(sample, sys) return sample.m.mean < 0.5 end,
--                 on_point = function(value, sample, sys) end, checkpoint = "heat.ckpt",
--                 quiet = false }
-- control is any name of sys.controls (T, beta, pressure, bond, ...); equilibrate, measure and
-- every count the model's unit (sys.unit: sweeps, or events for KMC). A ramp
-- (carlo.ramp{...}, whose hold is the units at each value) runs hold units per value with no
-- equilibration and logs sys:observe() every `every` values instead of sampling.
-- With checkpoint = path the protocol can be killed at any point: the same script run again
-- continues after the last completed point and ends with the same log rows and the same state,
-- bit for bit, as a run that was never stopped (the log must then be given as a path).
-- Returns the list of samples of the points this call ran, each with the control's value
-- under its name, and how it ended (completed, stopped by until, resumed_at). After a restart,
-- earlier holds the samples of the points completed before it, read back from the record
-- <checkpoint>.points (every number, string and boolean of a sample, exactly; no series).
local carlo = require "carlo"

local allowed = { system = true, schedule = true, ladder = true, control = true, equilibrate = true,
                  measure = true, every = true, log = true, on_point = true, on_temperature = true,
                  ["until"] = true, checkpoint = true, quiet = true, observe = true }
local allowed_list = "system, schedule (or ladder), control, equilibrate, measure, every, log, until, "
  .. "on_point, checkpoint, quiet, observe"

local function count(t, key, default, min)
  local v = t[key]
  if v == nil then return default end
  if math.type(v) ~= "integer" or v < min then
    error(("carlo.anneal: %s must be an integer >= %d (got %s)"):format(key, min, tostring(v)), 3)
  end
  return v
end

local function has(list, name)
  for _, v in ipairs(list) do if v == name then return true end end
  return false
end

-- ---------- restartable protocols ----------

local function file_exists(path)
  local f = io.open(path, "rb")
  if f then f:close() return true end
  return false
end

local function file_size(path)
  local f = io.open(path, "rb")
  if not f then return 0 end
  local n = f:seek("end")
  f:close()
  return n
end

-- Write text to path atomically (a temporary file renamed over it).
local function write_atomic(path, text)
  local tmp = path .. ".tmp"
  local f = assert(io.open(tmp, "wb"))
  local ok, err = f:write(text)
  if ok then ok, err = f:flush() end
  f:close()
  if not ok then error(("carlo.anneal: writing %s failed: %s"):format(tmp, tostring(err)), 0) end
  assert(os.rename(tmp, path))
end

-- Keep the first n bytes of path.
local function truncate(path, n)
  local f = assert(io.open(path, "rb"))
  local keep = f:read(n) or ""
  f:close()
  write_atomic(path, keep)
end

-- The protocol's state file: which point was completed last, where its checkpoint is and how
-- long the log was then. Written after the checkpoint, so it never names a newer state than
-- the checkpoint holds; checkpoints alternate between two files.
local function read_state(path)
  local chunk = loadfile(path, "t", {})
  if not chunk then return nil end
  local ok, st = pcall(chunk)
  if ok and type(st) == "table" and math.type(st.point) == "integer" then return st end
  return nil
end

local function save_point(ckpt, sys, point, log_path, value, stopped)
  local file = ("%s.%d"):format(ckpt, point % 2)
  sys:save(file)
  write_atomic(ckpt, ("return { point = %d, checkpoint = %q, log_bytes = %d, value = %.17g, "
    .. "stopped = %s, points_bytes = %d }\n"):format(point, file, log_path and file_size(log_path) or 0,
                                 value, tostring(stopped), file_size(ckpt .. ".points")))
end

-- The record of the completed points' samples, <checkpoint>.points: one Lua table a line,
-- appended before the state file names the point, cut back to the state file's points_bytes
-- on a restart. Numbers are written so that they read back bit for bit; userdata (a sample's
-- series) and a table met again inside itself are left out.
local function literal(v, seen)
  local ty = math.type(v)
  if ty == "integer" then
    return v == math.mininteger and "(-9223372036854775807-1)" or ("%d"):format(v)
  elseif ty == "float" then
    if v ~= v then return "(0/0)" end
    if v == math.huge then return "(1/0)" end
    if v == -math.huge then return "(-1/0)" end
    local s = ("%.17g"):format(v)
    return s:find("[.e]") and s or s .. ".0" -- keep a float a float
  elseif type(v) == "string" then
    return ("%q"):format(v)
  elseif type(v) == "boolean" then
    return tostring(v)
  elseif type(v) == "table" then
    seen = seen or {}
    if seen[v] then return nil end
    seen[v] = true
    local parts = {}
    local keys = {}
    for k in pairs(v) do
      if (type(k) == "string" or math.type(k) == "integer") and k ~= "series" then keys[#keys + 1] = k end
    end
    table.sort(keys, function(a, b)
      if type(a) == type(b) then return a < b end
      return type(a) == "number"
    end)
    for _, k in ipairs(keys) do
      local x = literal(v[k], seen)
      if x then parts[#parts + 1] = ("[%s]=%s"):format(literal(k), x) end
    end
    seen[v] = nil
    return "{" .. table.concat(parts, ",") .. "}"
  end
  return nil
end

local function record_point(ckpt, s)
  local f = assert(io.open(ckpt .. ".points", "ab"))
  local ok, err = f:write(literal(s), ",\n")
  if ok then ok, err = f:flush() end
  f:close()
  if not ok then error(("carlo.anneal: writing %s.points failed: %s"):format(ckpt, tostring(err)), 0) end
end

local function read_points(ckpt)
  local f = io.open(ckpt .. ".points", "rb")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  local chunk = load("return {" .. text .. "}", "=" .. ckpt .. ".points", "t", {})
  local ok, list = false, nil
  if chunk then ok, list = pcall(chunk) end
  if not ok or type(list) ~= "table" then
    error(("carlo.anneal: %s.points is not a protocol's record of points"):format(ckpt), 0)
  end
  return list
end

-- ---------- the protocol ----------

local function log_row(log, control, value, sys, s)
  local row = { [control] = value, step = sys.step }
  for name, e in pairs(s) do
    if type(e) == "table" and e.mean ~= nil then
      row[name] = e
      row["tau_" .. name] = e.tau
    elseif type(e) == "number" and name ~= control and name ~= "step" then
      row[name] = e
    end
  end
  log:row(row)
end

function carlo.anneal(t)
  if type(t) ~= "table" then error("carlo.anneal: expects a table", 2) end
  for k in pairs(t) do
    if not allowed[k] then
      error(("carlo.anneal: unknown key '%s' (allowed: %s)"):format(tostring(k), allowed_list), 2)
    end
  end
  local sys = t.system
  local ok_sys, controls = pcall(function() return sys.controls end)
  if not ok_sys or type(controls) ~= "table" then
    error("carlo.anneal: system is required (a carlo system)", 2)
  end
  local control = t.control or "T"
  if not has(controls, control) then
    error(("carlo.anneal: control '%s' is not one of this %s system's controls (%s)")
      :format(tostring(control), sys.model, table.concat(controls, ", ")), 2)
  end
  if t.schedule ~= nil and t.ladder ~= nil then error("carlo.anneal: give schedule, not also ladder", 2) end
  local schedule = t.schedule or t.ladder
  if type(schedule) ~= "table" or #schedule < 1 then
    error("carlo.anneal: schedule is required (carlo.ladder{...}, carlo.ramp{...} or a list of values)", 2)
  end
  local ramp = schedule.hold ~= nil and t.measure == nil
  local equilibrate = count(t, "equilibrate", 0, 0)
  local every = count(t, "every", 1, 1)
  local measure = count(t, "measure", nil, 2 * every)
  if not ramp then
    if measure == nil then error("carlo.anneal: measure is required (units sampled per point)", 2) end
    if measure % every ~= 0 then error("carlo.anneal: measure must be a multiple of every", 2) end
  elseif equilibrate > 0 then
    error("carlo.anneal: a ramp runs its hold at each value; equilibrate goes with a ladder", 2)
  end
  if t.on_temperature ~= nil then
    io.stderr:write("carlo: carlo.anneal: 'on_temperature' is now 'on_point'; the old name goes "
                    .. "in the next release\n")
  end
  local on_point = t.on_point or t.on_temperature
  local stop_when = t["until"]
  if stop_when ~= nil and type(stop_when) ~= "function" then
    error("carlo.anneal: until must be a function(sample, system)", 2)
  end
  local ckpt = t.checkpoint
  if ckpt ~= nil and type(ckpt) ~= "string" then error("carlo.anneal: checkpoint must be a path", 2) end
  local log, log_path = t.log, nil
  if ckpt and log ~= nil and type(log) ~= "string" then
    error("carlo.anneal: with checkpoint, give log as a path (so a restart can resume it)", 2)
  end
  local quiet = t.quiet
  local unit = sys.unit
  -- the model's own sample and observe options (hard particles: pressure = false, psi6 = true)
  local observe = t.observe
  if observe ~= nil and type(observe) ~= "table" then
    error(("carlo.anneal: observe must be a table of the model's sample options (got %s)")
      :format(type(observe)), 2)
  end
  local function with_observe(args)
    for k, v in pairs(observe or {}) do
      if args[k] ~= nil then
        error(("carlo.anneal: observe must not set %s (the protocol sets it)"):format(tostring(k)), 3)
      end
      args[k] = v
    end
    return args
  end

  -- resume after the last completed point
  local first = 1
  local resumed_at, earlier
  if ckpt and file_exists(ckpt) then
    local st = read_state(ckpt)
    if not st then error(("carlo.anneal: %s is not a protocol state file"):format(ckpt), 2) end
    sys:restore(st.checkpoint)
    first = st.point + 1
    resumed_at = st.point
    if st.stopped then first = #schedule + 1 end -- until had stopped it: nothing is left
    if type(log) == "string" and file_exists(log) then truncate(log, st.log_bytes) end
    -- the samples of the completed points (a state file of an older version keeps none)
    if math.type(st.points_bytes) == "integer" then
      if file_exists(ckpt .. ".points") then truncate(ckpt .. ".points", st.points_bytes) end
      earlier = read_points(ckpt)
    end
    if not quiet then
      io.stderr:write(("carlo: anneal resumes after point %d of %d (%s = %.6g, step %d)\n")
        :format(st.point, #schedule, control, st.value, sys.step))
    end
  elseif ckpt then
    write_atomic(ckpt .. ".points", "") -- a fresh protocol: no record of an earlier one
  end
  local own_log = false
  if type(log) == "string" then
    log_path = log
    log = carlo.log(log, { append = resumed_at ~= nil and file_exists(log), system = sys })
    own_log = true
  end

  local results = {}
  local stopped = false
  local t0 = carlo.clock()
  for i = first, #schedule do
    local value = schedule[i]
    sys[control] = value
    local s
    if ramp then
      sys:run{ [unit] = schedule.hold, quiet = true }
      if (i - 1) % every == 0 or i == #schedule then
        s = sys:observe(with_observe({}))
        if log then
          local row = { [control] = value }
          for k, v in pairs(s) do if type(v) == "number" then row[k] = v end end
          log:row(row)
        end
      end
    else
      if equilibrate > 0 then sys:run{ [unit] = equilibrate, quiet = quiet } end
      s = sys:sample(with_observe({ [unit] = measure, every = every, quiet = quiet }))
      s.step = sys.step
      if type(s.series) == "table" then s.series.size = sys.N end -- for carlo.mbar
      if log then log_row(log, control, value, sys, s) end
    end
    if s then
      s[control] = value
      results[#results + 1] = s
    end
    if on_point and s then on_point(value, s, sys) end
    stopped = stop_when ~= nil and s ~= nil and stop_when(s, sys) and true or false
    if ckpt then
      if s then record_point(ckpt, s) end
      save_point(ckpt, sys, i, log_path, value, stopped)
    end
    if stopped then break end
    if not quiet and carlo.interactive() and #schedule > 1 then
      local el = carlo.clock() - t0
      local done = i - first + 1
      io.stderr:write(("\ranneal: %s = %.6g (%d/%d), %.0f s elapsed, ETA %.0f s \27[K%s")
        :format(control, value, i, #schedule, el, el / done * (#schedule - i),
                i == #schedule and "\n" or ""))
    end
  end
  if own_log then log:close() end
  local was_stopped = stopped or (resumed_at ~= nil and first > #schedule and resumed_at < #schedule)
  results.completed = not was_stopped
  results.stopped_by_until = was_stopped
  results.resumed_at = resumed_at
  results.earlier = earlier
  return results
end
