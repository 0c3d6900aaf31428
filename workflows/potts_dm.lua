-- potts_dm: the order-parameter jump of the 2D q-state Potts model at Tc against L.
-- For each L, a lattice started ordered (ordered branch) and one started at random
-- (disordered branch) are run at Tc = 1/ln(1 + sqrt q), each for `equilibrate` sweeps and then
-- measured for `measure` sweeps; one TSV row per (L, branch, algorithm) with e, m, errors, tau.
--
-- The estimator m = (q N_max/N - 1)/(q - 1) (Ferrero et al. eq. 7) takes the largest of the q
-- populations in each sample:
--   ordered branch: N_max is the dominant state's population, so m_o is the magnetisation of
--     the pure ordered phase; its finite-size corrections fall off like exp(-L/xi) (xi_d = 14.9,
--     xi_o ~ 7.5 at q = 9) and vanish at these L. m_o is the estimator of the jump.
--   disordered branch: the q populations fluctuate by ~ sqrt(G/N) around N/q, and the largest
--     of them sits ~ 1.49 (q = 9) standard deviations above the mean: m_d ~ A/L > 0, a pure
--     finite-size artefact that vanishes as 1/L (m_d * L is printed and should be constant).
--     m_o - m_d therefore approaches the jump from below, like dm - A/L.
-- The exact jump is the magnetisation at Tc of the ordered phase (Baxter, J. Phys. A 15 (1982)
-- 3329; closed form identified, not copied from the paper: see the VALIDATION.md section),
-- M = prod_{n>=1} (1 - y^(2n-1))/(1 + y^(2n)), y = exp(-2 Theta), cosh Theta = sqrt(q)/2
-- (large-q series 1 - 1/q - 3/q^2 - 9/q^3 - 27/q^4 - 82/q^5 - ...; checked against CTMRG to
-- ~1e-8 at q = 9). The 0.834019 (q = 9) of Ferrero et al. Table 2 is that series' first terms
-- continued as a geometric series and cut after 1/q^5, not the exact value; it is printed as
-- "table" for reference.
-- m and e are strongly anticorrelated (slow droplet fluctuations, tau ~ 10^3 sweeps with
-- Metropolis), so the run also prints the control-variate estimate
-- m_cv = <m - b (e - e_exact)>, b = cov(m, e)/var(e) over block means, whose error is several
-- times smaller (valid because e_exact is known exactly).
--   carlo workflows/potts_dm.lua [Ls=512,1024,2048,4096,8192] [q=9] [algorithm=metropolis]
--         [equilibrate=20000] [measure=3000000,3000000,1500000,450000,120000] [every=100]
--         [seed=1] [device=auto] [out=potts_dm.tsv]
-- algorithm may be a list (metropolis,heatbath); equilibrate and measure are one number for
-- every L or a list matching Ls.
local carlo = require "carlo"
local opt = carlo.options(arg, { Ls = "512,1024,2048,4096,8192", q = 9, algorithm = "metropolis",
                                 equilibrate = "20000", measure = "3000000,3000000,1500000,450000,120000",
                                 every = 100, seed = 1, device = "auto", out = "potts_dm.tsv" })

