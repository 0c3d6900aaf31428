-- carlo.ensemble: R replicas of any model, one per value of a control, advanced together, with
-- replica exchange over that control; carlo.population_annealing: a population annealed along
-- a beta schedule with resampling (Hukushima and Iba 2003; Machta 2010), with the free energy
-- from the normalisations.
--   local ens = carlo.ensemble{ model = "lj", args = { N = 256, rho = 0.8 }, seed = 7,
--                               controls = { T = { 1.0, 1.1, 1.2, 1.3 } }, device = "cpu" }
--   ens:run{ sweeps = 1000, exchange_every = 10 }
--   local per = ens:sample{ sweeps = 5000, every = 10, exchange_every = 10 }  -- per control value
--   ens:tempering()   -- acceptance per pair, round trips, the replica at each value
-- Replica r gets seed carlo.replica_seed(seed, r); exchanges draw from carlo.uniform(seed, ...),
-- so an ensemble is as reproducible as one system, and ens:save / carlo.load_ensemble continue
-- it bit for bit. Exchanges swap the control values (not the configurations) and accept with
-- min(1, exp((l_a - l_b)(y_a - y_b))), l the control's conjugate weight (beta = 1/T, beta, or the
-- reduced pressure) and y the replica's extensive conjugate (total energy, or volume).
-- Under mpirun (carlo-mpi(7)) the replicas are spread over the ranks in contiguous blocks; each
-- rank advances its own, the conjugates and samples are gathered, and every rank makes the same
-- exchange decisions, so the results are those of one process bit for bit.
local carlo = require "carlo"

local Ensemble = {}
Ensemble.__index = Ensemble

local constructors = { potts = "potts", hard_disks = "hard_disks", hard_spheres = "hard_spheres",
                       lj = "lj", kmc = "kmc", hard_polygons = "hard_polygons",
                       hard_polyhedra = "hard_polyhedra", hard_ellipses = "hard_ellipses",
                       hard_ellipsoids = "hard_ellipsoids" }

-- The extensive quantity conjugate to a control, from observe() (total energy or volume).
local function conjugate(sys, control)
  local o = sys:observe()
  if control == "pressure" then
    local v = o.volume
    if type(v) ~= "number" then error("carlo.ensemble: this system reports no volume", 3) end
    return v
  end
  if o.equal_bonds then return -o.equal_bonds end -- Potts: the exact total energy
  local n = sys.N
  for _, name in ipairs { "E", "energy", "U" } do
    if type(o[name]) == "number" then
      -- U is per particle where the model says so
      if name == "U" and n then return o.U * n end
      return o[name]
    end
  end
  error(("carlo.ensemble: a %s system reports no energy to exchange %s with"):format(sys.model, control), 3)
end

-- The temperature a pressure is reduced by (1 for other controls, or where sys has no T).
local function temperature_of(control, sys)
  if control ~= "pressure" then return 1 end
  local ok, T = pcall(function() return sys.T end)
  return (ok and type(T) == "number") and T or 1
end

-- The weight per unit of the conjugate: exp(-l y); T from temperature_of.
local function weight_of(control, value, T)
  if control == "T" then return 1 / value end
  if control == "beta" then return value end
  if control == "pressure" then return value / T end
  error(("carlo.ensemble: no exchange rule for control '%s' (T, beta, pressure)"):format(control), 3)
end

-- The replicas of this MPI rank: the contiguous block lo..hi of 1..R (all of them in one
-- process). Every rank holds one at least.
local function block(R, where, level)
  local p, n = carlo.mpi.rank, carlo.mpi.size
  if R < n then
    error(("%s: %d replicas on %d MPI ranks (each rank needs one replica at least)"):format(where, R, n),
      level + 1)
  end
  return p * R // n + 1, (p + 1) * R // n
end

-- The rank that holds replica r of R (the block holding it).
local function owner(R, r)
  local n = carlo.mpi.size
  for p = 0, n - 1 do
    if r <= (p + 1) * R // n then return p end
  end
