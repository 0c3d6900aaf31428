-- lua/shape_order — the order parameters of 3D shapes and spheres: Steinhardt's Q4, Q6 of the
-- sc, bcc and fcc lattice starts against the published values of their shells, small in a
-- dilute random start (~ N^-1/2); the nematic order S of aligned (1) and random (~ N^-1/2)
-- ellipsoids; the sample keys steinhardt and nematic; the fcc start; bad input.
local carlo = require "carlo"
local check = require "check"

local function near(name, got, want, tol)
  check.ok(name, math.abs(got - want) < tol, ("got %.6f, want %.5f"):format(got, want))
end

-- cubes on the three lattices (identity orientations, phi low enough that they do not touch)
local cube = carlo.shapes.cube
do
  local sc = carlo.hard_polyhedra{ vertices = cube.vertices, N = 216, phi = 0.3, init = "sc", seed = 1 }
  local q = sc:steinhardt()
  near("lua/shape_order/sc_Q4", q.Q4, 0.76376, 5e-5)
  near("lua/shape_order/sc_Q6", q.Q6, 0.35355, 5e-5)
  local bcc = carlo.hard_polyhedra{ vertices = cube.vertices, N = 2 * 4 ^ 3, phi = 0.2, init = "bcc", seed = 1 }
  local a = bcc.box[1] / 4
  -- the default cutoff takes bcc's first two shells (14 neighbours), rc = 0.95 a the first (8)
  local q14, q8 = bcc:steinhardt(), bcc:steinhardt{ rc = 0.95 * a }
  near("lua/shape_order/bcc14_Q4", q14.Q4, 0.03637, 5e-5)
  near("lua/shape_order/bcc14_Q6", q14.Q6, 0.51069, 5e-5)
  near("lua/shape_order/bcc8_Q4", q8.Q4, 0.50918, 5e-5)
  near("lua/shape_order/bcc8_Q6", q8.Q6, 0.62854, 5e-5)
  local fcc = carlo.hard_polyhedra{ vertices = cube.vertices, N = 4 * 4 ^ 3, phi = 0.3, init = "fcc", seed = 1 }
  local o = fcc:observe{ steinhardt = true, nematic = true, pressure = false }
  near("lua/shape_order/fcc_Q4", o.Q4, 0.19094, 5e-5)
  near("lua/shape_order/fcc_Q6", o.Q6, 0.57452, 5e-5)
  check.ok("lua/shape_order/fcc_start", fcc.N == 256 and fcc:overlaps() == 0 and math.abs(o.phi - 0.3) < 1e-6,
    ("N %d, phi %.15g"):format(fcc.N, o.phi))
  -- a few sweeps melt nothing at phi 0.3 but move the centres: Q6 drops below the perfect value
  fcc:run{ sweeps = 20 }
  local q2 = fcc:steinhardt()
  check.ok("lua/shape_order/fcc_moved", q2.Q6 < 0.57452 - 1e-3 and q2.Q6 > 0.05, ("Q6 %.5f"):format(q2.Q6))
end

-- a dilute random start: Q4, Q6 and S of order N^-1/2
do
  local N = 2000
  local s = carlo.hard_ellipsoids{ a = 0.4, b = 0.4, c = 1.2, N = N, phi = 0.02, seed = 3 }
  local o = s:observe{ steinhardt = true, nematic = true, pressure = false }
  local bound = 5 / math.sqrt(N)
  check.ok("lua/shape_order/random_Q", o.Q4 < bound and o.Q6 < bound and o.Q6 > 0,
    ("Q4 %.4f, Q6 %.4f, 5/sqrt(N) %.4f"):format(o.Q4, o.Q6, bound))
  check.ok("lua/shape_order/random_S", o.S >= 0 and o.S < bound, ("S %.4f, 5/sqrt(N) %.4f"):format(o.S, bound))
  -- the body axis of a prolate ellipsoid is its long axis (z)
  local n = s:nematic()
  check.ok("lua/shape_order/axis", math.abs(math.abs(n.axis[3]) - 1) < 1e-12, ("axis %g %g %g"):format(
    n.axis[1], n.axis[2], n.axis[3]))
  check.ok("lua/shape_order/nematic_method", math.abs(n.S - o.S) < 1e-12, ("%g vs %g"):format(n.S, o.S))
end

