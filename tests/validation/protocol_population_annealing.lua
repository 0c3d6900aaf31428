-- validate/protocol/population-annealing-*: carlo.population_annealing of the q = 2 Potts model
-- (the Ising model with J_Ising = 1/2) on the 32 x 32 torus gives ln Z(beta) within its error
-- bars of Kaufman's exact finite-torus partition function (tests/lib/ising_exact.lua), at
-- beta = 0.3, 0.6, 0.8814 (beta_c) and 1.0. Ten independent populations of 100 replicas along
-- 81 betas from 0 (ln Z0 = N ln 2), 5 heat-bath sweeps per beta; the error of the mean of the
-- ten ln Z, compared within 4 of those errors. A few minutes on one CPU core.
local carlo = require "carlo"
local check = require "check"
local exact = require "ising_exact"

local L, runs, size = 32, 10, 100
local betas = carlo.ladder{ from = 0, to = 1.0, n = 81 }
local at = {}
for _, b in ipairs{ 0.3, 0.6, math.log(1 + math.sqrt(2)), 1.0 } do
  local best = 1
  for k = 2, #betas do if math.abs(betas[k] - b) < math.abs(betas[best] - b) then best = k end end
  at[#at + 1] = best
end
local res = {}
for run = 1, runs do
  res[run] = carlo.population_annealing{ model = "potts", args = { L = L, q = 2, algorithm = "heatbath" },
    seed = 3000 + run, size = size, beta = betas, sweeps = 5, lnZ0 = L * L * math.log(2), device = "cpu",
    quiet = true }
end
for _, k in ipairs(at) do
  local beta = betas[k]
  local sum, sum2 = 0, 0
  for run = 1, runs do
    local v = res[run][k].lnZ
    sum, sum2 = sum + v, sum2 + v * v
  end
  local mean = sum / runs
  local err = math.sqrt(math.max(sum2 / runs - mean * mean, 0) / (runs - 1))
  local want = exact.lnZ_potts2(beta, L)
  check.within(("validate/protocol/population-annealing-lnZ-beta%.4f"):format(beta), mean, want,
    math.max(err, 1e-12), 4)
  print(("# beta = %.4f: ln Z %.5f +- %.5f, exact %.5f (%.2f errors)"):format(beta, mean, err, want,
    math.abs(mean - want) / err))
end
local last = res[1][#res[1]]
-- the families of the initial replicas: at beta = 1 one may hold the whole population
check.ok("validate/protocol/population-annealing-report", last.family_entropy >= 0 and last.effective_size >= 1
  and last.effective_size <= size and last.betaF == -last.lnZ and #res[1] == #betas,
  ("family entropy %g, effective size %g, %d rows"):format(last.family_entropy, last.effective_size, #res[1]))
