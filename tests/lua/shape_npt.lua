-- lua/shape_npt — hard shapes in NPT (isotropic volume moves in ln V, CPU, fixed seeds):
--  * a dilute pentagon gas: with the (N + 1) ln(V'/V) rule the volume density is
--    V^N exp(-beta P V) f(V), f(V) = 1 - N (N - 1) B2 / V + ... the chance that uniformly placed
--    pentagons do not overlap (2 B2 the mean excluded area, B2 = A + L^2 / (4 pi) for a convex
--    body of area A and perimeter L). Hence <V> = (N + 1) / (beta P) + (N - 1) B2 to first order
--    in B2 (the next order, ~ (B2 rho)^2 relative, is under a tenth of the error bar here; the
--    B2 term itself is a dozen error bars, so the check sees the overlaps too);
--  * NPT at the pressure the SDF estimator measured in NVT at phi = 0.5 gives back phi, within
--    the NPT error (the spread of independent chains) combined with the NVT pressure's error
--    carried over by the compressibility (d<phi>/d(beta P) = phi Var(V) / <V>);
--  * in NPT the mean of the NVT pressure estimator (SDF) is the imposed pressure (the
--    dV-weighted ensemble has <d ln Z / dV> = beta P);
--  * bad input refused; checkpoints continue bit for bit; the pressure control; no overlaps
--    after NPT runs in 2D and 3D; the NVT chain unchanged by the NPT code.
local carlo = require "carlo"
local check = require "check"
carlo.threads(1) -- small systems: one thread is as fast, and never spins on a loaded machine

local pent = carlo.shapes.pentagon

-- ---------- a dilute gas: <V> = (N + 1) / beta P + (N - 1) B2 ----------

do
  -- a regular pentagon of unit area: A = (5 / 4) a^2 cot(pi / 5), perimeter 5 a
  local a = math.sqrt(4 / (5 / math.tan(math.pi / 5)))
  local B2 = 1 + (5 * a) ^ 2 / (4 * math.pi)
  local N, P = 16, 0.02
  local s = carlo.hard_polygons{ vertices = pent.vertices, N = N, phi = N * P / (N + 1), seed = 5, pressure = P,
                                 volume_moves = 4 }
  s:tune{ rounds = 10, sweeps = 50 }
  s:run{ sweeps = 500 }
  local r = s:sample{ sweeps = 12000, every = 1, pressure = false }
  local want = (N + 1) / P + (N - 1) * B2
  print(("# dilute pentagons N = %d, beta P = %g: <V> %.3f +- %.3f (tau %.1f), first order %.3f, ideal %.3f")
    :format(N, P, r.volume.mean, r.volume.err, r.volume.tau, want, (N + 1) / P))
  check.within("lua/shape_npt/dilute_volume", r.volume.mean, want, r.volume.err, 3)
  check.eq("lua/shape_npt/volume_moves_counted", s:observe{ pressure = false }.volume_tried, s.step * 4)
  check.ok("lua/shape_npt/dilute_valid", s:verify())
end

-- ---------- NVT at phi = 0.5 -> its SDF pressure -> NPT gives phi = 0.5 back ----------

do
  local N = 64
  local a = carlo.hard_polygons{ vertices = pent.vertices, N = N, phi = 0.5, seed = 7 }
  a:tune{ rounds = 10, sweeps = 50 }
  a:run{ sweeps = 1000 }
  local nvt = a:sample{ sweeps = 12000, every = 4 }
  local P = nvt.P.mean
  -- independent NPT chains, started from lattices on both sides (phi 0.46 and 0.54, which relax
  -- in a few hundred sweeps): the volume's correlation time is hundreds of sweeps, so the error
  -- comes from the spread of the chains' means, not from blocking one chain
  local R, means, comp = 8, {}, 0
  local last
  for k = 1, R do
    local b = carlo.hard_polygons{ vertices = pent.vertices, N = N, phi = k % 2 == 1 and 0.46 or 0.54, init = "hex",
                                   seed = 100 + k, pressure = P, volume_moves = 4 }
    b:tune{ rounds = 5, sweeps = 50 }
    b:run{ sweeps = 1000 }
    local r = b:sample{ sweeps = 3000, every = 10, pressure = k == 1 }
    means[k] = r.phi.mean
    comp = comp + r.compressibility.mean / R -- Var(V) / <V>
    if k == 1 then last = r end
    check.ok("lua/shape_npt/phi_valid_" .. k, b:verify())
  end
  local m, v = 0, 0
  for k = 1, R do m = m + means[k] / R end
  for k = 1, R do v = v + (means[k] - m) ^ 2 / (R - 1) end
  local err = math.sqrt(v / R)
  local carried = m * comp * nvt.P.err
  print(("# pentagons N = %d: NVT phi 0.5 -> P_sdf %.4f +- %.4f; NPT phi %.5f +- %.5f (%d chains), carried %.5f")
    :format(N, P, nvt.P.err, m, err, R, carried))
  check.within("lua/shape_npt/sdf_phi", m, 0.5, math.sqrt(err ^ 2 + carried ^ 2), 3)
  check.within("lua/shape_npt/pressure_identity", last.P.mean, P, last.P.err, 3)
end

-- ---------- bad input ----------

local function make(extra)
  local t = { vertices = pent.vertices, N = 16, phi = 0.3, seed = 1 }
  for k, v in pairs(extra) do t[k] = v end
  return carlo.hard_polygons(t)
end
check.raises("lua/shape_npt/pressure_zero", function() make{ pressure = 0 } end, "pressure")
check.raises("lua/shape_npt/pressure_negative", function() make{ pressure = -1 } end, "pressure", "-1")
check.raises("lua/shape_npt/pressure_type", function() make{ pressure = "high" } end, "pressure")
check.raises("lua/shape_npt/dlnV_zero", function() make{ pressure = 1, dlnV = 0 } end, "dlnV")
check.raises("lua/shape_npt/dlnV_big", function() make{ pressure = 1, dlnV = 1.5 } end, "dlnV", "1.5")
check.raises("lua/shape_npt/volume_moves", function() make{ pressure = 1, volume_moves = 0 } end, "volume_moves")
check.raises("lua/shape_npt/set_dlnV", function() local s = make{ pressure = 1 }; s.dlnV = 2 end, "dlnV", "(0, 1]")
check.raises("lua/shape_npt/set_pressure", function() local s = make{ pressure = 1 }; s.pressure = -2 end, "pressure")
check.raises("lua/shape_npt/set_pressure_nvt", function() local s = make{}; s.pressure = 0 end, "pressure")
check.raises("lua/shape_npt/volume_target", function() make{ pressure = 1 }:tune{ volume_target = 1 } end,
  "volume_target")

-- ---------- the pressure control, NVT <-> NPT ----------

do
  local s = make{}
  check.ok("lua/shape_npt/nvt_default", s.pressure == nil and not s.npt and s:observe().volume ~= nil)
  s.pressure = 2
  local o = s:observe()
  check.ok("lua/shape_npt/to_npt", s.npt and s.pressure == 2 and o.volume ~= nil and o.volume_tried == 0,
    "setting the pressure did not make the system NPT")
  s:run{ sweeps = 20 }
  local V = s.volume
  check.ok("lua/shape_npt/box_moves", s:observe().volume_tried == 20 and s:observe().volume_accepted > 0,
    "no volume move accepted in 20")
  s.pressure = 3 -- the control
  check.eq("lua/shape_npt/control", s.pressure, 3)
  s.pressure = nil
  s:run{ sweeps = 5 }
  check.ok("lua/shape_npt/to_nvt", not s.npt and s.volume == V, "the box moved in NVT")
  local pts = carlo.anneal{ system = make{ pressure = 1 }, schedule = { 1, 2 }, control = "pressure",
                            equilibrate = 10, measure = 20, every = 2, quiet = true }
  check.ok("lua/shape_npt/anneal", #pts == 2 and pts[2].pressure == 2 and pts[2].volume.mean < pts[1].volume.mean,
    "anneal along the pressure")
  local ens = carlo.ensemble{ model = "hard_polygons", args = { vertices = pent.vertices, N = 32, phi = 0.4 }, seed = 3,
                              controls = { pressure = { 1.0, 1.2 } }, device = "cpu" }
  ens:run{ sweeps = 50, exchange_every = 5 }
  local per = ens:sample{ sweeps = 100, every = 10, exchange_every = 5 }
  check.ok("lua/shape_npt/ensemble", #per == 2 and per[1].volume and per[2].volume and per[2].pressure == 1.2,
    "an ensemble over the pressure")
end

-- ---------- reproducible, checkpoints bit for bit, 3D ----------

local function same(a, b)
  for _, key in ipairs({ "position", "orientation" }) do
    local x, y = a[key], b[key]
    if #x ~= #y then return false end
    for i = 1, #x do if x[i] ~= y[i] then return false end end
  end
  for i = 1, #a.box do if a.box[i] ~= b.box[i] then return false end end
  return true
end

for _, kind in ipairs({ "polygons", "polyhedra" }) do
  local function mk(seed)
    if kind == "polygons" then
      return carlo.hard_polygons{ vertices = pent.vertices, N = 60, phi = 0.5, seed = seed, pressure = 3 }
    end
    return carlo.hard_polyhedra{ vertices = carlo.shapes.cube.vertices, N = 64, phi = 0.3, init = "sc", seed = seed,
                                 pressure = 1.5, dlnV = 0.02 }
  end
  local a, b, c = mk(11), mk(11), mk(12)
  a:run{ sweeps = 40 }
  b:run{ sweeps = 40 }
  c:run{ sweeps = 40 }
  check.ok("lua/shape_npt/reproducible_" .. kind, same(a:snapshot(), b:snapshot()) and not same(a:snapshot(), c:snapshot()),
    "the same seed gave different chains, or different seeds the same")
  local path = check.tmp .. "/shape_npt_" .. kind .. ".carlo"
  b:save(path)
  local d = carlo.load(path)
  a:run{ sweeps = 25 }
  d:run{ sweeps = 25 }
  local oa, od = a:observe{ pressure = false }, d:observe{ pressure = false }
  check.ok("lua/shape_npt/checkpoint_" .. kind, same(a:snapshot(), d:snapshot()) and d.step == a.step
    and d.pressure == a.pressure and d.dlnV == a.dlnV and oa.volume_accepted == od.volume_accepted
    and oa.volume_tried == od.volume_tried, "a loaded checkpoint continued differently")
  check.ok("lua/shape_npt/moved_" .. kind, oa.volume_accepted > 0 and a.volume ~= mk(11).volume, "the box never moved")
  check.ok("lua/shape_npt/valid_" .. kind, a:verify())
end

-- ---------- the NVT chain is the one of the code before NPT ----------

-- A fingerprint of the configuration after 30 sweeps, recorded with the tree before the volume
-- moves were added: the NVT chain must not change.
do
  local function fp(s)
    local snap = s:snapshot()
    local h = 0
    for i = 1, #snap.position do h = (h * 31 + math.floor(snap.position[i] * 2 ^ 20)) % 2 ^ 40 end
    for i = 1, #snap.orientation do h = (h * 31 + math.floor(snap.orientation[i] * 2 ^ 20)) % 2 ^ 40 end
    return ("%d %.17g"):format(h, s.volume)
  end
  local a = carlo.hard_polygons{ vertices = pent.vertices, N = 40, phi = 0.5, seed = 21 }
  a:run{ sweeps = 30 }
  local b = carlo.hard_polyhedra{ vertices = carlo.shapes.cube.vertices, N = 27, phi = 0.3, init = "sc", seed = 21 }
  b:run{ sweeps = 30 }
  check.eq("lua/shape_npt/nvt_unchanged_polygons", fp(a), "902484285354 79.999993819230667")
  check.eq("lua/shape_npt/nvt_unchanged_polyhedra", fp(b), "1077762584587 89.999973366780523")
end
