-- potts_branches: the first-order transition of the q-state Potts model located by the free
-- energies of its two branches (thermodynamic integration, d(beta f)/d beta = e per site):
--   disordered (cooling) branch: beta f_d = -ln q at beta = 0 (infinite temperature), then
--     the energy integrated along a ladder of increasing beta, random start, state carried;
--   ordered (heating) branch: beta f_o = -2 beta - (q - 1) exp(-4 beta) at a low temperature
--     T = low * Tc (the ground state, E = -2 per site, and its single-spin excitations), then
--     integrated along a ladder of decreasing beta, ordered start, state carried.
-- Both ladders share their points within window * Tc of the exact Tc, where each branch is
-- metastable beyond the crossing; the crossing of f_o(T) and f_d(T) estimates Tc and the
-- energy gap there the latent heat, both compared with the exact values (Baxter):
-- Tc = 1/ln(1 + sqrt q), e_d - e_o from reference/potts_exact.tsv's formula.
-- The integrals are Simpson's rule on pairs of intervals (carlo.integrate where this carlo has
-- it, else the same rule here), with the energies' blocking errors propagated as independent.
-- Writes <out>.tsv (every point: e, and beta f at the Simpson nodes), <out>_summary.tsv and
-- <out>_q<q>.gp / .png (F(T) of both branches and their difference near Tc; gnuplot) with
-- its data files <out>_q<q>_ordered.dat, _disordered.dat, _delta.dat.
--   carlo workflows/potts_branches.lua [q=9,15] [L=1024] [coarse=32] [fine=20] [window=0.01]
--         [low=0.5] [equilibrate=2000] [measure=4000] [every=10] [seed=1] [device=auto]
--         [quick=0] [out=potts_branches]
-- quick=1: L = 24, short ladders and runs (the CPU, seconds; a smoke test, not a measurement).
-- The crossing is also found from each branch's stable side alone (quadratic fits of beta f_o
-- for T <= Tc and beta f_d for T >= Tc at the nearest shared nodes): "stable fit", a check on
-- the metastable continuations; nodes where a branch left its phase are listed.
-- dofile'd with a global `potts_branches_opts` table instead of arguments, it returns one
-- result per q: { q, L, Tc, Tc_err, Tc_exact, Tc_stable, left, latent, latent_err,
-- latent_exact, rule }.
local carlo = require "carlo"

local defaults = { q = "9,15", L = 1024, coarse = 32, fine = 20, window = 0.01, low = 0.5,
                   equilibrate = 2000, measure = 4000, every = 10, seed = 1, device = "auto",
                   quick = 0, out = "potts_branches" }
local opt
local given = rawget(_G, "potts_branches_opts")
if given then
  opt = {}
  for k, v in pairs(defaults) do opt[k] = v end
  for k, v in pairs(given) do
    if defaults[k] == nil then error("potts_branches: unknown option " .. tostring(k), 0) end
    opt[k] = v
  end
else
  opt = carlo.options(arg, defaults)
end
if opt.quick ~= 0 then
  opt.L, opt.coarse, opt.fine, opt.window = 24, 6, 6, 0.08
  opt.equilibrate, opt.measure, opt.every = 100, 200, 2
end
local function even(name)
  local v = math.tointeger(opt[name])
  if not v or v < 2 or v % 2 ~= 0 then
    error(("potts_branches: %s must be an even integer >= 2 (got %s)"):format(name, tostring(opt[name])), 0)
  end
  return v
end
local coarse, fine = even("coarse"), even("fine")
if not (opt.window > 0 and opt.window < 0.5) then
  error(("potts_branches: window must be in (0, 0.5) (got %s)"):format(tostring(opt.window)), 0)
end
if not (opt.low > 0 and opt.low < 1 - opt.window) then
  error(("potts_branches: low must be in (0, 1 - window) (got %s)"):format(tostring(opt.low)), 0)
end

-- exact values (infinite lattice)
local function exact(q)
  local Tc = 1 / math.log(1 + math.sqrt(q))
  if q <= 4 then return Tc, 0 / 0 end -- continuous transition: no latent heat
  local theta = math.log(math.sqrt(q) / 2 + math.sqrt(q / 4 - 1))
  local prod = 1
  for n = 1, 200 do prod = prod * math.tanh(n * theta) ^ 2 end
  return Tc, 2 * (1 + 1 / math.sqrt(q)) * math.tanh(theta / 2) * prod -- Tc, e_d - e_o
