-- lua/args/*: what a wrong keyword argument says, through a model's constructor: the key, the
-- allowed values and the value received (never a neighbouring stack slot); strings are not
-- numbers. The checkers themselves are tested in tests/unit/args.c.
local carlo = require "carlo"
local check = require "check"

local function potts(t)
  return function()
    t.seed = 1; t.device = t.device or "cpu"
    return carlo.potts(t)
  end
end

check.raises("lua/args/enum-names-the-value", potts{ L = 16, q = 3, T = 1, init = "bogus" },
             "init must be one of", "(got \"bogus\")")
check.raises("lua/args/enum-number", potts{ L = 16, q = 3, T = 1, device = 3 },
             "device must be one of", "(got 3)")
check.raises("lua/args/number-as-string", potts{ L = 16, q = 3, T = "1" },
             "T must be a number", "(got the string \"1\")")
check.raises("lua/args/integer-as-string", potts{ L = "16", q = 3, T = 1 },
             "L must be an integer", "(got the string \"16\")")
check.raises("lua/args/boolean-as-string", potts{ L = 16, q = 3, T = 1, quiet = "no" },
             "quiet must be true or false", "(got the string \"no\")")
check.raises("lua/args/ensemble-string-temperature", function()
  return carlo.potts_ensemble{ L = 16, q = 3, temperatures = { "1", "2" }, seed = 1, device = "cpu" }
end, "temperatures[1] must be a number")
