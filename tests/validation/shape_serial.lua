-- validate/shape/serial: the checkerboard chain (shuffled sets, moves within cells, shifted grid)
-- against the serial reference (one move at a time of a particle drawn from all N) for dense
-- pentagons: the SDF pressure and the orientational order psi_5 must agree within 3 combined
-- error bars, to about 1%. A few minutes on the CPU.
local carlo = require "carlo"
local check = require "check"

local pent = carlo.shapes.pentagon
local start = carlo.hard_polygons{ vertices = pent.vertices, N = 48, phi = 0.4, seed = 5 }
start:compress{ phi = 0.66, sweeps_between = 2 }
local snap = start:snapshot()

local function measure(serial)
  local s = carlo.hard_polygons{ vertices = pent.vertices, init = snap, seed = serial and 7 or 8, serial = serial,
                                 delta = 0.08, rotate = 0.3 }
  s:run{ sweeps = 2000 }
  return s:sample{ sweeps = serial and 120000 or 60000, every = serial and 20 or 10, psi = 5,
                   sdf = { dx = 2e-3, xmax = 0.06, degree = 2 } }
end
local a, b = measure(false), measure(true)
check.agree("validate/shape/serial_pressure", a.P.mean, a.P.err, b.P.mean, b.P.err, 3)
check.agree("validate/shape/serial_psi5", a.psi.mean, a.psi.err, b.psi.mean, b.psi.err, 3)
check.ok("validate/shape/serial_errors", a.P.err < 0.01 * a.P.mean and b.P.err < 0.01 * b.P.mean,
  ("error bars %.3g, %.3g: too wide for a 1%% comparison"):format(a.P.err, b.P.err))
