-- lua/lj/einstein: the harmonic tether of Frenkel-Ladd runs in the Lennard-Jones checkerboard
-- (beta U_t = lambda sum |r - r0|^2, the particle of index 0 held fixed). Exact checks: a dilute
-- tethered crystal, whose sites lie beyond the cutoff from each other, is an ideal Einstein
-- crystal with <|dr|^2> = d / (2 lambda) per tethered particle; with lambda = 0 the chain is that
-- of a system never tethered; sub-sweeps driven one set at a time make the chain of whole sweeps;
-- checkpoints continue bit for bit; bad input is refused; the pieces of
-- workflows/lj_frenkel_ladd.lua run on a tiny ladder.
local carlo = require "carlo"
local check = require "check"
carlo.threads(2)

local function lj(t)
  t.device = t.device or "cpu"
  t.quiet = true
  t.mode = t.mode or "checkerboard"
  return carlo.lj(t)
end

-- ideal Einstein crystals: sites 5.2 sigma apart (rho = 0.01), rms displacements 0.35 (3D)
-- and 0.5 (2D) per axis: a pair within 1.5 sigma would need a 7-sigma excursion, and the pair
-- energy within the cutoff beyond that is below 0.02; the mean over N - 1 tethered particles of
-- d / (2 lambda), divided by N (the reference particle sits on its site)
do
  local lam = 4
  local s = lj{ N = 32, rho = 0.01, T = 1.0, seed = 11, lambda = lam, delta = 0.6 }
  s:run{ sweeps = 200 }
  local r = s:sample{ sweeps = 6000, every = 2 }
  local want = (s.N - 1) / s.N * 3 / (2 * lam)
  check.within("lua/lj/einstein/ideal-3d", r.msd_site.mean, want, r.msd_site.err, 4)
  check.ok("lua/lj/einstein/ideal-3d-moves", r.acceptance > 0.1 and r.acceptance < 0.9,
    ("acceptance %.3f"):format(r.acceptance))
end
do
  local lam = 2
  local s = lj{ N = 32, rho = 0.01, dim = 2, T = 1.0, seed = 12, lambda = lam, delta = 0.8 }
  s:run{ sweeps = 200 }
  local r = s:sample{ sweeps = 6000, every = 2 }
  local want = (s.N - 1) / s.N * 2 / (2 * lam)
  check.within("lua/lj/einstein/ideal-2d", r.msd_site.mean, want, r.msd_site.err, 4)
end

-- the reference particle (1, index 0) stays; the sites are the positions when the tether went on
do
  local s = lj{ N = 256, rho = 1.1, T = 1.5, seed = 13, delta = 0.05 }
  local x0 = s:snapshot().position
  check.ok("lua/lj/einstein/no-sites", s.sites == nil and s.lambda == 0)
  s.lambda = 300
  check.ok("lua/lj/einstein/sites-are-positions", s.sites == x0)
  s:run{ sweeps = 40 }
  local x1 = s:snapshot().position
  check.ok("lua/lj/einstein/reference-fixed", x1[1] == x0[1] and x1[2] == x0[2] and x1[3] == x0[3]
    and x1[4] ~= x0[4])
  local o = s:observe()
  check.ok("lua/lj/einstein/msd-observed", o.msd_site > 0 and o.msd_site < 3 / 300, tostring(o.msd_site))
  local r = s:recompute()
  check.ok("lua/lj/einstein/energy-is-lj", r.drift < 1e-9, ("drift %g"):format(r.drift))
  -- given sites are translated so that the reference particle sits on its own
  local shifted = carlo.array("f64", { shape = { 256, 3 } })
  for i = 1, 256 * 3 do shifted[i] = x0[i] + 0.25 end
  s:set_sites(shifted)
  local y = s.sites
  check.ok("lua/lj/einstein/sites-anchored", y[1] == x1[1] and y[2] == x1[2] and y[3] == x1[3]
    and math.abs((y[4] - y[1]) - (x0[4] - x0[1])) < 1e-12)
end