-- aligned: a lattice start holds every particle at the identity, S = 1 with the director along
-- the body axis; oblate and prolate shapes alike
for _, sh in ipairs({ { a = 0.4, b = 0.4, c = 1.2 }, { a = 1.0, b = 0.3, c = 1.0 } }) do
  local s = carlo.hard_ellipsoids{ a = sh.a, b = sh.b, c = sh.c, N = 64, phi = 0.05, init = "sc", seed = 1 }
  local n = s:nematic()
  local name = ("lua/shape_order/aligned_%g_%g_%g"):format(sh.a, sh.b, sh.c)
  local d = math.abs(n.director[1] * n.axis[1] + n.director[2] * n.axis[2] + n.director[3] * n.axis[3])
  check.ok(name, math.abs(n.S - 1) < 1e-6 and math.abs(d - 1) < 1e-6, ("S %.9f, |director . axis| %.9f"):format(n.S, d))
end

-- the sample keys: Q4, Q6 and S with errors; the defaults stay without them
do
  local s = carlo.hard_polyhedra{ vertices = carlo.shapes.octahedron.vertices, N = 4 * 3 ^ 3, phi = 0.2,
    init = "fcc", seed = 4 }
  local r = s:sample{ sweeps = 10, every = 2, steinhardt = true, nematic = true, pressure = false }
  check.ok("lua/shape_order/sample", r.Q4 and r.Q6 and r.S and r.Q6.mean > 0.1 and r.Q6.mean <= 0.5746
    and r.S.mean > 0 and r.S.mean <= 1, "Q6 " .. tostring(r.Q6 and r.Q6.mean))
  local plain = s:observe()
  check.ok("lua/shape_order/default_keys", plain.Q4 == nil and plain.S == nil and plain.P ~= nil, "extra keys")
end

-- hard spheres: the fcc start and a dilute fluid
do
  local sp = carlo.hard_spheres{ N = 4 * 4 ^ 3, phi = 0.45, init = "fcc", seed = 1, device = "cpu" }
  local q = sp:steinhardt()
  near("lua/shape_order/spheres_fcc_Q4", q.Q4, 0.19094, 5e-5)
  near("lua/shape_order/spheres_fcc_Q6", q.Q6, 0.57452, 5e-5)
  local f = carlo.hard_spheres{ N = 2000, phi = 0.05, seed = 2, device = "cpu" }
  local qf = f:steinhardt()
  local bound = 5 / math.sqrt(2000)
  check.ok("lua/shape_order/spheres_fluid", qf.Q4 < bound and qf.Q6 < bound,
    ("Q4 %.4f, Q6 %.4f, 5/sqrt(N) %.4f"):format(qf.Q4, qf.Q6, bound))
  check.raises("lua/shape_order/spheres_rc", function() sp:steinhardt{ rc = 100 } end, "rc", "100")
  local o = sp:observe{ steinhardt = true, pressure = false }
  check.ok("lua/shape_order/spheres_observe_key", o.Q4 == q.Q4 and o.Q6 == q.Q6,
    ("observe Q4 %s, Q6 %s against the method's %s, %s"):format(o.Q4, o.Q6, q.Q4, q.Q6))
  local plain = sp:observe{ pressure = false }
  check.ok("lua/shape_order/spheres_default_keys", plain.Q4 == nil and plain.Q6 == nil)
  local smp = sp:sample{ sweeps = 4, every = 2, steinhardt = true, pressure = false }
  check.ok("lua/shape_order/spheres_sample_key", smp.Q6 and smp.Q6.mean > 0.3 and smp.Q6.err >= 0)
  local d = carlo.hard_disks{ N = 16, phi = 0.3, seed = 1, device = "cpu" }
  check.raises("lua/shape_order/disks_refused", function() d:steinhardt() end, "3D")
  check.raises("lua/shape_order/disks_key_refused", function() d:observe{ steinhardt = true } end, "steinhardt")
end

-- bad input
do
  local p = carlo.hard_polygons{ vertices = carlo.shapes.pentagon.vertices, N = 16, phi = 0.2, seed = 1 }
  check.raises("lua/shape_order/2d_steinhardt", function() p:observe{ steinhardt = true } end, "steinhardt", "3D")
  check.raises("lua/shape_order/2d_nematic", function() p:sample{ sweeps = 2, nematic = true } end, "nematic", "3D")
  check.raises("lua/shape_order/fcc_N", function()
    carlo.hard_polyhedra{ vertices = cube.vertices, N = 100, phi = 0.2, init = "fcc" }
  end, "fcc", "4 n^3", "100")
  check.raises("lua/shape_order/fcc_overlap", function()
    carlo.hard_polyhedra{ vertices = cube.vertices, N = 256, phi = 0.6, init = "fcc" }
  end, "overlap")
  local e = carlo.hard_ellipsoids{ a = 1, b = 1, c = 1, N = 32, phi = 0.1, init = "fcc", seed = 1 }
  check.raises("lua/shape_order/rc_range", function() e:steinhardt{ rc = 1e3 } end, "rc", "1000")
end