end

local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- pop[r] takes pop[src]'s state and keeps its own seed (sys:assign). Where another rank holds
-- src, its checkpoint travels to every rank (a broadcast from src's rank, which every rank
-- makes in the same order) and the rank of r takes it from there.
local function take(pop, R, r, src)
  local from = owner(R, src)
  if from == owner(R, r) then -- one rank holds both: no other takes part
    if pop[r] then pop[r]:assign(pop[src]) end
    return
  end
  local bytes
  if pop[src] then
    local path = os.tmpname()
    pop[src]:save(path)
    bytes = slurp(path)
    os.remove(path)
  end
  bytes = carlo.mpi.broadcast(bytes, from)
  if pop[r] then
    local path = os.tmpname()
    local f = assert(io.open(path, "wb"))
    assert(f:write(bytes))
    assert(f:close())
    local ok, from = pcall(carlo.load, path, { device = pop[r].device })
    os.remove(path)
    if not ok then error(from, 0) end
    pop[r]:assign(from)
    from:close()
  end
end

-- Replicas are spread over the MPI ranks, never split over them (carlo-mpi(7)).
local function no_split(args, where, level)
  if type(args) == "table" and args.decompose then
    error(("%s: args.decompose: the replicas are spread over the MPI ranks; a lattice split over "
      .. "them is one system's"):format(where), level + 1)
  end
end

-- Per-replica numbers of this rank's replicas (width per replica, replica lo first) gathered
-- from every rank, in replica order: entry (r - 1) * width + i on every rank.
local function gather(mine)
  if carlo.mpi.size == 1 then return mine end
  return (carlo.mpi.allgather(mine))
end

