-- lua/lj/checkerboard-*: the checkerboard mode. Its running energy equals a recomputation after
-- 10^5 trial moves; it samples the same U and P as the decomposition mode (the serial chain)
-- within combined error bars at rho = 0.776, T = 0.85, N = 500 (3D, both orders of a move's sum)
-- and at rho = 0.3, T = 2 in 2D (replicas); its arguments are checked.
local carlo = require "carlo"
local check = require "check"

local function lj(t)
  t.seed = t.seed or 1
  t.device = t.device or "cpu"
  return carlo.lj(t)
end

check.raises("lua/lj/checkerboard-error-moves", function()
  lj{ N = 500, rho = 0.776, T = 0.85, mode = "checkerboard" }:trial(10) end,
  "single trial moves belong to mode = \"decomposition\"")
check.raises("lua/lj/checkerboard-error-lanes", function()
  lj{ N = 500, rho = 0.776, T = 0.85, mode = "checkerboard", lanes = 48 } end,
  "lanes must be 32 (sum_order = \"near\") or 128 (sum_order = \"cell\") (got 48)")
check.raises("lua/lj/checkerboard-error-passes-decomposition", function()
  lj{ N = 500, rho = 0.776, T = 0.85, passes = 2 } end, "passes belongs to mode = \"checkerboard\"")
check.raises("lua/lj/checkerboard-error-energy-sum", function()
  lj{ N = 500, rho = 0.776, T = 0.85, mode = "checkerboard", energy_sum = "all" } end,
  "energy_sum belongs to mode = \"decomposition\"")
check.raises("lua/lj/checkerboard-error-delta", function()
  lj{ N = 4000, rho = 0.776, T = 0.85, mode = "checkerboard", delta = 2 } end, "half the narrowest cell")

-- the running energy after 200 sweeps of N = 500 (10^5 trial moves), and of a 2D system, in
-- both orders of a move's sum (lj_cb_kernel.h: these sizes choose the order cell; near = near
-- candidates)
for _, c in ipairs{ { N = 500, rho = 0.776, sweeps = 200 }, { N = 2000, rho = 0.7, dim = 2, sweeps = 50 },
                    { N = 4000, rho = 0.6, sweeps = 25, shift = true },
                    { N = 500, rho = 0.776, sweeps = 200, order = "near" },
                    { N = 2000, rho = 0.7, dim = 2, sweeps = 50, order = "near" },
                    { N = 4000, rho = 0.6, sweeps = 25, shift = true, order = "near" } } do
  local s = lj{ N = c.N, rho = c.rho, T = 0.85, mode = "checkerboard", init = "random", dim = c.dim,
                shift = c.shift, sum_order = c.order }
  s:run{ sweeps = c.sweeps }
  local r = s:recompute()
  check.ok(("lua/lj/energy-drift-checkerboard-%dd-%d-%s"):format(s.dim, s.N, s.sum_order),
    r.drift <= 1e-9 and s.acceptance > 0.05 and s.step == c.sweeps,
    ("running %.15g, fresh %.15g, drift %.3g, acceptance %.3f"):format(r.U_running, r.U_fresh, r.drift,
      s.acceptance))
end

-- the same physics as the serial chain
local function measure(opts, equil, sweeps)
  local s = lj(opts)
  s:tune{ sweeps = 100, target = 0.5 }
  s:run{ sweeps = equil }
  return s:sample{ sweeps = sweeps, every = 5 }
end
local d = measure({ N = 500, rho = 0.776, T = 0.85, init = "random", seed = 2 }, 500, 3000)
local cb = measure({ N = 500, rho = 0.776, T = 0.85, init = "random", seed = 3, mode = "checkerboard" }, 500, 3000)
check.agree("lua/lj/checkerboard-vs-decomposition-U", cb.U.mean, cb.U.err, d.U.mean, d.U.err, 3)
check.agree("lua/lj/checkerboard-vs-decomposition-P", cb.P.mean, cb.P.err, d.P.mean, d.P.err, 3)
local cw = measure({ N = 500, rho = 0.776, T = 0.85, init = "random", seed = 6, mode = "checkerboard",
  sum_order = "near" }, 500, 3000)
check.agree("lua/lj/checkerboard-near-vs-decomposition-U", cw.U.mean, cw.U.err, d.U.mean, d.U.err, 3)
check.agree("lua/lj/checkerboard-near-vs-decomposition-P", cw.P.mean, cw.P.err, d.P.mean, d.P.err, 3)
-- the comparison is meaningful: both runs reached a plateau, with errors below 1 %
check.ok("lua/lj/checkerboard-vs-decomposition-resolved", d.U.plateau and cb.U.plateau and
  cb.U.err < 0.01 and d.U.err < 0.01, ("errors %g, %g"):format(d.U.err, cb.U.err))

-- 2D: a dilute supercritical state, each mode as six independent replicas whose spread gives the
-- error (at rho = 0.3, T = 2 the spread of independent runs is about twice their blocking
-- errors: a density mode slower than a run, which no error analysis of one run can see)
local function replicas(opts, seed0)
  local U, P = {}, {}
  for r = 1, 6 do
    opts.seed = seed0 + r
    local m = measure(opts, 300, 1200)
    U[r], P[r] = m.U.mean, m.P.mean
  end
  local function stat(x)
    local mean, var = 0, 0
    for _, v in ipairs(x) do mean = mean + v / #x end
    for _, v in ipairs(x) do var = var + (v - mean) ^ 2 / (#x - 1) end
    return mean, math.sqrt(var / #x)
  end
  local um, ue = stat(U)
  local pm, pe = stat(P)
  return { U = { mean = um, err = ue }, P = { mean = pm, err = pe } }
end
local d2 = replicas({ N = 400, rho = 0.3, T = 2.0, dim = 2, init = "random" }, 100)
local c2 = replicas({ N = 400, rho = 0.3, T = 2.0, dim = 2, init = "random", mode = "checkerboard" }, 200)
check.agree("lua/lj/checkerboard-vs-decomposition-2d-U", c2.U.mean, c2.U.err, d2.U.mean, d2.U.err, 3)
check.agree("lua/lj/checkerboard-vs-decomposition-2d-P", c2.P.mean, c2.P.err, d2.P.mean, d2.P.err, 3)
