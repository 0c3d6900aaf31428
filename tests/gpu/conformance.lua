-- gpu/conformance/*: the conformance suite (tests/lua/conformance.lua) with every system on the GPU.
local check = require "check"
if check.gpu_or_skip("gpu/conformance") then
  CONFORMANCE_DEVICE = "gpu"
  dofile("tests/lua/conformance.lua")
end
