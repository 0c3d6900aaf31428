-- lua/lj/energy-drift-*: the running energy (the sum of accepted energy changes) equals a
-- from-scratch recomputation to 1e-9 relative after 10^5 trial moves, in every mode.
local carlo = require "carlo"
local check = require "check"

local cases = {
  { name = "decomposition-all", N = 500, rho = 0.776, energy_sum = "all" },
  { name = "decomposition-cells", N = 2000, rho = 0.776, energy_sum = "cells" },
  { name = "decomposition-cells-2d", N = 1000, rho = 0.7, energy_sum = "cells", dim = 2 },
}
for _, c in ipairs(cases) do
  local s = carlo.lj{ N = c.N, rho = c.rho, T = 0.85, seed = 3, device = "cpu", dim = c.dim,
                      energy_sum = c.energy_sum, init = "random", delta = 0.15 }
  s:trial(100000)
  local r = s:recompute()
  check.ok("lua/lj/energy-drift-" .. c.name, r.drift <= 1e-9 and s.tried == 100000,
    ("running %.15g, fresh %.15g, drift %.3g"):format(r.U_running, r.U_fresh, r.drift))
end

-- the periodic check inside runs reports the same thing
local s = carlo.lj{ N = 500, rho = 0.776, T = 0.85, seed = 5, device = "cpu" }
s:run{ sweeps = 40, check_every = 10 }
check.ok("lua/lj/energy-drift-checked-in-run", s.checks == 4 and s.drift_max <= 1e-9,
  ("%d checks, drift_max %g"):format(s.checks, s.drift_max))