local function check_keys(t, where, allowed, level)
  local names = {}
  for k in pairs(allowed) do names[#names + 1] = k end
  table.sort(names)
  for k in pairs(t) do
    if not allowed[k] then
      error(("%s: unknown key '%s' (allowed: %s)"):format(where, tostring(k), table.concat(names, ", ")),
        level + 1)
    end
  end
end

local function one_control(controls, where, level)
  if type(controls) ~= "table" then error(where .. ": controls = { name = { values } } is required", level + 1) end
  local name, values
  for k, v in pairs(controls) do
    if name then error(where .. ": controls holds one control", level + 1) end
    name, values = k, v
  end
  if type(values) ~= "table" or #values < 1 then
    error(("%s: controls.%s must list the values"):format(where, tostring(name)), level + 1)
  end
  for i, v in ipairs(values) do
    if type(v) ~= "number" then
      error(("%s: controls.%s[%d] is not a number (got %s)"):format(where, name, i, tostring(v)), level + 1)
    end
  end
  return name, values
end

function carlo.ensemble(t)
  local where = "carlo.ensemble"
  if type(t) ~= "table" then error(where .. ": expects a table", 2) end
  check_keys(t, where, { model = true, args = true, controls = true, seed = true, device = true,
                         quiet = true }, 2)
  local ctor = constructors[t.model]
  if not ctor then
    error(("%s: model must be one of potts, hard_disks, hard_spheres, lj, kmc (got %s)")
      :format(where, tostring(t.model)), 2)
  end
  local control, values = one_control(t.controls, where, 2)
  no_split(t.args, where, 2)
  local seed = t.seed
  if math.type(seed) ~= "integer" or seed < 0 then
    error(("%s: seed must be an integer >= 0 (got %s)"):format(where, tostring(seed)), 2)
  end
  local e = setmetatable({ control = control, values = {}, seed = seed, systems = {}, slot = {},
                           tried = {}, accepted = {}, direction = {}, round_trips = {},
                           exchanges = 0, model = t.model, mine = {} }, Ensemble)
  e.lo, e.hi = block(#values, where, 2)
  for r = 1, #values do
    local args = {}
    for k, v in pairs(t.args or {}) do args[k] = v end
    if args.seed ~= nil or args[control] ~= nil then
      error(("%s: args must not set seed or %s (the ensemble sets them)"):format(where, control), 2)
    end
    args.seed = carlo.replica_seed(seed, r)
    args.device = t.device or args.device
    args.quiet = t.quiet or args.quiet
    args[control] = values[r]
    if r >= e.lo and r <= e.hi then
      e.systems[r] = carlo.mpi.own(carlo[ctor](args))
      e.mine[#e.mine + 1] = e.systems[r]
    end
    e.values[r] = values[r]
    e.slot[r] = r -- slot[k]: the replica at control value k
    e.direction[r], e.round_trips[r] = 0, 0
    if r < #values then e.tried[r], e.accepted[r] = 0, 0 end
  end
  e.replicas = #values
  return e
end

-- The system at control value k (default 1); nil where another MPI rank holds it.
function Ensemble:system(k)
  return self.systems[self.slot[k or 1]]
end

-- One exchange step: pairs (k, k + 1) with k odd on even steps and even on odd steps.
function Ensemble:exchange()
  local R = self.replicas
  if R < 2 then return self end
  local mine = {}
  for r = self.lo, self.hi do
    local sys = self.systems[r]
    mine[2 * (r - self.lo) + 1] = conjugate(sys, self.control)
    mine[2 * (r - self.lo) + 2] = temperature_of(self.control, sys)
  end
  local all = gather(mine)
  local y, l = {}, {}
  for k = 1, R do
    local r = self.slot[k]
    y[k] = all[2 * r - 1]
    l[k] = weight_of(self.control, self.values[k], all[2 * r])
  end
  local parity = self.exchanges % 2
  for k = 1 + parity, R - 1, 2 do
    local d = (l[k] - l[k + 1]) * (y[k] - y[k + 1])
    self.tried[k] = self.tried[k] + 1
    if d >= 0 or carlo.uniform(self.seed, self.exchanges, k) < math.exp(d) then
      self.accepted[k] = self.accepted[k] + 1
      local a, b = self.slot[k], self.slot[k + 1]
      if self.systems[a] then self.systems[a][self.control] = self.values[k + 1] end
      if self.systems[b] then self.systems[b][self.control] = self.values[k] end
      self.slot[k], self.slot[k + 1] = b, a
      y[k], y[k + 1] = y[k + 1], y[k]
    end
  end
  -- round trips: bottom -> top -> bottom
  local bottom, top = self.slot[1], self.slot[R]
  if self.direction[top] == 1 then self.direction[top] = 2 end
  if self.direction[bottom] == 2 then self.round_trips[bottom] = self.round_trips[bottom] + 1 end
  self.direction[bottom] = 1
  self.exchanges = self.exchanges + 1
  return self
end

local function amount_of(self, t, where)
  local unit = self.mine[1].unit
  local n = t[unit]
  if math.type(n) ~= "integer" or n < 0 then
    error(("%s: %s must be an integer >= 0 (got %s)"):format(where, unit, tostring(n)), 3)
  end
  local every = t.exchange_every
  if every ~= nil and (math.type(every) ~= "integer" or every < 1) then
    error(("%s: exchange_every must be an integer >= 1 (got %s)"):format(where, tostring(every)), 3)
  end
  return unit, n, every
end

-- Advance every replica n units, exchanging every exchange_every units (at multiples of the
-- replicas' step count, so that a restarted run exchanges at the same steps).
function Ensemble:run(t)
  local where = "ensemble:run"
  if type(t) ~= "table" then error(where .. ": expects a table", 2) end
  check_keys(t, where, { sweeps = true, events = true, exchange_every = true, quiet = true }, 2)
  local unit, n, every = amount_of(self, t, where)
  local left = n
  while left > 0 do
    local step = self.mine[1].step
    local m = every and math.min(left, every - step % every) or left
    carlo.advance(self.mine, m) -- together: GPU replicas in flight at once, CPU ones across threads
    left = left - m
    if every and self.mine[1].step % every == 0 then self:exchange() end
  end
  return self
end

-- Sample every replica; returns one table per control value (in the order of the values), each
-- with the control's value under its name.
-- With series = true a sample carries the series it was computed from (for carlo.mbar):
-- { name = { values }, size = N (sites or particles) }.
local function keep_series(series, sys)
  local out = { size = sys.N }
  for name, v in pairs(series) do out[name] = v end
  return out
end

function Ensemble:sample(t)
  local where = "ensemble:sample"
  if type(t) ~= "table" then error(where .. ": expects a table", 2) end
  check_keys(t, where, { sweeps = true, events = true, every = true, exchange_every = true,
                         quiet = true, series = true }, 2)
  local unit, n, every_x = amount_of(self, t, where)
  local every = t.every or 1
  if math.type(every) ~= "integer" or every < 1 or n % every ~= 0 or n // every < 2 then
    error(("%s: %s must be a multiple of every giving at least 2 samples"):format(where, unit), 2)
  end
  -- samples are taken per control value, replicas moving between values with the exchanges:
  -- the series of value k is built from whichever replica holds it at each sample
  local names = self.mine[1].observables
  local nn = #names
  local series = {}
  for k = 1, self.replicas do
    series[k] = {}
    for _, name in ipairs(names) do series[k][name] = {} end
  end
  for j = 1, n // every do
    self:run{ [unit] = every, exchange_every = every_x }
    local mine = {}
    for r = self.lo, self.hi do
      local o = self.systems[r]:observe()
      for i, name in ipairs(names) do mine[(r - self.lo) * nn + i] = o[name] end
    end
    local all = gather(mine)
    for k = 1, self.replicas do
      local at = (self.slot[k] - 1) * nn
      for i, name in ipairs(names) do series[k][name][j] = all[at + i] end
    end
  end
  local out = {}
  for k = 1, self.replicas do
    local s = { [self.control] = self.values[k], samples = n // every }
    for _, name in ipairs(names) do
      local est = carlo.stats(series[k][name])
      est.tau = est.tau * every
      s[name] = est
    end
    if t.series then s.series = keep_series(series[k], self.mine[1]) end
    out[k] = s
  end
  return out
end

function Ensemble:tempering()
  local acc = {}
  for k = 1, self.replicas - 1 do acc[k] = self.tried[k] > 0 and self.accepted[k] / self.tried[k] or 0 end
  local map = {}
  for k = 1, self.replicas do map[k] = self.slot[k] end
  return { acceptance = acc, tried = { table.unpack(self.tried) }, round_trips = { table.unpack(self.round_trips) },
           map = map, exchanges = self.exchanges }
end

-- Feedback-optimised spacing (Katzgraber, Trebst, Huse and Troyer 2006), in its simplest
-- form: move the interior values so that the measured acceptance of every pair comes out
-- equal (the values are set on the replicas at once; the chains go on from there).
function Ensemble:equalize()
  local t = self:tempering()
  local R = self.replicas
  if R < 3 then return self end
  -- cumulative "distance" between neighbours ~ -log(acceptance)
  local cum = { 0 }
  for k = 1, R - 1 do cum[k + 1] = cum[k] - math.log(math.max(t.acceptance[k], 1e-3)) end
  local new = { self.values[1] }
  for k = 2, R - 1 do
    local target = cum[R] * (k - 1) / (R - 1)
    local i = 1
    while cum[i + 1] < target do i = i + 1 end
    local f = (target - cum[i]) / (cum[i + 1] - cum[i])
    new[k] = self.values[i] + f * (self.values[i + 1] - self.values[i])
  end
  new[R] = self.values[R]
  for k = 1, R do
    self.values[k] = new[k]
    local sys = self.systems[self.slot[k]]
    if sys then sys[self.control] = new[k] end
  end
  for k = 1, R - 1 do self.tried[k], self.accepted[k] = 0, 0 end
  return self
end

-- ---------- checkpoints: one file per replica and the ensemble's own state ----------

function Ensemble:save(path)
  local lines = { "return {", ("  model = %q, control = %q, seed = %d, exchanges = %d,")
    :format(self.model, self.control, self.seed, self.exchanges) }
  local function list(name, t, fmt)
    local parts = {}
    for i = 1, #t do parts[i] = (fmt or "%d"):format(t[i]) end
    lines[#lines + 1] = ("  %s = { %s },"):format(name, table.concat(parts, ", "))
  end
  list("values", self.values, "%.17g")
  list("slot", self.slot)
  list("tried", self.tried)
  list("accepted", self.accepted)
  list("direction", self.direction)
  list("round_trips", self.round_trips)
  lines[#lines + 1] = "}"
  -- each MPI rank its own replicas' files, rank 0 the ensemble's; done on every rank together
  for r = self.lo, self.hi do self.systems[r]:save(("%s.%d"):format(path, r)) end
  if carlo.mpi.rank == 0 then
    local f = assert(io.open(path .. ".tmp", "w"))
    f:write(table.concat(lines, "\n"), "\n")
    f:close()
    assert(os.rename(path .. ".tmp", path))
  end
  carlo.mpi.barrier()
end

function carlo.load_ensemble(path, opts)
  local chunk, err = loadfile(path, "t", {})
  if not chunk then error("carlo.load_ensemble: " .. tostring(err), 2) end
  local st = chunk()
  local e = setmetatable({ control = st.control, values = st.values, seed = st.seed, slot = st.slot,
                           tried = st.tried, accepted = st.accepted, direction = st.direction,
                           round_trips = st.round_trips, exchanges = st.exchanges, model = st.model,
                           systems = {}, mine = {} }, Ensemble)
  -- the replicas of this rank, whatever the number of ranks that saved them
  e.lo, e.hi = block(#st.values, "carlo.load_ensemble", 2)
  for r = e.lo, e.hi do
    e.systems[r] = carlo.mpi.own(carlo.load(("%s.%d"):format(path, r), opts))
    e.mine[#e.mine + 1] = e.systems[r]
  end
  e.replicas = #st.values
  return e
end

-- ---------- population annealing ----------

-- carlo.population_annealing{ model =, args =, seed =, size = R, beta = schedule (increasing,
--   from beta_0; beta_0 = 0 allowed where the model takes it), sweeps = per step,
--   lnZ0 = ln Z at beta_0 (optional: then lnZ is absolute), device =, log =, quiet = }
-- Returns one row per beta: { beta, lnZ (ln Z(beta) - ln Z(beta_0) + lnZ0), betaF = -lnZ,
-- e (population mean of the energy per particle or site, with the population's spread as err),
-- family_entropy, effective_size (R^2 / sum over families of n_i^2 ... as R / rho_t) }.
-- Under mpirun the population is spread over the ranks in blocks (the second result holds this
-- rank's members only); a copy whose source is on another rank travels as a checkpoint. The
-- rows are those of one process bit for bit.
function carlo.population_annealing(t)
  local where = "carlo.population_annealing"
  if type(t) ~= "table" then error(where .. ": expects a table", 2) end
  check_keys(t, where, { model = true, args = true, seed = true, size = true, beta = true,
                         sweeps = true, lnZ0 = true, device = true, log = true, quiet = true }, 2)
  local ctor = constructors[t.model]
  if not ctor then error(where .. ": model must be potts or lj (or another model with beta)", 2) end
  local R = t.size
  if math.type(R) ~= "integer" or R < 2 then error(where .. ": size must be an integer >= 2", 2) end
  local betas = carlo._schedule(t.beta, where .. ": beta")
  for k = 2, #betas do
    if not (betas[k] > betas[k - 1]) then error(where .. ": beta must increase", 2) end
  end
  local sweeps = t.sweeps or 10
  no_split(t.args, where, 2)
  local seed = t.seed
  if math.type(seed) ~= "integer" or seed < 0 then error(where .. ": seed must be an integer >= 0", 2) end
  -- under mpirun each rank holds a block of the population (pop[r] nil for the others')
  local lo, hi = block(R, where, 2)
  local pop, mine = {}, {}
  for r = lo, hi do
    local args = {}
    for k, v in pairs(t.args or {}) do args[k] = v end
    args.seed = carlo.replica_seed(seed, r)
    args.beta = betas[1]
    args.device = t.device or args.device
    args.quiet = true
    pop[r] = carlo.mpi.own(carlo[ctor](args))
    mine[#mine + 1] = pop[r]
  end
  local N = pop[lo].N
  local family = {}
  for r = 1, R do family[r] = r end
  local lnZ = t.lnZ0 or 0
  local log = t.log
  local own = false
  if type(log) == "string" then log = carlo.log(log); own = true end
  local rows = {}
  local energies = {}
  local function measure(beta, k)
    local sum, sum2 = 0, 0
    local local_E = {}
    for r = lo, hi do local_E[r - lo + 1] = conjugate(pop[r], "beta") end
    local all = gather(local_E)
    for r = 1, R do
      local E = all[r]
      energies[r] = E
      sum, sum2 = sum + E, sum2 + E * E
    end
    local mean = sum / R
    local counts = {}
    for r = 1, R do counts[family[r]] = (counts[family[r]] or 0) + 1 end
    local S, rho = 0, 0
    for _, c in pairs(counts) do
      local f = c / R
      S = S - f * math.log(f)
      rho = rho + f * f
    end
    local row = { beta = beta, lnZ = lnZ, betaF = -lnZ, e = { mean = mean / N,
                  err = math.sqrt(math.max(sum2 / R - mean * mean, 0) / R) / N },
                  family_entropy = S, effective_size = 1 / rho, step = k }
    rows[#rows + 1] = row
    if log then log:row(row) end
  end
  carlo.advance(mine, sweeps)
  measure(betas[1], 0)
  for k = 2, #betas do
    local db = betas[k] - betas[k - 1]
    -- weights relative to the lowest energy, for a stable sum
    local emin = math.huge
    for r = 1, R do emin = math.min(emin, energies[r]) end
    local w, Q = {}, 0
    for r = 1, R do
      w[r] = math.exp(-db * (energies[r] - emin))
      Q = Q + w[r]
    end
    lnZ = lnZ + math.log(Q / R) - db * emin
    -- systematic resampling: R copies, replica r getting floor or ceil of R w_r / Q
    local u = carlo.uniform(seed, k, 0)
    local copies, c = {}, 0
    for r = 1, R do
      local lo = c
      c = c + R * w[r] / Q
      copies[r] = math.floor(c + u) - math.floor(lo + u)
    end
    -- replicas with no copy take the state of replicas with more than one
    local donors = {}
    for r = 1, R do for _ = 2, copies[r] do donors[#donors + 1] = r end end
    local newfam = {}
    for r = 1, R do newfam[r] = family[r] end
    local d = 1
    for r = 1, R do
      if copies[r] == 0 then
        local src = donors[d]
        d = d + 1
        take(pop, R, r, src)
        newfam[r] = family[src]
      end
    end
    family = newfam
    for r = lo, hi do pop[r].beta = betas[k] end
    carlo.advance(mine, sweeps) -- together: GPU replicas in flight at once, CPU ones across threads
    measure(betas[k], k - 1)
    if not t.quiet and carlo.interactive() then
      io.stderr:write(("\rpopulation annealing: beta = %.5g (%d/%d) \27[K%s")
        :format(betas[k], k, #betas, k == #betas and "\n" or ""))
    end
  end
  if own then log:close() end
  return rows, pop
end
