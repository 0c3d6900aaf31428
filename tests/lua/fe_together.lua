-- lua/hard/fl-together, lua/lj/fe-together: the Frenkel-Ladd ladder of workflows/hs_frenkel_ladd.lua with every node
-- of two sizes advanced together (carlo.advance) gives the numbers of the same nodes run one
-- after another (sys:tune, sys:run, sys:sample) bit for bit: the same deltas, msd means, errors
-- and free energies. The workflow's tuning of systems together against sys:tune, NVT and NPT.
-- workflows/lj_free_energy.lua's state points together against one after another: the same
-- free energies and pressures bit for bit, the Widom means to 1e-12 (N = 256: lj:tune's chunk is
-- one sweep).
-- CPU, small: seconds.
local carlo = require "carlo"
local check = require "check"

local fl = assert(loadfile("workflows/hs_frenkel_ladd.lua"))("--module")
local o = { dim = 3, rho = 1.0409, nodes = 3, lambda_max = 2e4, c = 1, sweeps = 240, equilibrate = 100,
            every = 4, seed = 11, device = "cpu" }
local sizes = { 108, 256 }
local function run(together)
  local rows = {}
  local log = { row = function(_, r) rows[#rows + 1] = r end }
  o.together, o.log = together, log
  local t = fl.frenkel_ladd_sizes(o, sizes)
  return t, rows
end
local a, ra = run(true)
local b, rb = run(false)
check.eq("lua/hard/fl-together-nodes", #ra, #rb)
local same, why = #ra == 2 * o.nodes, ""
for i = 1, math.min(#ra, #rb) do
  local x, y = ra[i], rb[i]
  for _, k in ipairs { "lambda", "integrand", "delta", "acceptance", "tau" } do
    if x[k] ~= y[k] then same, why = false, ("node %d: %s %.17g vs %.17g"):format(i, k, x[k], y[k]) end
  end
  if x.msd_site.mean ~= y.msd_site.mean or x.msd_site.err ~= y.msd_site.err then
    same, why = false, ("node %d: msd_site %.17g(%g) vs %.17g(%g)"):format(i, x.msd_site.mean, x.msd_site.err,
      y.msd_site.mean, y.msd_site.err)
  end
end
check.ok("lua/hard/fl-together-bitwise-nodes", same, why)
for s, N in ipairs(sizes) do
  check.ok(("lua/hard/fl-together-bitwise-fex-%d"):format(N),
    a[s].fex == b[s].fex and a[s].integral_err == b[s].integral_err and a[s].N == N,
    ("%.17g(%g) vs %.17g(%g)"):format(a[s].fex, a[s].integral_err, b[s].fex, b[s].integral_err))
end
-- the nodes differ from one another (distinct seeds and lambdas): the comparison is not of copies
check.ok("lua/hard/fl-together-distinct", ra[1].msd_site.mean ~= ra[2].msd_site.mean
  and ra[1].msd_site.mean > ra[o.nodes].msd_site.mean, "the nodes' msd should fall with lambda")

-- tuning together: the same deltas (and dlnV for NPT) as sys:tune, from the same start
local function pair(npt)
  local function make(seed)
    local s = carlo.hard_spheres{ N = 108, phi = npt and 0.45 or 0.5, init = "fcc", seed = seed, device = "cpu",
                                  quiet = true, delta = 0.05 }
    if npt then s.pressure = 8 end
    return s
  end
  local x, y, z = make(5), make(6), make(5)
  fl.tune_together({ x, y }, { target = 0.3, volume_target = 0.3, rounds = 4, sweeps = 20 })
  z:tune{ target = 0.3, volume_target = 0.3, rounds = 4, sweeps = 20, quiet = true }
  local ok = x.delta == z.delta and x.delta ~= 0.05 and (not npt or x.dlnV == z.dlnV)
  local msg = ("delta %.9g vs %.9g, dlnV %.9g vs %.9g"):format(x.delta, z.delta, x.dlnV, z.dlnV)
  local sx, sz = x:snapshot().position, z:snapshot().position
  for i = 1, #sx do if sx[i] ~= sz[i] then ok, msg = false, "positions differ at " .. i; break end end
  x:close(); y:close(); z:close()
  return ok, msg
end
check.ok("lua/hard/tune-together-nvt", pair(false))
check.ok("lua/hard/tune-together-npt", pair(true))

-- Lennard-Jones thermodynamic integration: state points together and one after another
local function lj(together)
  lj_free_energy_opts = { quick = true, device = "cpu", quiet = true, N = 256, targets = "1.5:0.6",
                          nodes_rho = 2, nodes_T = 2, equilibrate = 40, measure = 60, every = 3, widom = 5,
                          together = together, out = check.tmp .. "/fe_together_lj.tsv" }
  local saved = arg
  arg = {}
  local rows = dofile("workflows/lj_free_energy.lua")
  arg, lj_free_energy_opts = saved, nil
  return rows[1]
end
local x, y = lj(true), lj(false)
local same, why = true, ""
for _, k in ipairs { "betaA_ex", "betaA_ex_err", "betamu_ti", "betamu_ti_err", "Z", "Z_err" } do
  if x[k] ~= y[k] then same, why = false, ("%s: %.17g vs %.17g"):format(k, x[k], y[k]) end
end
-- Widom: the same insertions; sys:sample's mu_ex comes from its jackknife's own sums (the last
-- bits), the error there by jackknife and here to first order: the mean to 1e-12
if math.abs(x.betamu_widom - y.betamu_widom) > 1e-12 * math.abs(y.betamu_widom) then
  same, why = false, ("betamu_widom: %.17g vs %.17g"):format(x.betamu_widom, y.betamu_widom)
end
check.ok("lua/lj/fe-together-bitwise", same, why)
