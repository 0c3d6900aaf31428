-- tests/mpi/hard_frozen.lua — hard disks and pentagons split with frozen edges (decompose =
-- "frozen", carlo-mpi(7)) over however many ranks run this. The chain is then the ranks' own,
-- so this checks what must hold on any number of them:
--   * a set moves no particle of a slab's first or last cell layer, and only those of its own
--     parity (the layer of each particle worked out from sys.cells; the same check on the whole
--     system, where every layer of the parity moves, checks the working-out);
--   * the frozen layers cost nothing else: after 1000 sweeps every particle is there once, with
--     no overlap; a frozen run is not the exact one (the edges did sit out), and the same seed
--     makes the same chain;
--   * the disks' pressure in the liquid (phi = 0.6) is the whole system's within the error bars
--     (the distribution is the same; 4.5 standard errors of the difference, both from blocks;
--     make validate compares longer runs at phi = 0.698);
--   * a checkpoint keeps the frozen edges when loaded; too few layers are refused.
local carlo = require "carlo"
local n, me = carlo.mpi.size, carlo.mpi.rank
-- every rank makes every check; a check passes when it holds on all of them (rank 0 prints)
local check = require("check").on_all_ranks("mpi/hard_frozen/", "_np" .. n)
local fingerprint = require("check").position_fingerprint

local disks = { N = 1024, phi = 0.698, init = "hex", seed = 11, device = "cpu" }
local liquid = { N = 1024, phi = 0.6, init = "hex", seed = 12, device = "cpu" }
local with = require("check").with

-- the cell layer along y of each particle, by tag (positions run from -L/2, cells from origin)
local function layers_of(sys)
  local c, L = sys.cells, sys.box[2]
  local m, w, o = c.m[2], c.width[2], c.origin[2]
  local out = {}
  for i, r in ipairs(sys:snapshot().position:totable()) do
    local u = (r[2] + 0.5 * L - o) % L
    out[i] = math.floor(u / w) % m
  end
  return out, m
end

