-- potts_hysteresis: finite-time hysteresis of the first-order transition of the q = 9 Potts
-- model (Ferrero et al. 2012, Sec. 3), with carlo.hysteresis: heating from the ordered phase
-- through Tc = 1/ln(1 + sqrt q) and cooling back along the same temperatures, the state carried
-- from one point to the next, at two rates (sweeps per point: the time spent at each
-- temperature, all of it sampled). For each rate it reports the loop area (the integral of
-- e_heating - e_cooling over T, trapezoid rule) with its error, where each branch jumps, and
-- both branches' energies at Tc against the exact energies of the ordered and disordered
-- phases there, e_o and e_d (workflows/data/potts_exact.tsv). On a large lattice the heating
-- branch stays ordered (e near e_o) and the cooling branch disordered (e near e_d) through Tc,
-- and the loop shrinks as the rate slows.
-- Writes <out>.tsv (one row per rate, branch and T: e, m with errors), <out>_loops.tsv (one row
-- per rate: area, jumps, the energies at Tc, e_o, e_d), <out>.gp and, when gnuplot is
-- installed, <out>.png (e against T, both branches of both rates).
--   carlo workflows/potts_hysteresis.lua [L=512] [q=9] [points=21] [width=0.01] [rates=1000,20000]
--         [every=50] [seed=1] [device=auto] [out=potts_hysteresis] [checkpoint=false] [quick=false]
-- width is the half-width of the temperature range as a fraction of Tc (points is odd, so that
-- Tc is one of them). The defaults are a GPU run of a few minutes; quick=true (L = 32, short
-- runs) finishes on a CPU in seconds.
-- checkpoint=true checkpoints every rate's cycle after every point (<out>_<k>.state for the
-- k-th rate and the files next to it): a run killed at any point continues where it stopped when started again
-- with the same arguments, with the same results; the files are removed once every rate is done.
local carlo = require "carlo"
local opt = carlo.options(arg, { L = 512, q = 9, points = 21, width = 0.01, rates = "1000,20000",
                                 every = 50, seed = 1, device = "auto", out = "potts_hysteresis",
                                 checkpoint = false, quick = false })
if opt.quick then
  opt.L, opt.points, opt.width, opt.rates, opt.every = 32, 5, 0.05, "100,400", 10
