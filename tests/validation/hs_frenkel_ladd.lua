-- validate/hard/frenkel-ladd: the excess free energy of the defect-free fcc hard-sphere crystal at
-- rho = 1.0409 by the tether (workflows/hs_frenkel_ladd.lua, Einstein molecule), N = 108, 256,
-- 864, 1372 and 2048 extrapolated as f + a ln(N)/N + b/N (Polson et al.'s form, with the fixed
-- centre of mass accounted for), against Polson et al. (2000), 5.91889(4)
-- (workflows/data/hs_free_energy.tsv): within three combined error bars. On the GPU (SKIP
-- without one); a long run. The error bars are statistical (blocking through the quadrature and
-- the fit); the Gauss-Legendre rule's own error is not in them. (fcc boxes of N = 500 have no
-- cell grid at this density: 5 cells of 1.566 a side.)
-- Every node of every size is one system, all advanced together (carlo.advance), so that one
-- call fills the GPU; the sizes can be split over calls and combined:
--   carlo tests/validation/hs_frenkel_ladd.lua                         all sizes, then the fit
--   carlo tests/validation/hs_frenkel_ladd.lua sizes=108,256,864 tsv=fl.tsv   these sizes: rows
--   carlo tests/validation/hs_frenkel_ladd.lua sizes=1372,2048 tsv=fl.tsv     appended to fl.tsv
--   carlo tests/validation/hs_frenkel_ladd.lua combine=fl.tsv          the fit of fl.tsv's rows
-- A size already in the tsv with the same nodes, sweeps, equilibrate and seed is not run again
-- (a call cut short is resumed by repeating it). Arguments (key=value): sizes, tsv, combine (a
-- comma list of tsv files), nodes (16), sweeps (50000 a node), equilibrate (10000), every (5),
-- seed (3), device (gpu; cpu runs it without the SKIP, for trying it at small settings).
local carlo = require "carlo"
local check = require "check"

local opt = { sizes = "108,256,864,1372,2048", tsv = "", combine = "", nodes = 16, sweeps = 50000,
              equilibrate = 10000, every = 5, seed = 3, device = "gpu" }
for _, a in ipairs(arg or {}) do
  local k, v = a:match("^([%w_]+)=(.*)$")
  if not k or opt[k] == nil then
    error(("hs_frenkel_ladd validation: unknown argument '%s' (key=value: sizes, tsv, combine, nodes, sweeps, "
      .. "equilibrate, every, seed, device)"):format(a), 0)
  end
  if type(opt[k]) == "number" then
    local n = math.tointeger(tonumber(v))
    if not n or n < 1 then error(("hs_frenkel_ladd validation: %s must be an integer >= 1 (got '%s')"):format(k, v), 0) end
    opt[k] = n
  else
    opt[k] = v
  end