end

-- Simpson's rule on pairs of intervals of any lengths (x may decrease: a signed integral).
local rule = carlo.integrate and "carlo.integrate (simpson)" or "local Simpson"
local function simpson(x, y, dy)
  if carlo.integrate then return carlo.integrate{ x = x, y = y, dy = dy, rule = "simpson" } end
  local sum, var = 0, 0
  local w = {}
  for i = 1, #x do w[i] = 0 end
  for i = 1, #x - 2, 2 do
    local h0, h1 = x[i + 1] - x[i], x[i + 2] - x[i + 1]
    local s = (h0 + h1) / 6
    w[i] = w[i] + s * (2 - h1 / h0)
    w[i + 1] = w[i + 1] + s * (h0 + h1) ^ 2 / (h0 * h1)
    w[i + 2] = w[i + 2] + s * (2 - h0 / h1)
  end
  for i = 1, #x do
    sum = sum + w[i] * y[i]
    var = var + (w[i] * dy[i]) ^ 2
  end
  return sum, math.sqrt(var)
end

-- A least-squares polynomial of degree 2 (1 with two points) through (x, y): coefficients.
local function fit(xs, ys)
  local n = #xs
  local deg = math.min(2, n - 1)
  local m, v = {}, {}
  for i = 0, deg do
    m[i] = {}
    for j = 0, deg do
      m[i][j] = 0
      for k = 1, n do m[i][j] = m[i][j] + xs[k] ^ (i + j) end
    end
    v[i] = 0
    for k = 1, n do v[i] = v[i] + ys[k] * xs[k] ^ i end
  end
  for i = 0, deg do -- Gauss-Jordan on the normal equations (3 x 3 at most)
    for r = 0, deg do
      if r ~= i then
        local f = m[r][i] / m[i][i]
        for c = 0, deg do m[r][c] = m[r][c] - f * m[i][c] end
        v[r] = v[r] - f * v[i]
      end
    end
  end
  local c = { 0, 0, 0 }
  for i = 0, deg do c[i + 1] = v[i] / m[i][i] end
  return c
end

