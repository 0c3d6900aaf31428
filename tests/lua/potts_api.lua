-- lua/potts/*, lua/core/*: the Potts API, reproducibility and bad input.
local carlo = require "carlo"
local check = require "check"
local tmp = check.tmp

local function new(t)
  local base = { L = 24, q = 9, T = 0.8, seed = 42, device = "cpu" }
  for k, v in pairs(t or {}) do base[k] = v end
  return carlo.potts(base)
end

-- Same seed, same state; thread count does not matter; sweep_color composes run.
do
  carlo.threads(2)
  local a = new(); a:run{ sweeps = 37 }
  carlo.threads(1)
  local b = new(); b:run{ sweeps = 37 }
  carlo.threads(2)
  check.ok("lua/potts/threads-independent", a:snapshot().state == b:snapshot().state)
  local c = new()
  for _ = 1, 37 do c:sweep_color(0); c:sweep_color(1) end
  check.ok("lua/potts/sweep-color-composes-run", a:snapshot().state == c:snapshot().state and c.step == 37)
  local d = new{ seed = 43 }; d:run{ sweeps = 37 }
  check.ok("lua/potts/seed-matters", a:snapshot().state ~= d:snapshot().state)
end

-- Save/load continues bit-identically (both algorithms), including the step count.
for _, algorithm in ipairs{ "metropolis", "heatbath" } do
  local ref = new{ algorithm = algorithm }; ref:run{ sweeps = 60 }
  local a = new{ algorithm = algorithm }; a:run{ sweeps = 30 }
  local path = tmp .. "/potts-" .. algorithm .. ".ckpt"
  a:save(path)
  local b = carlo.load(path)
  check.eq("lua/potts/load-step-" .. algorithm, b.step, 30)
  b:run{ sweeps = 30 }
  check.ok("lua/potts/save-load-bitwise-" .. algorithm, b:snapshot().state == ref:snapshot().state and b.step == 60)
  check.ok("lua/potts/load-keeps-parameters-" .. algorithm,
    b.L == 24 and b.q == 9 and b.T == 0.8 and b.seed == 42 and b.algorithm == algorithm)
end

-- run{ upto = } continues to an absolute step; a second call does nothing.
do
  local s = new()
  s:run{ upto = 25 }
  local r = s:run{ upto = 25 }
  check.ok("lua/potts/run-upto", s.step == 25 and r.sweeps == 0 and r.completed)
end

-- walltime: stops early, writes the checkpoint, reports it; the checkpoint resumes.
do
  local s = carlo.potts{ L = 256, q = 9, T = 0.8, seed = 1, device = "cpu" }
  local path = tmp .. "/walltime.ckpt"
  local t0 = carlo.clock()
  local r = s:run{ sweeps = 10000000, walltime = 1.0, checkpoint = path, quiet = true }
  local el = carlo.clock() - t0
  check.ok("lua/potts/walltime-stops-early", not r.completed and r.sweeps > 0 and el < 1.0,
           ("completed %s after %d sweeps in %.2f s"):format(tostring(r.completed), r.sweeps, el))
  local b = carlo.load(path)
  check.ok("lua/potts/walltime-checkpoint", b.step == s.step and b:snapshot().state == s:snapshot().state)
end

-- Ensembles: reproducible from the seed (lattices and the replica map), and saved/loaded.
do
  local function ens()
    local e = carlo.potts_ensemble{ L = 16, q = 3, temperatures = { 0.8, 0.9, 1.0, 1.1 }, seed = 5,
                                    device = "cpu" }
    e:run{ sweeps = 200, exchange_every = 2 }
    return e
  end
  local a, b = ens(), ens()
  local same = true
  for k = 1, 4 do same = same and a:snapshot(k).state == b:snapshot(k).state and a.map[k] == b.map[k] end
  check.ok("lua/potts/ensemble-reproducible", same)
  local moved = false
  for k = 1, 4 do moved = moved or a.map[k] ~= k end
  check.ok("lua/potts/ensemble-replicas-move", moved, "no replica ever changed temperature")
  local path = tmp .. "/ens.ckpt"
  a:save(path)
  a:run{ sweeps = 100, exchange_every = 2 }
  local c = carlo.load(path)
  c:run{ sweeps = 100, exchange_every = 2 }
  same = true
  for k = 1, 4 do same = same and a:snapshot(k).state == c:snapshot(k).state and a.map[k] == c.map[k] end
  check.ok("lua/potts/ensemble-save-load-bitwise", same)
  local t = a:tempering()
  check.ok("lua/potts/tempering-report", #t.acceptance == 3 and #t.round_trips == 4 and #t.map == 4)
  local obs = a:observe()
  check.ok("lua/potts/ensemble-observe-per-temperature", #obs == 4 and obs[3].T == 1.0)
end

-- Observables: an ordered start has e = -2, m = 1; sample carries mean/err/tau everywhere.
do
  local s = new{ init = "ordered" }
  local o = s:observe()
  check.ok("lua/potts/ordered-start", o.e == -2 and o.m == 1 and o.equal_bonds == 2 * 24 * 24)
  local r = s:sample{ sweeps = 200, every = 2 }
  local complete = true
  for _, k in ipairs{ "e", "m", "C", "chi", "V_L" } do
    complete = complete and type(r[k]) == "table" and r[k].mean and r[k].err and r[k].tau
  end
  check.ok("lua/potts/sample-fields", complete and r.samples == 100)
  local rs = s:sample{ sweeps = 20, every = 2, series = true }
  check.ok("lua/potts/sample-series", #rs.series.e == 10 and rs.series.e.type == "f64")
end

-- Snapshots and hand-made lattices.
do
  local s = new{ L = 8, q = 4 }
  local a = carlo.array("u8", { shape = { 8, 8 } })
  for i = 1, 64 do a[i] = (i - 1) % 4 end
  s:set_lattice(a)
  check.ok("lua/potts/set-lattice-roundtrip", s:snapshot().state == a)
  a[5] = 4
  check.raises("lua/potts/set-lattice-range", function() s:set_lattice(a) end, "element 5", "0 to 3")
  local png = tmp .. "/lattice.png"
  s:png(png, { scale = 4 })
  local f = io.open(png, "rb")
  local head = f and f:read(8)
  if f then f:close() end
  check.eq("lua/potts/png", head, "\137PNG\r\n\26\n")
end

-- Temperature changes take effect (T and beta both settable on a single system).
do
  local s = new()
  s.T = 2.0
  check.ok("lua/potts/set-T", math.abs(s.beta - 0.5) < 1e-15)
  s.beta = 4
  check.eq("lua/potts/set-beta", s.T, 0.25)
  check.raises("lua/potts/set-T-bad", function() s.T = -1 end, "T must be")
end

-- Bad input: every rejected parameter is named, with its range.
local bad = {
  { "L-odd", { L = 15, q = 3, T = 1 }, "L must be an even integer" },
  { "L-small", { L = 0, q = 3, T = 1 }, "L must be an integer from 2" },
  { "L-missing", { q = 3, T = 1 }, "L is required" },
  { "q-small", { L = 8, q = 1, T = 1 }, "q must be an integer from 2 to 255" },
  { "q-large", { L = 8, q = 300, T = 1 }, "q must be an integer from 2 to 255" },
  { "T-zero", { L = 8, q = 3, T = 0 }, "T must be" },
  { "T-negative", { L = 8, q = 3, T = -1 }, "T must be" },
  { "T-and-beta", { L = 8, q = 3, T = 1, beta = 1 }, "exactly one of T and beta" },
  { "no-T", { L = 8, q = 3 }, "exactly one of T and beta" },
  { "unknown-key", { L = 8, q = 3, T = 1, Lx = 4 }, "unknown key 'Lx'", "allowed: L, q, T" },
  { "init", { L = 8, q = 3, T = 1, init = "hot" }, "init must be one of", "random" },
  { "algorithm", { L = 8, q = 3, T = 1, algorithm = "wolff" }, "algorithm must be one of", "heatbath" },
  { "device", { L = 8, q = 3, T = 1, device = "tpu" }, "device must be one of" },
  { "seed-negative", { L = 8, q = 3, T = 1, seed = -1 }, "seed must be an integer" },
  { "seed-fraction", { L = 8, q = 3, T = 1, seed = 1.5 }, "seed must be an integer" },
}
for _, b in ipairs(bad) do
  check.raises("lua/potts/bad-" .. b[1], function() carlo.potts(b[2]) end, table.unpack(b, 3))
end
check.raises("lua/potts/bad-ensemble-order", function()
  carlo.potts_ensemble{ L = 8, q = 3, temperatures = { 1, 0.5, 2 } }
end, "strictly increasing or strictly decreasing")
check.raises("lua/potts/bad-ensemble-T", function()
  carlo.potts_ensemble{ L = 8, q = 3, temperatures = { 1, 0 } }
end, "temperatures[2]")
if not check.has_gpu() then
  check.raises("lua/potts/gpu-without-gpu-is-error", function()
    carlo.potts{ L = 8, q = 3, T = 1, device = "gpu" }
  end, "device = \"gpu\"")
end
do
  local s = new()
  check.raises("lua/potts/run-bad-key", function() s:run{ sweep = 10 } end, "unknown key 'sweep'")
  check.raises("lua/potts/run-both", function() s:run{ sweeps = 1, upto = 3 } end, "exactly one of sweeps")
  check.raises("lua/potts/run-negative", function() s:run{ sweeps = -1 } end, "sweeps must be an integer")
  check.raises("lua/potts/sample-every", function() s:sample{ sweeps = 10, every = 3 } end,
               "multiple of every")
  check.raises("lua/potts/sweep-color", function() s:sweep_color(2) end, "colour must be 0 or 1")
  check.raises("lua/potts/load-missing", function() carlo.load(tmp .. "/nope.ckpt") end, "nope.ckpt")
  s:close()
  check.raises("lua/potts/closed", function() s:run{ sweeps = 1 } end, "closed")
end
