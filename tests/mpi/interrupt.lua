-- tests/mpi/interrupt.lua DIR — rank 1 writes its process id to DIR/pid, then every rank runs
-- sweeps with a barrier between chunks until tests/mpi/basics.sh interrupts rank 1 (SIGINT).
local carlo = require "carlo"
local dir = arg[1]
local s = carlo.potts{ L = 64, q = 3, T = 1, seed = 1 }
if carlo.mpi.rank == 1 then
  local pid = io.open("/proc/self/stat"):read("l"):match("^(%d+)")
  local f = io.open(dir .. "/pid.tmp", "w") f:write(pid) f:close()
  os.rename(dir .. "/pid.tmp", dir .. "/pid")
end
for i = 1, 600 do s:run{ sweeps = 50 } carlo.mpi.barrier() end
