-- kmc_models.lua — models and comparisons shared by the KMC tests (lua, gpu, validation).
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

return M
