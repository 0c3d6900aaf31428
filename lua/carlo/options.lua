-- carlo.options: key=value command-line options for scripts and workflows.
--   local opt = carlo.options(arg, { L = 2048, sweeps = 200000, device = "auto" })
--   carlo workflows/potts_exact.lua L=256 sweeps=5000
-- Values take the type of their default (numbers, strings, booleans); an unknown key or
-- a value of the wrong type is an error that lists the options.
local carlo = require "carlo"

function carlo.options(argv, defaults)
  local opt = {}
  for k, v in pairs(defaults) do opt[k] = v end
  local function usage()
    local keys = {}
    for k, v in pairs(defaults) do keys[#keys + 1] = ("%s=%s"):format(k, tostring(v)) end
    table.sort(keys)
    return "options (with defaults): " .. table.concat(keys, " ")
  end
  for i = 1, #(argv or {}) do
    local k, v = argv[i]:match("^([%w_]+)=(.*)$")
    if not k then error(("option '%s' is not key=value; %s"):format(argv[i], usage()), 2) end
    local d = defaults[k]
    if d == nil then error(("unknown option '%s'; %s"):format(k, usage()), 2) end
    if type(d) == "number" then
      local n = tonumber(v)
      if not n then error(("option %s wants a number (got '%s')"):format(k, v), 2) end
      if math.type(d) == "integer" then
        n = math.tointeger(n)
        if not n then error(("option %s wants an integer (got '%s')"):format(k, v), 2) end
      end
      opt[k] = n
    elseif type(d) == "boolean" then
      if v ~= "true" and v ~= "false" then error(("option %s wants true or false"):format(k), 2) end
      opt[k] = v == "true"
    else
      opt[k] = v
    end
  end
  return opt
end
