-- quickstart: a small Potts heating run (q = 9, through the first-order transition at
-- Tc = 1/ln(1 + 3) = 0.7213) on the best device available. Prints a table, writes the log
-- quickstart.tsv and a picture of the final lattice, quickstart.png.
--   carlo workflows/quickstart.lua [L=...] [device=cpu|gpu|auto]
local carlo = require "carlo"
local gpu = #carlo.devices().gpus > 0
local opt = carlo.options(arg, { L = gpu and 1024 or 128, device = "auto", out = "quickstart" })

local sys = carlo.potts{ L = opt.L, q = 9, T = 0.70, seed = 2012, init = "ordered", device = opt.device }
print(("Potts q = 9 on a %d x %d lattice (%s), heating from the ordered phase; Tc = %.5f")
  :format(sys.L, sys.L, sys.device, 1 / math.log(4)))
print(("%8s %18s %18s %14s"):format("T", "e", "m", "C"))
local t0 = carlo.clock()
carlo.anneal{
  system = sys,
  ladder = carlo.ladder{ from = 0.700, to = 0.740, step = 0.005 },
  equilibrate = 2000, measure = 4000, every = 10,
  log = opt.out .. ".tsv",
  on_temperature = function(T, s)
    print(("%8.4f %10.5f ± %.5f %10.5f ± %.5f %8.2f ± %.2f")
      :format(T, s.e.mean, s.e.err, s.m.mean, s.m.err, s.C.mean, s.C.err))
  end,
}
sys:png(opt.out .. ".png", { scale = math.max(1, 512 // sys.L) })
print(("%d sweeps in %.1f s; wrote %s.tsv and %s.png"):format(sys.step, carlo.clock() - t0, opt.out, opt.out))
