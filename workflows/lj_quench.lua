-- lj_quench: a temperature quench of the Lennard-Jones fluid at high density from the liquid
-- into the glass-forming region, with the energy relaxation logged during and after it.
-- The fcc start is melted for melt_sweeps at T = melt (above the melting line at rho = 1.2), then a
-- carlo.ramp takes T from `from` to `to` over `over` sweeps, one step of T every `hold` sweeps
-- (run by carlo.anneal), and the system is held at the final T for `after` sweeps. Every
-- `every` sweeps a row goes to the log: the phase (melt, quench, after), the sweeps since the
-- quench began, T, the energy per particle U and the pressure P. A slow quench lets the
-- energy follow the liquid's; a fast one falls out of equilibrium (the glass): U stays above
-- and keeps relaxing after the quench, the more so the faster the quench (try over=).
-- Writes <out>.tsv, <out>.gp and, when gnuplot is installed, <out>.png (U and T against the
-- sweeps).
--   carlo workflows/lj_quench.lua [N=4000] [rho=1.2] [melt=5] [melt_sweeps=5000] [from=2] [to=0.3] [over=20000]
--         [hold=100] [after=20000] [every=500] [seed=1] [device=auto] [out=lj_quench]
--         [mode=checkerboard] [quick=false]
-- mode: the LJ model's move scheme; the checkerboard (many moves at once) is the fast one on a
-- GPU, decomposition (one move at a time, the serial chain) takes ~15 ms a sweep at N = 4000.
-- The defaults are a GPU run of a few minutes (45000 sweeps of 4000 particles; the H100 did 160000
-- in about 500 s while shared with three other jobs); quick=true (N = 256, short ramps) finishes on a
-- CPU in seconds.
local carlo = require "carlo"
local opt = carlo.options(arg, { N = 4000, rho = 1.2, melt = 5.0, melt_sweeps = 5000, from = 2.0, to = 0.3,
                                 over = 20000, hold = 100, after = 20000, every = 500, seed = 1,
                                 device = "auto", out = "lj_quench", mode = "checkerboard", quick = false })
if opt.quick then
  opt.N, opt.melt_sweeps, opt.over, opt.hold, opt.after, opt.every = 256, 300, 1000, 20, 500, 100
end
local function need(ok, what) if not ok then error("lj_quench: " .. what, 0) end end
need(opt.every % opt.hold == 0, "every must be a multiple of hold")
need(opt.over % opt.every == 0 and opt.after % opt.every == 0 and opt.melt_sweeps % opt.every == 0,
     "over, after and melt_sweeps must be multiples of every")
need(opt.from > 0 and opt.to > 0 and opt.melt > 0, "temperatures must be > 0")

local t0 = carlo.clock()
local sys = carlo.lj{ N = opt.N, rho = opt.rho, T = opt.melt, seed = opt.seed, device = opt.device,
                      mode = opt.mode, quiet = true }
local log = carlo.log(opt.out .. ".tsv", { system = sys,
  columns = { "phase", "sweeps", "T", "U", "P", "acceptance" },
  header = { rho = opt.rho, quench = ("T %g -> %g over %d sweeps"):format(opt.from, opt.to, opt.over) } })
local function row(phase, sweeps)
  local o = sys:observe()
  log:row{ phase = phase, sweeps = sweeps, T = sys.T, U = o.U, P = o.P, acceptance = o.acceptance }
  return o
end

-- melt: the crystal start forgotten, the move size tuned in the hot liquid
sys:tune{ sweeps = 200, quiet = true }
local n_melt = opt.melt_sweeps // opt.every
for k = 1, n_melt do
  sys:run{ sweeps = opt.every, quiet = true }
  row("melt", (k - n_melt) * opt.every)
end
sys.T = opt.from
local step0 = sys.step -- the last melt row is sweep 0
print(("# LJ N = %d, rho = %g, %s: melted at T = %g, quench T %g -> %g over %d sweeps (%g per "
  .. "sweep), then %d sweeps at T = %g"):format(opt.N, opt.rho, sys.device, opt.melt, opt.from, opt.to,
  opt.over, (opt.to - opt.from) / opt.over, opt.after, opt.to))
print("phase\tsweeps\tT\tU\tP")

-- the quench: the ramp's T changes every hold sweeps; anneal observes every `every` sweeps
local ramp = carlo.ramp{ from = opt.from, to = opt.to, over = opt.over, every = opt.hold }
local per_row = opt.every // opt.hold
local rows = 0
carlo.anneal{ system = sys, schedule = ramp, every = per_row, quiet = true,
  on_point = function()
    rows = rows + 1
    local sweeps = sys.step - step0
    local o = row("quench", sweeps)
    if rows % math.max(1, (opt.over // opt.every) // 10) == 0 then
      print(("quench\t%d\t%.4f\t%.5f\t%.4f"):format(sweeps, sys.T, o.U, o.P))
    end
  end }
-- and after it, at the final temperature
sys.T = opt.to
local n_after = opt.after // opt.every
for k = 1, n_after do
  sys:run{ sweeps = opt.every, quiet = true }
  local o = row("after", sys.step - step0)
  if k % math.max(1, n_after // 5) == 0 then
    print(("after\t%d\t%.4f\t%.5f\t%.4f"):format(sys.step - step0, sys.T, o.U, o.P))
  end
end
log:close()

local gp = assert(io.open(opt.out .. ".gp", "w"))
gp:write(([[
set terminal png size 900,600
set output '%s.png'
set datafile separator "\t"
set key autotitle columnhead
set xlabel 'sweeps since the quench began'
set ylabel 'U / N'
set y2label 'T'
set y2tics
set ytics nomirror
set key top right
set title 'Lennard-Jones N = %d, rho = %g: quench T %g -> %g over %d sweeps'
plot '%s.tsv' using 'sweeps':'U' with lines lw 2 title 'U / N', \
     '' using 'sweeps':'T' axes x1y2 with lines dt 2 title 'T'
]]):format(opt.out, opt.N, opt.rho, opt.from, opt.to, opt.over, opt.out))
gp:close()
local wrote = ("wrote %s.tsv and %s.gp"):format(opt.out, opt.out)
if os.execute("command -v gnuplot >/dev/null 2>&1") then
  os.execute(("gnuplot %s.gp"):format(opt.out))
  wrote = wrote .. (" and %s.png"):format(opt.out)
end
print(("# %s in %.0f s"):format(wrote, carlo.clock() - t0))
sys:close()
