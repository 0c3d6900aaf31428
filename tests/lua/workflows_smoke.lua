-- lua/workflows: the protocol workflows (hard_disk_compression, lj_quench, potts_hysteresis) run
-- in quick mode on the CPU as a user runs them (the carlo command, key=value arguments) and
-- leave TSVs with the expected columns and rows, each row within the physical range of its
-- quantities, and a PNG where gnuplot is installed. A smoke test of the scripts, not of the
-- physics (their sizes are far too small for that).
local carlo = require "carlo"
local check = require "check"

local carlo_cmd = os.getenv("CARLO")
if not carlo_cmd then
  check.skip("lua/workflows/smoke", "CARLO (the carlo command) is not set")
  return
end
local has_gnuplot = os.execute("command -v gnuplot >/dev/null 2>&1")

-- the header (the first line that is not a '#' comment) and the rows as tables by column name
local function read_tsv(path)
  local f = io.open(path)
  if not f then return nil end
  local cols, rows = nil, {}
  for line in f:lines() do
    if line:sub(1, 1) ~= "#" then
      local fields = {}
      for v in (line .. "\t"):gmatch("([^\t]*)\t") do fields[#fields + 1] = v end
      if not cols then
        cols = fields
      else
        local r = {}
        for k, name in ipairs(cols) do r[name] = tonumber(fields[k]) or fields[k] end
        rows[#rows + 1] = r
      end
    end
  end
  f:close()
  return cols, rows
end

local function has_columns(cols, want)
  local set = {}
  for _, c in ipairs(cols or {}) do set[c] = true end
  local missing = {}
  for _, c in ipairs(want) do if not set[c] then missing[#missing + 1] = c end end
  return #missing == 0, table.concat(missing, ", ")
end

local function run(name, args)
  local out = check.tmp .. "/" .. name
  local t0 = carlo.clock()
  local ok = os.execute(("%s --quiet workflows/%s.lua quick=true device=cpu out=%s %s >%s.stdout 2>&1")
    :format(carlo_cmd, name, out, args or "", out))
  local took = carlo.clock() - t0
  check.ok("lua/workflows/" .. name .. "/runs", ok, ("failed: %s"):format(check.slurp(out .. ".stdout") or "?"))
  if has_gnuplot then
    local png = check.slurp(out .. ".png")
    check.ok("lua/workflows/" .. name .. "/png", png and png:sub(1, 8) == "\137PNG\r\n\26\n", "no PNG written")
  else
    check.skip("lua/workflows/" .. name .. "/png", "gnuplot is not installed")
  end
  return out, took
end

local function all(rows, pred)
  for i, r in ipairs(rows) do if not pred(r) then return false, i end end
  return #rows > 0, 0
end

-- hard_disk_compression: 4 pressures, increasing, each with phi, psi6 and the pressure
local hdc_seconds
do
  local out
  out, hdc_seconds = run("hard_disk_compression")
  local cols, rows = read_tsv(out .. ".tsv")
  local ok, missing = has_columns(cols, { "pressure", "step", "phi", "phi_err", "psi6", "psi6_err",
                                          "psi6_local", "psi6_local_err", "P", "P_err", "acceptance" })
  check.ok("lua/workflows/hard_disk_compression/columns", ok, "missing " .. missing)
  rows = rows or {}
  local good, bad = all(rows, function(r)
    return r.phi > 0.6 and r.phi < 0.78 and r.phi_err > 0 and r.psi6 >= 0 and r.psi6 <= 1
      and r.psi6_local >= r.psi6 - 1e-12 and r.psi6_local <= 1 and r.pressure > 9 and r.pressure < 9.3
  end)
  local rising = #rows == 4
  for i = 2, #rows do rising = rising and rows[i].pressure > rows[i - 1].pressure and rows[i].step > rows[i - 1].step end
  check.ok("lua/workflows/hard_disk_compression/rows", good and rising,
    ("%d rows, row %d out of range or out of order"):format(#rows, bad))
  -- the checkpoint files go once the ladder is complete
  local left = io.open(out .. ".state") or io.open(out .. ".state.0") or io.open(out .. ".state.1")
  if left then left:close() end
  check.ok("lua/workflows/hard_disk_compression/checkpoint-removed", not left, "state files left")
end

-- killed (SIGKILL) ten times at random moments and started again each time with the same
-- arguments, it ends with the same rows, bit for bit, as the run that was never stopped
do
  local out = check.tmp .. "/hdc-killed"
  local cmd = ("%s --quiet workflows/hard_disk_compression.lua quick=true device=cpu out=%s >>%s.stdout 2>&1")
    :format(carlo_cmd, out, out)
  -- the first kill once the first pressure is checkpointed (its state file appears), the others
  -- at 10 to 70% of an uninterrupted run's time after a restart (so the kills land on a fast
  -- build and on a sanitized one alike)
  os.execute(("{ %s & pid=$!; while kill -0 $pid 2>/dev/null && [ ! -e %s.state ]; do sleep 0.02; done; "
    .. "kill -9 $pid; wait $pid; } 2>/dev/null"):format(cmd, out))
  local rng = carlo.uniform
  local landed = 1
  for k = 2, 10 do
    local delay = (0.1 + 0.6 * rng(12345, k, 0)) * hdc_seconds
    local r = io.popen(("{ %s & pid=$!; sleep %.3f; if kill -0 $pid 2>/dev/null; then kill -9 $pid; echo landed; fi; "
      .. "wait $pid; } 2>/dev/null"):format(cmd, delay))
    if (r:read("a") or ""):find("landed", 1, true) then landed = landed + 1 end
    r:close()
  end
  local ok = os.execute(cmd)
  local function rows_of(path)
    local text = check.slurp(path) or ""
    return (text:gsub("#[^\n]*\n", ""))
  end
  local a, b = rows_of(check.tmp .. "/hard_disk_compression.tsv"), rows_of(out .. ".tsv")
  local said = check.slurp(out .. ".stdout") or ""
  local resumed = select(2, said:gsub("resum", ""))
  print(("# hard_disk_compression: %d of 10 kills landed, %d resumes"):format(landed, resumed))
  check.ok("lua/workflows/hard_disk_compression/killed-and-resumed", ok and a ~= "" and a == b and resumed >= 1,
    ("%d kills landed, %d resumes; %s"):format(landed, resumed, a == b and "same rows" or "rows differ"))
end

-- lj_quench: melt rows, the ramp from 2 to 0.3 over 1000 sweeps, then 500 sweeps at 0.3
do
  local out = run("lj_quench")
  local cols, rows = read_tsv(out .. ".tsv")
  local ok, missing = has_columns(cols, { "phase", "sweeps", "T", "U", "P", "acceptance" })
  check.ok("lua/workflows/lj_quench/columns", ok, "missing " .. missing)
  local n = { melt = 0, quench = 0, after = 0 }
  local last_quench, order = nil, true
  for i, r in ipairs(rows or {}) do
    n[r.phase] = (n[r.phase] or 0) + 1
    if r.phase == "quench" then last_quench = r end
    if i > 1 and r.sweeps <= rows[i - 1].sweeps then order = false end
  end
  local after_ok = all(rows or {}, function(r)
    return r.phase ~= "after" or (r.T == 0.3 and r.sweeps > 1000 and r.sweeps <= 1500)
  end)
  check.ok("lua/workflows/lj_quench/rows", n.melt == 3 and n.quench >= 10 and n.after == 5 and order
    and last_quench and last_quench.sweeps == 1000 and math.abs(last_quench.T - 0.3) < 1e-12 and after_ok,
    ("melt %d, quench %d, after %d rows; sweeps increasing: %s"):format(n.melt, n.quench, n.after, tostring(order)))
  -- the quench takes energy out: U after it is well below U in the melt (sweep 0)
  local u0, u1
  for _, r in ipairs(rows or {}) do
    if r.phase == "melt" and r.sweeps == 0 then u0 = r.U end
    if r.phase == "after" then u1 = r.U end
  end
  check.ok("lua/workflows/lj_quench/energy-falls", u0 and u1 and u1 < u0 - 1,
    ("U %s at the start, %s at the end"):format(tostring(u0), tostring(u1)))
end

-- potts_hysteresis: two rates x two branches x 5 temperatures, and one loop row per rate
do
  local out = run("potts_hysteresis")
  local cols, rows = read_tsv(out .. ".tsv")
  local ok, missing = has_columns(cols, { "rate", "branch", "T", "e", "e_err", "m", "m_err", "step" })
  check.ok("lua/workflows/potts_hysteresis/columns", ok, "missing " .. missing)
  local count = {}
  for _, r in ipairs(rows or {}) do
    local key = r.rate .. "/" .. r.branch
    count[key] = (count[key] or 0) + 1
  end
  local in_range = all(rows or {}, function(r) return r.e >= -2 and r.e <= 0 and r.m >= 0 and r.m <= 1 and r.e_err > 0 end)
  check.ok("lua/workflows/potts_hysteresis/rows", #(rows or {}) == 20 and count["100/heating"] == 5
    and count["400/cooling"] == 5 and in_range, ("%d rows"):format(#(rows or {})))
  local lcols, loops = read_tsv(out .. "_loops.tsv")
  ok, missing = has_columns(lcols, { "rate", "area", "area_err", "e_heating", "e_heating_err", "e_o",
                                     "e_cooling", "e_cooling_err", "e_d", "T" })
  check.ok("lua/workflows/potts_hysteresis/loop-columns", ok, "missing " .. missing)
  local Tc = 1 / math.log(1 + math.sqrt(9))
  local loops_ok = all(loops or {}, function(r)
    return r.area_err > 0 and math.abs(r.T - Tc) < 1e-9 and math.abs(r.e_o + 1.633167) < 1e-6
      and math.abs(r.e_d + 1.033499) < 1e-6 and r.e_heating < r.e_cooling
  end)
  check.ok("lua/workflows/potts_hysteresis/loops", #(loops or {}) == 2 and loops_ok,
    ("%d loop rows"):format(#(loops or {})))
  -- checkpoint=true, killed (SIGKILL) once the first rate's first point is checkpointed and
  -- started again: the same rows as the run above, and no checkpoint files left
  local cut = check.tmp .. "/ph-killed"
  local cmd = ("%s --quiet workflows/potts_hysteresis.lua quick=true device=cpu checkpoint=true out=%s "
    .. ">>%s.stdout 2>&1"):format(carlo_cmd, cut, cut)
  os.execute(("{ %s & pid=$!; while kill -0 $pid 2>/dev/null && [ ! -e %s_1.state ]; do sleep 0.01; done; "
    .. "kill -9 $pid; wait $pid; } 2>/dev/null"):format(cmd, cut))
  local resumed_ok = os.execute(cmd)
  local function rows_of(path) return ((check.slurp(path) or ""):gsub("#[^\n]*\n", "")) end
  local same = rows_of(out .. ".tsv") ~= "" and rows_of(out .. ".tsv") == rows_of(cut .. ".tsv")
    and rows_of(out .. "_loops.tsv") == rows_of(cut .. "_loops.tsv")
  local said = check.slurp(cut .. ".stdout") or ""
  local left = io.open(cut .. "_1.state") or io.open(cut .. "_2.state.points")
  if left then left:close() end
  check.ok("lua/workflows/potts_hysteresis/killed-and-resumed", resumed_ok and same and not left,
    ("%s; %s%s"):format(said:find("resuming", 1, true) and "resumed" or "killed before the first point",
      same and "same rows" or "rows differ", left and "; checkpoint files left" or ""))
end