-- lambda = 0: the chain of a system never tethered (the same energies and decisions; with sites
-- the positions are reported in the sites' frame); on and off before the first sweep, too
do
  local a = lj{ N = 500, rho = 0.9, T = 1.2, seed = 14 }
  local b = lj{ N = 500, rho = 0.9, T = 1.2, seed = 14 }
  local c = lj{ N = 500, rho = 0.9, T = 1.2, seed = 14 }
  b:set_sites()
  c.lambda = 3
  c.lambda = 0
  for _, s in ipairs{ a, b, c } do s:run{ sweeps = 30 } end
  local same = true
  for _, s in ipairs{ b, c } do
    same = same and s.U == a.U and s.W == a.W and s.accepted == a.accepted and s.tried == a.tried
  end
  check.ok("lua/lj/einstein/lambda0-same-chain", same, ("U %.17g %.17g"):format(a.U, b.U))
  local d = lj{ N = 500, rho = 0.9, T = 1.2, seed = 14, lambda = 1 }
  d:run{ sweeps = 30 }
  check.ok("lua/lj/einstein/lambda-changes-chain", d.U ~= a.U and d.accepted ~= a.accepted)
end

-- sub-sweeps one set at a time (each sweep ending with its cell shift) make the chain of run
do
  local a = lj{ N = 256, rho = 1.0, T = 1.0, seed = 15, lambda = 50 }
  local b = lj{ N = 256, rho = 1.0, T = 1.0, seed = 15, lambda = 50 }
  a:run{ sweeps = 6 }
  for _ = 1, 6 do
    for _, set in ipairs(b.set_order) do b:substep(set) end
  end
  check.ok("lua/lj/einstein/substeps-chain", a.step == b.step and a.U == b.U and
    a:snapshot().position == b:snapshot().position)
end

-- checkpoints carry lambda, the sites and their frame: n + n == 2n bit for bit
if carlo.load then
  local a = lj{ N = 256, rho = 1.0, T = 1.0, seed = 16, lambda = 20 }
  local b = lj{ N = 256, rho = 1.0, T = 1.0, seed = 16, lambda = 20 }
  a:run{ sweeps = 40 }
  b:run{ sweeps = 20 }
  local path = check.tmp .. "/lj-tether.ckpt"
  b:save(path)
  local c = carlo.load(path, { device = "cpu" })
  c:run{ sweeps = 20 }
  check.ok("lua/lj/einstein/checkpoint-bitwise", c.lambda == 20 and c.sites == a.sites
    and c:snapshot().position == a:snapshot().position and c.U == a.U
    and c:observe().msd_site == a:observe().msd_site)
else
  check.skip("lua/lj/einstein/checkpoint-bitwise", "carlo.load is not in this build")
end

-- errors
do
  local s = lj{ N = 256, rho = 0.9, T = 1.0, seed = 17 }
  check.ok("lua/lj/einstein/control", s.controls[3] == "lambda")
  check.raises("lua/lj/einstein/lambda-range", function() s.lambda = -1 end, "lambda must be", "got -1")
  check.raises("lua/lj/einstein/lambda-top", function() s.lambda = 2e7 end, "lambda must be", "got 20000000")
  check.raises("lua/lj/einstein/lambda-type", function() s.lambda = "2" end, "lambda must be a number")
  check.raises("lua/lj/einstein/lambda-key-range", function()
    lj{ N = 256, rho = 0.9, T = 1.0, lambda = -2 } end, "lambda", "-2")
  check.raises("lua/lj/einstein/sites-count", function() s:set_sites{ { 0, 0, 0 } } end,
    "one site per particle, 256 (got 1)")
  check.raises("lua/lj/einstein/sites-key-count", function()
    lj{ N = 256, rho = 0.9, T = 1.0, sites = { { 0, 0, 0 } } } end, "sites must list one site per particle")
  local d = lj{ N = 256, rho = 0.9, T = 1.0, seed = 17, mode = "decomposition" }
  check.raises("lua/lj/einstein/decomposition-field", function() d.lambda = 1 end,
    'the tether runs in mode = "checkerboard"')
  check.raises("lua/lj/einstein/decomposition-key", function()
    lj{ N = 256, rho = 0.9, T = 1.0, mode = "decomposition", lambda = 1 } end,
    'the tether runs in mode = "checkerboard"')
  check.raises("lua/lj/einstein/decomposition-sites", function() d:set_sites() end,
    'the tether runs in mode = "checkerboard"')
  d.lambda = 0
  check.ok("lua/lj/einstein/decomposition-lambda0", d.lambda == 0 and d.sites == nil)
end

-- the workflow's pieces (workflows/lj_frenkel_ladd.lua) on a tiny ladder: the terms add up,
-- the integrand at the top node is the ideal Einstein molecule's to a few per cent, and the
-- lattice term is the fcc lattice's energy over T
do
  local fl = assert(loadfile("workflows/lj_frenkel_ladd.lua"))("--module")
  local o = { T = 2.0, N = 256, rc = 2.5, shift = true, tail = false, nodes = 3, lambda_max = 2e4, c = 0,
              sweeps = 120, equilibrate = 60, every = 4, seed = 5, device = "cpu" }
  local t = fl.frenkel_ladd(o, 1.2)
  local sum = t.einstein + t.reference + t.lattice + t.perturbation + t.integral
  local lat = carlo.lj{ N = 256, rho = 1.2, T = 2.0, rc = 2.5, shift = true, tail = false,
                        mode = "checkerboard", device = "cpu", quiet = true }
  check.ok("lua/lj/einstein/workflow-terms", t.A == sum and t.A_err > 0 and math.abs(t.top_ratio - 1) < 0.05
    and t.lattice == lat.U / 2.0 and math.abs(t.reference - math.log(1.2) / 256) < 1e-12 and t.c > 0,
    ("A %.6f (terms %.6f), top %.4f, lattice %.6f"):format(t.A, sum, t.top_ratio, t.lattice))
end
