-- lua/kmc: the edge checksums. A step long enough for the frozen boundary to matter is caught
-- and rejected (leaving the state untouched); forced through, it is really wrong; and every
-- step the checksums pass is exact.
local carlo = require "carlo"
local check = require "check"
local models = require "kmc_models"

carlo.threads(1)

local full = models.full

-- the checksums themselves: every difference rejects the step (tests/lua/kmc_repair.lua tests
-- the repair)
local function pair(bond, seed)
  local a = carlo.kmc{ model = "sos_growth", m = 64, n = 64, bond = bond, seed = seed, repair = false }
  local b = carlo.kmc{ model = "sos_growth", m = 64, n = 64, bond = bond, seed = seed, algorithm = "serial" }
  return a, b
end

local function same_snap(a, b)
  return models.diff(a, b) == 0 and a.t == b.t and a.events == b.events
end

do
  local s, ref = pair(1, 21)
  s:run{ events = 50000 }
  local long = 30 * s.dt -- the adaptive step sits just below the longest safe one
  local before, counters = full(s), s:counters()
  local ok, events, matched = s:try_step(long)
  check.ok("lua/kmc/long-step-rejected", not ok and not matched and events > 0
    and s:counters().rejected == counters.rejected + 1 and s:counters().accepted == counters.accepted
    and s.step == counters.tried + 1,
    ("accepted %s, matched %s, %d events"):format(tostring(ok), tostring(matched), events))
  check.ok("lua/kmc/rejected-step-leaves-state", same_snap(full(s), before), "the state changed")
  -- the same step forced through differs from the exact trajectory: the rejection was right
  local forced, _, fmatched = s:try_step(long, { force = true })
  ref:run{ time = before.t }
  ref:run{ time = long }
  local wrong = models.diff(full(s), full(ref))
  check.ok("lua/kmc/forced-long-step-is-wrong", forced and not fmatched and wrong > 0 and s.t == ref.t,
    ("forced %s, matched %s, %d sites differ from the serial run"):format(tostring(forced),
      tostring(fmatched), wrong))
end

-- Steps of growing length, each compared with the serial method over the same interval: the
-- accepted ones are exact, the rejected ones leave the state alone, and both kinds occur.
for _, bond in ipairs{ 1, 3 } do
  local s, ref = pair(bond, 30 + bond)
  local accepted, rejected, wrong = models.try_steps(s, ref, 60, 1e-3)
  check.ok("lua/kmc/accepted-steps-exact-bond" .. bond, wrong == 0 and accepted >= 20 and rejected >= 5,
    ("%d accepted, %d rejected, %d wrong"):format(accepted, rejected, wrong))
end

-- A user model with two outcomes per event: a different outcome at the same time must also
-- be caught (the checksum hashes the new state, not only the time).
do
  local function three(alg)
    return carlo.kmc{ states = 3, neighbourhood = 8, rates = models.three_state(0.5), m = 32, n = 32,
                      seed = 12, algorithm = alg, repair = false }
  end
  local accepted, rejected, wrong = models.try_steps(three(), three("serial"), 60, 1e-3)
  check.ok("lua/kmc/accepted-steps-exact-three-state", wrong == 0 and accepted >= 20 and rejected >= 5,
    ("%d accepted, %d rejected, %d wrong"):format(accepted, rejected, wrong))
end

check.raises("lua/kmc/try-step-needs-tiled", function()
  carlo.kmc{ model = "sos_growth", m = 8, n = 8, bond = 1, seed = 1, algorithm = "bkl" }:try_step(1)
end, "kmc:try_step", "tiled")
check.raises("lua/kmc/try-step-positive", function()
  carlo.kmc{ model = "sos_growth", m = 8, n = 8, bond = 1, seed = 1 }:try_step(-1)
end, "dt must be a finite number in (0, ", "(got -1)")
-- an absurd step is refused with the range at once (it would run for ever, Ctrl-C or not):
-- at bond = 0 every site has rate k2 = 2, so dt may be at most 2^16 / 2
do
  local s = carlo.kmc{ model = "sos_growth", m = 8, n = 8, bond = 0, k2 = 2, seed = 1 }
  local t0 = os.clock()
  check.raises("lua/kmc/try-step-absurd", function() s:try_step(1e300) end,
    "dt must be a finite number in (0, 32768]", "2^16 events per site", "(got 1e+300)")
  check.raises("lua/kmc/try-step-inf", function() s:try_step(math.huge) end, "(got inf)")
  check.ok("lua/kmc/try-step-absurd-at-once", os.clock() - t0 < 1 and s.t == 0 and s.step == 0,
    ("%.2f s, t %g"):format(os.clock() - t0, s.t))
  local ok, events = s:try_step(1)
  check.ok("lua/kmc/try-step-at-bond0", ok and events > 0 and s.t == 1, ("t %g"):format(s.t))
end
