-- validate/kmc: longer statistical checks of the tiled scheme (make validate).
--  * bond = 0: the whole height distribution is Poisson(k2 t) (chi-square over the bins);
--  * bond = 1, 2, 3: the tiled scheme and BKL agree on the growth rate and the width (means
--    over independent runs from flat starts, errors from their scatter);
--  * the user-model path satisfies detailed balance: Glauber dynamics of the Ising model at
--    beta = 0.3 reaches Onsager's exact energy (tiled and BKL, blocking errors).
local carlo = require "carlo"
local check = require "check"

carlo.threads(math.max(1, carlo.devices().cpu.threads))
local device = check.has_gpu() and "gpu" or "cpu"

-- ---------- random deposition: the height distribution ----------
do
  local L, lambda = 256, 50
  local s = carlo.kmc{ model = "sos_growth", m = L, n = L, bond = 0, k2 = 2, seed = 77, device = device }
  s:run{ time = lambda / 2 }
  local h = s:snapshot().state
  local count = {}
  for i = 1, #h do count[h[i]] = (count[h[i]] or 0) + 1 end
  -- bins: k = 0 .. lambda - 15 merged, single values up to lambda + 15, the rest merged
  local N, lo, hi = L * L, lambda - 15, lambda + 15
  local function pmf(k) return math.exp(k * math.log(lambda) - lambda - (k > 0 and select(1, (function()
    local s2 = 0
    for j = 2, k do s2 = s2 + math.log(j) end
    return s2
  end)()) or 0)) end
  local chi2, bins, plow, phigh = 0, 0, 0, 0
  local olow, ohigh = 0, 0
  for k = 0, lo - 1 do plow = plow + pmf(k); olow = olow + (count[k] or 0) end
  for k, c in pairs(count) do if k > hi then ohigh = ohigh + c end end
  phigh = 1 - plow
  for k = lo, hi do
    local e = N * pmf(k)
    chi2 = chi2 + ((count[k] or 0) - e) ^ 2 / e
    bins = bins + 1
    phigh = phigh - pmf(k)
  end
  chi2 = chi2 + (olow - N * plow) ^ 2 / (N * plow) + (ohigh - N * phigh) ^ 2 / (N * phigh)
  bins = bins + 2
  -- chi-square with bins - 1 degrees of freedom: mean bins - 1, sd sqrt(2 (bins - 1))
  local dof = bins - 1
  check.ok("validate/kmc/bond0-poisson-distribution", math.abs(chi2 - dof) < 4 * math.sqrt(2 * dof),
    ("chi2 = %.1f for %d degrees of freedom"):format(chi2, dof))
end

-- ---------- tiled against BKL ----------
local function mean_err(x)
  local m, q = 0, 0
  for _, y in ipairs(x) do m = m + y end
  m = m / #x
  for _, y in ipairs(x) do q = q + (y - m) ^ 2 end
  return m, math.sqrt(q / (#x - 1) / #x)
end

for _, case in ipairs{ { bond = 1, T0 = 30, T1 = 230 }, { bond = 2, T0 = 300, T1 = 2300 },
                       { bond = 3, T0 = 3000, T1 = 23000 } } do
  local R, L = 40, 48
  local res = {}
  for _, alg in ipairs{ "tiled", "bkl" } do
    local v, w = {}, {}
    for r = 1, R do
      local s = carlo.kmc{ model = "sos_growth", m = L, n = L, bond = case.bond, algorithm = alg,
                           seed = (alg == "bkl" and 100000 or 200000) + 1000 * case.bond + r,
                           device = alg == "tiled" and device or nil }
      s:run{ time = case.T0 }
      local h0 = s:observe().mean
      s:run{ time = case.T1 - case.T0 }
      local o = s:observe()
      v[r] = (o.mean - h0) / (case.T1 - case.T0)
      w[r] = o.width
    end
    local vm, ve = mean_err(v)
    local wm, we = mean_err(w)
    res[alg] = { v = vm, ve = ve, w = wm, we = we }
  end
  local a, b = res.tiled, res.bkl
  print(("# bond %d: growth rate %.6g +- %.2g (tiled) %.6g +- %.2g (bkl); width %.5g +- %.2g / %.5g +- %.2g")
    :format(case.bond, a.v, a.ve, b.v, b.ve, a.w, a.we, b.w, b.we))
  check.agree("validate/kmc/bkl-agrees-growth-rate-bond" .. case.bond, a.v, a.ve, b.v, b.ve, 3.5)
  check.agree("validate/kmc/bkl-agrees-width-bond" .. case.bond, a.w, a.we, b.w, b.we, 3.5)
end

-- ---------- Glauber dynamics reaches the Boltzmann distribution ----------
do
  local beta, L = 0.3, 64
  -- Onsager: u = -coth(2b) [1 + (2/pi)(2 tanh^2(2b) - 1) K(k)], k = 2 sinh(2b) / cosh^2(2b)
  local k = 2 * math.sinh(2 * beta) / math.cosh(2 * beta) ^ 2
  local a, g = 1.0, math.sqrt(1 - k * k)
  for _ = 1, 40 do a, g = (a + g) / 2, math.sqrt(a * g) end
  local K = math.pi / (2 * a)
  local exact = -(1 / math.tanh(2 * beta)) * (1 + 2 / math.pi * (2 * math.tanh(2 * beta) ^ 2 - 1) * K)
  local function glauber(x, nb)
    local h = 0
    for q = 1, 4 do h = h + 2 * nb[q] - 1 end
    return { { 1 / (1 + math.exp(beta * 2 * (2 * x - 1) * h)), 1 - x } }
  end
  for _, alg in ipairs{ "tiled", "bkl" } do
    local s = carlo.kmc{ states = 2, rates = glauber, m = L, n = L, seed = 555, algorithm = alg,
                         device = alg == "tiled" and device or nil }
    s:run{ time = 100 }
    local e = {}
    for i = 1, 3000 do
      s:run{ time = 1 }
      local x = s:snapshot().state
      local sum = 0
      for r = 0, L - 1 do
        for c = 0, L - 1 do
          local si = 2 * x[r * L + c + 1] - 1
          sum = sum + si * (2 * x[r * L + (c + 1) % L + 1] - 1) + si * (2 * x[((r + 1) % L) * L + c + 1] - 1)
        end
      end
      e[i] = -sum / (L * L)
    end
    local st = carlo.stats(e)
    print(("# glauber beta 0.3 (%s): u = %.6f +- %.6f (tau %.2f), exact %.6f"):format(alg, st.mean, st.err,
      st.tau, exact))
    check.within("validate/kmc/glauber-onsager-energy-" .. alg, st.mean, exact, st.err, 3.5)
  end
end
