-- lua/bad_input/*: every model answers bad input with an error that names what was wrong
-- (the key, the field or the verb), never a crash, a hang or a silently clamped value.
-- Table-driven: for each model, bad values of its constructor keys, of the common verbs' keys
-- and of its fields.
local carlo = require "carlo"
local check = require "check"
local M = require "conformance_models"

local NAN, INF = 0 / 0, math.huge

-- Bad values of constructor keys, each to be refused with the key named.
local constructor = {
  potts = { L = { 7, 0, -2, 1e9, "16", NAN }, q = { 1, 256, 2.5, "3" }, T = { 0, -1, NAN, "1" },
            seed = { -1, 1.5, "x" }, init = { "hot", 3 }, algorithm = { "wolff", 1 }, device = { "tpu" } },
  hard_disks = { N = { 0, -5, 2.5, "64" }, phi = { 0, -0.1, 0.95, NAN, "0.5" }, delta = { -0.1, NAN, "x" },
                 moves_per_cell = { 0, -1, 1.5 }, seed = { -1, "x" }, init = { "bcc3", 7 }, device = { "tpu" } },
  hard_spheres = { N = { 0, -5, "108" }, phi = { 0, 0.8, NAN }, delta = { -0.1, INF }, moves_per_cell = { 0 },
                   init = { "hex9" }, seed = { 2.5 } },
  lj = { N = { 0, -1, "108" }, rho = { 0, -0.5, NAN, "0.6" }, T = { 0, -1, NAN }, rc = { 0, -2.5 },
         mode = { "fast", 1 }, delta = { -0.1, NAN }, init = { "hcp" }, seed = { -3 } },
  kmc = { m = { 0, -4, 1.5, "16" }, n = { 0, 3e9 }, bond = { NAN, "1", INF }, seed = { -1 }, device = { "tpu" } },
}

-- key as a word of the message (L must appear as L, not inside "Lua")
local function key_in(msg, key)
  local pat = key:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0")
  if key:match("^[%w_]") then pat = "%f[%w_]" .. pat end
  if key:match("[%w_]$") then pat = pat .. "%f[^%w_]" end
  return msg:find(pat) ~= nil
end

local function expect_error(name, fn, ...)
  local ok, err = pcall(fn)
  if ok then return check.fail(name, "no error raised") end
  err = tostring(err)
  for _, want in ipairs { ... } do
    if not key_in(err, want) then return check.fail(name, ("message %q lacks %q"):format(err, want)) end
  end
  if err:find("invalid option", 1, true) or err:find("got userdata", 1, true) then
    return check.fail(name, "garbled message: " .. err)
  end
  return check.pass(name)
end

local counts = {}
for _, m in ipairs(M.list) do
  local family = m.ctor == "potts_ensemble" and "potts" or m.ctor
  if m.name ~= "kmc_lua_model" and m.name ~= "lj_checkerboard" and m.name ~= "potts_ensemble" then
    local base = "lua/bad_input/" .. m.name .. "/"
    local n = 0
    local function case(name, fn, ...)
      n = n + 1
      expect_error(base .. name, fn, ...)
    end
    -- constructor keys
    for key, values in pairs(constructor[m.name] or constructor[family] or {}) do
      for i, v in ipairs(values) do
        case(("ctor-%s-%d"):format(key, i), function()
          M.make(m, { seed = 1, device = "cpu", init = m.init, extra = { [key] = v } })
        end, key)
      end
    end
    case("ctor-not-a-table", function() carlo[m.ctor](42) end, "table")
    case("ctor-unknown-key", function() M.make(m, { seed = 1, device = "cpu", extra = { colour = 1 } }) end,
      "colour")
    -- the common verbs
    local sys = M.make(m, { seed = 1, device = "cpu", init = m.init })
    local unit = m.continuous and "events" or "sweeps"
    case("run-no-amount", function() sys:run{} end, "exactly one")
    case("run-negative", function() sys:run{ [unit] = -5 } end, unit)
    case("run-fraction", function() sys:run{ [unit] = 2.5 } end, unit)
    case("run-string", function() sys:run{ [unit] = "10" } end, unit)
    case("run-both", function() sys:run{ [unit] = 1, upto = 5 } end, "exactly one")
    case("run-unknown", function() sys:run{ [unit] = 1, speed = 2 } end, "speed")
    case("run-walltime-negative", function() sys:run{ [unit] = 1, walltime = -1 } end, "walltime")
    case("run-checkpoint-alone", function() sys:run{ [unit] = 1, checkpoint = "x.ctr" } end, "walltime")
    case("run-every-alone", function() sys:run{ [unit] = 1, every = 1 } end, "trajectory")
    case("run-trajectory-not-one", function() sys:run{ [unit] = 1, every = 1, trajectory = {} } end,
      "trajectory")
    if m.continuous then
      case("run-sweeps", function() sys:run{ sweeps = 1 } end, "sweeps")
      case("run-absurd-frames", function()
        sys:run{ time = 1, every = 1e-300, trajectory = carlo.trajectory(check.tmp .. "/bad.ctr", "w") }
      end, "every")
    else
      case("run-events", function() sys:run{ events = 1 } end, "events")
      case("run-time", function() sys:run{ time = 1 } end, "time")
    end
    case("sample-one-sample", function() sys:sample{ [unit] = 1, every = 1 } end, "at least 2 samples")
    case("sample-not-multiple", function() sys:sample{ [unit] = 5, every = 2 } end, "multiple")
    case("sample-every-zero", function() sys:sample{ [unit] = 4, every = 0 } end, "every")
    case("sample-unknown", function() sys:sample{ [unit] = 4, every = 2, colour = 1 } end, "colour")
    case("snapshot-index", function() sys:snapshot(99) end, "99")
    case("save-directory", function() sys:save("/nonexistent-dir/x.ctr") end, "nonexistent")
    case("field-unknown", function() sys.colour = 1 end, "unknown field", "colour")
    case("field-read-only", function() sys.step = 5 end, "read-only", "step")
    case("field-unknown-read", function() return sys.colour end, "colour")
    for _, c in ipairs(sys.controls) do
      case("control-string-" .. c, function() sys[c] = "1" end, c)
      case("control-nan-" .. c, function() sys[c] = NAN end, c)
    end
    case("load-missing", function() carlo.load("/nonexistent-dir/x.ctr") end, "nonexistent")
    sys:close()
    case("closed", function() sys:run{ [unit] = 1 } end, "closed")
    counts[#counts + 1] = ("%s %d"):format(m.name, n)
    check.ok(base .. "at-least-25-cases", n >= 25, ("%d cases"):format(n))
  end
end

-- List-valued keys: the item is named with its index, the value received is shown, and the
-- allowed range is given (the ensemble's temperatures, as every other list key).
do
  local bad = {
    { { 1, "2" }, "temperatures[2]", "(got the string \"2\")" },
    { { true, 2 }, "temperatures[1]", "(got true)" },
    { { 1, {} }, "temperatures[2]", "(got a table)" },
    { { 1, 0 }, "temperatures[2]", "(got 0)" },
    { { 1, NAN }, "temperatures[2]", "(got" },
    { { 1, INF }, "temperatures[2]", "(got inf)" },
  }
  for i, b in ipairs(bad) do
    check.raises("lua/bad_input/potts_ensemble/temperatures-" .. i, function()
      carlo.potts_ensemble{ L = 8, q = 3, temperatures = b[1], seed = 1, device = "cpu" }
    end, "carlo.potts_ensemble: " .. b[2] .. " must be a number >= ", b[3])
  end
end
