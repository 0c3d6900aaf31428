-- validate/shape/disks: circles through the shape model (carlo.hard_ellipses with a = b = 1/2:
-- support function, XenoCollide, rotations, the SDF by bisection) against the hard-disk model
-- (exact distance test, its own SDF) at the same packing fraction: the pressures must agree
-- within 3 combined error bars. Both on the CPU, about half a minute.
local carlo = require "carlo"
local check = require "check"

local N, phi = 400, 0.6
local e = carlo.hard_ellipses{ a = 0.5, b = 0.5, N = N, phi = phi, init = "hex", seed = 31, delta = 0.1, rotate = 1 }
e:run{ sweeps = 1000 }
local r = e:sample{ sweeps = 30000, every = 10 }
local d = carlo.hard_disks{ N = N, phi = phi, init = "hex", seed = 31, quiet = true }
d:run{ sweeps = 1000 }
local q = d:sample{ sweeps = 30000, every = 10 }
check.agree("validate/shape/disks_pressure", r.P.mean, r.P.err, q.P_sdf.mean, q.P_sdf.err, 3)
check.ok("validate/shape/disks_errors", r.P.err < 0.02 * r.P.mean,
  ("the shape model's error bar %.3g is too wide to test anything"):format(r.P.err))
