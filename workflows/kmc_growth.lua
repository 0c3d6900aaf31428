-- kmc_growth: the crystal-growth model of Darkins, Duffy and Ford (2024) grown with exact tiled
-- KMC. For each bond energy (the paper's phi) an n x n surface starts flat and grows for
-- `layers` monolayers (the paper
-- relaxes 10^3 n^2 events and then measures 10^3 n^2: layers = 2000); every 1/rows of the run
-- one row is logged: time, events, mean height, interface width, the growth rate over the
-- interval, the fraction of step sites (a higher neighbour, n_b >= 1), the adaptive step's
-- record (events per tile per accepted step, rejected fraction, work per event) and the speed.
-- At the end: a height map (PNG), a checkpoint (carlo.load continues it), and a summary of the
-- second half (the paper's measurement window) beside the paper's figures.
--   carlo workflows/kmc_growth.lua [n=1024] [layers=2000] [rows=100] [bond=0,1,2,3]
--                                  [out=kmc_growth] [device=auto] [seed=1]
-- (phi= is the old name of bond=.)
local carlo = require "carlo"

local opt = { n = nil, layers = nil, rows = 100, bond = "0,1,2,3", out = "kmc_growth", device = "auto",
              seed = 1 }
for _, a in ipairs(arg or {}) do
  local k, v = a:match("^([%w_]+)=(.*)$")
  if k == "phi" then
    io.stderr:write("kmc_growth: phi= is now bond=; the old name goes in the next release\n")
    k = "bond"
  end
  if not k or opt[k] == nil and k ~= "n" and k ~= "layers" then
    error(("kmc_growth: arguments are key=value with keys n, layers, rows, bond, out, device, seed "
      .. "(got %q)"):format(a))
  end
  opt[k] = tonumber(v) or v
end
local gpu = #carlo.devices().gpus > 0 and opt.device ~= "cpu"
opt.n = opt.n or (gpu and 1024 or 128)
opt.layers = opt.layers or (gpu and 2000 or 200)

-- the paper's figures
local paper = {}
for line in io.lines("workflows/data/kmc_growth.tsv") do
  if not line:find("^#") and not line:find("^phi") then
    local c = {}
    for v in line:gmatch("[^\t]+") do c[#c + 1] = tonumber(v) end
    paper[c[1]] = { step = c[2], ept = c[3] }
  end
end

local N = opt.n * opt.n
local summary = carlo.log(opt.out .. "_summary.tsv", { columns = { "bond", "n", "layers", "t",
  "growth_rate", "growth_rate_err", "width", "step_fraction", "step_fraction_paper",
  "events_per_tile_step", "events_per_tile_step_paper", "domain_events_per_tile_step",
  "rejected_fraction", "work_per_event", "events_per_s", "device" } })

for bonds in tostring(opt.bond):gmatch("[^,]+") do
  local bond = tonumber(bonds)
  local sys = carlo.kmc{ model = "sos_growth", m = opt.n, n = opt.n, bond = bond, seed = opt.seed,
                         device = opt.device }
  local log = carlo.log(("%s_bond%s.tsv"):format(opt.out, bonds), { columns = { "t", "events", "mean",
    "width", "growth_rate", "step_fraction", "events_per_tile_step", "rejected_fraction",
    "work_per_event", "events_per_s" } })
  local chunk = math.max(1, math.floor(opt.layers * N / opt.rows))
  local prev = sys:observe()
  local st0 = sys:counters()
  local rates, steps, second = {}, {}, { ev = 0, sec = 0 }
  local wall0 = carlo.clock()
  for row = 1, opt.rows do
    local r = sys:run{ events = chunk }
    local o = sys:observe()
    local st = sys:counters()
    local acc, rej = st.accepted - st0.accepted, st.rejected - st0.rejected
    local rate = (o.mean - prev.mean) / (o.t - prev.t)
    log:row{ t = o.t, events = o.events, mean = o.mean, width = o.width, growth_rate = rate,
             step_fraction = o.step_fraction,
             events_per_tile_step = acc > 0 and (st.events - st0.events) / (acc * sys.tiles) or 0,
             rejected_fraction = acc + rej > 0 and rej / (acc + rej) or 0,
             work_per_event = st.events > st0.events and (st.simulated - st0.simulated) / (st.events - st0.events) or 0,
             events_per_s = r.events / r.seconds }
    if row > opt.rows // 2 then -- the measurement half
      rates[#rates + 1] = rate
      steps[#steps + 1] = o.step_fraction
      second.ev, second.sec = second.ev + r.events, second.sec + r.seconds
      if row == opt.rows // 2 + 1 then second.st0 = st0 end
    end
    prev, st0 = o, st
  end
  log:close()
  local o, st, s0 = prev, sys:counters(), second.st0 or sys:counters()
  local acc, rej = st.accepted - s0.accepted, st.rejected - s0.rejected
  local gr = carlo.stats(rates)
  local sf = carlo.stats(steps)
  local p = paper[bond] or {}
  summary:row{ bond = bond, n = opt.n, layers = opt.layers, t = o.t, growth_rate = gr,
               width = o.width, step_fraction = sf.mean, step_fraction_paper = p.step,
               events_per_tile_step = acc > 0 and (st.events - s0.events) / (acc * sys.tiles) or 0,
               events_per_tile_step_paper = p.ept,
               domain_events_per_tile_step = acc > 0 and (st.domain_events - s0.domain_events) / (acc * sys.tiles) or 0,
               rejected_fraction = acc + rej > 0 and rej / (acc + rej) or 0,
               work_per_event = st.events > s0.events and (st.simulated - s0.simulated) / (st.events - s0.events) or 0,
               events_per_s = second.sec > 0 and second.ev / second.sec or 0, device = sys.device }
  sys:png(("%s_bond%s.png"):format(opt.out, bonds), { scale = opt.n < 256 and 4 or 1 })
  sys:save(("%s_bond%s.ckpt"):format(opt.out, bonds))
  io.stderr:write(("bond = %s: %d x %d, %.0f layers, t = %.6g, growth rate %.5g +- %.2g, width %.4g, "
    .. "step sites %.3f (paper %s), %.3g events/s on the %s, %.1f s\n"):format(bonds, opt.n, opt.n,
      o.mean, o.t, gr.mean, gr.err, o.width, sf.mean, tostring(p.step), second.sec > 0 and second.ev / second.sec or 0,
      sys.device, carlo.clock() - wall0))
  sys:close()
  collectgarbage()
end
summary:close()
print(("summary: %s_summary.tsv; per bond: %s_bond<bond>.tsv (log), .png (heights), .ckpt (state)")
  :format(opt.out, opt.out))
