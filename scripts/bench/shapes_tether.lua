-- scripts/bench/shapes_tether.lua — GPU moves per second with one CPU thread's in the same run:
--   fl:     hard spheres N = 4000 at rho = 1.0409, untethered and along a 12-node Frenkel-Ladd
--           lambda ladder (Gauss-Legendre in ln(lambda + 1), lambda up to 2e4);
--   shapes: pentagons N = 2^20 at phi = 0.676 and dodecahedra N = 2^19 compressed to phi = 0.5.
-- Timing: 0.3 s of warm-up, then the median of repeats, each ended by a sync; moves counted by
-- the systems' own counters.
--   build/carlo scripts/bench.lua shapes_tether [fl|shapes]
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
if which == "all" or which == "shapes" then
  local p = carlo.hard_polygons{ vertices = carlo.shapes.pentagon.vertices, N = 1048576, phi = 0.676, init = "hex", seed = 1, device = "gpu", quiet = true }
  local pr = rate(p, 20, 5)
  print(("pentagons 2^20, phi = 0.676: GPU %.3e moves/s (delta %.3g, acceptance %.2f)"):format(pr, p.delta, p:observe{ pressure = false }.acceptance))
  p:close()
  carlo.threads(1)
  local pc = carlo.hard_polygons{ vertices = carlo.shapes.pentagon.vertices, N = 16384, phi = 0.676, init = "hex", seed = 1, device = "cpu", quiet = true }
  local pcr = rate(pc, 5, 3)
  carlo.threads("auto")
  print(("pentagons 16384, one CPU thread: %.3e moves/s; GPU / CPU %.0f"):format(pcr, pr / pcr))
  local d = carlo.hard_polyhedra{ vertices = carlo.shapes.dodecahedron.vertices, N = 2 * 64 ^ 3, phi = 0.45, init = "bcc", seed = 1, device = "gpu", quiet = true }
  local ok, err = pcall(function() d:compress{ phi = 0.5 } end)
  local dr = rate(d, 10, 5)
  print(("dodecahedra 2^19 (bcc), phi = %.3f%s: GPU %.3e moves/s"):format(d.phi, ok and "" or " (compress failed: " .. tostring(err) .. ")", dr))
  d:close()
  carlo.threads(1)
  local dc = carlo.hard_polyhedra{ vertices = carlo.shapes.dodecahedron.vertices, N = 2 * 16 ^ 3, phi = 0.45, init = "bcc", seed = 1, device = "cpu", quiet = true }
  pcall(function() dc:compress{ phi = 0.5 } end)
  local dcr = rate(dc, 2, 3)
  carlo.threads("auto")
  print(("dodecahedra 8192, one CPU thread, phi = %.3f: %.3e moves/s; GPU / CPU %.0f"):format(dc.phi, dcr, dr / dcr))
end
