-- lua/potts_wl — carlo.wang_landau: bad input named, the exact density of states of the q = 2,
-- L = 4 torus (all 2^16 states counted), ln Z and the energy of q = 2, L = 16 against Kaufman's
-- exact partition function, the result's thermodynamic functions against each other, and the
-- chain's reproducibility (same seed, same bits; thread count irrelevant).
local carlo = require "carlo"
local check = require "check"
local exact = require "ising_exact"

-- bad input: each error names the key and the value received
local function wl(t) return function() carlo.wang_landau(t) end end
check.raises("lua/potts_wl/odd_L", wl{ L = 5, q = 2, seed = 1 }, "L", "even", "5")
check.raises("lua/potts_wl/big_L", wl{ L = 2048, q = 2, seed = 1 }, "L", "2048")
check.raises("lua/potts_wl/q", wl{ L = 4, q = 1, seed = 1 }, "q", "1")
check.raises("lua/potts_wl/q_big", wl{ L = 4, q = 256, seed = 1 }, "q", "256")
check.raises("lua/potts_wl/windows", wl{ L = 4, q = 2, windows = 0, seed = 1 }, "windows", "0")
check.raises("lua/potts_wl/walkers", wl{ L = 4, q = 2, walkers = 33, seed = 1 }, "walkers", "33")
check.raises("lua/potts_wl/overlap", wl{ L = 4, q = 2, overlap = 1, seed = 1 }, "overlap", "1")
check.raises("lua/potts_wl/flatness", wl{ L = 4, q = 2, flatness = 0, seed = 1 }, "flatness", "0")
check.raises("lua/potts_wl/final", wl{ L = 4, q = 2, final = 2, seed = 1 }, "final", "2")
check.raises("lua/potts_wl/final_type", wl{ L = 4, q = 2, final = "1e-6", seed = 1 }, "final",
             "string")
check.raises("lua/potts_wl/unknown", wl{ L = 4, q = 2, T = 1, seed = 1 }, "unknown key", "T")
check.raises("lua/potts_wl/device", wl{ L = 4, q = 2, device = "tpu", seed = 1 }, "device", "tpu")
check.raises("lua/potts_wl/too_many_windows", wl{ L = 4, q = 2, windows = 16, seed = 1 },
             "windows = 16", "fewer windows")
local small = carlo.wang_landau{ L = 4, q = 2, final = 1e-3, seed = 1 }
check.raises("lua/potts_wl/beta", function() small:lnZ("x") end, "beta", "string")
check.raises("lua/potts_wl/beta_zero_F", function() small:free_energy(0) end, "beta", "0")

-- exact g(b) of the 4 x 4 Ising torus, b the number of equal neighbour pairs
local function brute(L)
  local N, g = L * L, {}
  for c = 0, (1 << N) - 1 do
    local b = 0
    for i = 0, L - 1 do
      for j = 0, L - 1 do
        local s = (c >> (i * L + j)) & 1
        if s == (c >> (((i + 1) % L) * L + j)) & 1 then b = b + 1 end
        if s == (c >> (i * L + (j + 1) % L)) & 1 then b = b + 1 end
      end
    end
    g[b] = (g[b] or 0) + 1
  end
  return g
end
local g4 = brute(4)

-- mean and standard error over seeds of a list of numbers
local function mean_se(x)
  local n, s, s2 = #x, 0, 0
  for _, v in ipairs(x) do s = s + v end
  local m = s / n
  for _, v in ipairs(x) do s2 = s2 + (v - m) ^ 2 end
  return m, math.sqrt(s2 / (n - 1) / n)
end

-- ln g of every level against the exact count: the levels visited are exactly those with
-- g > 0, and each level's mean error over the seeds lies within 5 of its standard errors
-- (plus 1e-3 for levels every seed gets alike, such as the normalised ground state)
for _, W in ipairs{ 1, 3 } do
  local errs, support = {}, true
  for seed = 1, 6 do
    local r = carlo.wang_landau{ L = 4, q = 2, windows = W, overlap = 0.6, final = 1e-5,
                                 seed = 10 * W + seed }
    local seen = {}
    for i = 1, #r.E do
      local b = -r.E[i]
      seen[b] = true
      if not g4[b] then support = false
      else
        errs[b] = errs[b] or {}
        table.insert(errs[b], r.lng[i] - math.log(g4[b]))
      end
    end
    for b in pairs(g4) do support = support and seen[b] == true end
  end
  check.ok(("lua/potts_wl/support_L4_w%d"):format(W), support,
           "visited levels differ from the levels where g > 0")
  local worst, at = 0, nil
  for b, x in pairs(errs) do
    local m, se = mean_se(x)
    if math.abs(m) / (se + 1e-3) > worst then worst, at = math.abs(m) / (se + 1e-3), b end
  end
  check.ok(("lua/potts_wl/exact_g_L4_w%d"):format(W), worst <= 5,
           ("E = %d: mean error %.2f standard errors off"):format(-(at or 0), worst))
