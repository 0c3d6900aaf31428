-- lua/kmc: the physics. At bond = 0 the model is random deposition: every column grows
-- independently at rate k2, so the heights at time t are Poisson with mean k2 t. At bond = 1
-- the tiled scheme and BKL (independent algorithms, independent random numbers) agree on the
-- growth rate and the interface width. Error bars come from independent sites and runs.
local carlo = require "carlo"
local check = require "check"

carlo.threads(1)

do
  local m, n, k2, t = 128, 128, 2.5, 40
  local s = carlo.kmc{ model = "sos_growth", m = m, n = n, bond = 0, k2 = k2, seed = 17 }
  s:run{ time = t }
  local h = s:snapshot().state
  local N, lambda = m * n, k2 * t
  local sum, sum2 = 0, 0
  for i = 1, N do
    sum = sum + h[i]
    sum2 = sum2 + h[i] * h[i]
  end
  local mean = sum / N
  local var = (sum2 - sum * sum / N) / (N - 1)
  -- Poisson(lambda): the mean of N sites has variance lambda / N, the sample variance
  -- (lambda + 2 lambda^2) / N
  check.within("lua/kmc/bond0-poisson-mean", mean, lambda, math.sqrt(lambda / N), 3.5)
  check.within("lua/kmc/bond0-poisson-variance", var, lambda, math.sqrt((lambda + 2 * lambda ^ 2) / N), 3.5)
  check.eq("lua/kmc/bond0-events", s.events, sum)
  check.eq("lua/kmc/bond0-never-rejected", s:counters().rejected, 0)
end

-- The growth rate between t = 20 and 120 and the width at t = 120, from flat 32 x 32 starts:
-- means over independent runs, errors from their scatter.
do
  local R, L, T0, T1 = 24, 32, 20, 120
  local result = {}
  for _, alg in ipairs{ "tiled", "bkl" } do
    local v, w = {}, {}
    for r = 1, R do
      local s = carlo.kmc{ model = "sos_growth", m = L, n = L, bond = 1, algorithm = alg,
                           seed = (alg == "bkl" and 5000 or 6000) + r }
      s:run{ time = T0 }
      local h0 = s:observe().mean
      s:run{ time = T1 - T0 }
      local o = s:observe()
      v[r] = (o.mean - h0) / (T1 - T0)
      w[r] = o.width
    end
    local function mean_err(x)
      local m, q = 0, 0
      for _, y in ipairs(x) do m = m + y end
      m = m / #x
      for _, y in ipairs(x) do q = q + (y - m) ^ 2 end
      return m, math.sqrt(q / (#x - 1) / #x)
    end
    local vm, ve = mean_err(v)
    local wm, we = mean_err(w)
    result[alg] = { v = vm, ve = ve, w = wm, we = we }
  end
  local a, b = result.tiled, result.bkl
  check.agree("lua/kmc/bkl-agrees-growth-rate-bond1", a.v, a.ve, b.v, b.ve, 3.5)
  check.agree("lua/kmc/bkl-agrees-width-bond1", a.w, a.we, b.w, b.we, 3.5)
  -- and the comparison has teeth: a 2% change of the growth rate is many error bars
  check.ok("lua/kmc/growth-rate-resolved", a.ve / a.v < 0.005 and b.ve / b.v < 0.005,
    ("relative errors %.4f and %.4f"):format(a.ve / a.v, b.ve / b.v))
end
