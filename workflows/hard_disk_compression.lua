-- hard_disk_compression: an NPT pressure ladder of hard disks through the liquid-hexatic region
-- (phi 0.70-0.72; Anderson et al. 2013, Table 2), run with carlo.anneal: the system carries
-- its state from one pressure to the next (a slow compression), equilibrates, then samples the
-- packing fraction, the measured pressure and the hexatic order psi6 (sys:psi6's global and
-- local order, averaged over the samples with blocking errors) at each pressure. The pressures
-- span the paper's equation of state (workflows/data/hard_disk_eos.tsv) with a margin on each
-- side; its Mayer-Wood loop (the pressure falls between phi = 0.702 and 0.714) shows up in NPT
-- as a jump of phi and psi6 between neighbouring pressures.
-- The protocol is checkpointed after every pressure: a run killed at any point (Ctrl-C, a job
-- scheduler) continues where it stopped when started again with the same arguments; the
-- checkpoint files are removed once the ladder is complete.
-- Writes <out>.tsv (one row per pressure: pressure, step, phi, psi6, psi6_local, P, ... each
-- with its error), <out>.gp and, when gnuplot is installed, <out>.png (phi and psi6 against
-- the pressure, with the paper's points).
--   carlo workflows/hard_disk_compression.lua [N=65536] [points=9] [margin=0.02]
--         [equilibrate=10000] [measure=20000] [every=100] [seed=1] [device=auto]
--         [out=hard_disk_compression] [quick=false]
-- The defaults (9 pressures, 30000 sweeps each) are meant as a GPU run of minutes but were not
-- timed there (a first attempt at 150000 sweeps a pressure ran past 520 s while sharing the
-- GPU); raise equilibrate and measure for converged densities near the transition.
-- quick=true (N = 256, short runs) finishes on a
-- CPU in seconds and shows the shape of the output, not the physics.
local carlo = require "carlo"
local opt = carlo.options(arg, { N = 65536, points = 9, margin = 0.02, equilibrate = 10000,
                                 measure = 20000, every = 100, seed = 1, device = "auto",
                                 out = "hard_disk_compression", quick = false })
if opt.quick then
  opt.N, opt.points, opt.equilibrate, opt.measure, opt.every = 256, 4, 200, 400, 20
end
if opt.points < 2 then error("hard_disk_compression: points must be at least 2", 0) end
if opt.measure % opt.every ~= 0 then
  error("hard_disk_compression: measure must be a multiple of every", 0)
end

-- the paper's equation of state at N = 65536: (phi, P*) with two standard errors
local here = (arg and arg[0] or "workflows/hard_disk_compression.lua"):match("^(.*)/[^/]*$") or "."
local paper = {}
for line in io.lines(here .. "/data/hard_disk_eos.tsv") do
  local n, phi, p = line:match("^(%d+)\t([%d.]+)\t([%d.]+)%(")
  if n == "65536" then paper[#paper + 1] = { phi = tonumber(phi), P = tonumber(p) } end
end
assert(#paper > 0, "hard_disk_compression: no N = 65536 rows in data/hard_disk_eos.tsv")
local pmin, pmax = math.huge, -math.huge
for _, r in ipairs(paper) do pmin, pmax = math.min(pmin, r.P), math.max(pmax, r.P) end
local ladder = carlo.ladder{ from = pmin - opt.margin, to = pmax + opt.margin, n = opt.points }

local tsv, state = opt.out .. ".tsv", opt.out .. ".state"
local t0 = carlo.clock()
-- a liquid just below the loop, then NPT at the first pressure; move sizes tuned there once
-- (fixed during the whole protocol: tuning while measuring would break detailed balance)
local sys = carlo.hard_disks{ N = opt.N, phi = 0.69, seed = opt.seed, device = opt.device,
                              pressure = ladder[1], quiet = true }
local resumed = io.open(state, "rb")
if resumed then
  resumed:close()
  print(("# resuming the protocol from %s"):format(state))
else
  sys:tune{ quiet = true }
end
print(("# hard disks N = %d, %s, NPT at %d pressures %.4f .. %.4f; %d sweeps equilibrated, %d "
  .. "measured every %d per pressure"):format(opt.N, sys.device, #ladder, ladder[1], ladder[#ladder],
  opt.equilibrate, opt.measure, opt.every))
print("pressure\tphi\tphi_err\tpsi6\tpsi6_err\tP_measured\tP_err")
local res = carlo.anneal{ system = sys, control = "pressure", schedule = ladder,
  equilibrate = opt.equilibrate, measure = opt.measure, every = opt.every, log = tsv,
  checkpoint = state, observe = { psi6 = true }, quiet = true,
  on_point = function(P, s)
    print(("%.5f\t%.5f\t%.5f\t%.4f\t%.4f\t%.4f\t%.4f"):format(P, s.phi.mean, s.phi.err,
      s.psi6.mean, s.psi6.err, s.P.mean, s.P.err))
  end }
if res.completed then
  for _, f in ipairs{ state, state .. ".0", state .. ".1" } do os.remove(f) end
end

local gp = assert(io.open(opt.out .. ".gp", "w"))
local pts = {}
for _, r in ipairs(paper) do pts[#pts + 1] = ("%.4f\t%.3f"):format(r.P, r.phi) end
gp:write(([[
set terminal png size 900,900
set output '%s.png'
set datafile separator "\t"
set key autotitle columnhead
set multiplot layout 2,1 title 'hard disks N = %d, NPT compression'
set xlabel 'pressure beta P sigma^2'
set ylabel 'phi'
set key top left
$paper << EOD
%s
EOD
plot '%s' using 'pressure':'phi':'phi_err' with yerrorlines title 'carlo (NPT)', \
     $paper using 1:2 with points pt 7 title 'Anderson et al. 2013 (NVT, N = 65536)'
set ylabel 'psi6 (global)'
plot '%s' using 'pressure':'psi6':'psi6_err' with yerrorlines title 'psi6', \
     '%s' using 'pressure':'psi6_local':'psi6_local_err' with yerrorlines title 'psi6 local'
unset multiplot
]]):format(opt.out, opt.N, table.concat(pts, "\n"), tsv, tsv, tsv))
gp:close()
local wrote = ("wrote %s and %s.gp"):format(tsv, opt.out)
if os.execute("command -v gnuplot >/dev/null 2>&1") then
  os.execute(("gnuplot %s.gp"):format(opt.out))
  wrote = wrote .. (" and %s.png"):format(opt.out)
end
print(("# %s in %.0f s"):format(wrote, carlo.clock() - t0))
sys:close()
