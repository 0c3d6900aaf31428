-- lua/files/write: what a trajectory would store wrongly, or read as something it is not, is
-- refused with a message: chunk and file names cut at a NUL byte, boxes that are not finite,
-- files whose size does not say what they hold (/proc).
local carlo = require "carlo"
local check = require "check"
local D = check.tmp .. "/lua-files-write"
os.execute("mkdir -p " .. D)

local tr = carlo.trajectory(D .. "/w.ctr", "w")
check.raises("lua/files/chunk-name-with-nul-refused", function() tr:write { ["log/a\0b"] = 1 } end,
  "chunk name 'log/a\\0...' holds a NUL byte")
check.raises("lua/files/box-infinite-refused", function()
  tr:write { ["configuration/box"] = { 10, math.huge, 10, 0, 0, 0 } }
end, "configuration/box[2] is inf", "must be finite")
check.raises("lua/files/box-nan-tilt-refused", function()
  tr:write { ["configuration/box"] = { 10, 10, 10, 0 / 0, 0, 0 } }
end, "configuration/box[4]", "must be finite")
check.raises("lua/files/box-array-overflowing-f32-refused", function()
  tr:write { ["configuration/box"] = carlo.array("f64", 6, 1e300) }
end, "configuration/box[1] is inf")
check.eq("lua/files/nothing-written-on-refusal", #tr, 0)
tr:write { ["log/a"] = 1, ["configuration/box"] = { 10, 10, 0, 0.5, 0, 0 } }
check.eq("lua/files/finite-box-written", #tr, 1)
tr:close()

check.raises("lua/files/file-name-with-nul-refused", function() carlo.trajectory(D .. "/x\0.ctr", "w") end,
  "holds a NUL byte")
check.ok("lua/files/file-name-with-nul-creates-nothing", io.open(D .. "/x") == nil)
check.raises("lua/files/proc-file-refused", function() carlo.trajectory("/proc/version", "r") end,
  "/proc/version", "not a regular file of data")
