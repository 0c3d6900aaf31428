-- gpu/hard: the CUDA backend of hard disks and spheres against the CPU backend, bit for bit
-- (same seed, same kernels from src/hard/hard_kernel.h, no FMA contraction), through random
-- starts (compression), NVT and NPT sweeps and the pressure histograms; invariants after long
-- runs on large systems; the launch choice (sys:launch{}: block shape, team size, neighbour lists,
-- the cell in registers or memory) changes speed only.
local carlo = require "carlo"
local check = require "check"
if not check.gpu_or_skip("gpu/hard/bitwise") then return end

local function pair(ctor, t)
  t.quiet = true
  t.device = "cpu"
  local c = ctor(t)
  t.device = "gpu"
  local g = ctor(t)
  return c, g
end

local function same(name, c, g)
  local sc, sg = c:snapshot(), g:snapshot()
  local oc, og = c:observe(), g:observe()
  local ok = sc.position == sg.position and c.step == g.step and oc.tried == og.tried
    and oc.accepted == og.accepted and oc.volume_accepted == og.volume_accepted
  for k = 1, 6 do ok = ok and sc.box[k] == sg.box[k] end
  local first
  if not ok then
    for i = 1, #sc.position do
      if sc.position[i] ~= sg.position[i] then first = i; break end
    end
  end
  return check.ok(name, ok, ("CPU and GPU differ (first coordinate %s; tried %d / %d, accepted %d / %d)")
    :format(tostring(first), oc.tried, og.tried, oc.accepted, og.accepted))
end

-- disks from a lattice, NVT
local c, g = pair(carlo.hard_disks, { N = 128 * 128, phi = 0.70, init = "hex", seed = 1 })
c:run{ sweeps = 300 }
g:run{ sweeps = 300 }
same("gpu/hard/bitwise-disks-nvt", c, g)

-- disks from a random start: the compression (overlap scans, re-gridding, the overlaps a shrink
-- past the closest pair leaves parted by the sweeps) is on the device too
c, g = pair(carlo.hard_disks, { N = 2048, phi = 0.66, seed = 2 })
same("gpu/hard/bitwise-disks-compressed", c, g)
do
  local c3, g3 = pair(carlo.hard_spheres, { N = 4000, phi = 0.45, seed = 4 })
  same("gpu/hard/bitwise-spheres-compressed", c3, g3)
end
c:run{ sweeps = 200 }
g:run{ sweeps = 200 }
same("gpu/hard/bitwise-disks-random", c, g)

-- spheres
c, g = pair(carlo.hard_spheres, { N = 4 * 16 * 16 * 16, phi = 0.50, init = "fcc", seed = 3 })
c:run{ sweeps = 300 }
g:run{ sweeps = 300 }
same("gpu/hard/bitwise-spheres-nvt", c, g)

-- NPT: volume moves decided on the host from device overlap counts
c, g = pair(carlo.hard_disks, { N = 4096, phi = 0.65, init = "hex", seed = 4 })
for _, s in ipairs{ c, g } do s.pressure = 7.5; s.dlnV = 2 / s.N end
c:run{ sweeps = 300 }
g:run{ sweeps = 300 }
same("gpu/hard/bitwise-disks-npt", c, g)
c, g = pair(carlo.hard_spheres, { N = 2048, phi = 0.45, seed = 5 })
for _, s in ipairs{ c, g } do s.pressure = 6.0; s.dlnV = 2 / s.N end
c:run{ sweeps = 200 }
g:run{ sweeps = 200 }
same("gpu/hard/bitwise-spheres-npt", c, g)

-- pressure: identical configurations give identical histograms, hence identical estimates
local pc = c:sample{ sweeps = 40, every = 4, series = true }
local pg = g:sample{ sweeps = 40, every = 4, series = true }
check.ok("gpu/hard/pressure-bitwise", pc.series.P_gr == pg.series.P_gr and pc.series.P_sdf == pg.series.P_sdf)