end
local function need(ok, what) if not ok then error("potts_hysteresis: " .. what, 0) end end
need(opt.points >= 3 and opt.points % 2 == 1, "points must be odd and at least 3 (Tc is the middle one)")
need(opt.width > 0 and opt.width < 0.5, "width must be in (0, 0.5)")
local rates = {}
for r in opt.rates:gmatch("[^,]+") do
  local n = math.tointeger(tonumber(r))
  need(n and n >= 2 * opt.every and n % opt.every == 0,
       ("rates must be sweeps per point, multiples of every = %d giving at least 2 samples (got %s)")
       :format(opt.every, r))
  rates[#rates + 1] = n
end
need(#rates >= 1, "rates must list at least one rate")

-- the exact values at Tc
local here = (arg and arg[0] or "workflows/potts_hysteresis.lua"):match("^(.*)/[^/]*$") or "."
local exact
for line in io.lines(here .. "/data/potts_exact.tsv") do
  local q, Tc, eo, ed = line:match("^(%d+)\t(%S+)\t(%S+)\t(%S+)")
  if q and tonumber(q) == opt.q then
    exact = { Tc = tonumber(Tc), eo = tonumber(eo), ed = tonumber(ed) }
  end
end
need(exact, ("q = %d is not in data/potts_exact.tsv"):format(opt.q))
local Tc = 1 / math.log(1 + math.sqrt(opt.q))
local ladder = carlo.ladder{ from = Tc * (1 - opt.width), to = Tc * (1 + opt.width), n = opt.points }
local mid = (opt.points + 1) // 2

local t0 = carlo.clock()
local log = carlo.log(opt.out .. ".tsv", { columns = { "rate", "branch", "T", "e", "e_err", "m", "m_err",
  "step" }, header = { q = opt.q, L = opt.L, Tc = Tc } })
local loops = carlo.log(opt.out .. "_loops.tsv", { columns = { "rate", "area", "area_err", "jump_heating_at",
  "jump_heating", "jump_cooling_at", "jump_cooling", "T", "e_heating", "e_heating_err", "e_o",
  "e_cooling", "e_cooling_err", "e_d" }, header = { q = opt.q, L = opt.L, Tc = Tc } })
print(("# q = %d Potts, L = %d: %d temperatures %.6f .. %.6f (Tc = %.6f in the middle), heated from "
  .. "ordered then cooled back; e_o = %.6f, e_d = %.6f"):format(opt.q, opt.L, opt.points, ladder[1],
  ladder[#ladder], Tc, exact.eo, exact.ed))
print("sweeps/point\tarea\tarea_err\te_heat(Tc)\terr\te_cool(Tc)\terr\tdevice")
local device
for k, rate in ipairs(rates) do
  local sys = carlo.potts{ L = opt.L, q = opt.q, T = ladder[1], seed = opt.seed + k - 1,
                           init = "ordered", device = opt.device, quiet = true }
  device = sys.device
  local state = opt.checkpoint and ("%s_%d.state"):format(opt.out, k) or nil
  local resumed = state and io.open(state, "rb")
  if resumed then
    resumed:close()
    print(("# resuming rate %d from %s"):format(rate, state))
  end
  local h = carlo.hysteresis{ system = sys, control = "T", schedule = ladder, observable = "e",
                              measure = rate, every = opt.every, checkpoint = state, quiet = true }
  for i, s in ipairs(h.samples) do
    log:row{ rate = rate, branch = i <= opt.points and "heating" or "cooling", T = s.T, e = s.e,
             m = s.m, step = s.step }
  end
  local eh, ehe = h.out.mean[mid], h.out.err[mid]
  local ec, ece = h.back.mean[mid], h.back.err[mid]
  loops:row{ rate = rate, area = h.area, area_err = h.area_err, jump_heating_at = h.jump.out.at,
             jump_heating = h.jump.out.size, jump_cooling_at = h.jump.back.at,
             jump_cooling = h.jump.back.size, T = ladder[mid], e_heating = eh, e_heating_err = ehe,
             e_o = exact.eo, e_cooling = ec, e_cooling_err = ece, e_d = exact.ed }
  print(("%d\t%.6f\t%.6f\t%.5f\t%.5f\t%.5f\t%.5f\t%s"):format(rate, h.area, h.area_err, eh, ehe, ec,
    ece, device))
  print(("#   heating at Tc - e_o = %+.5f (%.1f err), cooling at Tc - e_d = %+.5f (%.1f err); jumps at "
    .. "T = %.6f (heating) and %.6f (cooling)"):format(eh - exact.eo, math.abs(eh - exact.eo) / ehe,
    ec - exact.ed, math.abs(ec - exact.ed) / ece, h.jump.out.at, h.jump.back.at))
  sys:close()
end
log:close()
loops:close()
if opt.checkpoint then
  for k in ipairs(rates) do
    local state = ("%s_%d.state"):format(opt.out, k)
    for _, f in ipairs{ state, state .. ".0", state .. ".1", state .. ".points", state .. ".tmp",
                        state .. ".points.tmp" } do os.remove(f) end
  end
end

local gp = assert(io.open(opt.out .. ".gp", "w"))
local plots = {}
for _, rate in ipairs(rates) do
  for _, b in ipairs{ "heating", "cooling" } do
    plots[#plots + 1] = ([['%s.tsv' using (strcol('branch') eq '%s' && $1 == %d ? $3 : 1/0):4:5 ]]
      .. [[with yerrorlines title '%s, %d sweeps/point']]):format(opt.out, b, rate, b, rate)
  end
end
gp:write(([[
set terminal png size 900,600
set output '%s.png'
set datafile separator "\t"
set key autotitle columnhead
set xlabel 'T'
set ylabel 'e (energy per spin)'
set key top left
set arrow from %.7f, graph 0 to %.7f, graph 1 nohead dt 3
set title 'q = %d Potts, L = %d: heating and cooling through Tc (dotted); e_o = %.4f, e_d = %.4f'
plot %s, \
     %.6f title 'e_o' dt 2, %.6f title 'e_d' dt 2
]]):format(opt.out, Tc, Tc, opt.q, opt.L, exact.eo, exact.ed, table.concat(plots, ", \\\n     "),
  exact.eo, exact.ed))
gp:close()
local wrote = ("wrote %s.tsv, %s_loops.tsv and %s.gp"):format(opt.out, opt.out, opt.out)
if os.execute("command -v gnuplot >/dev/null 2>&1") then
  os.execute(("gnuplot %s.gp"):format(opt.out))
  wrote = wrote .. (" and %s.png"):format(opt.out)
end
print(("# %s in %.0f s (%s)"):format(wrote, carlo.clock() - t0, device))
