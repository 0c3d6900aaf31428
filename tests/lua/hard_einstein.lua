-- lua/hard/einstein: the harmonic tether of Frenkel-Ladd runs (beta U = lambda sum |r - r0|^2,
-- the particle of tag 0 held fixed), NPT volume_moves and free-volume insertion (sys:widom).
-- Exact checks: a dilute tethered crystal, where the hard cores never meet, is an ideal
-- Einstein crystal with <|dr|^2> = d / (2 lambda) per tethered particle; with lambda = 0 the
-- chain is that of a system never tethered; checkpoints continue bit for bit; insertion at low
-- density against Carnahan-Starling.
local carlo = require "carlo"
local check = require "check"
carlo.threads(2)

local function disks(t) t.device = t.device or "cpu"; t.quiet = true; return carlo.hard_disks(t) end
local function spheres(t) t.device = t.device or "cpu"; t.quiet = true; return carlo.hard_spheres(t) end

-- ideal Einstein crystals: sum over N - 1 tethered particles of d / (2 lambda), divided by N
-- (the reference particle sits on its site); sites 4 sigma and more apart, displacements of
-- rms 0.35 (3D) and 0.5 (2D): an overlap would need a 6-sigma excursion of a pair
do
  local lam = 4
  local s = spheres{ N = 32, phi = 0.01, init = "fcc", seed = 11, lambda = lam, delta = 0.6 }
  s:run{ sweeps = 200 }
  local r = s:sample{ sweeps = 6000, every = 2, pressure = false }
  local want = (s.N - 1) / s.N * 3 / (2 * lam)
  check.within("lua/hard/einstein/ideal-3d", r.msd_site.mean, want, r.msd_site.err, 4)
  local o = s:observe()
  check.ok("lua/hard/einstein/ideal-3d-moves", o.acceptance > 0.1 and o.acceptance < 0.9,
    ("acceptance %.3f"):format(o.acceptance))
end
do
  local lam = 2
  local s = disks{ N = 30, phi = 0.02, init = "hex", seed = 12, lambda = lam, delta = 0.8 }
  s:run{ sweeps = 200 }
  local r = s:sample{ sweeps = 6000, every = 2, pressure = false }
  local want = (s.N - 1) / s.N * 2 / (2 * lam)
  check.within("lua/hard/einstein/ideal-2d", r.msd_site.mean, want, r.msd_site.err, 4)
end

-- the reference particle (1, tag 0) stays; the sites are the positions when the tether went on
do
  local s = spheres{ N = 108, phi = 0.5, init = "fcc", seed = 13 }
  local x0 = s:snapshot().position
  s.lambda = 50
  local sites = s.sites
  check.ok("lua/hard/einstein/sites-are-positions", sites == x0)
  s:run{ sweeps = 100 }
  local x1 = s:snapshot().position
  check.ok("lua/hard/einstein/reference-fixed", x1[1] == x0[1] and x1[2] == x0[2] and x1[3] == x0[3]
    and x1[4] ~= x0[4] and s:verify())
  local o = s:observe{ pressure = false }
  check.ok("lua/hard/einstein/msd-observed", o.msd_site > 0 and o.msd_site < 0.1, tostring(o.msd_site))
  -- given sites are translated so that the reference particle sits on its own
  local shifted = carlo.array("f64", { shape = { 108, 3 } })
  for i = 1, 108 * 3 do shifted[i] = x0[i] + 0.25 end
  s:set_sites(shifted)
  local y = s.sites
  check.ok("lua/hard/einstein/sites-anchored", y[1] == x1[1] and y[2] == x1[2] and y[3] == x1[3]
    and math.abs((y[4] - y[1]) - (x0[4] - x0[1])) < 1e-12)
end

-- lambda = 0: the chain of a system never tethered, sites or not; a tether on and off again
-- before the first sweep changes nothing either
do
  local a = disks{ N = 200, phi = 0.65, seed = 14 }
  local b = disks{ N = 200, phi = 0.65, seed = 14 }
  local c = disks{ N = 200, phi = 0.65, seed = 14 }
  b:set_sites()
  c.lambda = 3
  c.lambda = 0
  for _, s in ipairs{ a, b, c } do s:run{ sweeps = 100 } end
  local pa = a:snapshot().position
  check.ok("lua/hard/einstein/lambda0-same-chain", pa == b:snapshot().position and pa == c:snapshot().position)
  -- and with lambda > 0 the chain differs
  local d = disks{ N = 200, phi = 0.65, seed = 14, lambda = 1 }
  d:run{ sweeps = 100 }
  check.ok("lua/hard/einstein/lambda-changes-chain", d:snapshot().position ~= pa)
end

