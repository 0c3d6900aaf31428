-- The hard-disk equation of state across the liquid-hexatic transition (Anderson et al. 2013,
-- Table 2): N = 65536 disks at phi = 0.698 ... 0.718, each started at random at low density,
-- compressed, equilibrated and sampled, with the pressure by g(r) extrapolation (the paper's
-- method, eqs. 4-6) and by the scale distribution function, both with blocking error bars, next
-- to the paper's MPMC and event-chain values (workflows/data/hard_disk_eos.tsv).
--
-- The paper equilibrated 3e8 sweeps and averaged 8 runs of 1e9 sweeps per point; the default
-- here is a few minutes on one GPU, so the error bars are much wider (and near phi = 0.71,
-- where the hexatic phase and coexistence relax slowly, an unconverged run can sit outside
-- them: compare equilibrate runs of different lengths). Longer runs:
--   carlo workflows/hard_disk_eos.lua sweeps=2e7 equilibrate=5e6
-- Arguments (key=value): N (65536), phi (comma list, default the six of Table 2), sweeps
-- (measured, 600000), equilibrate (200000), every (20), seed (1), device (auto), log (a TSV path),
-- decompose (false; true or frozen: under mpirun, the disks split over the ranks, one GPU each,
-- carlo-mpi(7); frozen, the faster, keeps the distribution but not the one-process chain):
--   mpirun -np 4 carlo workflows/hard_disk_eos.lua device=gpu decompose=frozen N=1048576
local carlo = require "carlo"

local opt = { N = 65536, sweeps = 6e5, equilibrate = 2e5, every = 20, seed = 1, device = "auto",
              phi = "0.698,0.702,0.706,0.710,0.714,0.718", decompose = "false" }
for _, a in ipairs(arg or {}) do
  local k, v = a:match("^(%w+)=(.+)$")
  if not k or opt[k] == nil and k ~= "log" then
    error(("hard_disk_eos: unknown argument '%s' (key=value: N, phi, sweeps, equilibrate, every, "
      .. "seed, device, log, decompose)"):format(a))
  end
  opt[k] = tonumber(v) or v
end
local decompose = ({ ["false"] = false, ["true"] = true, frozen = "frozen" })[tostring(opt.decompose)]
if decompose == nil then
  error(("hard_disk_eos: decompose must be false, true or frozen (got '%s')"):format(opt.decompose))
end
local N = math.tointeger(opt.N)
local sweeps = math.tointeger(opt.sweeps) or math.floor(opt.sweeps)
local equilibrate = math.tointeger(opt.equilibrate) or math.floor(opt.equilibrate)
local every = math.tointeger(opt.every)
sweeps = sweeps - sweeps % every

-- Table 2 (two standard errors in parentheses)
local here = (arg and arg[0] or "workflows/hard_disk_eos.lua"):match("^(.*)/[^/]*$") or "."
local table2 = {}
for line in io.lines(here .. "/data/hard_disk_eos.tsv") do
  local n, phi, mpmc, bk = line:match("^(%d+)\t([%d.]+)\t(%S+)\t(%S+)")
  if n then table2[tonumber(n) .. ":" .. phi] = { mpmc = mpmc, bk = bk } end
end

-- "9.1709(1)" -> 9.1709, 0.0001 (two standard errors)
local function parse(s)
  local v, e = s:match("^([%d.]+)%((%d+)%)$")
  local decimals = #(v:match("%.(%d+)$") or "")
  return tonumber(v), tonumber(e) * 10 ^ -decimals
end

local log = opt.log and carlo.log(opt.log)
print(("# hard disks N = %d, %s sweeps measured after %s equilibrated, sampled every %d%s"):format(
  N, sweeps, equilibrate, every,
  decompose and (", split over %d ranks%s"):format(carlo.mpi.size, decompose == "frozen" and " (frozen edges)" or "")
    or ""))
print("# errors: one standard error (blocking); the paper's are two standard errors")
print("phi\tP_gr\terr\tP_sdf\terr\ttau_sweeps\tpaper_MPMC\tpaper_BK\t(P_gr-MPMC)/err\tpsi6")
local sys
for phi_s in tostring(opt.phi):gmatch("[^,]+") do
  local phi = tonumber(phi_s)
  local t0 = carlo.clock()
  if not sys then
    sys = carlo.hard_disks{ N = N, phi = phi, seed = opt.seed, device = opt.device, decompose = decompose }
  else
    sys:compress{ phi = phi } -- on from the previous state point, as a compression run would
  end
  sys:run{ sweeps = equilibrate }
  local s = sys:sample{ sweeps = sweeps, every = every, psi6 = false }
  local psi = sys:psi6()
  local ref = table2[N .. ":" .. ("%.3f"):format(phi)]
  local mp, mp2e, bk = "-", nil, "-"
  local z = "-"
  if ref then
    mp, bk = ref.mpmc, ref.bk
    local v, e2 = parse(ref.mpmc)
    mp2e = e2
    local comb = math.sqrt(s.P_gr.err ^ 2 + (e2 / 2) ^ 2)
    z = ("%.2f"):format((s.P_gr.mean - v) / comb)
  end
  print(("%.3f\t%.5f\t%.5f\t%.5f\t%.5f\t%.0f\t%s\t%s\t%s\t%.3f"):format(sys.phi, s.P_gr.mean, s.P_gr.err,
    s.P_sdf.mean, s.P_sdf.err, s.P_gr.tau, mp, bk, z, psi.global))
  io.stdout:flush()
  if log then
    log:row{ phi = sys.phi, P_gr = s.P_gr, P_sdf = s.P_sdf, tau = s.P_gr.tau, psi6 = psi.global,
             acceptance = s.acceptance, seconds = carlo.clock() - t0 }
  end
  if not s.P_gr.plateau then
    print("#   (no blocking plateau: the run is shorter than its correlation time; the error is a lower bound)")
  end
  if mp2e and s.P_gr.err < 0.5 * mp2e then
    print("#   (error bar below the paper's)")
  end
end
if log then log:close() end
