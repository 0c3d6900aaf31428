-- advance_all.lua — carlo.advance(systems, n), how ensembles advance their replicas together
-- (GPU systems in flight at once, CPU systems across threads, one each): for every model, the
-- replicas end exactly where each would alone, and failures name the system.
-- tests/gpu/advance_all.lua runs the same script on the GPU.
local carlo = require "carlo"
local check = require "check"
local M = require "conformance_models"

local device = rawget(_G, "ADVANCE_ALL_DEVICE") or "cpu"
local tier = device == "gpu" and "gpu" or "lua"

local state_of, same_state = M.state_of, M.same_state

-- More replicas than threads, so that the CPU goes across them (carlo --devices: threads).
local R = 5
for _, m in ipairs(M.list) do
  local name = ("%s/advance_all/%s/"):format(tier, m.name)
  local together, alone = {}, {}
  for r = 1, R do
    together[r] = M.make(m, { seed = 100 + r, init = m.init, device = device })
    alone[r] = M.make(m, { seed = 100 + r, init = m.init, device = device })
  end
  local n = m.n
  carlo.advance(together, n)
  carlo.advance(together, n)
  -- (a continuous model's run of n events ends at a step boundary: two runs of n, not one of 2n)
  for r = 1, R do
    for _ = 1, 2 do alone[r]:run(M.with(M.amount(m, n), { quiet = true })) end
  end
  local same = true
  for r = 1, R do same = same and same_state(m, together[r], alone[r]) end
  check.ok(name .. "same-chains", same, "a replica advanced together differs from its run alone")
  -- distinct seeds gave distinct states: the comparison above can fail
  check.ok(name .. "replicas-differ", not same_state(m, together[1], together[2]))
  for r = 1, R do together[r]:close(); alone[r]:close() end
end

-- Bad input is refused with the reason.
local m = M.list[3] -- hard disks
local a, b = M.make(m, { seed = 1, init = m.init, device = device }), M.make(m, { seed = 2, init = m.init, device = device })
local name = tier .. "/advance_all/refused/"
check.raises(name .. "not-a-list", function() carlo.advance(a, 1) end, "carlo.advance", "list")
check.raises(name .. "count", function() carlo.advance({ a, b }, -1) end, "count", "-1")
check.raises(name .. "count-float", function() carlo.advance({ a, b }, 1.5) end, "count", "1.5")
check.raises(name .. "entry", function() carlo.advance({ a, 7 }, 1) end, "entry 2", "got 7")
check.raises(name .. "twice", function() carlo.advance({ a, b, a }, 1) end, "same system twice")
b:close()
check.raises(name .. "closed", function() carlo.advance({ a, b }, 1) end, "entry 2")
check.raises(name .. "empty", function() carlo.advance({}, 1) end, "1 to 1000000")
a:close()
