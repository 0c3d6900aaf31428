-- scripts/kmc-steps.lua — how long the tiled scheme's steps settle, with and without the repair
-- (carlo-kmc(7)): sos_growth at bond = 1 on an M x N lattice, relaxed for 10 M N events, then
-- 10 M N events counted: events a site an accepted step, the rejected fraction, tiles repaired
-- a step and the work per event.
--   build/carlo --quiet scripts/kmc-steps.lua M N [REPAIR (1 or 0)] [HALO (5)] [DEVICE (cpu)]
local m, n = math.tointeger(tonumber(arg[1] or "")), math.tointeger(tonumber(arg[2] or ""))
assert(m and n, "usage: kmc-steps.lua M N [REPAIR] [HALO] [DEVICE]")
local repair, halo, device = arg[3] ~= "0", math.tointeger(tonumber(arg[4] or "5")), arg[5] or "cpu"
local s = carlo.kmc{ model = "sos_growth", m = m, n = n, bond = 1, seed = 7, device = device, halo = halo,
                     repair = repair, quiet = true }
s:run{ events = 10 * m * n, quiet = true }
local c0 = s:counters()
s:run{ events = 10 * m * n, quiet = true }
local c = s:counters()
local acc, rej = c.accepted - c0.accepted, c.rejected - c0.rejected
print(("%d x %d, halo %d, repair %s: %.4f events a site a step, %.3f rejected, %.1f tiles repaired a step, "
  .. "%.2f work an event"):format(m, n, halo, tostring(s.repair), (c.events - c0.events) / (acc * m * n),
  rej / (acc + rej), (c.repaired - c0.repaired) / (acc + rej), (c.simulated - c0.simulated) / (c.events - c0.events)))
