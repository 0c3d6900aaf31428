-- lua/potts/*: the Potts model's physics on the CPU against exact results and the serial
-- reference. Error bars come from sys:sample's blocking analysis; fixed seeds.
local carlo = require "carlo"
local check = require "check"

-- Infinite temperature: neighbours are independent, so e = -2/q exactly. (Metropolis at
-- q = 2 always proposes the flip, so at beta -> 0 it flips every site every half-sweep and
-- never decorrelates: the heat bath covers q = 2.)
for _, q in ipairs{ 2, 5, 9, 96 } do
  for _, algorithm in ipairs{ "metropolis", "heatbath" } do
    if q > 2 or algorithm == "heatbath" then
      local s = carlo.potts{ L = 32, q = q, beta = 1e-9, seed = q, device = "cpu", algorithm = algorithm }
      s:run{ sweeps = 50 }
      local r = s:sample{ sweeps = 4000, every = 2 }
      check.within(("lua/potts/infinite-T-q%d-%s"):format(q, algorithm), r.e.mean, -2 / q, r.e.err, 3)
    end
  end
end

-- Onsager: q = 2 is Ising with J_I = 1/2, so e_Potts(T) = -1 + u_Ising(J = 1, T_I = 2T)/2 with
-- u = -coth(2K)[1 + (2/pi)(2 tanh^2(2K) - 1) K(k)], k = 2 sinh(2K)/cosh^2(2K), K = 1/T_I.
local function ellipk(k) -- complete elliptic integral of the first kind, by the AGM
  local a, b = 1, math.sqrt(1 - k * k)
  for _ = 1, 40 do a, b = (a + b) / 2, math.sqrt(a * b) end
  return math.pi / (2 * a)
end
local function onsager_potts_e(T)
  local K = 1 / (2 * T)
  local k = 2 * math.sinh(2 * K) / math.cosh(2 * K) ^ 2
  local u = -(math.cosh(2 * K) / math.sinh(2 * K)) *
            (1 + (2 / math.pi) * (2 * math.tanh(2 * K) ^ 2 - 1) * ellipk(k))
  return -1 + u / 2
end
local Tc2 = 1 / math.log(1 + math.sqrt(2))
for _, case in ipairs{ { f = 0.8, init = "ordered" }, { f = 1.5, init = "random" } } do
  for _, algorithm in ipairs{ "metropolis", "heatbath" } do
    local T = case.f * Tc2
    local s = carlo.potts{ L = 64, q = 2, T = T, seed = 11, init = case.start, device = "cpu",
                           algorithm = algorithm }
    s:run{ sweeps = 1000 }
    local r = s:sample{ sweeps = 20000, every = 4 }
    check.within(("lua/potts/onsager-%s-%.1fTc"):format(algorithm, case.f), r.e.mean,
                 onsager_potts_e(T), r.e.err, 3)
  end
end

-- The checkerboard (Metropolis and heat bath) against the serial random-site Metropolis
-- reference, away from Tc, q = 3 and 9, L = 16.
local function serial_reference(L, q, T, start, sweeps, every, seed)
  local s = carlo.potts{ L = L, q = q, T = T, seed = seed, init = start, device = "cpu" }
  local spins = s:snapshot().state
  local es = {}
  for t = 1, sweeps do
    carlo.reference.potts_sweep(spins, q, 1 / T, seed, t)
    if t % every == 0 then
      s:set_lattice(spins)
      es[#es + 1] = s:observe().e
    end
  end
  return carlo.stats(es)
end

for _, case in ipairs{ { q = 3, T = 0.7, init = "ordered" }, { q = 3, T = 1.4, init = "random" },
                       { q = 9, T = 0.6, init = "ordered" }, { q = 9, T = 1.0, init = "random" } } do
  local ref = serial_reference(16, case.q, case.T, case.start, 12000, 4, 77)
  for _, algorithm in ipairs{ "metropolis", "heatbath" } do
    local s = carlo.potts{ L = 16, q = case.q, T = case.T, seed = 5, init = case.start, device = "cpu",
                           algorithm = algorithm }
    s:run{ sweeps = 500 }
    local r = s:sample{ sweeps = 12000, every = 4 }
    check.agree(("lua/potts/vs-serial-q%d-T%.1f-%s"):format(case.q, case.T, algorithm),
                r.e.mean, r.e.err, ref.mean, ref.err, 3)
  end
end

-- Parallel tempering leaves each temperature's averages unchanged: q = 2, L = 16, four
-- temperatures around Tc, compared with independent single-temperature runs.
local temps = { 0.9, 1.05, 1.2, 1.4 }
local ens = carlo.potts_ensemble{ L = 16, q = 2, temperatures = temps, seed = 3, device = "cpu" }
ens:run{ sweeps = 500, exchange_every = 5 }
local pt = ens:sample{ sweeps = 20000, every = 5, exchange_every = 5 }
local stats = ens:tempering()
check.ok("lua/potts/tempering-swaps-happen", stats.acceptance[1] > 0.05 and stats.exchanges > 0,
         ("acceptance %s, %d exchanges"):format(tostring(stats.acceptance[1]), stats.exchanges))
for k, T in ipairs(temps) do
  local s = carlo.potts{ L = 16, q = 2, T = T, seed = 100 + k, device = "cpu" }
  s:run{ sweeps = 500 }
  local r = s:sample{ sweeps = 20000, every = 5 }
  check.agree(("lua/potts/tempering-T%.2f"):format(T), pt[k].e.mean, pt[k].e.err, r.e.mean, r.e.err, 3)
end
