-- gpu/advance_all/*: carlo.advance (tests/lua/advance_all.lua) with every system on the GPU,
-- where the replicas' kernels run side by side on their threads' streams.
local check = require "check"
if check.gpu_or_skip("gpu/advance_all") then
  ADVANCE_ALL_DEVICE = "gpu"
  dofile("tests/lua/advance_all.lua")
end
