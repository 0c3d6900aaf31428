-- validate/potts_wl/*: Wang-Landau for q = 2 on the 32 x 32 torus (E from -2048 to 0, 1023
-- levels) in 8 windows of 4 walkers, final ln f = 1e-5, six seeds: ln Z, the energy and the
-- heat capacity per site against Kaufman's exact partition function (energy and C from its
-- derivatives), the mean over seeds within 4 standard errors of the seeds' spread; the ground
-- state's degeneracy ln g(-2N) = ln 2. About 4e8 trial moves a seed: minutes on two CPU cores.
local carlo = require "carlo"
local check = require "check"
local exact = require "ising_exact"

local L, N, seeds = 32, 1024, 6
local runs = {}
for seed = 1, seeds do
  runs[seed] = carlo.wang_landau{ L = L, q = 2, windows = 8, walkers = 4, final = 1e-5,
                                  seed = 3200 + seed, device = "cpu" }
end

local function mean_se(x)
  local n, s, s2 = #x, 0, 0
  for _, v in ipairs(x) do s = s + v end
  local m = s / n
  for _, v in ipairs(x) do s2 = s2 + (v - m) ^ 2 end
  return m, math.sqrt(s2 / (n - 1) / n)
end

local function lnZ(beta) return exact.lnZ_potts2(beta, L) end
local h = 1e-4
for _, beta in ipairs{ 0.4, 0.8, 0.8814, 0.95, 1.4 } do
  local e = -(lnZ(beta + h) - lnZ(beta - h)) / (2 * h) / N
  local c = beta * beta * (lnZ(beta + h) - 2 * lnZ(beta) + lnZ(beta - h)) / (h * h) / N
  local dz, de, dc = {}, {}, {}
  for _, r in ipairs(runs) do
    dz[#dz + 1] = r:lnZ(beta) - lnZ(beta)
    de[#de + 1] = r:energy(beta) - e
    dc[#dc + 1] = r:heat_capacity(beta) - c
  end
  for name, x in pairs{ lnZ = dz, energy = de, C = dc } do
    local m, se = mean_se(x)
    check.within(("validate/potts_wl/%s_L32_beta%g"):format(name, beta), m, 0, se, 4)
  end
end
local g0 = {}
for _, r in ipairs(runs) do g0[#g0 + 1] = r.lng[1] - math.log(2) end
local m, se = mean_se(g0)
check.within("validate/potts_wl/ground_L32", m, 0, se, 4)
