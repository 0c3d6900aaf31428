-- gpu/potts/*: the GPU backend against the CPU backend, bit for bit.
local carlo = require "carlo"
local check = require "check"
if not check.gpu_or_skip("gpu/potts/bitwise") then return end

local function pair(t)
  local a, b = {}, {}
  for k, v in pairs(t) do a[k] = v; b[k] = v end
  a.device, b.device = "cpu", "gpu"
  return (t.temperatures and carlo.potts_ensemble or carlo.potts)(a),
         (t.temperatures and carlo.potts_ensemble or carlo.potts)(b)
end

-- L chosen to exercise every vector width of the kernel: L/2 = 48 (16 sites a thread),
-- 100 (4), 68 (4), 50 (2), 25 (1), 2 (1); and a power of two.
for _, q in ipairs{ 2, 9, 96 } do
  for _, L in ipairs{ 96, 200, 136, 100, 50, 4, 256 } do
    for _, algorithm in ipairs{ "metropolis", "heatbath" } do
      local c, g = pair{ L = L, q = q, T = 0.7, seed = 1000 + L + q, algorithm = algorithm }
      c:run{ sweeps = 100 }
      g:run{ sweeps = 100 }
      local name = ("gpu/potts/bitwise-q%d-L%d-%s"):format(q, L, algorithm)
      local same = c:snapshot().state == g:snapshot().state
      local oc, og = c:observe(), g:observe()
      check.ok(name, same and oc.equal_bonds == og.equal_bonds and oc.nmax == og.nmax,
               ("lattices %s, e %g vs %g"):format(same and "equal" or "differ", oc.e, og.e))
    end
  end
end

-- Ensembles with parallel tempering: same lattices and the same replica map.
for _, algorithm in ipairs{ "metropolis", "heatbath" } do
  local c, g = pair{ L = 64, q = 9, temperatures = { 0.68, 0.70, 0.72, 0.74, 0.76 }, seed = 9,
                     algorithm = algorithm }
  c:run{ sweeps = 100, exchange_every = 5 }
  g:run{ sweeps = 100, exchange_every = 5 }
  local same = true
  for k = 1, 5 do same = same and c:snapshot(k).state == g:snapshot(k).state and c.map[k] == g.map[k] end
  check.ok("gpu/potts/ensemble-bitwise-" .. algorithm, same)
end

-- Samples agree number for number; a GPU checkpoint continues on the CPU bit for bit.
do
  local c, g = pair{ L = 128, q = 9, T = 0.72, seed = 4 }
  local rc, rg = c:sample{ sweeps = 200, every = 10 }, g:sample{ sweeps = 200, every = 10 }
  check.ok("gpu/potts/sample-identical", rc.e.mean == rg.e.mean and rc.C.mean == rg.C.mean)
  local path = check.tmp .. "/gpu.ckpt"
  g:save(path)
  local back = carlo.load(path, { device = "cpu" })
  back:run{ sweeps = 50 }
  c:run{ sweeps = 50 }
  check.ok("gpu/potts/gpu-checkpoint-on-cpu", back:snapshot().state == c:snapshot().state and back.step == c.step)
end

-- Out of memory is an error that names the size, and the process carries on.
do
  local ok, err = pcall(carlo.potts_ensemble, { L = 65536, q = 9, temperatures = { 1, 2, 3, 4, 5, 6, 7, 8,
    9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32,
    33, 34, 35, 36, 37, 38, 39, 40 }, seed = 1, device = "gpu", init = "ordered" })
  check.ok("gpu/potts/out-of-memory", not ok and tostring(err):find("out of GPU memory", 1, true) and
           tostring(err):find("GiB", 1, true), tostring(err))
  local s = carlo.potts{ L = 64, q = 3, T = 1, seed = 1, device = "gpu" }
  s:run{ sweeps = 10 }
  check.eq("gpu/potts/usable-after-oom", s.step, 10)
end
