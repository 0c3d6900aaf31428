-- lua/lj/low-density-*: at rho = 0.005 (T = 0.85, rc = 2.5, tail corrections) the pressure
-- follows the second virial coefficient (the B3 term, about 1e-7, is far below the error),
-- and Widom insertions next to two fixed particles average to the exact integral. The expectations are integrals of the potential
-- done here (Simpson), the tolerances three combined error bars from blocking.
local carlo = require "carlo"
local check = require "check"

local T, rho, rc, N = 0.85, 0.005, 2.5, 500
local beta = 1 / T

local function u(r) local s6 = r ^ -6; return 4 * (s6 * s6 - s6) end
local function w(r) local s6 = r ^ -6; return 24 * (2 * s6 * s6 - s6) end -- -r u'(r)

local function simpson(f, a, b, n)
  local h, s = (b - a) / n, f(a) + f(b)
  for k = 1, n - 1 do s = s + (k % 2 == 1 and 4 or 2) * f(a + k * h) end
  return s * h / 3
end

-- exp(-beta u) vanishes below r = 0.5 to double precision
local boltz = function(r) return math.exp(-beta * u(r)) end
local Iw = simpson(function(r) return w(r) * boltz(r) * 4 * math.pi * r * r end, 0.5, rc, 20000)
local Im = simpson(function(r) return (boltz(r) - 1) * 4 * math.pi * r * r end, 1e-9, rc, 200000)

local s = carlo.lj{ N = N, rho = rho, T = T, rc = rc, seed = 17, init = "random", device = "cpu" }
s:tune{ sweeps = 200, target = 0.5 }
s:run{ sweeps = 500 }
local r = s:sample{ sweeps = 12000, every = 2 }

-- pair density N(N-1)/V^2 = rho^2 (N-1)/N; the tail terms are the ones carlo adds
local pair = rho * rho * (N - 1) / N
local P_expect = rho * T + pair * Iw / 6 + s.tail_pressure
check.within("lua/lj/low-density-pressure-b2", r.P.mean, P_expect, r.P.err, 3)
-- the virial term is what is being tested: it must stand out of the noise
check.ok("lua/lj/low-density-b2-resolved", math.abs(pair * Iw / 6) > 20 * r.P.err,
  ("B2 term %g, error %g"):format(pair * Iw / 6, r.P.err))

-- Widom: two particles far apart in a box of volume V; a test particle at a uniform position
-- sees one of them at most, so <exp(-beta dU)> = exp(-beta tail) (1 + 2 Im / V) exactly
local L = 12
local pos = carlo.array("f64", { shape = { 2, 3 } })
pos[1], pos[2], pos[3], pos[4], pos[5], pos[6] = 1, 1, 1, 7, 7, 7
local two = carlo.lj{ init = { position = pos, box = { L, L, L } }, T = T, rc = rc, seed = 3,
                      device = "cpu" }
local sum, sum2, batches = 0, 0, 200
for _ = 1, batches do
  local b = two:widom(5000).boltzmann
  sum, sum2 = sum + b, sum2 + b * b
end
local mean = sum / batches
local err = math.sqrt((sum2 / batches - mean * mean) / (batches - 1))
-- tail energy of the inserted particle: coefficient (2N + 1) / V with N = 2
local tail = 8 / 3 * math.pi * (rc ^ -9 / 3 - rc ^ -3) * 5 / L ^ 3
check.within("lua/lj/widom-two-particles", mean, math.exp(-beta * tail) * (1 + 2 * Im / L ^ 3), err, 3)
