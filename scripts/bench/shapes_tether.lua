-- scripts/bench/shapes_tether.lua — GPU moves per second with one CPU thread's in the same run:
--   fl:     hard spheres N = 4000 at rho = 1.0409, untethered and along a 12-node Frenkel-Ladd
--           lambda ladder (Gauss-Legendre in ln(lambda + 1), lambda up to 2e4);
--   shapes: pentagons N = 2^20 at phi = 0.676 and dodecahedra N = 2^20 compressed to phi = 0.5,
--           with the launch the tuner chose, then under every launch fixed by hand.
--   fl_ensemble: the 12-node ladder advanced together (carlo.advance) against 12 untethered systems;
--   npt:    NPT pentagons (N = 2^16 and 2^18 on the GPU, 4096 on one CPU thread), milliseconds a
--           sweep with its volume move, and the NVT sweep of the same system.
-- Timing: 0.3 s of warm-up, then the median of repeats, each ended by a sync; moves counted by
-- the systems' own counters.
--   build/carlo scripts/bench.lua shapes_tether [fl|fl_ensemble|shapes|npt]
local carlo = require "carlo"
carlo.quiet(true)
if #carlo.devices().gpus == 0 then print("no GPU: this benchmark needs one"); return end
local function median(t) table.sort(t); return t[(#t + 1) // 2] end
local function rate(sys, sweeps, reps)
  local w0 = carlo.clock()
  repeat sys:run{ sweeps = math.max(1, sweeps // 4) }; sys:sync() until carlo.clock() - w0 > 0.3
  local r = {}
  for _ = 1, reps do
    local before = sys:observe{ pressure = false }.tried
    sys:sync()
    local t0 = carlo.clock()
    sys:run{ sweeps = sweeps }
    sys:sync()
    r[#r + 1] = (sys:observe{ pressure = false }.tried - before) / (carlo.clock() - t0)
  end
  return median(r)
end
-- the rate of sys under each launch of the list, fixed by hand (sys:launch), as one line
local function by_launch(sys, sweeps, launches)
  local out = {}
  for _, la in ipairs(launches) do
    sys:launch(la)
    out[#out + 1] = ("team %d%s %.3e"):format(la.team, la.capped and " capped" or "", rate(sys, sweeps, 3))
  end
  return table.concat(out, ", ")
end
local which = ... or "all"
if which == "all" or which == "fl" then
  local function spheres(dev) return carlo.hard_spheres{ N = 4000, phi = math.pi / 6 * 1.0409, init = "fcc", seed = 1, device = dev, quiet = true } end
  local s = spheres("gpu")
  local free = rate(s, 400, 5)
  local lad = carlo.gauss_legendre{ from = math.log(1), to = math.log(20001), n = 12 }
  local rates = {}
  for k = 1, #lad do
    s.lambda = math.exp(lad[k]) - 1
    rates[k] = rate(s, 400, 3)
  end
  table.sort(rates)
  carlo.threads(1)
  local c = spheres("cpu")
  local cfree = rate(c, 20, 3)
  c.lambda = 100
  local cteth = rate(c, 20, 3)
  carlo.threads("auto")
  print(("spheres N = 4000, rho = 1.0409: GPU untethered %.3e moves/s; tethered over the 12-node ladder min %.3e, median %.3e, max %.3e (min/untethered %.2f); one CPU thread %.3e untethered, %.3e at lambda = 100")
    :format(free, rates[1], rates[7], rates[12], rates[1] / free, cfree, cteth))
end
if which == "all" or which == "fl_ensemble" then
  -- the ladder as the workflow runs it: its 12 nodes advanced together (carlo.advance), against
  -- 12 untethered systems advanced together
  local lad = carlo.gauss_legendre{ from = math.log(1), to = math.log(20001), n = 12 }
  local function group(tethered)
    local sys = {}
    for k = 1, #lad do
      sys[k] = carlo.hard_spheres{ N = 4000, phi = math.pi / 6 * 1.0409, init = "fcc", seed = k, device = "gpu", quiet = true }
      if tethered then sys[k].lambda = math.exp(lad[k]) - 1 end
    end
    return sys
  end
  local function tried(sys)
    local t = 0
    for _, s in ipairs(sys) do t = t + s:observe{ pressure = false }.tried end
    return t
  end
  local function grate(sys, sweeps, reps)
    local w0 = carlo.clock()
    repeat carlo.advance(sys, math.max(1, sweeps // 4)) until carlo.clock() - w0 > 0.3
    local r = {}
    for _ = 1, reps do
      local before = tried(sys)
      local t0 = carlo.clock()
      carlo.advance(sys, sweeps)
      for _, s in ipairs(sys) do s:sync() end
      r[#r + 1] = (tried(sys) - before) / (carlo.clock() - t0)
    end
    return median(r)
  end
  local free, teth = {}, {}
  for round = 1, 2 do -- alternately, twice
    local f = group(false); free[round] = grate(f, 400, 3); for _, s in ipairs(f) do s:close() end
    local t = group(true); teth[round] = grate(t, 400, 3); for _, s in ipairs(t) do s:close() end
  end
  print(("spheres N = 4000, 12 systems advanced together: untethered %.3e, %.3e moves/s; the 12-node ladder %.3e, %.3e (ratio %.2f, %.2f)")
    :format(free[1], free[2], teth[1], teth[2], teth[1] / free[1], teth[2] / free[2]))
end
if which == "all" or which == "shapes" then
  local p = carlo.hard_polygons{ vertices = carlo.shapes.pentagon.vertices, N = 1048576, phi = 0.676, init = "hex", seed = 1, device = "gpu", quiet = true }
  local pr = rate(p, 20, 5)
  print(("pentagons 2^20, phi = 0.676: GPU %.3e moves/s (delta %.3g, acceptance %.2f; tuned launch: team %d)"):format(pr,
    p.delta, p:observe{ pressure = false }.acceptance, p:launch().team))
  print("pentagons 2^20 by launch: " .. by_launch(p, 20, { { team = 1 }, { team = 2 }, { team = 4 }, { team = 8 } }))
  p:close()
  carlo.threads(1)
  local pc = carlo.hard_polygons{ vertices = carlo.shapes.pentagon.vertices, N = 16384, phi = 0.676, init = "hex", seed = 1, device = "cpu", quiet = true }
  local pcr = rate(pc, 5, 3)
  carlo.threads("auto")
  print(("pentagons 16384, one CPU thread: %.3e moves/s; GPU / CPU %.0f"):format(pcr, pr / pcr))
  -- dodecahedra: 1024 compressed from their bcc crystal at phi = 0.45 to 0.5 on the CPU (timed
  -- there with one thread), then that configuration repeated 8 x 8 x 16 times: 2^20 at phi = 0.5
  local dod = carlo.shapes.dodecahedron.vertices
  carlo.threads(1)
  local dc = carlo.hard_polyhedra{ vertices = dod, N = 2 * 8 ^ 3, phi = 0.45, init = "bcc", seed = 1, device = "cpu", quiet = true }
  local ok, err = pcall(function() dc:compress{ phi = 0.5 } end)
  local dcr = rate(dc, 2, 3)
  carlo.threads("auto")
  local snap = dc:snapshot()
  local P, O = snap.position:totable(), snap.orientation:totable()
  local L = snap.box
  local pos, ori = {}, {}
  for a = 0, 7 do for b = 0, 7 do for c = 0, 15 do
    for k = 1, #P do
      local r = P[k]
      local function wrap(x, l) return (x + l / 2) % l - l / 2 end
      pos[#pos + 1] = { wrap(r[1] + a * L[1], 8 * L[1]), wrap(r[2] + b * L[2], 8 * L[2]), wrap(r[3] + c * L[3], 16 * L[3]) }
      ori[#ori + 1] = O[k]
    end
  end end end
  local d = carlo.hard_polyhedra{ vertices = dod, init = { position = pos, orientation = ori, box = { 8 * L[1], 8 * L[2], 16 * L[3] } },
                                  delta = dc.delta, rotate = dc.rotate, seed = 1, device = "gpu", quiet = true }
  local dr = rate(d, 10, 5)
  local dl = d:launch()
  print(("dodecahedra 2^20, phi = %.3f%s: GPU %.3e moves/s (delta %.3g, rotate %.3g; tuned launch: team %d%s)"):format(d.phi,
    ok and "" or " (compress failed: " .. tostring(err) .. ")", dr, d.delta, d.rotate, dl.team, dl.capped and " capped" or ""))
  print("dodecahedra 2^20 by launch: " .. by_launch(d, 10, { { team = 1 }, { team = 2 }, { team = 4 }, { team = 8 },
    { team = 4, capped = true }, { team = 8, capped = true } }))
  d:close()
  print(("dodecahedra 1024, one CPU thread, phi = %.3f: %.3e moves/s; GPU / CPU %.0f"):format(dc.phi, dcr, dr / dcr))
end
if which == "all" or which == "npt" then
  -- NPT pentagons at beta P = 6 from a hex start at phi = 0.6: the time of a sweep with its one
  -- volume move (the cells scaled, re-cut and checked where they live), the same system's NVT
  -- sweep beside it, and one CPU thread's NPT sweep of N = 4096
  local pent = carlo.shapes.pentagon.vertices
  local function sweep_ms(sys, sweeps)
    sys:run{ sweeps = 5 }
    sys:sync()
    local r = {}
    for _ = 1, 3 do
      local t0 = carlo.clock()
      sys:run{ sweeps = sweeps }
      sys:sync()
      r[#r + 1] = (carlo.clock() - t0) / sweeps * 1e3
    end
    return median(r)
  end
  local function pentagons(N, dev)
    return carlo.hard_polygons{ vertices = pent, N = N, phi = 0.6, init = "hex", seed = 3, device = dev, pressure = 6,
                                quiet = true }
  end
  for _, N in ipairs{ 65536, 262144 } do
    local s = pentagons(N, "gpu")
    local npt = sweep_ms(s, 20)
    local acc = s:observe().volume_acceptance
    s.pressure = nil
    local nvt = sweep_ms(s, 20)
    s:close()
    print(("pentagons N = %d, beta P = 6: GPU %.3f ms a sweep with its volume move (acceptance %.2f), %.3f ms NVT")
      :format(N, npt, acc, nvt))
  end
  carlo.threads(1)
  local c = pentagons(4096, "cpu")
  print(("pentagons N = 4096, beta P = 6, one CPU thread: %.3f ms a sweep with its volume move"):format(sweep_ms(c, 3)))
  carlo.threads("auto")
end
