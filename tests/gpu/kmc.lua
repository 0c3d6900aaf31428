-- gpu/kmc: the GPU backend gives the CPU backend's trajectory bit for bit (states, clocks,
-- draw counters, t, and the same accepted and rejected steps), hence the serial method's;
-- for every model kind, halo and launch shape, for single steps, controls changed mid-run,
-- samples and frames, and across checkpoints.
local carlo = require "carlo"
local check = require "check"
local models = require "kmc_models"

if not check.gpu_or_skip("gpu/kmc/bitwise") then return end

local function same(name, a, b, steps)
  local sa, sb = models.full(a), models.full(b)
  local bad = models.diff(sa, sb)
  local ta, tb = a:counters(), b:counters()
  local ok = bad == 0 and sa.t == sb.t and sa.events == sb.events
  if steps then
    ok = ok and ta.accepted == tb.accepted and ta.rejected == tb.rejected and ta.simulated == tb.simulated
      and ta.repaired == tb.repaired and sa.step == sb.step
  end
  return check.ok(name, ok, ("%d sites differ; t %.17g vs %.17g; events %d vs %d; steps %d/%d vs %d/%d")
    :format(bad, sa.t, sb.t, sa.events, sb.events, ta.accepted, ta.rejected, tb.accepted, tb.rejected))
end

-- the CPU system gets the GPU's halo and repair (the defaults differ), so that the steps
-- compare too
local function both(args)
  local a, b = {}, {}
  for k, v in pairs(args) do a[k] = v; b[k] = v end
  a.device, b.device = "gpu", "cpu"
  local g = carlo.kmc(a)
  b.halo, b.repair = g.halo, g.repair
  return g, carlo.kmc(b)
end

-- the GPU's defaults: two tiles per block; halo 5 without the repair below 16384 tiles, halo 5
-- with it below 65536, halo 3 with it from there (1, nothing to repair, without neighbour
-- dependence)
do
  local function d(side, bond)
    local g = carlo.kmc{ model = "sos_growth", m = side, n = side, bond = bond, seed = 1, device = "gpu" }
    return ("%d %s"):format(g.halo, tostring(g.repair)), g:launch().tiles_per_block
  end
  local small, tpb = d(64, 2)
  local zero, mid, large = d(64, 0), d(1024, 1), d(2048, 1)
  check.ok("gpu/kmc/defaults", small == "5 false" and tpb == 2 and zero == "1 false" and mid == "5 true"
    and large == "3 true", ("64: %s, tiles_per_block %d; bond = 0: %s; 1024: %s; 2048: %s")
    :format(small, tpb, zero, mid, large))
end

-- sos_growth at every bond, with the repair and without, against the CPU backend and (for
-- 64 x 64) the serial method
for _, bond in ipairs{ 0, 1, 2, 3 } do
  for _, repair in ipairs{ false, true } do
    local name = bond .. (repair and "-repair" or "")
    local g, c = both{ model = "sos_growth", m = 64, n = 64, bond = bond, seed = 5, repair = repair }
    g:run{ events = 100000 }
    c:run{ events = 100000 }
    same("gpu/kmc/bitwise-bond" .. name, g, c, true)
    local s = carlo.kmc{ model = "sos_growth", m = 64, n = 64, bond = bond, seed = 5, algorithm = "serial" }
    s:run{ time = g.t }
    same("gpu/kmc/equals-serial-bond" .. name, g, s)
  end
end

-- a larger lattice, several chunks (each run re-uploads the control state), with the repair
do
  local g, c = both{ model = "sos_growth", m = 512, n = 256, bond = 1, seed = 9, repair = true }
  for _ = 1, 3 do
    g:run{ time = 2 }
    c:run{ time = 2 }
  end
  same("gpu/kmc/bitwise-512x256", g, c, true)
end

-- every halo and launch shape (the cells an event touches on distinct lanes for each stride),
-- with the repair (none at halo 7)
for _, halo in ipairs{ 1, 2, 3, 4, 5, 6, 7 } do
  local c = carlo.kmc{ model = "sos_growth", m = 64, n = 128, bond = 2, seed = 13, halo = halo, device = "cpu",
                       repair = true }
  c:run{ events = 30000 }
  for _, tpb in ipairs{ 1, 3, 8 } do
    local g = carlo.kmc{ model = "sos_growth", m = 64, n = 128, bond = 2, seed = 13, halo = halo,
                         device = "gpu", repair = true }
    g:launch{ tiles_per_block = tpb }
    g:run{ events = 30000 }
    same(("gpu/kmc/bitwise-halo%d-tiles%d"):format(halo, tpb), g, c, true)
  end
