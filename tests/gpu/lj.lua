-- gpu/lj/*: the GPU decomposition chain is the CPU chain, bit for bit, for every kernel
-- variant and both energy sums (positions, running energy and virial, acceptances); Widom
-- factors agree bit for bit; the running energy does not drift; cell lists that fill up
-- grow the same way on both. The checkerboard chain likewise, for both sum orders, in 2D and
-- 3D, through cell growth, and for sub-sweeps driven one set at a time; and with the harmonic
-- tether (lambda > 0) in both sum orders, 2D, given sites, sub-sweeps and a checkpoint.
local carlo = require "carlo"
local check = require "check"
if not check.gpu_or_skip("gpu/lj/decomposition-chain") then return end

local function pair(opts)
  local a, b = {}, {}
  for k, v in pairs(opts) do a[k], b[k] = v, v end
  a.device, b.device = "cpu", "gpu"
  a.seed, b.seed = opts.seed or 9, opts.seed or 9
  return carlo.lj(a), carlo.lj(b)
end

local function same(name, c, g)
  local pc, pg = c:snapshot().position, g:snapshot().position
  local ok = pc == pg and c.U == g.U and c.P == g.P and c.acceptance == g.acceptance
    and c.tried == g.tried and c.step == g.step
  return check.ok(name, ok, ("positions %s, U %.17g vs %.17g, acceptance %.17g vs %.17g")
    :format(pc == pg and "equal" or "differ", c.U, g.U, c.acceptance, g.acceptance))
end

local function chain(name, opts, moves, kernel)
  local c, g = pair(opts)
  if kernel then g:launch{ kernel = kernel } end
  c:trial(moves)
  g:trial(moves)
  same(name, c, g)
  return c, g
end

-- the issue's case: N = 500, rho = 0.776, T = 0.85, 10^4 moves, all particles
local base = { N = 500, rho = 0.776, T = 0.85, rc = 3.0 }
local c, g = chain("gpu/lj/decomposition-chain", base, 10000)
check.eq("gpu/lj/decomposition-chain-sum", g.energy_sum, "all")
for _, k in ipairs{ "launch", "graph" } do
  chain("gpu/lj/decomposition-chain-" .. k, base, 10000, k)
end
-- continuing the same systems (the device state carries over between calls)
c:trial(5000)
g:trial(5000)
same("gpu/lj/decomposition-chain-continued", c, g)
-- T and delta changed between runs (the graph variant records its kernels again)
local c2, g2 = pair(base)
g2:launch{ kernel = "graph" }
for _, T in ipairs{ 0.85, 1.2 } do
  c2.T, g2.T, c2.delta, g2.delta = T, T, 0.1 * T, 0.1 * T
  c2:trial(3000)
  g2:trial(3000)
end
same("gpu/lj/decomposition-chain-retuned", c2, g2)

-- cell sums, 3D and 2D, every variant
local cells = { N = 4000, rho = 0.776, T = 0.85 }
for _, k in ipairs{ "persistent", "launch", "graph" } do
  chain("gpu/lj/decomposition-cells-" .. k, cells, 20000, k)
end
chain("gpu/lj/decomposition-cells-2d", { N = 3000, rho = 0.7, T = 0.6, dim = 2, init = "random" }, 30000)
chain("gpu/lj/decomposition-shifted", { N = 3000, rho = 0.6, T = 1.0, shift = true }, 20000)
chain("gpu/lj/decomposition-all-2d", { N = 400, rho = 0.7, T = 0.6, dim = 2, energy_sum = "all",
  init = "random" }, 10000)

-- all particles on a cooperative grid of many blocks (N > 2048), and a tile count that is
-- not a power of two
chain("gpu/lj/decomposition-all-grid", { N = 40000, rho = 0.8, T = 1.0, energy_sum = "all" }, 2000)
chain("gpu/lj/decomposition-all-grid-odd", { N = 23000, rho = 0.8, T = 1.0, energy_sum = "all" }, 2000)
chain("gpu/lj/decomposition-all-grid-launch", { N = 40000, rho = 0.8, T = 1.0, energy_sum = "all" },
  1000, "launch")

-- Widom insertions: the same factors
for _, o in ipairs{ base, cells, { N = 40000, rho = 0.8, T = 1.0, energy_sum = "all" } } do
  local a, b = pair(o)
  local wa, wb = a:widom(300).boltzmann, b:widom(300).boltzmann
  check.ok("gpu/lj/widom-" .. a.energy_sum .. "-" .. a.N, wa == wb, ("%.17g vs %.17g"):format(wa, wb))
end

-- the running energy of 10^5 GPU moves equals a recomputation
for _, o in ipairs{ base, cells } do
  local _, b = pair(o)
  b:trial(100000)
  local r = b:recompute()
  check.ok("gpu/lj/energy-drift-" .. b.energy_sum, r.drift <= 1e-9, ("drift %g"):format(r.drift))
end

-- a quenched gas condenses: cell lists overflow their first capacity and grow, on the GPU by
-- stopping, enlarging and going on from the same move
local n, L = 10, 30
local pos = carlo.array("f64", { shape = { n * n * n, 3 } })
local k = 0
for x = 0, n - 1 do for y = 0, n - 1 do for z = 0, n - 1 do
  pos[3 * k + 1], pos[3 * k + 2], pos[3 * k + 3] = 3 * x + 1.5, 3 * y + 1.5, 3 * z + 1.5
  k = k + 1
end end end
local qa, qb = pair{ init = { position = pos, box = { L, L, L } }, T = 0.45, delta = 0.4 }
local cap0 = qb.cell_capacity
qa:trial(300000)
qb:trial(300000)
check.ok("gpu/lj/cells-overflow-grows", qb.cell_capacity > cap0 and qa.cell_capacity == qb.cell_capacity,
  ("capacity %d -> %d (cpu %d)"):format(cap0, qb.cell_capacity, qa.cell_capacity))
same("gpu/lj/cells-overflow-chain", qa, qb)

-- sample on the GPU: the same numbers as on the CPU
local sa, sb = pair(cells)
local ra = sa:sample{ sweeps = 10, every = 2, widom = 50 }
local rb = sb:sample{ sweeps = 10, every = 2, widom = 50 }
check.ok("gpu/lj/sample", ra.U.mean == rb.U.mean and ra.P.mean == rb.P.mean and
  ra.mu_ex.mean == rb.mu_ex.mean, ("U %.17g vs %.17g"):format(ra.U.mean, rb.U.mean))

-- checkerboard: both sum orders, 2D, shifted, two passes, a large system (one warp per cell)
local function sweeps_chain(name, opts, sweeps)
  opts.mode = "checkerboard"
  local c, g = pair(opts)
  c:run{ sweeps = sweeps }
  g:run{ sweeps = sweeps }
  same(name, c, g)
  return c, g
end
for _, order in ipairs{ "near", "cell" } do
  sweeps_chain("gpu/lj/checkerboard-chain-" .. order, { N = 4000, rho = 0.776, T = 0.85,
    sum_order = order }, 20)
end
-- one warp per cell with crowded neighbourhoods: beyond the staged candidates (dense) and
-- around that size (mixed), the rest read from the cells
sweeps_chain("gpu/lj/checkerboard-chain-warp-dense", { N = 4000, rho = 1.0, T = 2.0, sum_order = "near" }, 20)
sweeps_chain("gpu/lj/checkerboard-chain-warp-mixed", { N = 4000, rho = 0.9, T = 1.5, sum_order = "near" }, 20)
sweeps_chain("gpu/lj/checkerboard-chain-n500", { N = 500, rho = 0.776, T = 0.85, init = "random" }, 40)
sweeps_chain("gpu/lj/checkerboard-chain-2d", { N = 3000, rho = 0.7, T = 0.6, dim = 2, init = "random" }, 30)
sweeps_chain("gpu/lj/checkerboard-chain-shifted-passes", { N = 3000, rho = 0.6, T = 1.0, shift = true,
  passes = 2 }, 20)
local cbc, cbg = sweeps_chain("gpu/lj/checkerboard-chain-large", { N = 65536, rho = 0.8, T = 1.0 }, 5)
-- one warp per cell over thousands of cells at once, each waiting for its neighbours of the
-- sets before its own within the one launch of a sweep (2D too)
sweeps_chain("gpu/lj/checkerboard-chain-warp-large", { N = 262144, rho = 0.8, T = 1.0, sum_order = "near" }, 4)
sweeps_chain("gpu/lj/checkerboard-chain-warp-large-2d", { N = 131072, rho = 0.7, T = 1.0, dim = 2,
  sum_order = "near" }, 6)
local r, rc = cbg:recompute(), cbc:recompute()
check.ok("gpu/lj/energy-drift-checkerboard", r.drift <= 1e-9, ("drift %g"):format(r.drift))
check.ok("gpu/lj/checkerboard-recompute", r.U_fresh == rc.U_fresh and r.W_fresh == rc.W_fresh,
  ("fresh energy %.17g on the GPU, %.17g on the CPU"):format(r.U_fresh, rc.U_fresh))
local ra, rb = cbc:sample{ sweeps = 4, every = 2, widom = 100 }, cbg:sample{ sweeps = 4, every = 2, widom = 100 }
check.ok("gpu/lj/checkerboard-sample", ra.U.mean == rb.U.mean and ra.P.mean == rb.P.mean and
  ra.mu_ex.mean == rb.mu_ex.mean, ("U %.17g vs %.17g"):format(ra.U.mean, rb.U.mean))
-- a condensing gas overfills its cells (rc = 3.5: about 1 particle per cell at the start, 30 in
-- a droplet): both backends grow them at the same shift and go on identically
local ga, gb = pair{ N = 2000, rho = 0.03, T = 0.45, rc = 3.5, mode = "checkerboard", delta = 0.6,
  init = "fcc", seed = 12 }
local nmax0 = gb.nmax
ga:run{ sweeps = 400 }
gb:run{ sweeps = 400 }
check.ok("gpu/lj/checkerboard-cells-grow", gb.nmax > nmax0 and ga.nmax == gb.nmax,
  ("nmax %d -> %d (cpu %d)"):format(nmax0, gb.nmax, ga.nmax))
same("gpu/lj/checkerboard-grow-chain", ga, gb)

-- sub-sweeps one set at a time (a launch each) are the sweeps of the CPU, in both orders, 3D
-- and 2D, and half a sweep followed by a run finishes that sweep first
for _, o in ipairs{ { sum_order = "near" }, { sum_order = "cell" }, { sum_order = "near", dim = 2 } } do
  local opts = { N = 4000, rho = 0.776, T = 0.85, mode = "checkerboard", init = "random", seed = 21,
                 sum_order = o.sum_order, dim = o.dim }
  local c, g = pair(opts)
  c:run{ sweeps = 3 }
  for _ = 1, 3 do for _, set in ipairs(g.set_order) do g:substep(set) end end
  same(("gpu/lj/checkerboard-substeps-%s-%dd"):format(o.sum_order, g.dim), c, g)
  local first = g.set_order
  g:substep(first[1]); g:substep(first[2]); g:substep(first[3])
  c:run{ sweeps = 2 }
  g:run{ sweeps = 2 }
  same(("gpu/lj/checkerboard-half-sweep-%s-%dd"):format(o.sum_order, g.dim), c, g)
end
-- a condensing gas grows its cells in a shift that ends a sweep of sub-sweeps, as in a run
local ha, hb = pair{ N = 2000, rho = 0.03, T = 0.45, rc = 3.5, mode = "checkerboard", delta = 0.6,
  init = "fcc", seed = 12 }
ha:run{ sweeps = 400 }
for _ = 1, 400 do for _, set in ipairs(hb.set_order) do hb:substep(set) end end
same("gpu/lj/checkerboard-substeps-grow", ha, hb)

-- checkpoints continue bit for bit (when the trajectory container offers carlo.load; the
-- restored system runs on the default device, and the chain is the same on either)
if carlo.load then
  local path = check.tmp .. "/lj-gpu.ckpt"
  local _, b = pair(cells)
  b:trial(5000)
  b:save(path)
  local r = carlo.load(path)
  r:trial(5000)
  b:trial(5000)
  same("gpu/lj/checkpoint-continues", r, b)
else
  check.skip("gpu/lj/checkpoint-continues", "carlo.load is not in this build")
end

-- the harmonic tether (Frenkel-Ladd): the CPU chain on the GPU, bit for bit, in both sum orders,
-- 2D, two passes, with the sites given, through sub-sweeps one set at a time, and msd_site
-- sampled alike; a GPU checkpoint continues on the CPU
local function tether_pair(opts)
  opts.mode = "checkerboard"
  local c, g = pair(opts)
  return c, g
end
for _, o in ipairs{
  { name = "near", N = 4000, rho = 1.0, T = 1.5, sum_order = "near", lambda = 40 },
  { name = "cell", N = 4000, rho = 1.0, T = 1.5, sum_order = "cell", lambda = 40 },
  { name = "near-large", N = 32000, rho = 1.05, T = 2.0, sum_order = "near", lambda = 400 },
  { name = "2d", N = 3200, rho = 0.9, T = 0.8, dim = 2, lambda = 20 },
  { name = "passes", N = 2048, rho = 1.1, T = 2.0, passes = 2, shift = true, lambda = 1000 },
  { name = "dilute", N = 500, rho = 0.05, T = 1.0, lambda = 2, delta = 0.5 },
} do
  local name = o.name
  o.name = nil
  local c, g = tether_pair(o)
  c:run{ sweeps = 30 }
  g:run{ sweeps = 30 }
  same("gpu/lj/tether-chain-" .. name, c, g)
  local sc, sg = c:sample{ sweeps = 10, every = 2 }, g:sample{ sweeps = 10, every = 2 }
  check.ok("gpu/lj/tether-msd-" .. name, sc.msd_site.mean == sg.msd_site.mean and sc.msd_site.mean > 0,
    ("msd %.17g vs %.17g"):format(sc.msd_site.mean, sg.msd_site.mean))
end
do -- sites given (a displaced lattice), then sub-sweeps one set at a time against a CPU run
  local c, g = tether_pair{ N = 4000, rho = 1.0, T = 1.5, sum_order = "near", seed = 31 }
  local x = c:snapshot().position
  local y = carlo.array("f64", { shape = { 4000, 3 } })
  for i = 1, 4000 * 3 do y[i] = x[i] + 0.01 * ((i % 7) - 3) end
  c:set_sites(y)
  g:set_sites(y)
  c.lambda, g.lambda = 100, 100
  c:run{ sweeps = 4 }
  for _ = 1, 4 do for _, set in ipairs(g.set_order) do g:substep(set) end end
  same("gpu/lj/tether-substeps", c, g)
  check.ok("gpu/lj/tether-sites", c.sites == g.sites)
  if carlo.load then
    local path = check.tmp .. "/lj-gpu-tether.ckpt"
    g:save(path)
    local r = carlo.load(path, { device = "cpu" })
    r:run{ sweeps = 10 }
    g:run{ sweeps = 10 }
    same("gpu/lj/tether-checkpoint-to-cpu", r, g)
  else
    check.skip("gpu/lj/tether-checkpoint-to-cpu", "carlo.load is not in this build")
  end
end
