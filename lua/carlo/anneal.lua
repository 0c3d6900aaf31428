-- carlo.anneal: a heating or cooling protocol (Ferrero et al. 2012, Sec. 3): the system
-- carries its state from one temperature of the ladder to the next; at each temperature
-- it equilibrates, then samples, and one row with every observable and its error bar goes
-- to the log.
--   carlo.anneal{ system = sys, ladder = carlo.ladder{...}, equilibrate = 20000,
--                 measure = 50000, every = 50, log = "heating.tsv" | carlo.log(...),
--                 on_temperature = function(T, sample, sys) end, quiet = false }
-- Returns the list of samples, one per temperature (each with its T).
local carlo = require "carlo"

local allowed = { system = true, ladder = true, equilibrate = true, measure = true, every = true,
                  log = true, on_temperature = true, quiet = true }

local function count(t, key, default, min)
  local v = t[key]
  if v == nil then return default end
  if math.type(v) ~= "integer" or v < min then
    error(("carlo.anneal: %s must be an integer >= %d (got %s)"):format(key, min, tostring(v)), 3)
  end
  return v
end

function carlo.anneal(t)
  if type(t) ~= "table" then error("carlo.anneal: expects a table", 2) end
  for k in pairs(t) do
    if not allowed[k] then
      error(("carlo.anneal: unknown key '%s' (allowed: system, ladder, equilibrate, measure, every, "
        .. "log, on_temperature, quiet)"):format(tostring(k)), 2)
    end
  end
  local sys = t.system
  if sys == nil then error("carlo.anneal: system is required", 2) end
  local ladder = t.ladder
  if type(ladder) ~= "table" or #ladder < 1 then
    error("carlo.anneal: ladder is required (carlo.ladder{...} or a list of temperatures)", 2)
  end
  local equilibrate = count(t, "equilibrate", 0, 0)
  local every = count(t, "every", 1, 1)
  local measure = count(t, "measure", nil, 2 * every)
  if measure == nil then error("carlo.anneal: measure is required (sweeps sampled per temperature)", 2) end
  if measure % every ~= 0 then error("carlo.anneal: measure must be a multiple of every", 2) end
  local log = t.log
  local own_log = false
  if type(log) == "string" then log = carlo.log(log); own_log = true end
  local quiet = t.quiet
  local results = {}
  local t0 = carlo.clock()
  for i, T in ipairs(ladder) do
    sys.T = T
    if equilibrate > 0 then sys:run{ sweeps = equilibrate, quiet = quiet } end
    local s = sys:sample{ sweeps = measure, every = every, quiet = quiet }
    s.T = T
    s.step = sys.step
    results[i] = s
    if log then
      log:row{ T = T, step = sys.step, e = s.e, m = s.m, C = s.C, chi = s.chi, V = s.V,
               tau_e = s.e.tau, tau_m = s.m.tau }
    end
    if t.on_temperature then t.on_temperature(T, s, sys) end
    if not quiet and carlo.interactive() and #ladder > 1 then
      local el = carlo.clock() - t0
      io.stderr:write(("\ranneal: T = %.6g (%d/%d), %.0f s elapsed, ETA %.0f s \27[K%s")
        :format(T, i, #ladder, el, el / i * (#ladder - i), i == #ladder and "\n" or ""))
    end
  end
  if own_log then log:close() end
  return results
end

return carlo