-- the tether (Frenkel-Ladd): the same doubles decide every move on both sides, from weak to
-- strong springs and across a change of lambda; the msd and insertion tests agree too
c, g = pair(carlo.hard_spheres, { N = 4 * 8 * 8 * 8, phi = 1.0409 * math.pi / 6, init = "fcc", seed = 7,
                                  lambda = 300, delta = 0.05 })
c:run{ sweeps = 200 }
g:run{ sweeps = 200 }
same("gpu/hard/bitwise-spheres-tether", c, g)
for _, s in ipairs{ c, g } do s.lambda = 2; s.delta = 0.09 end
c:run{ sweeps = 200 }
g:run{ sweeps = 200 }
same("gpu/hard/bitwise-spheres-tether-weak", c, g)
local mc = c:sample{ sweeps = 20, every = 2, pressure = false, widom = 5000, series = true }
local mg = g:sample{ sweeps = 20, every = 2, pressure = false, widom = 5000, series = true }
check.ok("gpu/hard/tether-msd-bitwise", mc.series.msd_site == mg.series.msd_site
  and mc.series.p_insert == mg.series.p_insert)
c, g = pair(carlo.hard_disks, { N = 64 * 64, phi = 0.72, init = "hex", seed = 8, lambda = 40, delta = 0.1 })
c:run{ sweeps = 300 }
g:run{ sweeps = 300 }
same("gpu/hard/bitwise-disks-tether", c, g)
-- the tether runs in the launch chosen, here a team of lanes per cell
g:launch{ team = 4 }
c:run{ sweeps = 50 }
g:run{ sweeps = 50 }
same("gpu/hard/bitwise-disks-tether-team", c, g)

-- NPT with several volume moves per sweep
c, g = pair(carlo.hard_disks, { N = 4096, phi = 0.65, init = "hex", seed = 9, pressure = 7.5, volume_moves = 4 })
for _, s in ipairs{ c, g } do s.dlnV = 2 / s.N end
c:run{ sweeps = 100 }
g:run{ sweeps = 100 }
same("gpu/hard/bitwise-disks-npt-volume-moves", c, g)