end
-- the launch shape changed half way: still the same chain
do
  local c = carlo.kmc{ model = "sos_growth", m = 64, n = 128, bond = 2, seed = 14, halo = 7, device = "cpu" }
  local g = carlo.kmc{ model = "sos_growth", m = 64, n = 128, bond = 2, seed = 14, halo = 7, device = "gpu" }
  g:run{ events = 15000 }
  g:launch{ tiles_per_block = 8 }
  g:run{ events = 15000 }
  c:run{ events = 15000 }
  c:run{ events = 15000 }
  same("gpu/kmc/bitwise-launch-changed", g, c, true)
end

-- a control changed mid-run: the GPU takes the new rates and the redrawn clocks
do
  local g, c = both{ model = "sos_growth", m = 128, n = 128, bond = 1, seed = 15 }
  g:run{ time = 5 }
  c:run{ time = 5 }
  g.bond, c.bond = 2.5, 2.5
  g.k2, c.k2 = 0.5, 0.5
  g:run{ time = 20 }
  c:run{ time = 20 }
  same("gpu/kmc/bitwise-control-changed", g, c, true)
end

-- sample and frames at model times on the GPU
do
  local g, c = both{ model = "sos_growth", m = 64, n = 64, bond = 1, seed = 16 }
  local sg = g:sample{ time = 20, every = 0.5 }
  local sc = c:sample{ time = 20, every = 0.5 }
  check.ok("gpu/kmc/sample", sg.mean.mean == sc.mean.mean and sg.width.err == sc.width.err
    and sg.step_fraction.mean == sc.step_fraction.mean and sg.acceptance == sc.acceptance,
    ("mean %.17g vs %.17g"):format(sg.mean.mean, sc.mean.mean))
  local path = check.tmp .. "/kmc-gpu-frames.ctr"
  local tr = carlo.trajectory(path, "w")
  g:run{ time = 3, every = 0.25, trajectory = tr }
  tr:close()
  tr = carlo.trajectory(path)
  c:run{ time = 3 }
  local last = tr:frame(#tr)
  local snap = c:snapshot()
  local ok = #tr == 12 and last["log/t"][1] == c.t and last["log/events"][1] == c.events
  for i = 1, 64 * 64 do ok = ok and last["lattice/height"][i] == snap.state[i] end
  local frames = #tr
  tr:close()
  check.ok("gpu/kmc/frames", ok, ("%d frames"):format(frames))
end

-- user models: one event per configuration, several (the owner lane's choice), 8 neighbours
do
  local g, c = both{ states = 2, rates = models.glauber(0.4), m = 64, n = 64, seed = 3 }
  g:run{ events = 100000 }
  c:run{ events = 100000 }
  same("gpu/kmc/bitwise-glauber", g, c, true)
  g, c = both{ states = 3, neighbourhood = 8, rates = models.three_state(0.3), m = 32, n = 48, seed = 4,
               init = 1, halo = 3, repair = true }
  g:run{ events = 50000 }
  c:run{ events = 50000 }
  same("gpu/kmc/bitwise-three-state-8-neighbours", g, c, true)
  g, c = both{ states = 8, rates = models.user_sos(8, 2), m = 64, n = 64, seed = 11 }
  g:run{ events = 100000 }
  c:run{ events = 100000 }
  same("gpu/kmc/bitwise-user-sos", g, c, true)
end

-- one tile across: copies of a site in a domain, equal clocks broken by cell
do
  local g, c = both{ model = "sos_growth", m = 8, n = 16, bond = 1, seed = 9, halo = 7 }
  g:run{ events = 20000 }
  c:run{ events = 20000 }
  same("gpu/kmc/bitwise-8x16", g, c, true)
  g, c = both{ states = 3, neighbourhood = 8, rates = models.three_state(0.3), m = 8, n = 8, seed = 4, halo = 2 }
  g:run{ events = 20000 }
  c:run{ events = 20000 }
  same("gpu/kmc/bitwise-8x8-moore", g, c, true)
end

-- single steps: the same verdicts, a rejected step leaves the state, a forced one is the same
do
  local g, c = both{ model = "sos_growth", m = 64, n = 64, bond = 1, seed = 21 }
  g:run{ events = 50000 }
  c:run{ events = 50000 }
  local long = 30 * g.dt
  local before = models.full(g)
  local ga, ge, gm = g:try_step(long)
  local ca, ce, cm = c:try_step(long)
  check.ok("gpu/kmc/long-step-rejected", not ga and not gm and ga == ca and gm == cm and ge == ce
    and models.diff(models.full(g), before) == 0,
    ("gpu %s/%s/%d, cpu %s/%s/%d"):format(tostring(ga), tostring(gm), ge, tostring(ca), tostring(cm), ce))
  ga, ge, gm = g:try_step(long, { force = true })
  ca, ce, cm = c:try_step(long, { force = true })
  check.ok("gpu/kmc/forced-step-same", ga and ca and not gm and not cm and ge == ce, "verdicts differ")
  same("gpu/kmc/forced-step-state", g, c, true)
  local dt, agree = 1e-3, true
  for _ = 1, 40 do
    local a1 = g:try_step(dt)
    local a2 = c:try_step(dt)
    agree = agree and a1 == a2
    dt = a1 and dt * 1.6 or dt * 0.5
  end
  check.ok("gpu/kmc/try-steps-agree", agree, "a step was accepted on one device only")
  same("gpu/kmc/try-steps-state", g, c, true)
  for _ = 1, 30 do
    local a1, e1 = g:substep()
    local a2, e2 = c:substep()
    agree = agree and a1 == a2 and e1 == e2
  end
  check.ok("gpu/kmc/substeps-agree", agree, "a substep differed")
  same("gpu/kmc/substeps-state", g, c, true)
  check.raises("gpu/kmc/try-step-absurd", function() g:try_step(1e300) end, "dt must be a finite number in")
end

-- checkpoints cross devices
do
  local path = check.tmp .. "/kmc-gpu.ckpt"
  local g = carlo.kmc{ model = "sos_growth", m = 128, n = 64, bond = 1, seed = 31, device = "gpu" }
  g:run{ time = 20 }
  g:save(path)
  local c = carlo.load(path, { device = "cpu" })
  g:run{ time = 20 }
  c:run{ time = 20 }
  same("gpu/kmc/checkpoint-gpu-to-cpu", g, c, true)
  c:save(path)
  local g2 = carlo.load(path, { device = "gpu" })
  g2:run{ time = 10 }
  c:run{ time = 10 }
  same("gpu/kmc/checkpoint-cpu-to-gpu", g2, c, true)
end

-- physics at a size only the GPU reaches quickly: random deposition is Poisson(k2 t)
do
  local m, n, k2, t = 1024, 1024, 1.5, 200
  local s = carlo.kmc{ model = "sos_growth", m = m, n = n, bond = 0, k2 = k2, seed = 17, device = "gpu" }
  s:run{ time = t }
  local h = s:snapshot().state
  local N, lambda = m * n, k2 * t
  local sum, sum2 = 0, 0
  for i = 1, N do
    sum = sum + h[i]
    sum2 = sum2 + h[i] * h[i]
  end
  local mean, var = sum / N, (sum2 - sum * sum / N) / (N - 1)
  check.within("gpu/kmc/bond0-poisson-mean", mean, lambda, math.sqrt(lambda / N), 3.5)
  check.within("gpu/kmc/bond0-poisson-variance", var, lambda, math.sqrt((lambda + 2 * lambda ^ 2) / N), 3.5)
  check.eq("gpu/kmc/bond0-events", s.events, sum)
end

-- nothing left to happen: a clear error, not a hang
do
  local once = carlo.kmc{ states = 2, m = 8, n = 8, seed = 1, device = "gpu",
                          rates = function(x) if x == 0 then return { { 1, 1 } } end return {} end }
  check.raises("gpu/kmc/absorbing-state", function() once:run{ events = 100 } end,
    "no event can happen any more", "after 64 events")
  local t1 = once.t
  local path = check.tmp .. "/kmc-gpu-absorbing.ctr"
  local tr = carlo.trajectory(path, "w")
  once:run{ time = 2, every = 0.5, trajectory = tr }
  tr:close()
  tr = carlo.trajectory(path)
  check.ok("gpu/kmc/absorbing-state-frames", once.t == t1 + 2 and #tr >= 3 and once.events == 64,
    ("%d frames, t %g"):format(#tr, once.t))
  tr:close()
  -- a serial checkpoint loads on the CPU without being told
  local s = carlo.kmc{ model = "sos_growth", m = 16, n = 16, bond = 1, seed = 2, algorithm = "serial" }
  s:run{ time = 2 }
  s:save(path)
  check.eq("gpu/kmc/serial-checkpoint-on-cpu", carlo.load(path).device, "cpu")
end