end

-- q = 2, L = 16 (E from -512 to 0) in four windows, four seeds: ln Z and the energy per site
-- against Kaufman's exact values (the energy as -d ln Z / d beta / N of the exact ln Z)
local L, N = 16, 256
local betas = { 0.3, 0.6, 0.8814, 1.2 }
local runs = {}
for seed = 1, 4 do
  runs[seed] = carlo.wang_landau{ L = L, q = 2, windows = 4, final = 1e-4, seed = seed }
end
for _, beta in ipairs(betas) do
  local dz, de = {}, {}
  local h = 1e-5
  local e_exact = -(exact.lnZ_potts2(beta + h, L) - exact.lnZ_potts2(beta - h, L)) / (2 * h) / N
  for _, r in ipairs(runs) do
    dz[#dz + 1] = r:lnZ(beta) - exact.lnZ_potts2(beta, L)
    de[#de + 1] = r:energy(beta) - e_exact
  end
  local m, se = mean_se(dz)
  check.within(("lua/potts_wl/lnZ_L16_beta%g"):format(beta), m, 0, se, 4)
  m, se = mean_se(de)
  check.within(("lua/potts_wl/energy_L16_beta%g"):format(beta), m, 0, se, 4)
end

-- the result's functions agree with one another
local r = runs[1]
check.ok("lua/potts_wl/normalised", math.abs(r:lnZ(0) - N * math.log(2)) < 1e-9 * N,
         ("ln Z(0) = %.12g, N ln 2 = %.12g"):format(r:lnZ(0), N * math.log(2)))
do
  local b, h = 0.7, 1e-4
  local e_fd = -(r:lnZ(b + h) - r:lnZ(b - h)) / (2 * h) / N
  local c_fd = -b * b * (r:energy(b + h) - r:energy(b - h)) / (2 * h)
  check.ok("lua/potts_wl/energy_is_dlnZ", math.abs(r:energy(b) - e_fd) < 1e-6,
           ("%.10g vs %.10g"):format(r:energy(b), e_fd))
  check.ok("lua/potts_wl/C_is_de", math.abs(r:heat_capacity(b) - c_fd) < 1e-5,
           ("%.10g vs %.10g"):format(r:heat_capacity(b), c_fd))
  check.ok("lua/potts_wl/F", math.abs(r:free_energy(b) + r:lnZ(b) / (b * N)) < 1e-12,
           ("%.12g vs %.12g"):format(r:free_energy(b), -r:lnZ(b) / (b * N)))
  check.ok("lua/potts_wl/ground", r.E[1] == -2 * N and #r.E == #r.lng,
           ("E[1] = %s"):format(tostring(r.E[1])))
end

-- reproducible: the same seed gives the same ln g bit for bit, whatever the thread count
do
  local args = { L = 8, q = 3, windows = 3, walkers = 2, final = 1e-4, seed = 77 }
  carlo.threads(1)
  local a = carlo.wang_landau(args)
  carlo.threads(2)
  local b = carlo.wang_landau(args)
  carlo.threads("auto")
  check.ok("lua/potts_wl/reproducible", a.lng == b.lng and a.E == b.E and a.moves == b.moves,
           "two runs of seed 77 differ")
  args.seed = 78
  local c = carlo.wang_landau(args)
  check.ok("lua/potts_wl/seed_matters", not (c.lng == a.lng), "seeds 77 and 78 gave the same ln g")
end

-- Ctrl-C: a long walk in a child process stops within a chunk and the command exits 130
local carlo_cmd = os.getenv("CARLO")
if carlo_cmd and os.execute("command -v timeout >/dev/null 2>&1") then
  local script = check.tmp .. "/potts_wl_int.lua"
  local f = assert(io.open(script, "w"))
  f:write('carlo.wang_landau{ L = 64, q = 9, windows = 2, final = 1e-12, seed = 1, device = "cpu" }\n')
  f:close()
  local t0 = carlo.clock()
  local ok, how, code = os.execute(("timeout --foreground --preserve-status -s INT 1.5 %s --quiet %s >/dev/null 2>&1")
    :format(carlo_cmd, script))
  local dt = carlo.clock() - t0
  check.ok("lua/potts_wl/ctrl_c", not ok and how == "exit" and code == 130 and dt < 10,
           ("exit %s %s after %.1f s"):format(tostring(how), tostring(code), dt))
else
  check.skip("lua/potts_wl/ctrl_c", "no CARLO command or no timeout")
end