-- the layers every rank freezes: each slab's first and last (cell_split.c's layout)
local function frozen_set(m, ranks)
  local f = {}
  for r = 0, ranks - 1 do
    f[r * m // ranks] = true
    f[(r + 1) * m // ranks - 1] = true
  end
  return f
end

-- one set by hand on sys: the layers of the particles that moved
local function moved_layers(sys, set)
  local before, m = layers_of(sys)
  local p0 = sys:snapshot().position:totable()
  sys:substep(set)
  local p1 = sys:snapshot().position:totable()
  local moved = {}
  for i = 1, #p0 do
    if p0[i][1] ~= p1[i][1] or p0[i][2] ~= p1[i][2] then moved[#moved + 1] = before[i] end
  end
  return moved, m
end

-- sets 0..3 (set bit 1: the parity along y): whole, every layer of the parity moves; frozen,
-- every layer of the parity but the slabs' edges
local fz = carlo.hard_disks(with(disks, { decompose = "frozen" }))
local wh = carlo.hard_disks(disks)
check("flag", fz.frozen_edges and fz.decomposed and not wh.frozen_edges, "frozen_edges not set")
fz:run{ sweeps = 3 }
wh:run{ sweeps = 3 }
for set = 0, 3 do
  local bit = set >> 1 & 1
  local mw, m = moved_layers(wh, set)
  local seen, wrong = {}, 0
  for _, k in ipairs(mw) do
    seen[k] = true
    if k % 2 ~= bit then wrong = wrong + 1 end
  end
  local all = true
  for k = bit, m - 1, 2 do all = all and seen[k] == true end
  check("whole_set" .. set, wrong == 0 and all,
    ("%d moves in layers of the other parity; every layer of the parity moved: %s"):format(wrong, all))
  local mf = moved_layers(fz, set)
  local frozen, bad, seenf = frozen_set(m, n), 0, {}
  for _, k in ipairs(mf) do
    seenf[k] = true
    if frozen[k] or k % 2 ~= bit then bad = bad + 1 end
  end
  local rest = true
  for k = bit, m - 1, 2 do
    if not frozen[k] then rest = rest and seenf[k] == true end
  end
  check("frozen_set" .. set, #mf > 0 and bad == 0 and rest,
    ("%d moves, %d of them in a frozen layer or of the other parity; every other layer moved: %s")
      :format(#mf, bad, rest))
end

-- not the exact chain; the same seed twice, the same chain
local ex = carlo.hard_disks(with(disks, { decompose = true }))
local f2 = carlo.hard_disks(with(disks, { decompose = "frozen" }))
local f3 = carlo.hard_disks(with(disks, { decompose = "frozen" }))
ex:run{ sweeps = 20 }
f2:run{ sweeps = 20 }
f3:run{ sweeps = 20 }
check("not_exact", fingerprint(ex) ~= fingerprint(f2), "the frozen run made the exact chain")
check("same_seed", fingerprint(f2) == fingerprint(f3), "the same seed made two chains")
check("fewer_tries", f2:observe().tried < ex:observe().tried, "the frozen layers' moves were tried")

-- 1000 sweeps: every particle there once, no overlap
f2:run{ sweeps = 980 }
local ok, why = f2:verify()
check("verify_1000", ok and f2.step == 1000, tostring(why))
check("no_overlap_1000", f2:overlaps() == 0, "overlapping pairs")

-- the pressure, frozen against whole, in the liquid (phi = 0.6, where a run of a few thousand
-- sweeps forgets the crystal it starts from): the same distribution
local lf, lw = carlo.hard_disks(with(liquid, { decompose = "frozen" })), carlo.hard_disks(liquid)
lf:run{ sweeps = 500 }
lw:run{ sweeps = 500 }
local qf = lf:sample{ sweeps = 4000, every = 10 }
local qw = lw:sample{ sweeps = 4000, every = 10 }
local d, e = qf.P.mean - qw.P.mean, math.sqrt(qf.P.err ^ 2 + qw.P.err ^ 2)
check("pressure", e > 0 and math.abs(d) < 4.5 * e,
  ("P %.5f +- %.5f frozen, %.5f +- %.5f whole"):format(qf.P.mean, qf.P.err, qw.P.mean, qw.P.err))

-- a checkpoint keeps the frozen edges (loaded on these ranks)
local tmp = os.getenv("CARLO_TEST_TMP") or "/tmp"
local path = ("%s/hard_frozen_np%d.ckpt"):format(tmp, n) -- the same name on every rank
f2:save(path)
carlo.mpi.barrier()
local c = carlo.load(path)
check("load", c.frozen_edges and c.step == f2.step and fingerprint(c) == fingerprint(f2),
  "a frozen split system's checkpoint loaded otherwise")
c:run{ sweeps = 10 }
f2:run{ sweeps = 10 }
check("load_continues", fingerprint(c) == fingerprint(f2), "the loaded system went on otherwise")
carlo.mpi.barrier()
if me == 0 then os.remove(path) end

-- pentagons: the same rule through the shapes' sweep
local pentagons = { vertices = carlo.shapes.pentagon.vertices, N = 400, phi = 0.6, init = "hex", seed = 5,
  device = "cpu" }
local pa = carlo.hard_polygons(with(pentagons, { decompose = "frozen" }))
local pe = carlo.hard_polygons(with(pentagons, { decompose = true }))
pa:run{ sweeps = 200 }
pe:run{ sweeps = 200 }
local okp, whyp = pa:verify()
check("pentagons", pa.frozen_edges and okp and pa:overlaps() == 0, tostring(whyp))
check("pentagons_not_exact", fingerprint(pa) ~= fingerprint(pe) and
  pa:observe().tried < pe:observe().tried, "the frozen pentagons made the exact chain")

-- too few layers: three a rank at least
local okf, err = pcall(carlo.hard_disks, { N = 16, phi = 0.3, seed = 1, decompose = "frozen", device = "cpu" })
local m16 = carlo.hard_disks{ N = 16, phi = 0.3, seed = 1, device = "cpu" }.cells.m[2]
if m16 < 3 * n then
  check("too_few_layers", not okf and tostring(err):find("fewer than 3 for each", 1, true), tostring(err))
else
  check("enough_layers", okf, tostring(err))
end
local okb, errb = pcall(carlo.hard_disks, { N = 16, phi = 0.3, seed = 1, decompose = "yes" })
check("bad_value", not okb and tostring(errb):find('decompose must be true, false or "frozen"', 1, true),
  tostring(errb))
