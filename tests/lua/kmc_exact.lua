-- lua/kmc: the tiled scheme is exact. Its trajectory equals the serial waiting-time method bit
-- for bit (states, clocks, draw counters, t), whatever the halo, the tiling or the thread count.
local carlo = require "carlo"
local check = require "check"
local models = require "kmc_models"

local function sos(bond, args)
  local t = { model = "sos_growth", m = 64, n = 64, bond = bond, seed = 5 }
  for k, v in pairs(args or {}) do t[k] = v end
  return carlo.kmc(t)
end

-- Run the tiled system for `events` events, the serial one to the same time; compare.
local function same_as_serial(name, tiled, serial, events)
  tiled:run{ events = events }
  serial:run{ time = tiled.t }
  local a, b = models.full(tiled), models.full(serial)
  local bad = models.diff(a, b)
  check.ok(name, bad == 0 and a.t == b.t and a.events == b.events and a.events >= events,
    ("%d sites differ; t %.17g vs %.17g; events %d vs %d"):format(bad, a.t, b.t, a.events, b.events))
end

-- one thread here; two below, on a lattice of more than 64 tiles
for _, bond in ipairs{ 0, 1, 3 } do
  carlo.threads(1)
  same_as_serial("lua/kmc/tiled-equals-serial-bond" .. bond, sos(bond),
    sos(bond, { algorithm = "serial" }), 100000)
end

same_as_serial("lua/kmc/tiled-equals-serial-glauber",
  carlo.kmc{ states = 2, rates = models.glauber(0.4), m = 64, n = 64, seed = 3 },
  carlo.kmc{ states = 2, rates = models.glauber(0.4), m = 64, n = 64, seed = 3, algorithm = "serial" },
  100000)

same_as_serial("lua/kmc/tiled-equals-serial-three-state-8-neighbours",
  carlo.kmc{ states = 3, neighbourhood = 8, rates = models.three_state(0.3), m = 32, n = 48,
             seed = 4, init = 1, halo = 3 },
  carlo.kmc{ states = 3, neighbourhood = 8, rates = models.three_state(0.3), m = 32, n = 48,
             seed = 4, init = 1, algorithm = "serial" },
  50000)

-- One tile across: the domain holds several copies of each site (equal clocks, broken by cell).
same_as_serial("lua/kmc/tiled-equals-serial-8x16",
  sos(1, { m = 8, n = 16, halo = 7 }), sos(1, { m = 8, n = 16, algorithm = "serial" }), 20000)
same_as_serial("lua/kmc/tiled-equals-serial-8x8-moore",
  carlo.kmc{ states = 3, neighbourhood = 8, rates = models.three_state(0.3), m = 8, n = 8, seed = 4,
             halo = 2 },
  carlo.kmc{ states = 3, neighbourhood = 8, rates = models.three_state(0.3), m = 8, n = 8, seed = 4,
             algorithm = "serial" },
  20000)

-- The halo, the tiling and the thread count change the steps, never the trajectory.
do
  local ref = sos(2, { halo = 1 })
  ref:run{ time = 300 }
  local want = models.full(ref)
  local worst = 0
  for _, h in ipairs{ 2, 5, 7 } do
    local s = sos(2, { halo = h })
    s:run{ time = 100 }
    s:run{ time = 200 }
    worst = math.max(worst, models.diff(models.full(s), want))
    if s.t ~= ref.t then worst = math.huge end
  end
  check.ok("lua/kmc/halo-independent", worst == 0, ("%s sites differ"):format(worst))
  -- 128 tiles, so that the two threads share each step
  local big = {}
  for t = 1, 2 do
    carlo.threads(t)
    big[t] = sos(2, { n = 128, halo = 4 })
    big[t]:run{ time = 300 }
  end
  carlo.threads(1)
  check.eq("lua/kmc/threads-independent",
    models.diff(models.full(big[2]), models.full(big[1])), 0)
end

-- The user-model path against the built-in model: sos_growth written as a table (heights
-- modulo 8) gives the same clocks and the heights modulo 8, as long as neighbouring heights
-- never differ by 4 or more (bond = 2 keeps the surface that smooth).
do
  local user = carlo.kmc{ states = 8, rates = models.user_sos(8, 2), m = 64, n = 64, seed = 11 }
  local builtin = sos(2, { seed = 11 })
  user:run{ events = 100000 }
  builtin:run{ time = user.t }
  local b = models.full(builtin)
  local bad = models.diff(models.full(user), b, 8)
  local steps = models.max_step(b.state, 64, 64)
  check.ok("lua/kmc/user-sos-equals-builtin", bad == 0 and steps < 4 and user.events == builtin.events,
    ("%d sites differ, largest step %d, events %d vs %d"):format(bad, steps, user.events, builtin.events))
end

-- run{ events = n } stops at the first step boundary with at least n events, close to n.
do
  local s = sos(1, { seed = 8 })
  local over = 0
  for _ = 1, 5 do
    local before = s.events
    local r = s:run{ events = 5000 }
    over = math.max(over, s.events - before - 5000)
    if r.events ~= s.events - before or s.events - before < 5000 then over = math.huge end
  end
  check.ok("lua/kmc/events-stop", over <= 100, ("overshoot %s events"):format(over))
end