-- checkpoints carry lambda and the sites: n + n == 2n bit for bit
if carlo.load then
  local a = spheres{ N = 108, phi = 0.5, init = "fcc", seed = 15, lambda = 20 }
  local b = spheres{ N = 108, phi = 0.5, init = "fcc", seed = 15, lambda = 20 }
  a:run{ sweeps = 60 }
  b:run{ sweeps = 30 }
  local path = check.tmp .. "/hard-tether.ckpt"
  b:save(path)
  local c = carlo.load(path, { device = "cpu" })
  c:run{ sweeps = 30 }
  check.ok("lua/hard/einstein/checkpoint-bitwise", c.lambda == 20 and c.sites == a.sites
    and c:snapshot().position == a:snapshot().position)
else
  check.skip("lua/hard/einstein/checkpoint-bitwise", "carlo.load is not in this build")
end

-- errors
do
  local s = disks{ N = 64, phi = 0.5, init = "hex", seed = 16 }
  check.raises("lua/hard/einstein/lambda-range", function() s.lambda = -1 end, "lambda must be", "got -1")
  check.raises("lua/hard/einstein/lambda-type", function() s.lambda = "2" end, "lambda must be a number")
  check.raises("lua/hard/einstein/lambda-npt-key", function()
    disks{ N = 64, phi = 0.5, seed = 1, lambda = 1, pressure = 5 } end, "NVT only")
  s.pressure = 5
  check.raises("lua/hard/einstein/lambda-npt-field", function() s.lambda = 1 end, "NVT only")
  s.pressure = nil
  s.lambda = 1
  check.raises("lua/hard/einstein/pressure-with-tether", function() s.pressure = 5 end, "NVT only")
  check.raises("lua/hard/einstein/sites-count", function() s:set_sites{ { 0, 0 } } end,
    "one site per particle, 64 (got 1)")
  check.raises("lua/hard/einstein/sites-key-count", function()
    disks{ N = 64, phi = 0.5, init = "hex", seed = 1, sites = { { 0, 0 } } } end, "sites must list one site per particle")
end

-- NPT volume_moves = k: k volume moves after every sweep; k = 1 is the default chain
do
  local a = disks{ N = 200, phi = 0.6, seed = 17, pressure = 6, dlnV = 0.01 }
  local b = disks{ N = 200, phi = 0.6, seed = 17, pressure = 6, dlnV = 0.01, volume_moves = 1 }
  local c = disks{ N = 200, phi = 0.6, seed = 17, pressure = 6, dlnV = 0.01, volume_moves = 3 }
  for _, s in ipairs{ a, b, c } do s:run{ sweeps = 50 } end
  check.ok("lua/hard/volume-moves-1-same-chain", a:snapshot().position == b:snapshot().position
    and a.volume == b.volume and a.volume_moves == 1)
  local oa, oc = a:observe(), c:observe()
  check.ok("lua/hard/volume-moves-counts", oa.volume_tried == 50 and oc.volume_tried == 150
    and c.volume_moves == 3, ("%d and %d volume moves tried"):format(oa.volume_tried, oc.volume_tried))
  c.volume_moves = 2
  c:run{ sweeps = 10 }
  check.eq("lua/hard/volume-moves-field", c:observe().volume_tried, 170)
  check.raises("lua/hard/volume-moves-range", function() c.volume_moves = 0 end,
    "volume_moves must be an integer from 1 to 1024", "got 0")
  check.raises("lua/hard/volume-moves-key-range", function()
    disks{ N = 64, phi = 0.5, seed = 1, pressure = 5, volume_moves = 2000 } end, "volume_moves", "2000")
end

-- free-volume insertion in a dilute fluid: beta mu_ex = -ln P_insert against Carnahan-Starling,
-- (8 eta - 9 eta^2 + 3 eta^3) / (1 - eta)^3
do
  local eta = 0.1
  local s = spheres{ N = 256, phi = eta, seed = 18 }
  s:run{ sweeps = 100 }
  local r = s:sample{ sweeps = 400, every = 4, pressure = false, widom = 4000 }
  local cs = (8 * eta - 9 * eta ^ 2 + 3 * eta ^ 3) / (1 - eta) ^ 3
  check.within("lua/hard/widom-carnahan-starling", r.mu_ex.mean, cs, r.mu_ex.err, 4)
  local w = s:widom(1000)
  check.ok("lua/hard/widom-call", w.n == 1000 and w.free > 0 and w.free < 1000
    and math.abs(w.mu_ex + math.log(w.free / 1000)) < 1e-12)
  check.ok("lua/hard/widom-new-points", s:widom(1000).free ~= w.free or s:widom(1000).free ~= w.free)
  check.raises("lua/hard/widom-range", function() s:widom(0) end, "n must be an integer from 1")
  -- empty box: every point free, a crystal at close packing: almost none
  local d = disks{ N = 1, phi = 0.001, seed = 19 }
  check.ok("lua/hard/widom-one-particle", math.abs(d:widom(100000).p_insert - (1 - math.pi / d.volume)) < 0.003)
end
