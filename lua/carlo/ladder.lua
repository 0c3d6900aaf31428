-- carlo.ladder: temperature ladders for annealing, heating and parallel tempering.
--   carlo.ladder{ from = 0.715, to = 0.7215, step = 0.0005 }     evenly spaced
--   carlo.ladder{ from = 0.5, to = 2.0, n = 16 }                 n evenly spaced points
--   carlo.ladder{ from = 0.5, to = 2.0, n = 16, spacing = "geometric" }
--   carlo.ladder{ from = 0.5, to = 2.0, n = 16, spacing = "beta" }  evenly spaced in 1/value
-- A ladder is a list ({ T1, T2, ... }, # and ipairs work) that can also be iterated
-- directly: for T in carlo.ladder{...} do ... end. Points are computed as from + i * step,
-- never by repeated addition, so the last point is `to` when step divides the range.
local carlo = require "carlo"

local Ladder = {}
Ladder.__index = Ladder

function Ladder.__call(self, _, prev)
  local i = prev == nil and 1 or (self._pos or 0) + 1
  self._pos = i
  return self[i]
end

function Ladder:reversed()
  local r = setmetatable({}, Ladder)
  for i = #self, 1, -1 do r[#r + 1] = self[i] end
  return r
end

local allowed = { from = true, to = true, step = true, n = true, spacing = true }

function carlo.ladder(t)
  if type(t) ~= "table" then error("carlo.ladder: expects a table { from =, to =, step = | n = }", 2) end
  for k in pairs(t) do
    if not allowed[k] then
      error(("carlo.ladder: unknown key '%s' (allowed: from, to, step, n, spacing)"):format(tostring(k)), 2)
    end
  end
  local from, to = t.from, t.to
  if type(from) ~= "number" or type(to) ~= "number" or from ~= from or to ~= to then
    error("carlo.ladder: from and to are required numbers", 2)
  end
  local spacing = t.spacing or "linear"
  if spacing ~= "linear" and spacing ~= "geometric" and spacing ~= "beta" then
    error(('carlo.ladder: spacing must be "linear", "geometric" or "beta" (got %s)'):format(tostring(spacing)), 2)
  end
  if (t.step == nil) == (t.n == nil) then error("carlo.ladder: give exactly one of step and n", 2) end
  local pts = setmetatable({}, Ladder)
  if t.n ~= nil then
    local n = t.n
    if math.type(n) ~= "integer" or n < 1 or n > 1e7 then
      error(("carlo.ladder: n must be an integer from 1 to 1e7 (got %s)"):format(tostring(n)), 2)
    end
    if spacing ~= "linear" and (from <= 0 or to <= 0) then
      error(("carlo.ladder: a %s ladder needs from > 0 and to > 0"):format(spacing), 2)
    end
    for i = 0, n - 1 do
      local f = n == 1 and 0 or i / (n - 1)
      if spacing == "geometric" then
        pts[i + 1] = from * (to / from) ^ f
      elseif spacing == "beta" then
        pts[i + 1] = 1 / (1 / from + (1 / to - 1 / from) * f)
      else
        pts[i + 1] = from + (to - from) * f
      end
    end
    if n > 1 then pts[n] = to end
  else
    if spacing ~= "linear" then error("carlo.ladder: step goes with linear spacing; use n for geometric or beta", 2) end
    local step = t.step
    if type(step) ~= "number" or not (step > 0) or step == math.huge then
      error(("carlo.ladder: step must be a number > 0 (got %s); the direction comes from from and to")
        :format(tostring(step)), 2)
    end
    local span = math.abs(to - from)
    local n = math.floor(span / step + 1e-9) + 1
    if n > 1e7 then error("carlo.ladder: more than 1e7 points", 2) end
    local dir = to >= from and 1 or -1
    for i = 0, n - 1 do pts[i + 1] = from + dir * i * step end
    if math.abs(pts[n] - to) < 1e-9 * math.max(1, math.abs(to)) then pts[n] = to end
  end
  return pts
end
