-- validate/ensemble/lj-exchange-*: replica exchange over the temperature (carlo.ensemble) of the
-- Lennard-Jones liquid reproduces independent canonical runs at every temperature of its
-- ladder. N = 256 at rho = 0.7, six temperatures from 1.2 to 2.0 (the liquid above the
-- coexistence density), exchanges every 10 sweeps; the energy per particle U and the pressure
-- P of each temperature (whichever replica holds it) against a canonical run at that
-- temperature alone, within 4 combined blocking error bars (12 comparisons). A few minutes on
-- one CPU core.
local carlo = require "carlo"
local check = require "check"

local N, rho = 256, 0.7
local temps = carlo.ladder{ from = 1.2, to = 2.0, n = 6 }
local equilibrate, measure, every = 2000, 12000, 10
local device = check.has_gpu() and "gpu" or "cpu"

local ens = carlo.ensemble{ model = "lj", args = { N = N, rho = rho, quiet = true }, seed = 2026,
                            controls = { T = temps }, device = device }
-- move sizes set once, during equilibration, and fixed while measuring
for k = 1, #temps do ens:system(k):tune{ sweeps = 200, quiet = true } end
ens:run{ sweeps = equilibrate, exchange_every = every }
local per = ens:sample{ sweeps = measure, every = every, exchange_every = every }
local t = ens:tempering()
local acc_ok = #t.acceptance == #temps - 1
for _, a in ipairs(t.acceptance) do acc_ok = acc_ok and a > 0.05 end
check.ok("validate/ensemble/lj-exchange-acceptance", acc_ok,
  "acceptance per pair " .. table.concat(t.acceptance, " "))

for k, T in ipairs(temps) do
  local sys = carlo.lj{ N = N, rho = rho, T = T, seed = 500 + k, device = device, quiet = true }
  sys:tune{ sweeps = 200, quiet = true }
  sys:run{ sweeps = equilibrate }
  local c = sys:sample{ sweeps = measure, every = every }
  local r = per[k]
  check.ok(("validate/ensemble/lj-exchange-T%.2f-value"):format(T), r.T == T, ("T %s"):format(tostring(r.T)))
  for _, name in ipairs{ "U", "P" } do
    check.agree(("validate/ensemble/lj-exchange-T%.2f-%s"):format(T, name), r[name].mean, r[name].err,
      c[name].mean, c[name].err, 4)
    print(("# T = %.2f %s: exchange %.5f +- %.5f, canonical %.5f +- %.5f"):format(T, name, r[name].mean,
      r[name].err, c[name].mean, c[name].err))
  end
  sys:close()
end
