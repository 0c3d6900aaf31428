-- kmc_models.lua — models and comparisons shared by the KMC tests (lua, gpu, mpi, validation).
local M = {}

-- The whole state of a system: its snapshot with the clocks (tau, draws) of sys:clocks().
function M.full(sys)
  local s = sys:snapshot()
  local c = sys:clocks()
  s.tau, s.draws = c.tau, c.draws
  return s
end

-- Sites whose state, clock or draw counter differ between two full states (M.full); with mod,
-- a's states are compared with b's states modulo mod.
function M.diff(sa, sb, mod)
  local bad = 0
  for i = 1, #sa.state do
    local x = mod and sb.state[i] % mod or sb.state[i]
    if sa.state[i] ~= x or sa.tau[i] ~= sb.tau[i] or sa.draws[i] ~= sb.draws[i] then
      bad = bad + 1
    end
  end
  return bad
end

-- n single steps of sys (sys:try_step), dt growing by 1.6 after an accepted step and halving
-- after a rejected one, each accepted step compared with ref (the serial method) run over the
-- same interval. Returns the steps accepted, the steps rejected, the wrong ones (an accepted step
-- that differs from ref, a rejected one that changed the state) and the accepted steps after
-- which counters().repaired had grown.
function M.try_steps(sys, ref, n, dt)
  local accepted, rejected, wrong, repaired = 0, 0, 0, 0
  for _ = 1, n do
    local before, r0 = M.full(sys), sys:counters().repaired
    if sys:try_step(dt) then
      accepted = accepted + 1
      ref:run{ time = dt }
      local a, b = M.full(sys), M.full(ref)
      if M.diff(a, b) ~= 0 or a.t ~= b.t or a.events ~= b.events then wrong = wrong + 1 end
      if sys:counters().repaired > r0 then repaired = repaired + 1 end
      dt = dt * 1.6
    else
      rejected = rejected + 1
      if M.diff(M.full(sys), before) ~= 0 then wrong = wrong + 1 end
      dt = dt * 0.5
    end
  end
  return accepted, rejected, wrong, repaired
end

-- Glauber dynamics of the Ising model as a lattice gas: state 0 / 1 is spin -1 / +1, a spin
-- flips at rate 1 / (1 + exp(beta dE)), dE the energy change (J = 1).
function M.glauber(beta)
  return function(x, nb)
    local h = 0
    for k = 1, 4 do h = h + 2 * nb[k] - 1 end
    local dE = 2 * (2 * x - 1) * h
    return { { 1 / (1 + math.exp(beta * dE)), 1 - x } }
  end
end

-- Three states on the 8-neighbourhood, two events per site: a site turns into state y at rate
-- exp(c (n_y - n_x)), n_y its neighbours in state y.
function M.three_state(c)
  return function(x, nb)
    local n = { 0, 0, 0 }
    for k = 1, 8 do n[nb[k] + 1] = n[nb[k] + 1] + 1 end
    local ev = {}
    for y = 0, 2 do
      if y ~= x then ev[#ev + 1] = { math.exp(c * (n[y + 1] - n[x + 1])), y } end
    end
    return ev
  end
end

-- The sos_growth model written as a user model: heights modulo S (exact while neighbouring
-- heights differ by less than S / 2), rate k2 exp((2 n_b - 4) bond).
function M.user_sos(S, bond, k2)
  k2 = k2 or 1
  local rate = {}
  for nb = 0, 4 do rate[nb] = k2 * math.exp((2 * nb - 4) * bond) end
  return function(x, nb)
    local n = 0
    for k = 1, 4 do
      local d = (nb[k] - x) % S
      if d >= 1 and d < S / 2 then n = n + 1 end
    end
    return { { rate[n], (x + 1) % S } }
  end
end

-- Largest height difference between nearest neighbours of an m x n snapshot.
function M.max_step(state, m, n)
  local worst = 0
  for i = 0, m - 1 do
    for j = 0, n - 1 do
      local h = state[i * n + j + 1]
      local r, d = state[i * n + (j + 1) % n + 1], state[((i + 1) % m) * n + j + 1]
      worst = math.max(worst, math.abs(h - r), math.abs(h - d))
    end
  end
  return worst
end

-- ---------- split lattices (tests/mpi/kmc_split.lua, tests/gpu/kmc_mpi.lua) ----------

-- A 32-bit fingerprint of a list of rows of numbers (doubles by their bits).
function M.fingerprint(rows)
  local h = 2166136261
  for _, row in ipairs(rows) do
    for _, v in ipairs(row) do
      local w = math.type(v) == "float" and string.unpack("<i8", string.pack("<d", v)) or v
      h = ((h ~ (w & 0xffffffff) ~ (w >> 32)) * 16777619) & 0xffffffff
    end
  end
  return ("%08x"):format(h)
end

-- Everything that must agree between a split system and the whole one, as one string.
function M.split_state(sys)
  local c, k, o = sys:clocks(), sys:counters(), sys:observe()
  local f = M.fingerprint
  return ("t=%.17g events=%d step=%d accepted=%d rejected=%d repaired=%d simulated=%d dt=%.17g x=%s " ..
    "tau=%s draws=%s mean=%.17g width=%.17g min=%d max=%d steps=%.17g n_1=%d"):format(sys.t, sys.events,
    sys.step, k.accepted, k.rejected, k.repaired, k.simulated, k.dt, f(sys:snapshot().state:totable()),
    f(c.tau:totable()), f(c.draws:totable()), o.mean, o.width, o.min, o.max,
    o.step_fraction or -1, o.n_1 or -1)
end

-- An 8-neighbour spin flip whose rate depends on the aligned neighbours (diagonal halo cells).
function M.flips8(x, nb)
  local same = 0
  for k = 1, 8 do same = same + (nb[k] == x and 1 or 0) end
  return { { math.exp(-0.4 * (2 * same - 8)), 1 - x } }
end

-- The split tests' cases: sos_growth at bond = 0.3 and 1 (both with rejected steps) on m = 40
-- (five tile rows: uneven slabs on 2, 3 and 4 ranks) and the 8-neighbour user model; each
-- call a new list (callers add their own).
M.SOS = { model = "sos_growth", m = 40, n = 48, seed = 5 }
function M.split_cases()
  return {
    { name = "sos_bond0.3", base = M.SOS, extra = { bond = 0.3 }, events = 100000 },
    { name = "sos_bond1", base = M.SOS, extra = { bond = 1.0 }, events = 100000 },
    { name = "sos_bond1_no_repair", base = M.SOS, extra = { bond = 1.0, repair = false }, events = 100000 },
    { name = "user_8nbh", base = { m = 40, n = 32, states = 2, neighbourhood = 8, rates = M.flips8,
                                   init = "random", seed = 9 }, events = 20000 },
  }
end

return M
