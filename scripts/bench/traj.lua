-- scripts/bench/traj.lua — what trajectories cost, measured in one run:
--   speed: MB/s of raw frame data written (one compression thread, then all), through close
--   size:  100 dense frames (hard disks at phi = 0.7, an LJ liquid at rho = 0.8) against raw
--          float32, gzip of raw float32, and XTC written by MDAnalysis at the same precision
--   gpu:   Potts L = 8192, q = 9 GPU runs of 5000 and 20000 sweeps with and without a frame
--          every 1000 sweeps: until the run returns, the frames are compressed, the file closed
-- usage: build/carlo scripts/bench.lua traj [speed|size|gpu] [frames]
-- The configurations are fabricated (jittered lattices in lattice order, and the same with
-- the particles in a random order), so that the figures do not depend on a simulation run.
local carlo = require "carlo"
local only, nframes = ...
nframes = tonumber(nframes) or 100
local dir = os.getenv("CARLO_BENCH_TMP") or "/tmp"
dir = dir .. "/carlo-bench-traj-" .. tostring(os.time())
os.execute("mkdir -p " .. dir)
local PREC = 1e-3

local function wrap(x, L) return x - L * math.floor(x / L + 0.5) end

-- lattice sites in lattice order (or a fixed random order), then jittered positions per frame
local function hex_sites(n1)
  local rho = 0.7 / (math.pi / 4)
  local a = math.sqrt(2 / (math.sqrt(3) * rho))
  local Lx, Ly = n1 * a, n1 * a * math.sqrt(3) / 2
  local s = {}
  for r = 0, n1 - 1 do
    for c = 0, n1 - 1 do
      s[#s + 1] = { (c + 0.5 * (r % 2)) * a - Lx / 2, (r + 0.5) * a * math.sqrt(3) / 2 - Ly / 2, 0 }
    end
  end
  -- gaps between neighbours are a - 1 = 0.138: jitter of +-0.065 keeps the disks apart
  return s, { Lx, Ly, 0, 0, 0, 0 }, 0.065, 2
end

local function fcc_sites(n)
  local a = (4 / 0.8) ^ (1 / 3)
  local L = n * a
  local basis = { { 0, 0, 0 }, { 0.5, 0.5, 0 }, { 0.5, 0, 0.5 }, { 0, 0.5, 0.5 } }
  local s = {}
  for x = 0, n - 1 do for y = 0, n - 1 do for z = 0, n - 1 do
    for _, b in ipairs(basis) do
      s[#s + 1] = { (x + b[1]) * a - L / 2, (y + b[2]) * a - L / 2, (z + b[3]) * a - L / 2 }
    end
  end end end
  return s, { L, L, L, 0, 0, 0 }, 0.15, 3
end

local function shuffled(sites, seed)
  math.randomseed(seed)
  local s = {}
  for i = 1, #sites do s[i] = sites[i] end
  for i = #s, 2, -1 do
    local j = math.random(i)
    s[i], s[j] = s[j], s[i]
  end
  return s
end

local function frame(sites, box, jitter, dims, seed)
  math.randomseed(seed)
  local rnd = math.random
  local pos = carlo.array("f32", { shape = { #sites, 3 } })
  for i = 1, #sites do
    local p = sites[i]
    local j = 3 * (i - 1)
    pos[j + 1] = wrap(p[1] + (rnd() - 0.5) * 2 * jitter, box[1])
    pos[j + 2] = wrap(p[2] + (rnd() - 0.5) * 2 * jitter, box[2])
    pos[j + 3] = dims == 3 and wrap(p[3] + (rnd() - 0.5) * 2 * jitter, box[3]) or 0
  end
  return { ["configuration/step"] = seed * 1000, ["configuration/box"] = box, ["particles/position"] = pos }
end

local function threads_all()
  local n = carlo.devices().cpu.threads
  return n > 8 and 8 or n
end

-- ---------- speed ----------
local function speed()
  print("write speed: raw frame data / time from the first write until the frames are in the file")
  print("(MB/CPU-s: the same data / CPU time of the whole process, which other load does not inflate)")
  print(("%-28s %-9s %8s %10s %10s %8s"):format("data", "precision", "threads", "MB/s", "MB/CPU-s",
    "ratio"))
  local sets = {}
  do
    local s, box, j, d = hex_sites(550)
    local fr = {}
    for k = 1, 4 do fr[k] = frame(s, box, j, d, k) end
    sets[#sets + 1] = { ("hard disks N=%d"):format(#s), fr }
  end
  do
    local s, box, j, d = fcc_sites(42)
    local fr = {}
    for k = 1, 4 do fr[k] = frame(s, box, j, d, k) end
    sets[#sets + 1] = { ("LJ liquid N=%d"):format(#s), fr }
  end
  do
    local sys = carlo.potts{ L = 4096, q = 9, T = 0.75, seed = 1, device = "cpu", init = "random" }
    sys:run{ sweeps = 20 }
    local fr = {}
    for k = 1, 4 do
      sys:run{ sweeps = 2 }
      fr[k] = { ["configuration/step"] = k, ["lattice/spins"] = sys:snapshot().state }
    end
    sets[#sets + 1] = { "Potts 4096^2 q=9 (u8)", fr, true }
    sys:close()
  end
  local reps = 40
  for _, set in ipairs(sets) do
    for _, prec in ipairs(set[3] and { 0 } or { 0, PREC }) do
      for _, th in ipairs { 1, threads_all() } do
        local opts = { threads = th }
        if prec > 0 then opts.precision = prec end
        local tr = carlo.trajectory(dir .. "/speed.ctr", "w", opts)
        tr:write(set[2][1]) -- warm-up
        tr:flush()
        local raw0 = tr:stats().raw
        local t, c = carlo.clock(), os.clock()
        for k = 1, reps do tr:write(set[2][(k - 1) % #set[2] + 1]) end
        tr:flush()
        local st = tr:stats()
        local dt, dc = carlo.clock() - t, os.clock() - c
        tr:close()
        print(("%-28s %-9s %8d %10.1f %10.1f %8.2f"):format(set[1], prec > 0 and tostring(prec) or "exact",
          th, (st.raw - raw0) / dt / 1e6, (st.raw - raw0) / dc / 1e6, st.ratio))
      end
    end
  end
  os.remove(dir .. "/speed.ctr")
end

-- ---------- size ----------
local function size()
  print(("sizes of %d frames (%s)"):format(nframes, dir))
  local names = {}
  local function write(name, sites, box, jitter, dims)
    local ex = carlo.trajectory(dir .. "/" .. name .. "-exact.ctr", "w")
    local q = carlo.trajectory(dir .. "/" .. name .. "-q.ctr", "w", { precision = PREC })
    for k = 1, nframes do
      local f = frame(sites, box, jitter, dims, k)
      ex:write(f)
      q:write(f)
    end
    ex:close()
    q:close()
    names[#names + 1] = name
  end
  local s, box, j, d = hex_sites(550)
  write("disks", s, box, j, d)
  write("disks-shuffled", shuffled(s, 9), box, j, d)
  s, box, j, d = fcc_sites(42)
  write("lj", s, box, j, d)
  write("lj-shuffled", shuffled(s, 9), box, j, d)
  local py = io.open("/usr/bin/python3") and "/usr/bin/python3" or "python3"
  local here = debug.getinfo(1, "S").source:match("^@(.*)/traj%.lua$") or "scripts/bench"
  io.stdout:flush()
  if not os.execute(("%s %s/traj_size.py %s %g %s"):format(py, here, dir, PREC, table.concat(names, " "))) then
    print("(python3 with numpy and MDAnalysis is needed for the raw, gzip and XTC columns)")
  end
  for _, n in ipairs(names) do
    os.remove(dir .. "/" .. n .. "-exact.ctr")
    os.remove(dir .. "/" .. n .. "-q.ctr")
  end
end

-- ---------- gpu ----------
local function gpu()
  if #carlo.devices().gpus == 0 then
    print("gpu: no GPU here; run this part on the GPU machine")
    return
  end
  local every = 1000
  local function make() return carlo.potts{ L = 8192, q = 9, T = 0.75, seed = 3, device = "gpu" } end
  local sys = make()
  sys:run{ sweeps = 200 } -- warm-up
  sys:sync()
  local function median(x) table.sort(x) return x[(#x + 1) // 2] end
  local p, sweeps
  for _, n in ipairs { 5000, 20000 } do
    sweeps = n
    print(("Potts L = 8192, q = 9, T = 0.75 on the GPU: %d sweeps, a frame every %d"):format(sweeps, every))
    local times = { plain = {}, traj = {}, traj_run = {}, traj_flush = {} }
    for rep = 1, 3 do
      local t = carlo.clock()
      sys:run{ sweeps = sweeps }
      sys:sync()
      times.plain[rep] = carlo.clock() - t
      local tr = carlo.trajectory(dir .. "/gpu.ctr", "w")
      t = carlo.clock()
      sys:run{ sweeps = sweeps, every = every, trajectory = tr }
      sys:sync()
      times.traj_run[rep] = carlo.clock() - t
      tr:flush()
      times.traj_flush[rep] = carlo.clock() - t
      tr:close()
      times.traj[rep] = carlo.clock() - t
      os.remove(dir .. "/gpu.ctr")
    end
    local r, f, c
    p, r, f, c = median(times.plain), median(times.traj_run), median(times.traj_flush), median(times.traj)
    print(("%-44s %10.3f s"):format("run without a trajectory", p))
    print(("%-44s %10.3f s  (%+.2f%%)"):format("run with frames (until the run returns)", r, 100 * (r - p) / p))
    print(("%-44s %10.3f s  (%+.2f%%)"):format("run with frames (until all are compressed)", f, 100 * (f - p) / p))
    print(("%-44s %10.3f s  (%+.2f%%)"):format("run with frames (until the file is closed)", c, 100 * (c - p) / p))
  end
  print(("ns per spin flip without frames: %.4f"):format(p / sweeps / (8192 * 8192) * 1e9))
end

if not only or only == "speed" then speed() end
if not only or only == "size" then size() end
if not only or only == "gpu" then gpu() end
os.execute("rmdir " .. dir .. " 2>/dev/null")