end
local want, want_err
for line in io.lines("workflows/data/hs_free_energy.tsv") do
  local v, e = line:match("^betaFex_per_N_fcc\t(%d+%.%d+)%((%d+)%)")
  if v then
    want = tonumber(v)
    want_err = tonumber(e) * 10 ^ -(#v - v:find("%.", 1, false))
  end
end
assert(want, "hs_free_energy.tsv: no betaFex_per_N_fcc")
local fl = assert(loadfile("workflows/hs_frenkel_ladd.lua"))("--module")

local columns = { "N", "Fex", "Fex_err", "top_ratio", "top_z", "nodes", "sweeps", "equilibrate", "seed", "seconds" }
-- the rows of a results file, by N (the last row of a size wins)
local function read_rows(path, into)
  local f = io.open(path, "r")
  if not f then return into end
  local head
  for line in f:lines() do
    if line:sub(1, 1) ~= "#" and line ~= "" then
      local cells = {}
      for c in line:gmatch("[^\t]+") do cells[#cells + 1] = c end
      if not head then
        head = cells
      else
        local r = {}
        for i, name in ipairs(head) do r[name] = tonumber(cells[i]) end
        if r.N then into[r.N] = r end
      end
    end
  end
  f:close()
  return into
end

local function fit(rows)
  local list = {}
  for _, r in pairs(rows) do list[#list + 1] = { N = r.N, f = r.Fex, e = r.Fex_err } end
  table.sort(list, function(a, b) return a.N < b.N end)
  if #list < 3 then
    check.fail("validate/hard/frenkel-ladd-polson", ("%d sizes: the fit needs three or more"):format(#list))
    return
  end
  local f, err = fl.extrapolate(list)
  local sizes = {}
  for _, r in ipairs(list) do sizes[#sizes + 1] = ("%d: %.5f(%d)"):format(r.N, r.f, math.floor(r.e * 1e5 + 0.5)) end
  print(("# %s"):format(table.concat(sizes, ", ")))
  print(("# N -> infinity: %.5f +- %.5f; Polson et al. %.5f +- %.5f"):format(f, err, want, want_err))
  check.agree("validate/hard/frenkel-ladd-polson", f, err, want, want_err, 3)
end

if opt.combine ~= "" then
  local rows = {}
  for path in opt.combine:gmatch("[^,]+") do
    if not io.open(path, "r") then error(("hs_frenkel_ladd validation: cannot open %s"):format(path), 0) end
    read_rows(path, rows)
  end
  fit(rows)
  return
end

if opt.device ~= "cpu" and not check.gpu_or_skip("validate/hard/frenkel-ladd") then return end
local sizes = {}
for n in opt.sizes:gmatch("[^,]+") do
  local v = math.tointeger(tonumber(n))
  if not v or v < 2 then error(("hs_frenkel_ladd validation: sizes must list integers (got '%s')"):format(n), 0) end
  sizes[#sizes + 1] = v
end
local tsv = opt.tsv ~= "" and opt.tsv or (check.tmp .. "/hs_frenkel_ladd_sizes.tsv")
local done = read_rows(tsv, {})
local todo = {}
for _, N in ipairs(sizes) do
  local r = done[N]
  if r and r.nodes == opt.nodes and r.sweeps == opt.sweeps and r.equilibrate == opt.equilibrate and r.seed == opt.seed then
    print(("# N = %d: in %s already, %.5f +- %.5f"):format(N, tsv, r.Fex, r.Fex_err))
  else
    todo[#todo + 1] = N
  end
end
if #todo > 0 then
  local t0 = carlo.clock()
  local got = fl.frenkel_ladd_sizes({ dim = 3, rho = 1.0409, nodes = opt.nodes, lambda_max = 2e4, c = 1,
                                      sweeps = opt.sweeps, equilibrate = opt.equilibrate, every = opt.every,
                                      seed = opt.seed, device = opt.device }, todo)
  local seconds = carlo.clock() - t0
  local out = carlo.log(tsv, { append = true, columns = columns })
  for _, t in ipairs(got) do
    print(("# N = %d: beta F_ex / N = %.5f +- %.5f (msd at the top node / ideal: %.5f)")
      :format(t.N, t.fex, t.integral_err, t.top_ratio))
    check.ok(("validate/hard/frenkel-ladd-top-%d"):format(t.N), math.abs(t.top_z) < 4,
      ("the strongest tether is not ideal: msd %.5f of the ideal, %.1f error bars"):format(t.top_ratio, t.top_z))
    out:row{ N = t.N, Fex = t.fex, Fex_err = t.integral_err, top_ratio = t.top_ratio, top_z = t.top_z,
             nodes = opt.nodes, sweeps = opt.sweeps, equilibrate = opt.equilibrate, seed = opt.seed,
             seconds = seconds }
    done[t.N] = { N = t.N, Fex = t.fex, Fex_err = t.integral_err }
  end
  out:close()
  print(("# %d sizes, %d systems together: %.0f s; rows in %s"):format(#todo, #todo * opt.nodes, seconds, tsv))
end
-- the fit when this call was given (or holds) every size it names and three or more
local rows = {}
for _, N in ipairs(sizes) do rows[N] = done[N] end
if #sizes >= 3 then fit(rows) end
