-- lua/kmc: the repair (kmc_kernel.h, carlo-kmc(7)). Tiles on either side of a differing strip
-- are stepped again with halo 7 before a step is rejected. The trajectory must stay the serial
-- method's bit for bit (repaired steps included), the steps must grow longer than without it,
-- repair = false must give the paper's scheme back, and checkpoints must keep the choice.
local carlo = require "carlo"
local check = require "check"
local models = require "kmc_models"

local full, diff = models.full, models.diff

local function sos(extra)
  local t = { model = "sos_growth", m = 64, n = 64, bond = 1, seed = 5, device = "cpu", halo = 2 }
  for k, v in pairs(extra or {}) do t[k] = v end
  return carlo.kmc(t)
end

-- The same state at the same time with and without the repair, and as the serial method's;
-- halo 2 makes many strips differ, so rounds of the repair run in most steps.
for _, case in ipairs{
  { "sos-bond1", sos, 20 },
  { "sos-bond2", function(e) e.bond = 2 return sos(e) end, 10 },
  { "three-state-moore", function(e)
      e.states, e.neighbourhood, e.rates = 3, 8, models.three_state(0.5)
      e.m, e.n, e.seed, e.halo = 32, 48, 8, 2
      return carlo.kmc(e)
    end, 20 },
} do
  local name, make, per = case[1], case[2], case[3]
  local a, b = make{ repair = true }, make{ repair = false }
  local ref = make{ algorithm = "serial" }
  a:run{ events = per * a.N }
  b:run{ time = a.t }
  ref:run{ time = a.t }
  local ca, cb = a:counters(), b:counters()
  local da, db = diff(full(a), full(ref)), diff(full(b), full(ref))
  local la, lb = ca.events / ca.accepted, cb.events / cb.accepted
  check.ok("lua/kmc/repair-exact-" .. name, da == 0 and db == 0 and a.t == ref.t and a.events == ref.events
    and b.events == ref.events,
    ("%d sites differ from the serial run with the repair, %d without"):format(da, db))
  check.ok("lua/kmc/repair-longer-steps-" .. name, a.repair and not b.repair and ca.repaired > 0
    and cb.repaired == 0 and la > 1.5 * lb,
    ("%d tiles repaired; %.1f events a step with the repair, %.1f without"):format(ca.repaired, la, lb))
end

-- Steps of growing length, each compared with the serial method over the same interval: those
-- accepted after a round of the repair are exact, those it could not save leave the state.
do
  local accepted, rejected, wrong, repaired = models.try_steps(sos{ m = 32, n = 32, seed = 11 },
    sos{ m = 32, n = 32, seed = 11, algorithm = "serial" }, 80, 1e-3)
  check.ok("lua/kmc/repaired-steps-exact", wrong == 0 and repaired >= 5 and rejected >= 3,
    ("%d accepted (%d after a repair), %d rejected, %d wrong"):format(accepted, repaired, rejected, wrong))
end

-- Threads and tiles per step change nothing (the rounds' rules are the same everywhere).
do
  carlo.threads(1)
  local a = sos{ m = 96, n = 64 }
  a:run{ events = 5 * a.N }
  carlo.threads(2)
  local b = sos{ m = 96, n = 64 }
  b:run{ events = 5 * b.N }
  local ca, cb = a:counters(), b:counters()
  check.ok("lua/kmc/repair-threads-independent", diff(full(a), full(b)) == 0 and ca.accepted == cb.accepted
    and ca.rejected == cb.rejected and ca.repaired == cb.repaired and ca.simulated == cb.simulated,
    "one thread and two differ")
end

-- Halo 7 is the repair's halo: nothing to step again.
-- On the CPU the repair is the default at every size (the GPU's: tests/gpu/kmc.lua).
check.ok("lua/kmc/repair-off-at-halo7", not sos{ halo = 7 }.repair and sos{}.repair
  and carlo.kmc{ model = "sos_growth", m = 8, n = 8, bond = 1, seed = 1, device = "cpu" }.repair,
  "sys.repair")
check.raises("lua/kmc/error-repair-not-boolean", function() sos{ repair = 1 } end, "carlo.kmc", "repair")

-- Checkpoints keep the choice and the count, and continue bit for bit.
do
  local path = os.tmpname()
  for _, on in ipairs{ true, false } do
    local a, b = sos{ repair = on }, sos{ repair = on }
    a:run{ events = 4 * a.N }
    b:run{ events = 4 * b.N }
    b:save(path)
    local c = carlo.load(path)
    a:run{ events = 4 * a.N }
    c:run{ events = 4 * c.N }
    local ca, cc = a:counters(), c:counters()
    check.ok("lua/kmc/repair-checkpoint-" .. tostring(on), c.repair == on and diff(full(a), full(c)) == 0
      and a.step == c.step and ca.repaired == cc.repaired and ca.simulated == cc.simulated,
      ("repair %s after loading, repaired %d vs %d"):format(tostring(c.repair), cc.repaired, ca.repaired))
  end
  os.remove(path)
end
