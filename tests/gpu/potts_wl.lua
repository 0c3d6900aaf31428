-- gpu/potts_wl/*: Wang-Landau on the GPU (a warp per window, a lane per walker) against the CPU
-- (a thread per window, walkers in turn), bit for bit: the raw ln g of every window, its step
-- count and flat histograms, and the joined result; then the GPU's ln Z of q = 2, L = 16 against
-- Kaufman's exact value and its speed beside the CPU's.
local carlo = require "carlo"
local check = require "check"
local exact = require "ising_exact"
if not check.gpu_or_skip("gpu/potts_wl/bitwise") then return end

local cases = {
  { L = 4, q = 2, windows = 1, walkers = 1, final = 1e-5 },
  { L = 8, q = 2, windows = 3, walkers = 1, final = 1e-5 },
  { L = 8, q = 3, windows = 4, walkers = 32, final = 1e-5 },
  { L = 10, q = 5, windows = 2, walkers = 7, final = 1e-4 },
  { L = 12, q = 9, windows = 6, walkers = 4, final = 1e-4, overlap = 0.7 },
}
for i, t in ipairs(cases) do
  local a, b = {}, {}
  for k, v in pairs(t) do a[k] = v; b[k] = v end
  a.seed, b.seed = 500 + i, 500 + i
  a.device, b.device = "cpu", "gpu"
  local c, g = carlo.wang_landau(a), carlo.wang_landau(b)
  local same, why = c.lng == g.lng and c.E == g.E and c.moves == g.moves, "joined ln g differs"
  for k = 1, #c.window do
    local wc, wg = c.window[k], g.window[k]
    if not (wc.lng == wg.lng and wc.steps == wg.steps and wc.halvings == wg.halvings) then
      same, why = false, ("window %d: steps %d vs %d, halvings %d vs %d"):format(k, wc.steps,
        wg.steps, wc.halvings, wg.halvings)
    end
  end
  check.ok(("gpu/potts_wl/bitwise-q%d-L%d-w%d-walkers%d"):format(t.q, t.L, t.windows, t.walkers),
           same, why)
end

-- the GPU result is right, and what it costs beside the CPU (printed for the record)
local L = 16
local dz = {}
for seed = 1, 4 do
  local t0 = carlo.clock()
  local g = carlo.wang_landau{ L = L, q = 2, windows = 8, walkers = 32, final = 1e-6, seed = seed,
                               device = "gpu" }
  local gpu_s = carlo.clock() - t0
  dz[#dz + 1] = g:lnZ(0.8814) - exact.lnZ_potts2(0.8814, L)
  print(("gpu L = 16, 8 windows x 32 walkers, final 1e-6, seed %d: %.2f s, %d moves, %.3g ns/move")
    :format(seed, gpu_s, g.moves, gpu_s / g.moves * 1e9))
end
local n, s, s2 = #dz, 0, 0
for _, v in ipairs(dz) do s = s + v end
local m = s / n
for _, v in ipairs(dz) do s2 = s2 + (v - m) ^ 2 end
check.within("gpu/potts_wl/lnZ_L16", m, 0, math.sqrt(s2 / (n - 1) / n), 4)
