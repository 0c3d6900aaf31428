-- validate/shape/triclinic: hard shapes in triclinic boxes (CPU, fixed seeds).
--  * The checkerboard chain in a tilted box (cells cut along the lattice vectors, separations
--    through the tilts) against the serial reference in the same box (one move at a time,
--    minimum image through fractional coordinates): dense pentagons, the SDF pressure and psi_5
--    within 3 combined error bars.
--  * NPT with length and shear moves (box_moves = "triclinic") of a simple cubic crystal of
--    cubes at the SDF pressure an NVT run of the same crystal measured at phi = 0.55: the box
--    stays stable (no collapse, no shear blow-up: sides within 25% of each other, tilts within
--    the reduced range and small on average), and the mean packing fraction of independent
--    chains is the NVT one within 3 combined error bars (the chains' spread, and the NVT
--    pressure's error carried by the compressibility, d<phi>/d(beta P) = phi Var(V) / <V>).
-- A few minutes on the CPU.
local carlo = require "carlo"
local check = require "check"

-- ---------- checkerboard against serial, tilted ----------

do
  local pent = carlo.shapes.pentagon.vertices
  local N = 48
  local L = math.sqrt(N / 0.4)
  local start = carlo.hard_polygons{ vertices = pent, N = N, box = { L, L, xy = 0.4 }, seed = 5 }
  start:compress{ phi = 0.64, sweeps_between = 2 }
  local snap = start:snapshot()
  local function measure(serial)
    local s = carlo.hard_polygons{ vertices = pent, init = snap, seed = serial and 7 or 8, serial = serial,
                                   delta = 0.08, rotate = 0.3 }
    s:run{ sweeps = 2000 }
    local r = s:sample{ sweeps = serial and 100000 or 50000, every = serial and 20 or 10, psi = 5,
                        sdf = { dx = 2e-3, xmax = 0.06, degree = 2 } }
    check.ok("validate/shape/triclinic_valid_" .. (serial and "serial" or "cells"), s:verify())
    return r
  end
  local a, b = measure(false), measure(true)
  print(("# tilted pentagons phi %.3f: P %.4f +- %.4f cells, %.4f +- %.4f serial; psi5 %.4f +- %.4f, %.4f +- %.4f")
    :format(snap.N / (snap.box[1] * snap.box[2]), a.P.mean, a.P.err, b.P.mean, b.P.err, a.psi.mean, a.psi.err,
            b.psi.mean, b.psi.err))
  check.agree("validate/shape/triclinic_serial_pressure", a.P.mean, a.P.err, b.P.mean, b.P.err, 3)
  check.agree("validate/shape/triclinic_serial_psi5", a.psi.mean, a.psi.err, b.psi.mean, b.psi.err, 3)
end

-- ---------- NPT length + shear moves of a cube crystal ----------

do
  local cube = carlo.shapes.cube.vertices
  local N, phi = 64, 0.55
  local a = carlo.hard_polyhedra{ vertices = cube, N = N, phi = phi, init = "sc", seed = 31 }
  a:tune{ rounds = 10, sweeps = 50 }
  a:run{ sweeps = 1000 }
  local nvt = a:sample{ sweeps = 20000, every = 10 }
  local P = nvt.P.mean
  local R, means, comp, stable, why = 6, {}, 0, true, ""
  local tilt = 0
  for k = 1, R do
    local b = carlo.hard_polyhedra{ vertices = cube, N = N, phi = k % 2 == 1 and 0.53 or 0.57, init = "sc",
                                    seed = 40 + k, pressure = P, box_moves = "triclinic", volume_moves = 3 }
    b:tune{ rounds = 10, sweeps = 40 }
    b:run{ sweeps = 1000 }
    local r = b:sample{ sweeps = 4000, every = 10, pressure = false }
    means[k] = r.phi.mean
    comp = comp + r.compressibility.mean / R
    local x = b.box
    local lo, hi = math.min(x[1], x[2], x[3]), math.max(x[1], x[2], x[3])
    local reduced = math.abs(x[4] * x[2]) <= 0.5 * x[1] and math.abs(x[5] * x[3]) <= 0.5 * x[1]
      and math.abs(x[6] * x[3]) <= 0.5 * x[2]
    tilt = tilt + (math.abs(x[4]) + math.abs(x[5]) + math.abs(x[6])) / (3 * R)
    if not (hi < 1.25 * lo and reduced and r.phi.mean > 0.45 and r.phi.mean < 0.65) then
      stable, why = false, ("chain %d: box %s, phi %.4f"):format(k, table.concat(x, " "), r.phi.mean)
    end
    check.ok("validate/shape/triclinic_npt_valid_" .. k, b:verify())
  end
  local m, v = 0, 0
  for k = 1, R do m = m + means[k] / R end
  for k = 1, R do v = v + (means[k] - m) ^ 2 / (R - 1) end
  local err = math.sqrt(v / R)
  local carried = m * comp * nvt.P.err
  print(("# sc cubes N = %d: NVT phi %.2f -> P_sdf %.4f +- %.4f; NPT triclinic phi %.5f +- %.5f (%d chains), "
    .. "carried %.5f, mean |tilt| %.4f"):format(N, phi, P, nvt.P.err, m, err, R, carried, tilt))
  check.ok("validate/shape/triclinic_npt_stable", stable and tilt < 0.1, why .. (" mean |tilt| %.4f"):format(tilt))
  check.within("validate/shape/triclinic_npt_phi", m, phi, math.sqrt(err ^ 2 + carried ^ 2), 3)
end