-- triclinic boxes: the kernels with the tilts (SKEW) in every launch form, the pair scans of
-- volume moves and the pressure histograms with the tilts, against the CPU
local tilted = require "tilted"
local hex_tilted, fcc_tilted = tilted.hex, tilted.fcc
do
  local x, box = hex_tilted(64, 63, 16.5, 0.70)
  c, g = pair(carlo.hard_disks, { init = { position = x, box = box }, seed = 21 })
  c:run{ sweeps = 300 }
  g:run{ sweeps = 300 }
  same("gpu/hard/bitwise-disks-tilted-nvt", c, g)
  for _, s in ipairs{ c, g } do s.pressure = 8.5; s.dlnV = 2 / s.N end
  c:run{ sweeps = 200 }
  g:run{ sweeps = 200 }
  same("gpu/hard/bitwise-disks-tilted-npt", c, g)
  local hc = c:sample{ sweeps = 20, every = 4, series = true, psi6 = true, widom = 5000 }
  local hg = g:sample{ sweeps = 20, every = 4, series = true, psi6 = true, widom = 5000 }
  check.ok("gpu/hard/pressure-bitwise-disks-tilted", hc.series.P_gr == hg.series.P_gr and
    hc.series.P_sdf == hg.series.P_sdf and hc.series.psi6 == hg.series.psi6 and hc.series.p_insert == hg.series.p_insert)
  x, box = fcc_tilted(12, 13, 12, 4.5, 0.55)
  c, g = pair(carlo.hard_spheres, { init = { position = x, box = box }, seed = 22 })
  c:run{ sweeps = 200 }
  g:run{ sweeps = 200 }
  same("gpu/hard/bitwise-spheres-tilted-nvt", c, g)
  for _, s in ipairs{ c, g } do s.pressure = 11.5; s.dlnV = 2 / s.N end
  c:run{ sweeps = 200 }
  g:run{ sweeps = 200 }
  same("gpu/hard/bitwise-spheres-tilted-npt", c, g)
  hc = c:sample{ sweeps = 20, every = 4, series = true, steinhardt = true }
  hg = g:sample{ sweeps = 20, every = 4, series = true, steinhardt = true }
  check.ok("gpu/hard/pressure-bitwise-spheres-tilted", hc.series.P_gr == hg.series.P_gr and
    hc.series.P_sdf == hg.series.P_sdf and hc.series.Q6 == hg.series.Q6)
  -- every launch form takes the tilts: the chain stays the CPU's
  local forms = { { team = 1, gather = true, variant = "registers" }, { team = 1, gather = true, variant = "memory" },
                  { team = 1, gather = false, variant = "registers" }, { team = 1, gather = false, variant = "memory" },
                  { team = 2 }, { team = 4 }, { team = 8 } }
  local function through_forms(what, cs, gs, sweeps)
    for k, f in ipairs(forms) do
      gs:launch(f)
      cs:run{ sweeps = sweeps }
      gs:run{ sweeps = sweeps }
      same("gpu/hard/bitwise-" .. what .. "-tilted-launch-" .. k, cs, gs)
    end
  end
  through_forms("spheres", c, g, 30)
  x, box = hex_tilted(64, 63, 16.5, 0.70)
  local cd, gd = pair(carlo.hard_disks, { init = { position = x, box = box }, seed = 24 })
  through_forms("disks", cd, gd, 40)
  -- invariants of a larger tilted system after a longer run
  x, box = hex_tilted(256, 256, 64, 0.698)
  local big = carlo.hard_disks{ init = { position = x, box = box }, seed = 23, device = "gpu", quiet = true }
  big:run{ sweeps = 5000 }
  local ok, why = big:verify()
  check.ok("gpu/hard/invariants-tilted-65536", ok and big.box[4] == box.xy, why)
end

-- the block shape is a tuning knob, not physics
local a = carlo.hard_disks{ N = 64 * 64, phi = 0.70, init = "hex", seed = 6, device = "gpu", quiet = true }
local b = carlo.hard_disks{ N = 64 * 64, phi = 0.70, init = "hex", seed = 6, device = "gpu", quiet = true }
b:launch{ block = { 128, 2 } }
a:run{ sweeps = 100 }
b:run{ sweeps = 100 }
check.ok("gpu/hard/block-shape-invariant", a:snapshot().position == b:snapshot().position)
-- a GPU launch option changes speed only: the GPU system with `set` applied runs the CPU's chain
local function launch_chain(name, ctor, opts, sweeps, set)
  local cc, gg = pair(ctor, opts)
  set(gg)
  cc:run{ sweeps = sweeps }
  gg:run{ sweeps = sweeps }
  same(name, cc, gg)
end
local spheres = { N = 4 * 12 * 12 * 12, phi = 0.58, init = "fcc", seed = 13 }
local disks = { N = 64 * 64, phi = 0.72, init = "hex", seed = 14 }
-- neighbour lists on and off (options of the one-thread kernel, team = 1)
for _, ga in ipairs{ true, false } do
  launch_chain("gpu/hard/bitwise-spheres-gather-" .. tostring(ga), carlo.hard_spheres, spheres, 100,
    function(g) g:launch{ team = 1, gather = ga } end)
  launch_chain("gpu/hard/bitwise-disks-gather-" .. tostring(ga), carlo.hard_disks, disks, 100,
    function(g) g:launch{ gather = ga } end)
end
-- a team of lanes per active cell
for _, t in ipairs{ 1, 2, 4, 8 } do
  launch_chain("gpu/hard/bitwise-spheres-team-" .. t, carlo.hard_spheres, { N = 4 * 12 * 12 * 12, phi = 0.58,
    init = "fcc", seed = 17 }, 100, function(g) g:launch{ team = t } end)
  launch_chain("gpu/hard/bitwise-disks-team-" .. t, carlo.hard_disks, { N = 64 * 64, phi = 0.72, init = "hex",
    seed = 18 }, 100, function(g) g:launch{ team = t } end)
