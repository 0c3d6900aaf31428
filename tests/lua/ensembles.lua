-- lua/ensembles/*: carlo.ensemble (replicas of any model, exchanges over a control, restart bit
-- for bit) and carlo.population_annealing (ln Z of the q = 2 Potts model against the exact
-- finite-torus value of Kaufman 1949).
local carlo = require "carlo"
local check = require "check"
local exact = require "ising_exact"
local tmp = check.tmp

local function potts_ensemble(seed)
  return carlo.ensemble{ model = "potts", args = { L = 16, q = 3, algorithm = "heatbath" }, seed = seed,
                         controls = { T = { 0.9, 0.95, 1.0, 1.05, 1.1 } }, device = "cpu" }
end

local function same(a, b)
  local ok = a.exchanges == b.exchanges
  for k = 1, a.replicas do
    ok = ok and a.slot[k] == b.slot[k] and a:system(k):snapshot().state == b:system(k):snapshot().state
      and a:system(k).T == b:system(k).T
  end
  return ok
end

do
  local a, b = potts_ensemble(3), potts_ensemble(3)
  a:run{ sweeps = 200, exchange_every = 5 }
  b:run{ sweeps = 200, exchange_every = 5 }
  check.ok("lua/ensembles/reproducible", same(a, b))
  local t = a:tempering()
  local moved = false
  for k = 1, 5 do moved = moved or t.map[k] ~= k end
  check.ok("lua/ensembles/exchanges-happen", #t.acceptance == 4 and t.acceptance[1] > 0 and moved and
    t.exchanges == 40, table.concat(t.acceptance, " "))
  local path = tmp .. "/ens.state"
  a:save(path)
  a:run{ sweeps = 100, exchange_every = 5 }
  local c = carlo.load_ensemble(path)
  c:run{ sweeps = 100, exchange_every = 5 }
  check.ok("lua/ensembles/save-load-bitwise", same(a, c))
  -- the per-temperature energies of the ensemble agree with independent runs
  local per = a:sample{ sweeps = 6000, every = 2, exchange_every = 5 }
  local all = true
  for k, T in ipairs { 0.9, 1.0, 1.1 } do
    local kk = 2 * k - 1
    local s = carlo.potts{ L = 16, q = 3, T = T, seed = 40 + k, algorithm = "heatbath", device = "cpu" }
    s:run{ sweeps = 500 }
    local r = s:sample{ sweeps = 12000, every = 2 }
    all = check.agree(("lua/ensembles/matches-canonical-T%.2f"):format(T), per[kk].e.mean, per[kk].e.err,
      r.e.mean, r.e.err, 4) and all
  end
  check.raises("lua/ensembles/unknown-model", function() carlo.ensemble{ model = "ising", seed = 1,
    controls = { T = { 1 } } } end, "model must be one of")
  check.raises("lua/ensembles/args-own-control", function() carlo.ensemble{ model = "potts", seed = 1,
    args = { L = 8, q = 2, T = 1 }, controls = { T = { 1, 2 } } } end, "must not set seed or T")
end

-- population annealing: ln Z(beta) of the L = 16 Ising torus (q = 2 Potts), five independent
-- populations for the error bar
do
  local L = 16
  local betas = carlo.ladder{ from = 0, to = 0.9, n = 31 }
  local runs = {}
  for run = 1, 5 do
    runs[run] = carlo.population_annealing{ model = "potts", args = { L = L, q = 2, algorithm = "heatbath" },
      seed = 100 + run, size = 60, beta = betas, sweeps = 5, lnZ0 = L * L * math.log(2), device = "cpu",
      quiet = true }
  end
  local ok_all = true
  for _, k in ipairs { 11, 21, 31 } do
    local beta = betas[k]
    local sum, sum2 = 0, 0
    for run = 1, 5 do
      local v = runs[run][k].lnZ
      sum, sum2 = sum + v, sum2 + v * v
    end
    local mean = sum / 5
    local err = math.sqrt(math.max(sum2 / 5 - mean * mean, 0) / 4)
    ok_all = check.within(("lua/ensembles/population-annealing-lnZ-beta%.2f"):format(beta), mean,
      exact.lnZ_potts2(beta, L), math.max(err, 1e-9), 4) and ok_all
  end
  local last = runs[1][#runs[1]]
  check.ok("lua/ensembles/population-annealing-report", last.family_entropy > 0 and last.effective_size > 1
    and last.effective_size <= 60 and last.betaF == -last.lnZ)
end
