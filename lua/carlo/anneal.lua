-- carlo.anneal: a protocol along a ladder of one control parameter of any model (Ferrero et
-- al. 2012, Sec. 3, for the Potts temperature): the system carries its state from one point of
-- the ladder to the next; at each point it equilibrates, then samples, and one row with every
-- observable the model declares and its error bar goes to the log.
--   carlo.anneal{ system = sys, ladder = carlo.ladder{...}, control = "T", equilibrate = 20000,
--                 measure = 50000, every = 50, log = "heating.tsv" | carlo.log(...),
--                 on_point = function(value, sample, sys) end, quiet = false }
-- control is any name of sys.controls (T, beta, pressure, bond, ...); equilibrate, measure and
-- every count the model's unit (sys.unit: sweeps, or events for KMC). Returns the list of
-- samples, one per point, each with the control's value under its name.
local carlo = require "carlo"

local allowed = { system = true, ladder = true, control = true, equilibrate = true, measure = true,
                  every = true, log = true, on_point = true, on_temperature = true, quiet = true }
local allowed_list = "system, ladder, control, equilibrate, measure, every, log, on_point, quiet"

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
  local ladder = t.ladder
  if type(ladder) ~= "table" or #ladder < 1 then
    error("carlo.anneal: ladder is required (carlo.ladder{...} or a list of values)", 2)
  end
  local equilibrate = count(t, "equilibrate", 0, 0)
  local every = count(t, "every", 1, 1)
  local measure = count(t, "measure", nil, 2 * every)
  if measure == nil then error("carlo.anneal: measure is required (units sampled per point)", 2) end
  if measure % every ~= 0 then error("carlo.anneal: measure must be a multiple of every", 2) end
  if t.on_temperature ~= nil then
    io.stderr:write("carlo: carlo.anneal: 'on_temperature' is now 'on_point'; the old name goes "
                    .. "in the next release\n")
  end
  local on_point = t.on_point or t.on_temperature
  local log = t.log
  local own_log = false
  if type(log) == "string" then log = carlo.log(log); own_log = true end
  local quiet = t.quiet
  local unit = sys.unit
  local results = {}
  local t0 = carlo.clock()
  for i, value in ipairs(ladder) do
    sys[control] = value
    if equilibrate > 0 then sys:run{ [unit] = equilibrate, quiet = quiet } end
    local s = sys:sample{ [unit] = measure, every = every, quiet = quiet }
    s[control] = value
    s.step = sys.step
    results[i] = s
    if log then
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
    if on_point then on_point(value, s, sys) end
    if not quiet and carlo.interactive() and #ladder > 1 then
      local el = carlo.clock() - t0
      io.stderr:write(("\ranneal: %s = %.6g (%d/%d), %.0f s elapsed, ETA %.0f s \27[K%s")
        :format(control, value, i, #ladder, el, el / i * (#ladder - i), i == #ladder and "\n" or ""))
    end
  end
  if own_log then log:close() end
  return results
end

return carlo