-- The crossing again from each branch's stable side only: beta f_o fitted over the shared nodes
-- at beta >= beta* (T <= Tc), beta f_d over those at beta <= beta*, up to four nearest each,
-- and the fits' difference solved near beta*. A check on the metastable continuations the
-- interpolation uses; `left` lists the nodes where a branch left its phase (the energy gap
-- below half the gap at the crossing).
local function stable_crossing(nodes, bstar)
  local xo, yo, xd, yd = {}, {}, {}, {}
  local order = {}
  for i, n in ipairs(nodes) do order[i] = n end
  table.sort(order, function(a, b) return math.abs(a.beta - bstar) < math.abs(b.beta - bstar) end)
  for _, n in ipairs(order) do
    if n.beta >= bstar and #xo < 4 then xo[#xo + 1], yo[#yo + 1] = n.beta - bstar, n.bfo end
    if n.beta <= bstar and #xd < 4 then xd[#xd + 1], yd[#yd + 1] = n.beta - bstar, n.bfd end
  end
  local left, gap = {}, nil
  for _, n in ipairs(order) do gap = gap or n.gap end
  for _, n in ipairs(nodes) do
    if n.gap < 0.5 * gap then left[#left + 1] = 1 / n.beta end
  end
  if #xo < 2 or #xd < 2 then return 0 / 0, left end
  local co, cd = fit(xo, yo), fit(xd, yd)
  local a, b, c = co[1] - cd[1], co[2] - cd[2], co[3] - cd[3]
  local x
  if math.abs(c) * math.abs(a) < 1e-12 * b * b then
    x = -a / b
  else
    local disc = b * b - 4 * a * c
    if disc < 0 then return 0 / 0, left end
    local r1, r2 = (-b + math.sqrt(disc)) / (2 * c), (-b - math.sqrt(disc)) / (2 * c)
    x = math.abs(r1) < math.abs(r2) and r1 or r2
  end
  return 1 / (bstar + x), left
end

local function prefix(t, k)
  local p = {}
  for i = 1, k do p[i] = t[i] end
  return p
end

-- One branch along the ladder of betas: energies, then beta f at the Simpson nodes.
local function branch(q, name, betas, start_betaf, seed)
  local sys = carlo.potts{ L = opt.L, q = q, beta = betas[1], seed = seed, device = opt.device,
                           init = name == "ordered" and "ordered" or "random", quiet = true }
  local e, de = {}, {}
  for i, b in ipairs(betas) do
    sys.beta = b
    sys:run{ sweeps = opt.equilibrate, quiet = true }
    local s = sys:sample{ sweeps = opt.measure, every = opt.every, quiet = true }
    e[i], de[i] = s.e.mean, s.e.err
  end
  sys:close()
  local bf, dbf = {}, {}
  bf[1], dbf[1] = start_betaf, 0
  for k = 3, #betas, 2 do
    local I, dI = simpson(prefix(betas, k), prefix(e, k), prefix(de, k))
    bf[k], dbf[k] = start_betaf + I, dI
  end
  return { beta = betas, e = e, de = de, bf = bf, dbf = dbf }
end

local log = carlo.log(opt.out .. ".tsv", { columns = { "q", "branch", "T", "beta", "e", "e_err",
  "betaf", "betaf_err", "f", "f_err" } })
local summary = carlo.log(opt.out .. "_summary.tsv", { columns = { "q", "L", "Tc", "Tc_err",
  "Tc_exact", "Tc_dev", "Tc_stable", "latent", "latent_err", "latent_exact" } })
local results = {}
local qi = 0
for qs in tostring(opt.q):gmatch("%d+") do
  local q = tonumber(qs)
  qi = qi + 1
  local Tc_exact, latent_exact = exact(q)
  local bc = 1 / Tc_exact
  local ba, bb = 1 / (Tc_exact * (1 + opt.window)), 1 / (Tc_exact * (1 - opt.window))
  local bmax = 1 / (opt.low * Tc_exact)
  local cool, heat = {}, {}
  -- coarse steps shrinking towards Tc (half the uniform step at the fine region, where the
  -- energy curves most): x (1.5 - 0.5 x) maps [0, 1] onto itself
  local function stretch(i) local x = i / coarse return x * (1.5 - 0.5 * x) end
  for i = 0, coarse do cool[#cool + 1] = ba * stretch(i) end
  for i = 1, fine do cool[#cool + 1] = ba + (bb - ba) * i / fine end
  for i = 0, coarse do heat[#heat + 1] = bmax + (bb - bmax) * stretch(i) end
  for i = 1, fine do heat[#heat + 1] = bb - (bb - ba) * i / fine end
  local t0 = carlo.clock()
  local d = branch(q, "disordered", cool, -math.log(q), 100 * opt.seed + 2 * qi)
  local o = branch(q, "ordered", heat, -2 * bmax - (q - 1) * math.exp(-4 * bmax),
                   100 * opt.seed + 2 * qi + 1)
  for _, br in ipairs{ { "disordered", d }, { "ordered", o } } do
    local r = br[2]
    for i, b in ipairs(r.beta) do
      log:row{ q = q, branch = br[1], T = b > 0 and 1 / b or math.huge, beta = b, e = r.e[i],
               e_err = r.de[i], betaf = r.bf[i], betaf_err = r.dbf[i],
               f = r.bf[i] and b > 0 and r.bf[i] / b or nil,
               f_err = r.dbf[i] and b > 0 and r.dbf[i] / b or nil }
    end
  end
  -- the shared Simpson nodes, beta ascending: delta = beta f_o - beta f_d
  local nodes = {}
  for m = 0, fine, 2 do
    local kd, ko = coarse + 1 + m, coarse + 1 + fine - m
    nodes[#nodes + 1] = { beta = d.beta[kd], delta = o.bf[ko] - d.bf[kd], bfo = o.bf[ko], bfd = d.bf[kd],
                          err = math.sqrt(o.dbf[ko] ^ 2 + d.dbf[kd] ^ 2),
                          gap = d.e[kd] - o.e[ko], gap_err = math.sqrt(d.de[kd] ^ 2 + o.de[ko] ^ 2) }
  end
  local res = { q = q, L = opt.L, Tc_exact = Tc_exact, latent_exact = latent_exact, rule = rule }
  for j = 1, #nodes - 1 do
    local a, b = nodes[j], nodes[j + 1]
    if a.delta > 0 and b.delta <= 0 then
      local x = a.delta / (a.delta - b.delta)
      local beta = a.beta + x * (b.beta - a.beta)
      local slope = (b.delta - a.delta) / (b.beta - a.beta) -- e_o - e_d
      local err = (1 - x) * a.err + x * b.err
      res.Tc = 1 / beta
      res.Tc_err = err / math.abs(slope) / beta ^ 2
      res.latent = (1 - x) * a.gap + x * b.gap
      res.latent_err = (1 - x) * a.gap_err + x * b.gap_err
      break
    end
  end
  if not res.Tc then
    io.stderr:write(("potts_branches: q = %d: the branches do not cross within window = %g of Tc "
      .. "(a branch left its phase, or the window is too narrow)\n"):format(q, opt.window))
    res.Tc, res.Tc_err, res.latent, res.latent_err = 0 / 0, 0 / 0, 0 / 0, 0 / 0
  end
  if res.Tc == res.Tc then res.Tc_stable, res.left = stable_crossing(nodes, 1 / res.Tc) end
  res.seconds = carlo.clock() - t0
  summary:row{ q = q, L = opt.L, Tc = res.Tc, Tc_err = res.Tc_err, Tc_exact = Tc_exact,
               Tc_dev = res.Tc - Tc_exact, Tc_stable = res.Tc_stable, latent = res.latent,
               latent_err = res.latent_err, latent_exact = latent_exact }
  results[#results + 1] = res

  -- plot data, whitespace-separated: f(T) of each branch at its Simpson nodes, the difference
  local base = ("%s_q%d"):format(opt.out, q)
  for _, br in ipairs{ { "ordered", o }, { "disordered", d } } do
    local f = io.open(("%s_%s.dat"):format(base, br[1]), "w")
    local r = br[2]
    for i, b in ipairs(r.beta) do
      if r.bf[i] and b > 0 then
        f:write(("%.10g %.10g %.3g\n"):format(1 / b, r.bf[i] / b, r.dbf[i] / b))
      end
    end
    f:close()
  end
  local f = io.open(base .. "_delta.dat", "w")
  for _, n in ipairs(nodes) do f:write(("%.10g %.10g %.3g\n"):format(1 / n.beta, n.delta, n.err)) end
  f:close()
  local gp = io.open(base .. ".gp", "w")
  gp:write(([[
set terminal png size 1000,800
set output '%s.png'
set multiplot layout 2,1 title 'q = %d Potts, L = %d: free energy per site of the two branches'
set xlabel 'T'
set ylabel 'f = F / N'
set key bottom left
plot '%s_ordered.dat' using 1:2:3 with yerrorlines title 'ordered (heating from T = %g)', \
     '%s_disordered.dat' using 1:2:3 with yerrorlines title 'disordered (cooling from T = infinity)'
set ylabel 'beta f_o - beta f_d'
set key top right
set arrow from %.9g, graph 0 to %.9g, graph 1 nohead dashtype 2
plot '%s_delta.dat' using 1:2:3 with yerrorlines title 'crossing: Tc = %.6f (exact %.6f: the vertical line)', 0 notitle
unset multiplot
]]):format(base, q, opt.L, base, opt.low * Tc_exact, base, Tc_exact, Tc_exact, base, res.Tc, Tc_exact))
  gp:close()
  if os.execute("command -v gnuplot >/dev/null 2>&1") then
    os.execute(("gnuplot %s.gp"):format(base))
  end
end
log:close()
summary:close()

print(("%4s %6s  %-24s %-10s %-10s  %-10s  %-22s %-10s  (%s)"):format("q", "L", "Tc (crossing)",
  "exact", "deviation", "stable fit", "latent heat", "exact", rule))
for _, r in ipairs(results) do
  print(("%4d %6d  %.6f ± %.6f       %.6f   %+.2e   %.6f    %.5f ± %.5f      %.5f   %.0f s")
    :format(r.q, r.L, r.Tc, r.Tc_err, r.Tc_exact, r.Tc - r.Tc_exact, r.Tc_stable or 0 / 0,
            r.latent, r.latent_err, r.latent_exact, r.seconds))
  if r.left and #r.left > 0 then
    local ts = {}
    for _, T in ipairs(r.left) do ts[#ts + 1] = ("%.5f"):format(T) end
    print(("     q = %d: a branch left its phase at T = %s (energy gap below half the gap at Tc)")
      :format(r.q, table.concat(ts, ", ")))
  end
end
print(("wrote %s.tsv, %s_summary.tsv and %s_q<q>.gp/.png"):format(opt.out, opt.out, opt.out))
return results