end
-- the tether through every form of the launch: the tether decides before the overlap tests in
-- each, from the same doubles and draws as the CPU
local tether_forms = {
  { team = 1, gather = true, variant = "memory" }, { team = 1, gather = false, variant = "memory" },
  { team = 1, gather = true, variant = "registers" }, { team = 1, gather = false, variant = "registers" },
  { team = 2 }, { team = 4 }, { team = 8 } }
for _, f in ipairs(tether_forms) do
  local tag = f.team == 1 and ("one-" .. f.variant .. (f.gather and "-lists" or "-scan")) or ("team-" .. f.team)
  launch_chain("gpu/hard/bitwise-spheres-tether-" .. tag, carlo.hard_spheres, { N = 4 * 6 * 6 * 6,
    phi = 1.0409 * math.pi / 6, init = "fcc", seed = 19, lambda = 50, delta = 0.08 }, 100,
    function(g) g:launch(f) end)
  launch_chain("gpu/hard/bitwise-disks-tether-" .. tag, carlo.hard_disks, { N = 32 * 32, phi = 0.72,
    init = "hex", seed = 20, lambda = 20, delta = 0.1 }, 100, function(g) g:launch(f) end)
end
-- a block whose lists would not fit in shared memory scans instead, with the same result
launch_chain("gpu/hard/bitwise-disks-large-block", carlo.hard_disks, { N = 64 * 64, phi = 0.70, init = "hex",
  seed = 16 }, 50, function(g) g:launch{ block = { 1024, 1 } } end)
-- both forms of the cell update
for _, v in ipairs{ "memory", "registers" } do
  launch_chain("gpu/hard/bitwise-spheres-" .. v, carlo.hard_spheres, { N = 4 * 12 * 12 * 12, phi = 0.52,
    init = "fcc", seed = 11 }, 100, function(g) g:launch{ team = 1, variant = v } end)
  launch_chain("gpu/hard/bitwise-disks-" .. v, carlo.hard_disks, { N = 64 * 64, phi = 0.70, init = "hex",
    seed = 12 }, 100, function(g) g:launch{ variant = v } end)
end

-- invariants after long runs at the paper's size and density
local big = carlo.hard_disks{ N = 256 * 256, phi = 0.698, init = "hex", seed = 7, device = "gpu", quiet = true }
big:run{ sweeps = 20000 }
local ok, why = big:verify()
check.ok("gpu/hard/invariants-65536", ok, why)
local st = carlo.hard_disks{ N = 64, phi = 0.72, init = "hex", seed = 8, device = "gpu", quiet = true }
st:run{ sweeps = 100000 }
ok, why = st:verify()
check.ok("gpu/hard/stress-1e5-shifts", ok and st.N == 64, why)
local sph = carlo.hard_spheres{ N = 131072, phi = 0.60, init = "fcc", seed = 9, device = "gpu", quiet = true }
sph:run{ sweeps = 2000 }
ok, why = sph:verify()
check.ok("gpu/hard/invariants-spheres-131072", ok, why)

if carlo.load then
  local x = carlo.hard_disks{ N = 4096, phi = 0.68, init = "hex", seed = 10, device = "gpu", quiet = true }
  local y = carlo.hard_disks{ N = 4096, phi = 0.68, init = "hex", seed = 10, device = "gpu", quiet = true }
  x:run{ sweeps = 200 }
  y:run{ sweeps = 100 }
  local path = check.tmp .. "/hard-gpu.ckpt"
  y:save(path)
  local z = carlo.load(path, { device = "cpu" }) -- a GPU checkpoint continues on the CPU, bit for bit
  z:run{ sweeps = 100 }
  check.ok("gpu/hard/checkpoint-gpu-to-cpu", x:snapshot().position == z:snapshot().position)
end
