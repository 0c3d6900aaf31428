-- lua/core/*: arrays, ladders, logs, statistics, devices and the annealing protocol.
local carlo = require "carlo"
local check = require "check"
local tmp = check.tmp

-- carlo.array
do
  local a = carlo.array("f32", { shape = { 3, 2 } })
  check.ok("lua/core/array-shape", #a == 6 and a.shape[1] == 3 and a.shape[2] == 2 and a.type == "f32")
  a[6] = 1.5
  check.eq("lua/core/array-rw", a[6], 1.5)
  check.raises("lua/core/array-bounds-high", function() a[7] = 1 end, "index 7 out of range 1..6")
  check.raises("lua/core/array-bounds-low", function() return a[0] end, "out of range")
  local b = carlo.array("u8", { 1, 2, 255 })
  check.raises("lua/core/array-u8-range", function() b[1] = 256 end, "does not fit a u8")
  check.raises("lua/core/array-int-type", function() b[1] = 1.5 end, "must be an integer")
  check.raises("lua/core/array-bad-type", function() carlo.array("u9", 3) end, "unknown element type")
  local t = a:totable()
  check.ok("lua/core/array-totable", #t == 3 and #t[1] == 2 and t[3][2] == 1.5)
  check.ok("lua/core/array-eq-copy", a:copy() == a and b:sum() == 258 and b:count(2) == 1)
  local c = carlo.array("i64", 4, 7)
  check.ok("lua/core/array-fill", c[1] == 7 and c[4] == 7 and math.type(c[1]) == "integer")
end

-- carlo.ladder
do
  local l = carlo.ladder{ from = 0.715, to = 0.7215, step = 0.0005 }
  check.ok("lua/core/ladder-linear", #l == 14 and l[1] == 0.715 and l[#l] == 0.7215,
           ("%d points, last %.17g"):format(#l, l[#l]))
  local n = 0
  for T in carlo.ladder{ from = 2, to = 1, step = 0.25 } do n = n + 1; assert(T <= 2 and T >= 1) end
  check.eq("lua/core/ladder-iterate-down", n, 5)
  local g = carlo.ladder{ from = 0.5, to = 2, n = 3, spacing = "geometric" }
  check.ok("lua/core/ladder-geometric", math.abs(g[2] - 1) < 1e-15 and g[3] == 2)
  check.raises("lua/core/ladder-bad", function() carlo.ladder{ from = 1, to = 2 } end, "exactly one of step and n")
  check.raises("lua/core/ladder-key", function() carlo.ladder{ from = 1, to = 2, n = 3, stop = 1 } end,
               "unknown key 'stop'")
end

-- carlo.log: header, estimates expand to name and name_err, flushed per row, append.
do
  local path = tmp .. "/log.tsv"
  local out = carlo.log(path)
  out:row{ T = 0.5, e = { mean = -1.25, err = 0.01 }, step = 10 }
  local f = io.open(path); local text = f:read("a"); f:close()
  check.eq("lua/core/log-flushed-per-row", (text:gsub("#[^\n]*\n", "")), "step\tT\te\te_err\n10\t0.5\t-1.25\t0.01\n")
  check.raises("lua/core/log-new-column", function() out:row{ T = 1, x = 2 } end, "column 'x'")
  out:close()
  local again = carlo.log(path, { append = true })
  again:row{ T = 0.6, e = { mean = -1, err = 0.02 }, step = 20 }
  again:close()
  f = io.open(path); text = f:read("a"); f:close()
  check.eq("lua/core/log-append", select(2, text:gsub("#[^\n]*\n", ""):gsub("\n", "")), 3)
end

-- carlo.stats on a constant and an alternating series
do
  local s = carlo.stats{ 1, 1, 1, 1 }
  check.ok("lua/core/stats-constant", s.mean == 1 and s.err == 0)
  -- blocks of four identical values, independent from block to block: the error is that of
  -- the 1024 block values and tau = 2 samples
  math.randomseed(42)
  local x, blocks = {}, {}
  for b = 1, 1024 do
    blocks[b] = math.random()
    for j = 1, 4 do x[4 * (b - 1) + j] = blocks[b] end
  end
  local bs = carlo.stats(blocks)
  s = carlo.stats(carlo.array("f64", x))
  check.ok("lua/core/stats-blocked", math.abs(s.mean - bs.mean) < 1e-12 and
           math.abs(s.err / bs.err - 1) < 0.15 and math.abs(s.tau - 2) < 0.5 and s.plateau,
           ("err %g (blocks: %g), tau %g"):format(s.err, bs.err, s.tau))
end

-- histograms
do
  local h = carlo.histogram({ 0.1, 0.2, 0.6, 0.99, 1.0, -3 }, { lo = 0, hi = 1, bins = 2 })
  check.ok("lua/core/histogram", h.counts[1] == 2 and h.counts[2] == 2 and h.below == 1 and
           h.above == 1 and h.total == 6 and h.width == 0.5)
  check.raises("lua/core/histogram-range", function() carlo.histogram({}, { lo = 1, hi = 1, bins = 2 }) end,
               "hi must be")
end

-- devices
do
  local d = carlo.devices()
  check.ok("lua/core/devices", d.cpu.threads >= 1 and type(d.gpus) == "table" and type(d.cuda) == "string")
  check.raises("lua/core/set-device-bad", function() carlo.set_device("fpga") end, "device must be")
end

-- carlo.anneal: one row per temperature, state carried along, errors named.
do
  local sys = carlo.potts{ L = 16, q = 3, T = 0.5, seed = 1, init = "ordered", device = "cpu" }
  local path = tmp .. "/anneal.tsv"
  local res = carlo.anneal{ system = sys, ladder = carlo.ladder{ from = 0.6, to = 1.4, step = 0.4 },
                            equilibrate = 100, measure = 400, every = 4, log = path, quiet = true }
  check.ok("lua/core/anneal-results", #res == 3 and res[3].T == 1.4 and sys.step == 3 * 500)
  check.ok("lua/core/anneal-energy-rises", res[1].e.mean < res[2].e.mean and res[2].e.mean < res[3].e.mean)
  local rows = 0
  for line in io.lines(path) do if line:sub(1, 1) ~= "#" then rows = rows + 1 end end
  check.eq("lua/core/anneal-log-rows", rows, 4)
  check.raises("lua/core/anneal-missing-measure", function()
    carlo.anneal{ system = sys, ladder = { 1 } }
  end, "measure is required")
  -- any control by name; every declared observable logged with its error and tau
  local bpath = tmp .. "/anneal-beta.tsv"
  local bres = carlo.anneal{ system = sys, control = "beta", ladder = { 0, 0.5 }, measure = 40,
                             every = 4, log = bpath, quiet = true }
  check.ok("lua/core/anneal-any-control", #bres == 2 and bres[1].beta == 0 and sys.beta == 0.5 and
    math.abs(bres[1].e.mean + 2 / 3) < 0.1, ("e at beta = 0: %s"):format(bres[1].e.mean))
  local f = io.open(bpath)
  local header = f:read("l")
  while header and header:sub(1, 1) == "#" do header = f:read("l") end -- the commented header
  f:close()
  local cols = {}
  for c in header:gmatch("[^\t]+") do cols[c] = true end
  check.ok("lua/core/anneal-logs-every-observable", cols.beta and cols.V_L and cols.V_L_err and
    cols.tau_C and cols.chi_err and cols.e_plateau and cols.m_plateau, header)
  check.raises("lua/core/anneal-unknown-control", function()
    carlo.anneal{ system = sys, control = "pressure", ladder = { 1 }, measure = 4 }
  end, "control 'pressure' is not one of", "T, beta")
end
