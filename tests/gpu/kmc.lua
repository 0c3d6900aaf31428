-- gpu/kmc: the GPU backend gives the CPU backend's trajectory bit for bit (states, clocks,
-- draw counters, t, and the same accepted and rejected steps), hence the serial method's;
-- for every model kind, halo and launch shape, for single steps, and across checkpoints.
local carlo = require "carlo"
local check = require "check"
local models = require "kmc_models"

if not check.gpu_or_skip("gpu/kmc/bitwise") then return end

local function same(name, a, b, steps)
  local sa, sb = a:snapshot{ clocks = true }, b:snapshot{ clocks = true }
  local bad = models.diff(sa, sb)
  local ta, tb = a:stats(), b:stats()
  local ok = bad == 0 and sa.t == sb.t and sa.events == sb.events
  if steps then
    ok = ok and ta.accepted == tb.accepted and ta.rejected == tb.rejected and ta.simulated == tb.simulated
  end
  return check.ok(name, ok, ("%d sites differ; t %.17g vs %.17g; events %d vs %d; steps %d/%d vs %d/%d")
    :format(bad, sa.t, sb.t, sa.events, sb.events, ta.accepted, ta.rejected, tb.accepted, tb.rejected))
end

-- the CPU system gets the GPU's halo (the defaults differ), so that the steps compare too
local function both(args)
  local a, b = {}, {}
  for k, v in pairs(args) do a[k] = v; b[k] = v end
  a.device, b.device = "gpu", "cpu"
  local g = carlo.kmc(a)
  b.halo = g.halo
  return g, carlo.kmc(b)
end

-- the GPU's defaults: halo 5 (1 without neighbour dependence), two tiles per block
do
  local g = carlo.kmc{ model = "sos_growth", m = 64, n = 64, phi = 2, seed = 1, device = "gpu" }
  local z = carlo.kmc{ model = "sos_growth", m = 64, n = 64, phi = 0, seed = 1, device = "gpu" }
  check.ok("gpu/kmc/defaults", g.halo == 5 and g.tiles_per_block == 2 and z.halo == 1,
    ("halo %d, tiles_per_block %d, phi = 0 halo %d"):format(g.halo, g.tiles_per_block, z.halo))
end

-- sos_growth at every phi, against the CPU backend and (for 64 x 64) the serial method
for _, phi in ipairs{ 0, 1, 2, 3 } do
  local g, c = both{ model = "sos_growth", m = 64, n = 64, phi = phi, seed = 5 }
  g:run{ events = 100000 }
  c:run{ events = 100000 }
  same("gpu/kmc/bitwise-phi" .. phi, g, c, true)
  local s = carlo.kmc{ model = "sos_growth", m = 64, n = 64, phi = phi, seed = 5, algorithm = "serial" }
  s:run{ time = g.t }
  same("gpu/kmc/equals-serial-phi" .. phi, g, s)
end

-- a larger lattice, several chunks (each run re-uploads the control state)
do
  local g, c = both{ model = "sos_growth", m = 512, n = 256, phi = 1, seed = 9 }
  for _ = 1, 3 do
    g:run{ time = 2 }
    c:run{ time = 2 }
  end
  same("gpu/kmc/bitwise-512x256", g, c, true)
end

-- every halo and launch shape (the cells an event touches on distinct lanes for each stride)
for _, halo in ipairs{ 1, 2, 3, 4, 5, 6, 7 } do
  local c = carlo.kmc{ model = "sos_growth", m = 64, n = 128, phi = 2, seed = 13, halo = halo, device = "cpu" }
  c:run{ events = 30000 }
  for _, tpb in ipairs{ 1, 3, 8 } do
    local g = carlo.kmc{ model = "sos_growth", m = 64, n = 128, phi = 2, seed = 13, halo = halo,
                         tiles_per_block = tpb, device = "gpu" }
    g:run{ events = 30000 }
    same(("gpu/kmc/bitwise-halo%d-tiles%d"):format(halo, tpb), g, c, true)
  end
end

-- user models: one event per configuration, several (the owner lane's choice), 8 neighbours
do
  local g, c = both{ states = 2, rates = models.glauber(0.4), m = 64, n = 64, seed = 3 }
  g:run{ events = 100000 }
  c:run{ events = 100000 }
  same("gpu/kmc/bitwise-glauber", g, c, true)
  g, c = both{ states = 3, neighbourhood = 8, rates = models.three_state(0.3), m = 32, n = 48, seed = 4,
               initial = 1, halo = 3 }
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
  local g, c = both{ model = "sos_growth", m = 8, n = 16, phi = 1, seed = 9, halo = 7 }
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
  local g, c = both{ model = "sos_growth", m = 64, n = 64, phi = 1, seed = 21 }
  g:run{ events = 50000 }
  c:run{ events = 50000 }
  local long = 30 * g.dt
  local before = g:snapshot{ clocks = true }
  local ga, ge, gm = g:try_step(long)
  local ca, ce, cm = c:try_step(long)
  check.ok("gpu/kmc/long-step-rejected", not ga and not gm and ga == ca and gm == cm and ge == ce
    and models.diff(g:snapshot{ clocks = true }, before) == 0,
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
end

-- checkpoints cross devices
do
  local path = check.tmp .. "/kmc-gpu.ckpt"
  local g = carlo.kmc{ model = "sos_growth", m = 128, n = 64, phi = 1, seed = 31, device = "gpu" }
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
  local s = carlo.kmc{ model = "sos_growth", m = m, n = n, phi = 0, k2 = k2, seed = 17, device = "gpu" }
  s:run{ time = t }
  local h = s:snapshot().state
  local N, lambda = m * n, k2 * t
  local sum, sum2 = 0, 0
  for i = 1, N do
    sum = sum + h[i]
    sum2 = sum2 + h[i] * h[i]
  end
  local mean, var = sum / N, (sum2 - sum * sum / N) / (N - 1)
  check.within("gpu/kmc/phi0-poisson-mean", mean, lambda, math.sqrt(lambda / N), 3.5)
  check.within("gpu/kmc/phi0-poisson-variance", var, lambda, math.sqrt((lambda + 2 * lambda ^ 2) / N), 3.5)
  check.eq("gpu/kmc/phi0-events", s.events, sum)
end

-- nothing left to happen: a clear error, not a hang
do
  local once = carlo.kmc{ states = 2, m = 8, n = 8, seed = 1, device = "gpu",
                          rates = function(x) if x == 0 then return { { 1, 1 } } end return {} end }
  check.raises("gpu/kmc/absorbing-state", function() once:run{ events = 100 } end,
    "no event can happen any more", "after 64 events")
end
