-- potts_metastability: Ferrero et al. (2012) Figs. 6-7 at reduced scale. Heating from the
-- ordered phase towards Tc and cooling from the disordered phase towards Tc (q = 9), the
-- state carried from one temperature to the next; then log-log fits of
--   (e - e_o)/e_o       against 1 - T/Tc  (T < Tc, heating)
--   |(e - e_d)/e_d|     against 1 - Tc/T  (T > Tc, cooling)
-- over the points nearest Tc and the farthest ones. Slopes near 1 close to Tc mean finite
-- slopes of e(T) at Tc: metastable branches ending at spinodals away from Tc (Binder).
-- Writes potts_metastability.tsv, potts_metastability.gp and, when gnuplot is installed,
-- potts_metastability.png.
--   carlo workflows/potts_metastability.lua [L=2048] [q=9] [points=10] [near=3e-4] [far=3e-2]
--         [equilibrate=50000] [measure=50000] [every=100] [device=auto] [out=potts_metastability]
local carlo = require "carlo"
local opt = carlo.options(arg, { L = 2048, q = 9, points = 10, near = 3e-4, far = 3e-2,
                                 equilibrate = 50000, measure = 50000, every = 100,
                                 device = "auto", out = "potts_metastability" })
local q = opt.q
local Tc = 1 / math.log(1 + math.sqrt(q))
local theta = math.log(math.sqrt(q) / 2 + math.sqrt(q / 4 - 1))
local prod = 1
for n = 1, 200 do prod = prod * math.tanh(n * theta) ^ 2 end
local sum, diff = -2 * (1 + 1 / math.sqrt(q)), 2 * (1 + 1 / math.sqrt(q)) * math.tanh(theta / 2) * prod
local eo, ed = (sum - diff) / 2, (sum + diff) / 2

-- distances from Tc, geometric, far first (the protocols approach Tc)
local dist = carlo.ladder{ from = opt.far, to = opt.near, n = opt.points, spacing = "geometric" }
local heating, cooling = {}, {}
for i, x in ipairs(dist) do
  heating[i] = Tc * (1 - x) -- 1 - T/Tc = x
  cooling[i] = Tc / (1 - x) -- 1 - Tc/T = x
end

local log = carlo.log(opt.out .. ".tsv", { columns = { "branch", "T", "x", "e", "e_err", "y", "y_err",
  "m", "m_err", "tau_e", "step" } })
local function protocol(branch, ladder, start)
  local sys = carlo.potts{ L = opt.L, q = q, T = ladder[1], seed = branch == "heating" and 6 or 7,
                           init = start, device = opt.device }
  local pts = {}
  carlo.anneal{ system = sys, ladder = ladder, equilibrate = opt.equilibrate, measure = opt.measure,
                every = opt.every,
    on_temperature = function(T, s)
      local x, y
      if branch == "heating" then x, y = 1 - T / Tc, (s.e.mean - eo) / eo
      else x, y = 1 - Tc / T, math.abs((s.e.mean - ed) / ed) end
      local yerr = s.e.err / math.abs(branch == "heating" and eo or ed)
      pts[#pts + 1] = { x = x, y = y, yerr = yerr }
      log:row{ branch = branch, T = T, x = x, e = s.e, y = y, y_err = yerr, m = s.m, tau_e = s.e.tau,
               step = sys.step }
    end }
  sys:close()
  return pts
end

local function fit(pts, from, to) -- least squares of log y on log x over pts[from..to]
  local n, sx, sy, sxx, sxy = 0, 0, 0, 0, 0
  for i = from, to do
    local p = pts[i]
    if p.y > 0 then
      local lx, ly = math.log(p.x), math.log(p.y)
      n, sx, sy, sxx, sxy = n + 1, sx + lx, sy + ly, sxx + lx * lx, sxy + lx * ly
    end
  end
  if n < 2 then return 0 / 0 end
  return (n * sxy - sx * sy) / (n * sxx - sx * sx)
end

local t0 = carlo.clock()
local h = protocol("heating", heating, "ordered")
local c = protocol("cooling", cooling, "random")
log:close()
local k = math.max(2, opt.points // 3)
print(("q = %d, L = %d, Tc = %.7f, e_o = %.6f, e_d = %.6f; %d temperatures a branch, %.0f s")
  :format(q, opt.L, Tc, eo, ed, opt.points, carlo.clock() - t0))
print(("%-10s %22s %22s"):format("branch", "slope far from Tc", "slope nearest Tc"))
print(("%-10s %22.3f %22.3f"):format("heating", fit(h, 1, k), fit(h, #h - k + 1, #h)))
print(("%-10s %22.3f %22.3f"):format("cooling", fit(c, 1, k), fit(c, #c - k + 1, #c)))

local gp = io.open(opt.out .. ".gp", "w")
gp:write(([[
set terminal png size 900,600
set output '%s.png'
set logscale xy
set xlabel '|1 - T/Tc| (heating), 1 - Tc/T (cooling)'
set ylabel 'relative energy distance from the branch at Tc'
set key top left
set title 'q = %d Potts, L = %d: approach to Tc'
set datafile separator "\t"
plot '%s.tsv' skip 1 using (strcol(1) eq "heating" ? $3 : 1/0):6:7 with yerrorbars title 'heating (T < Tc)', \
     '' skip 1 using (strcol(1) eq "cooling" ? $3 : 1/0):6:7 with yerrorbars title 'cooling (T > Tc)', \
     x * %g title 'slope 1'
]]):format(opt.out, q, opt.L, opt.out, h[#h].y / h[#h].x))
gp:close()
if os.execute("command -v gnuplot >/dev/null 2>&1") then
  os.execute(("gnuplot %s.gp"):format(opt.out))
  print(("wrote %s.tsv, %s.gp and %s.png"):format(opt.out, opt.out, opt.out))
else
  print(("wrote %s.tsv and %s.gp (install gnuplot to draw %s.png)"):format(opt.out, opt.out, opt.out))
end