local function list(s, conv)
  local t = {}
  for w in tostring(s):gmatch("[^,%s]+") do t[#t + 1] = conv and conv(w) or w end
  return t
end
local Ls = list(opt.Ls, tonumber)
local algorithms = list(opt.algorithm)
local function per_L(s, name)
  local t = list(s, tonumber)
  if #t == 1 then for i = 2, #Ls do t[i] = t[1] end end
  assert(#t == #Ls, ("%s: give one number or %d (one per L), got %d"):format(name, #Ls, #t))
  for i, v in ipairs(t) do -- a whole number of samples, at least 20
    t[i] = math.max(20 * opt.every, math.floor(v / opt.every + 0.5) * opt.every)
  end
  return t
end
local equilibrate, measure = per_L(opt.equilibrate, "equilibrate"), per_L(opt.measure, "measure")

local q = opt.q
assert(q > 4, "the jump exists for q > 4 only")
local Tc = 1 / math.log(1 + math.sqrt(q))
local theta = math.log(math.sqrt(q) / 2 + math.sqrt(q / 4 - 1)) -- arccosh(sqrt(q)/2)
-- energies of the two phases at Tc (Baxter's latent heat and e_o + e_d = -2 (1 + 1/sqrt q))
local prod = 1
for n = 1, 400 do prod = prod * math.tanh(n * theta) ^ 2 end
local sum, diff = -2 * (1 + 1 / math.sqrt(q)), 2 * (1 + 1 / math.sqrt(q)) * math.tanh(theta / 2) * prod
local e_exact = { ordered = (sum - diff) / 2, disordered = (sum + diff) / 2 }
-- Baxter's magnetisation of the ordered phase at Tc
local y = math.exp(-2 * theta)
local M = 1
for n = 1, 400 do M = M * (1 - y ^ (2 * n - 1)) / (1 + y ^ (2 * n)) end
local table_dm = { [6] = 0.677083, [9] = 0.834019, [15] = 0.916693, [96] = 0.989247 } -- Ferrero Table 2

io.stderr:write(("potts_dm: q = %d, Tc = %.9f, e_o = %.6f, e_d = %.6f, exact dm = %.9f\n")
  :format(q, Tc, e_exact.ordered, e_exact.disordered, M))

local out = carlo.log(opt.out, { columns = { "q", "L", "algorithm", "branch", "T", "e", "e_err", "e_exact",
  "tau_e", "m", "m_err", "tau_m", "m_cv", "m_cv_err", "b", "chi", "chi_err", "plateau", "equilibrate",
  "sweeps", "seconds" } })

local res = {}
for ia, alg in ipairs(algorithms) do
  res[alg] = {}
  for i, L in ipairs(Ls) do
    res[alg][L] = {}
    for _, branch in ipairs{ "ordered", "disordered" } do
      local sys = carlo.potts{ L = L, q = q, T = Tc, algorithm = alg, device = opt.device,
                               seed = opt.seed + 1000 * i + 100 * ia + (branch == "ordered" and 1 or 2),
                               init = branch == "ordered" and "ordered" or "random" }
      local t0 = carlo.clock()
      sys:run{ sweeps = equilibrate[i] }
      local s = sys:sample{ sweeps = measure[i], every = opt.every, series = true }
      -- control variate: z = m - b (e - e_exact), b the regression slope of m on e over the
      -- means of 32 consecutive blocks (the slow fluctuations that dominate the error move m and
      -- e with a slope near -1; the sample-by-sample slope is flatter, ~ -0.75)
      local es, ms = s.series.e, s.series.m
      local n = #es
      local nb = n >= 64 and 32 or n
      local len = n // nb
      local be, bm = {}, {}
      for j = 1, nb do
        local se, sm = 0, 0
        for k = (j - 1) * len + 1, j * len do se = se + es[k]; sm = sm + ms[k] end
        be[j], bm[j] = se / len, sm / len
      end
      local me, mm = 0, 0
      for j = 1, nb do me = me + be[j]; mm = mm + bm[j] end
      me, mm = me / nb, mm / nb
      local cme, cee = 0, 0
      for j = 1, nb do
        local de = be[j] - me
        cme = cme + de * (bm[j] - mm); cee = cee + de * de
      end
      local b = cee > 0 and cme / cee or 0
      local z = {}
      for k = 1, n do z[k] = ms[k] - b * (es[k] - e_exact[branch]) end
      local cv = carlo.stats(z)
      local secs = carlo.clock() - t0
      local plateau = s.e.plateau and s.m.plateau and cv.plateau
      out:row{ q = q, L = L, algorithm = alg, branch = branch, T = Tc, e = s.e, e_exact = e_exact[branch],
               tau_e = s.e.tau, m = s.m, tau_m = s.m.tau, m_cv = cv, b = b, chi = s.chi,
               plateau = plateau and 1 or 0, equilibrate = equilibrate[i], sweeps = measure[i],
               seconds = secs }
      io.stderr:write(("L = %d %s %s: %d sweeps in %.1f s on the %s\n")
        :format(L, alg, branch, sys.step, secs, sys.device))
      res[alg][L][branch] = { e = s.e, m = s.m, cv = cv, b = b, plateau = plateau }
      sys:close()
    end
  end
end
out:close()

local function pm(v, e) return ("%.6f ± %.6f"):format(v, e) end
print(("q = %d, Tc = %.9f; exact (Baxter 1982) dm = %.9f; Ferrero Table 2 value %s; e_o = %.6f, e_d = %.6f")
  :format(q, Tc, M, table_dm[q] and ("%.6f"):format(table_dm[q]) or "-", e_exact.ordered, e_exact.disordered))
print(("%-10s %6s  %-22s %-22s %-22s %-22s %-22s %8s %9s %9s")
  :format("algorithm", "L", "m_o", "m_o (control var.)", "m_d", "m_o - m_d", "e_o - e_o(exact)",
          "m_d*L", "(m_o-M)/s", "(cv-M)/s"))
for _, alg in ipairs(algorithms) do
  -- weighted fit of m_o - m_d = dm + a/L over all L (the disordered-branch artefact is ~1/L)
  local S, Sx, Sy, Sxx, Sxy = 0, 0, 0, 0, 0
  for _, L in ipairs(Ls) do
    local o, d = res[alg][L].ordered, res[alg][L].disordered
    local dm, dme = o.m.mean - d.m.mean, math.sqrt(o.m.err ^ 2 + d.m.err ^ 2)
    local flag = (o.plateau and d.plateau) and " " or "*"
    print(("%-10s %6d  %-22s %-22s %-22s %-22s %-22s %8.3f %9.1f %9.1f%s")
      :format(alg, L, pm(o.m.mean, o.m.err), pm(o.cv.mean, o.cv.err), pm(d.m.mean, d.m.err), pm(dm, dme),
              pm(o.e.mean - e_exact.ordered, o.e.err), d.m.mean * L, (o.m.mean - M) / o.m.err,
              (o.cv.mean - M) / o.cv.err, flag))
    local w, x = 1 / dme ^ 2, 1 / L
    S, Sx, Sy, Sxx, Sxy = S + w, Sx + w * x, Sy + w * dm, Sxx + w * x * x, Sxy + w * x * dm
  end
  if #Ls >= 2 then
    local det = S * Sxx - Sx * Sx
    local dm0, a = (Sxx * Sy - Sx * Sxy) / det, (S * Sxy - Sx * Sy) / det
    print(("%-10s fit m_o - m_d = dm + a/L: dm = %s, a = %.4f   (exact %.6f)")
      :format(alg, pm(dm0, math.sqrt(Sxx / det)), a, M))
  end
end
print("(* marks a row whose blocking analysis found no plateau: run longer)")
