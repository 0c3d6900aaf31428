-- gpu/traj: trajectories and checkpoints of GPU systems. Frames written from a GPU run are
-- bit-identical to the CPU run's, and checkpoints move between devices and continue bit for
-- bit (the Potts backends agree bit for bit).
local carlo = require "carlo"
local check = require "check"
if not check.gpu_or_skip("gpu/traj/potts") then return end
local D = check.tmp .. "/gpu-traj"
os.execute("mkdir -p " .. D)

local function make(device, L)
  return carlo.potts{ L = L or 256, q = 9, T = 0.72, seed = 12, device = device }
end

-- frames from a GPU run equal those of the CPU run
do
  local trs = {}
  for _, dev in ipairs { "cpu", "gpu" } do
    local sys = make(dev)
    trs[dev] = carlo.trajectory(D .. "/" .. dev .. ".ctr", "w")
    sys:run{ sweeps = 100, every = 20, trajectory = trs[dev] }
  end
  local same = #trs.cpu == 5 and #trs.gpu == 5
  for k = 1, #trs.cpu do
    local a, b = trs.cpu:frame(k), trs.gpu:frame(k)
    same = same and a["lattice/spins"] == b["lattice/spins"] and
      a["configuration/step"][1] == b["configuration/step"][1]
  end
  check.ok("gpu/traj/potts-frames-equal-cpu", same)
  trs.cpu:close()
  trs.gpu:close()
end

-- frames taken while the GPU sweeps on (the lattices copied beside the next sweeps) are the
-- CPU run's, step by step: an ensemble with exchanges (temperatures and replica map in the
-- frame), a frame every sweep (each copy fetched before the next starts), L / 2 odd
do
  local trs = {}
  for _, dev in ipairs { "cpu", "gpu" } do
    local e = carlo.potts_ensemble{ L = 254, q = 5, temperatures = { 0.8, 0.85, 0.9 }, seed = 31,
                                    device = dev }
    trs[dev] = carlo.trajectory(D .. "/ens-" .. dev .. ".ctr", "w")
    e:run{ sweeps = 40, every = 1, exchange_every = 3, trajectory = trs[dev] }
    e:run{ sweeps = 35, every = 7, exchange_every = 3, trajectory = trs[dev] }
  end
  local n = #trs.cpu
  local same, why = n == 45 and #trs.gpu == n, ("%d and %d frames"):format(n, #trs.gpu)
  for k = 1, n do
    local a, b = trs.cpu:frame(k), trs.gpu:frame(k)
    local ok = a["lattice/spins"] == b["lattice/spins"] and
      a["configuration/step"][1] == b["configuration/step"][1] and
      a["lattice/slot"] == b["lattice/slot"] and a["lattice/temperature"] == b["lattice/temperature"]
    if not ok and same then why = "frame " .. k .. " differs" end
    same = same and ok
  end
  check.ok("gpu/traj/potts-ensemble-frames-while-running", same, why)
  trs.cpu:close()
  trs.gpu:close()
end

-- checkpoints: GPU -> CPU and CPU -> GPU, each continuing as the uninterrupted GPU run
do
  local ref = make("gpu")
  ref:run{ sweeps = 60 }
  for _, way in ipairs { { "gpu", "cpu" }, { "cpu", "gpu" } } do
    local a = make(way[1])
    a:run{ sweeps = 30 }
    local path = D .. "/ck-" .. way[1] .. ".ctr"
    a:save(path)
    local b = carlo.load(path, { device = way[2] })
    check.eq("gpu/traj/potts-load-device-" .. way[2], b.device, way[2])
    b:run{ sweeps = 30 }
    check.ok(("gpu/traj/potts-checkpoint-%s-to-%s-bitwise"):format(way[1], way[2]),
      b:snapshot().state == ref:snapshot().state and b.step == ref.step)
  end
end

-- a large lattice frame taken from the GPU equals its snapshot
do
  local sys = make("gpu", 4096)
  sys:run{ sweeps = 10 }
  local tr = carlo.trajectory(D .. "/big.ctr", "w")
  tr:write(sys)
  check.ok("gpu/traj/potts-large-frame", tr:frame(1)["lattice/spins"] == sys:snapshot().state)
  tr:close()
end
