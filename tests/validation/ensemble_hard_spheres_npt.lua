-- validate/ensemble/hs-npt-*: hard spheres along a pressure ladder, an NPT ensemble with
-- replica exchange over the pressure (carlo.ensemble, exchanges of ln V), give densities whose
-- pressure, measured in an NVT run at that density, is the pressure imposed. N = 256 fluid
-- spheres at beta P sigma^3 = 4.0, 4.2, ..., 5.0 (phi about 0.36 to 0.39; neighbours close
-- enough in pressure for their volumes to overlap, so that exchanges are accepted). All start
-- at phi = 0.38; the move sizes are tuned twice during the equilibration (once the densities
-- have moved) and then fixed. For each pressure: the ensemble's mean phi, then an NVT system
-- at that phi whose P (the scale-distribution-function pressure, carlo-hard(7)) must equal the
-- imposed one within 4 combined error bars: the NVT run's blocking error and the ensemble's
-- phi error carried by the slope dP/dphi of the Carnahan-Starling equation of state (used for
-- the error only). The ensemble's own measured P is checked against the imposed one too.
-- A few minutes of one CPU core.
local carlo = require "carlo"
local check = require "check"

local N = 256
local pressures = { 4.0, 4.2, 4.4, 4.6, 4.8, 5.0 }
local equilibrate, measure, every = 2000, 12000, 10
local device = check.has_gpu() and "gpu" or "cpu"

local ens = carlo.ensemble{ model = "hard_spheres", args = { N = N, phi = 0.38, quiet = true }, seed = 77,
                            controls = { pressure = pressures }, device = device }
for _ = 1, 2 do
  for k = 1, #pressures do ens:system(k):tune{ quiet = true } end -- fixed after the second round
  ens:run{ sweeps = equilibrate, exchange_every = every }
end
local per = ens:sample{ sweeps = measure, every = every, exchange_every = every }
local t = ens:tempering()
local acc_ok = #t.acceptance == #pressures - 1
for _, a in ipairs(t.acceptance) do acc_ok = acc_ok and a > 0.05 end
check.ok("validate/ensemble/hs-npt-exchanges", acc_ok, "acceptance per pair " .. table.concat(t.acceptance, " "))

-- dP/dphi of the Carnahan-Starling fluid, beta P sigma^3 = (6 phi / pi) Z(phi), to carry phi's
-- error into P
local function cs(phi) return 6 * phi / math.pi * (1 + phi + phi ^ 2 - phi ^ 3) / (1 - phi) ^ 3 end
local function slope(phi) return (cs(phi + 1e-5) - cs(phi - 1e-5)) / 2e-5 end

for k, P in ipairs(pressures) do
  local r = per[k]
  check.ok(("validate/ensemble/hs-npt-P%g-value"):format(P), r.pressure == P)
  check.within(("validate/ensemble/hs-npt-P%g-measured-in-npt"):format(P), r.P.mean, P, r.P.err, 4)
  local phi = r.phi.mean
  local sys = carlo.hard_spheres{ N = N, phi = phi, seed = 900 + k, device = device, quiet = true }
  sys:tune{ quiet = true }
  sys:run{ sweeps = equilibrate }
  local c = sys:sample{ sweeps = measure, every = every }
  local err = math.sqrt(c.P.err ^ 2 + (slope(phi) * r.phi.err) ^ 2)
  check.within(("validate/ensemble/hs-npt-P%g-nvt-at-its-density"):format(P), c.P.mean, P, err, 4)
  print(("# beta P = %g: NPT phi %.5f +- %.5f (P measured %.4f +- %.4f); NVT at that phi: P %.4f +- %.4f "
    .. "(+- %.4f with phi's error); Carnahan-Starling at that phi %.4f"):format(P, phi, r.phi.err, r.P.mean,
    r.P.err, c.P.mean, c.P.err, err, cs(phi)))
  sys:close()
end
