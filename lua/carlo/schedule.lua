-- carlo.ramp, carlo.cycle, carlo.schedule: schedules of a control parameter beside
-- carlo.ladder. Every schedule is a list of values (# and ipairs work, and so does
-- `for v in schedule do`), with fields a protocol reads:
--   hold   units (sweeps) run at each value before the next (ramps: the heating rate)
--   turn   the index of the last value of the outward branch (cycles)
--
--   carlo.ramp{ from = 0.70, to = 0.74, over = 40000, every = 10 }   a change every 10 sweeps
--   carlo.cycle{ from = 0.70, to = 0.74, n = 21 }                     out and back
--   carlo.schedule{ { from = 2, to = 1, n = 5 }, { from = 1, to = 0.5, step = 0.05 } }
local carlo = require "carlo"

local Schedule = getmetatable(carlo.ladder{ from = 0, to = 1, n = 1 })

local function fail(where, msg, level)
  error(("%s: %s"):format(where, msg), (level or 2) + 1)
end

local function check_keys(t, where, allowed)
  if type(t) ~= "table" then fail(where, "expects a table", 2) end
  local names = {}
  for k in pairs(allowed) do names[#names + 1] = k end
  table.sort(names)
  for k in pairs(t) do
    if not allowed[k] then
      fail(where, ("unknown key '%s' (allowed: %s)"):format(tostring(k), table.concat(names, ", ")), 2)
    end
  end
end

-- The two argument helpers of the pure-Lua layer, shared with free_energy.lua: fail raises
-- "where: msg" at the caller of the function that called fail (level 2), check_keys refuses a
-- non-table and unknown keys, listing the allowed ones, at the caller of its caller.
carlo._fail, carlo._check_keys = fail, check_keys

-- A schedule from a list of values or a ladder specification.
local function as_schedule(t, where)
  if type(t) ~= "table" then fail(where, "a schedule is a list of values or { from =, to =, ... }", 2) end
  if t.from ~= nil then
    local ok, r = pcall(carlo.ladder, t)
    if not ok then fail(where, tostring(r):gsub("^.-carlo%.ladder: ", ""), 2) end
    return r
  end
  if #t < 1 then fail(where, "a schedule needs at least one value", 2) end
  local r = setmetatable({}, Schedule)
  for i, v in ipairs(t) do
    if type(v) ~= "number" or v ~= v then
      fail(where, ("value %d is not a number (got %s)"):format(i, tostring(v)), 2)
    end
    r[i] = v
  end
  return r
end
carlo._schedule = as_schedule

function carlo.ramp(t)
  local where = "carlo.ramp"
  check_keys(t, where, { from = true, to = true, over = true, every = true, spacing = true })
  local over, every = t.over, t.every or 1
  if math.type(over) ~= "integer" or over < 1 then
    fail(where, ("over must be an integer >= 1 (units the ramp lasts; got %s)"):format(tostring(over)))
  end
  if math.type(every) ~= "integer" or every < 1 or over % every ~= 0 then
    fail(where, ("every must be an integer >= 1 dividing over (got %s)"):format(tostring(every)))
  end
  local n = over // every
  local ok, r = pcall(carlo.ladder, { from = t.from, to = t.to, n = n, spacing = t.spacing })
  if not ok then fail(where, tostring(r):gsub("^.-carlo%.ladder: ", "")) end
  r.hold = every
  r.rate = n > 1 and (t.to - t.from) / (over - every) or 0 -- change of the control per unit
  return r
end

function carlo.cycle(t)
  local out = as_schedule(t, "carlo.cycle")
  local r = setmetatable({}, Schedule)
  for i = 1, #out do r[i] = out[i] end
  for i = #out, 1, -1 do r[#r + 1] = out[i] end
  r.turn = #out
  r.hold = out.hold
  return r
end

function carlo.schedule(parts)
  local where = "carlo.schedule"
  if type(parts) ~= "table" or #parts < 1 then
    fail(where, "expects a list of pieces (ladders, lists of values or { from =, to =, ... })")
  end
  local r = setmetatable({}, Schedule)
  for k, piece in ipairs(parts) do
    local s = as_schedule(piece, ("%s: piece %d"):format(where, k))
    for i, v in ipairs(s) do
      if not (i == 1 and #r > 0 and r[#r] == v) then r[#r + 1] = v end -- joints once
    end
  end
  return r
end
