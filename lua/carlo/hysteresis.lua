-- carlo.hysteresis: out and back along the same points of a control (heat then cool, compress
-- then expand), an anneal over carlo.cycle(schedule); reports both branches of one observable,
-- the loop area with its error and where each branch jumps (the spinodal estimates).
--   local h = carlo.hysteresis{ system = sys, control = "T", schedule = carlo.ladder{...},
--                               observable = "e", equilibrate =, measure =, every =, log =,
--                               checkpoint =, quiet = }
--   h.out, h.back    { values = {...}, mean = {...}, err = {...} } at the same points, in
--                    schedule order (back is reversed to line up with out)
--   h.area, h.area_err   the integral of (out - back) over the control, trapezoid rule,
--                        errors of the points combined in quadrature
--   h.jump.out, h.jump.back   { at = midpoint of the largest step, size =, err = } per branch
--   h.samples        the anneal's samples of all 2n points, out then back
-- With checkpoint = path the same script run again after a kill resumes the cycle: the points
-- completed before come back from the anneal's record (earlier), so the result and the final
-- state are those of a run never stopped, bit for bit.
local carlo = require "carlo"

local passed_on = { system = true, control = true, equilibrate = true, measure = true, every = true,
                    log = true, checkpoint = true, quiet = true }

local function largest_step(values, mean, err, order)
  local best
  for k = 1, #order - 1 do
    local a, b = order[k], order[k + 1]
    local size = mean[b] - mean[a]
    if not best or math.abs(size) > math.abs(best.size) then
      best = { at = (values[a] + values[b]) / 2, from = values[a], to = values[b], size = size,
               err = math.sqrt(err[a] ^ 2 + err[b] ^ 2) }
    end
  end
  return best
end

function carlo.hysteresis(t)
  if type(t) ~= "table" then error("carlo.hysteresis: expects a table", 2) end
  local args = {}
  for k, v in pairs(t) do
    if passed_on[k] then
      args[k] = v
    elseif k ~= "schedule" and k ~= "observable" then
      error(("carlo.hysteresis: unknown key '%s' (allowed: system, control, schedule, observable, "
        .. "equilibrate, measure, every, log, checkpoint, quiet)"):format(tostring(k)), 2)
    end
  end
  if t.measure == nil then error("carlo.hysteresis: measure is required (units sampled per point)", 2) end
  local out = carlo._schedule(t.schedule, "carlo.hysteresis: schedule")
  if #out < 2 then error("carlo.hysteresis: the schedule needs at least two points", 2) end
  local ok, names = pcall(function() return t.system.observables end)
  if not ok or type(names) ~= "table" then error("carlo.hysteresis: system is required", 2) end
  local obs = t.observable or names[1]
  args.schedule = carlo.cycle(out)
  local ran = carlo.anneal(args)
  local n = #out
  local res = {}
  for _, s in ipairs(ran.earlier or {}) do res[#res + 1] = s end
  for _, s in ipairs(ran) do res[#res + 1] = s end
  if #res ~= 2 * n then
    error(("carlo.hysteresis: the cycle ran %d of %d points%s"):format(#res, 2 * n,
      ran.resumed_at and not ran.earlier and " (the checkpoint keeps no record of the points run "
        .. "before the restart: start it again without the old checkpoint)" or ""), 2)
  end
  local function branch(first, step)
    local b = { values = {}, mean = {}, err = {} }
    for k = 1, n do
      local s = res[first + (k - 1) * step]
      local e = s[obs]
      if type(e) ~= "table" then
        error(("carlo.hysteresis: '%s' is not an observable of this system (%s)")
          :format(tostring(obs), table.concat(names, ", ")), 3)
      end
      b.values[k], b.mean[k], b.err[k] = out[k], e.mean, e.err
    end
    return b
  end
  local h = { observable = obs, out = branch(1, 1), back = branch(2 * n, -1), samples = res }
  local area, var = 0, 0
  for k = 1, n - 1 do
    local w = (out[k + 1] - out[k]) / 2
    for _, j in ipairs { k, k + 1 } do
      local d = h.out.mean[j] - h.back.mean[j]
      area = area + w * d
    end
  end
  -- each point's weight is the sum of the half-intervals around it
  for k = 1, n do
    local w = ((k < n and out[k + 1] - out[k] or 0) + (k > 1 and out[k] - out[k - 1] or 0)) / 2
    var = var + w * w * (h.out.err[k] ^ 2 + h.back.err[k] ^ 2)
  end
  h.area, h.area_err = area, math.sqrt(var)
  local fwd, rev = {}, {}
  for k = 1, n do fwd[k] = k; rev[k] = n + 1 - k end
  h.jump = { out = largest_step(out, h.out.mean, h.out.err, fwd),
             back = largest_step(out, h.back.mean, h.back.err, rev) }
  return h
end
