-- ising_exact.lua — the exact partition function of the Ising model on an m x n torus
-- (Kaufman 1949, in the form of Beale 1996, Phys. Rev. Lett. 76, 78), in logarithms:
--   Z = 1/2 (2 sinh 2K)^(mn/2) (Z1 + Z2 + Z3 + Z4),
--   Z1 = prod_{r=0}^{n-1} 2 cosh(m g_{2r+1} / 2),  Z2 = same with sinh,
--   Z3 = prod_{r=0}^{n-1} 2 cosh(m g_{2r} / 2),    Z4 = same with sinh,
--   cosh g_l = cosh 2K coth 2K - cos(pi l / n) (l >= 1),  g_0 = 2K + ln tanh K (may be < 0).
-- H = -J sum_<ij> s_i s_j, K = J / k_B T. The q = 2 Potts model with J_Potts = 1 is the Ising
-- model with K = beta / 2 and Z_Potts(beta) = exp(beta N) Z_Ising(beta / 2).
local M = {}

local function gamma(l, K, n)
  if l == 0 then return 2 * K + math.log(math.tanh(K)) end
  local c = math.cosh(2 * K) / math.tanh(2 * K) - math.cos(math.pi * l / n)
  return math.log(c + math.sqrt(c * c - 1)) -- acosh
end

-- ln|prod| and its sign, over r = 0 .. n-1 of 2 f(m g_{2r+off} / 2)
local function term(K, m, n, off, f)
  local ln, sign = 0, 1
  for r = 0, n - 1 do
    local x = m * gamma(2 * r + off, K, n) / 2
    local v
    if f == "cosh" then
      v = math.abs(x) + math.log(1 + math.exp(-2 * math.abs(x))) -- ln(2 cosh x)
    else
      if x == 0 then return -math.huge, 0 end
      v = math.abs(x) + math.log(1 - math.exp(-2 * math.abs(x))) -- ln|2 sinh x|
      if x < 0 then sign = -sign end
    end
    ln = ln + v
  end
  return ln, sign
end

function M.lnZ_ising(K, m, n)
  n = n or m
  local parts = { { term(K, m, n, 1, "cosh") }, { term(K, m, n, 1, "sinh") },
                  { term(K, m, n, 0, "cosh") }, { term(K, m, n, 0, "sinh") } }
  local top = -math.huge
  for _, p in ipairs(parts) do if p[2] ~= 0 and p[1] > top then top = p[1] end end
  local s = 0
  for _, p in ipairs(parts) do if p[2] ~= 0 then s = s + p[2] * math.exp(p[1] - top) end end
  return math.log(0.5) + (m * n / 2) * math.log(2 * math.sinh(2 * K)) + top + math.log(s)
end

-- ln Z of the q = 2 Potts model (J = 1) on an L x L torus at inverse temperature beta > 0.
function M.lnZ_potts2(beta, L)
  return beta * L * L + M.lnZ_ising(beta / 2, L, L)
end

return M
