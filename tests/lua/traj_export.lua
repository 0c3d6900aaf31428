-- lua/traj/export: carlo export to GSD, XYZ and XYZ.gz read back by python3-gsd and ASE
-- (tests/lib/traj_check.py), and lattice frames to PNG.
local carlo = require "carlo"
local check = require "check"
local D = check.tmp .. "/lua-traj-export"
os.execute("mkdir -p " .. D)
local CARLO = os.getenv("CARLO") or "build/carlo"
local PREC = 1e-3

local function wrap(x, L) return x - L * math.floor(x / L + 0.5) end

-- jittered hexagonal disks at packing fraction 0.7 (2D, z = 0)
local function disks(n1, seed)
  math.randomseed(seed)
  local rho = 0.7 / (math.pi / 4)
  local a = math.sqrt(2 / (math.sqrt(3) * rho))
  local Lx, Ly = n1 * a, n1 * a * math.sqrt(3) / 2
  local pos = carlo.array("f32", { shape = { n1 * n1, 3 } })
  local i = 0
  for r = 0, n1 - 1 do
    for c = 0, n1 - 1 do
      pos[3 * i + 1] = wrap((c + 0.5 * (r % 2)) * a - Lx / 2 + (math.random() - 0.5) * 0.13, Lx)
      pos[3 * i + 2] = wrap((r + 0.5) * a * math.sqrt(3) / 2 - Ly / 2 + (math.random() - 0.5) * 0.13, Ly)
      pos[3 * i + 3] = 0
      i = i + 1
    end
  end
  return pos, { Lx, Ly, 0, 0, 0, 0 }, "A"
end

-- an LJ-like liquid: jittered fcc at density 0.8
local function lj(n, seed)
  math.randomseed(seed)
  local a = (4 / 0.8) ^ (1 / 3)
  local L = n * a
  local basis = { { 0, 0, 0 }, { 0.5, 0.5, 0 }, { 0.5, 0, 0.5 }, { 0, 0.5, 0.5 } }
  local pos = carlo.array("f32", { shape = { 4 * n * n * n, 3 } })
  local i = 0
  for x = 0, n - 1 do for y = 0, n - 1 do for z = 0, n - 1 do
    for _, b in ipairs(basis) do
      local c = { x + b[1], y + b[2], z + b[3] }
      for d = 1, 3 do pos[3 * i + d] = wrap(c[d] * a - L / 2 + (math.random() - 0.5) * 0.3, L) end
      i = i + 1
    end
  end end end
  return pos, { L, L, L, 0, 0, 0 }, "Ar"
end

local function write(name, make, arg)
  local exact = carlo.trajectory(D .. "/" .. name .. "-exact.ctr", "w")
  local quant = carlo.trajectory(D .. "/" .. name .. "-q.ctr", "w", { precision = PREC })
  for k = 1, 3 do
    local pos, box, tname = make(arg, k)
    local f = { ["configuration/step"] = 1000 * k, ["configuration/box"] = box,
                ["particles/position"] = pos, ["particles/types"] = { tname },
                ["particles/typeid"] = carlo.array("u32", pos.shape[1]), ["log/energy"] = -k / 3 }
    exact:write(f)
    quant:write(f)
  end
  exact:close()
  quant:close()
  local ok = true
  for _, out in ipairs { "-exact.gsd", "-q.gsd", "-exact.xyz", "-exact.xyz.gz" } do
    local src = D .. "/" .. name .. (out:find("q.gsd") and "-q.ctr" or "-exact.ctr")
    ok = ok and os.execute(("%s export --quiet %s %s"):format(CARLO, src, D .. "/" .. name .. out))
  end
  check.ok("lua/traj/export-runs-" .. name, ok)
end

write("disks", disks, 40)
write("lj", lj, 6)

-- a log/ quantity missing from frame 3: read back by gsd.hoomd in tests/lib/traj_check.py
do
  local tr = carlo.trajectory(D .. "/logs.ctr", "w")
  for k = 1, 4 do
    local pos, box = disks(6, k)
    local f = { ["configuration/step"] = k, ["configuration/box"] = box, ["particles/position"] = pos }
    if k ~= 3 then f["log/energy"] = -1.5 * k end
    tr:write(f)
  end
  tr:close()
  check.ok("lua/traj/export-runs-logs", os.execute(("%s export --quiet %s %s"):format(CARLO,
    D .. "/logs.ctr", D .. "/logs.gsd")))
end

local py = io.open("/usr/bin/python3") and "/usr/bin/python3" or "python3"
local here = debug.getinfo(1, "S").source:match("^@(.*)/tests/lua/") or "."
if not os.execute(py .. " -c 'import numpy' 2>/dev/null") then
  check.skip("lua/traj/export-readers", "python3 with numpy not found")
else
  io.stdout:flush()
  local ok = os.execute(("%s %s/tests/lib/traj_check.py %s %g disks lj"):format(py, here, D, PREC))
  check.ok("lua/traj/export-checker-ran", ok)
end

-- lattices to PNG: one frame, and a numbered sequence
do
  local sys = carlo.potts{ L = 20, q = 4, T = 1, seed = 3, device = "cpu" }
  local tr = carlo.trajectory(D .. "/lattice.ctr", "w")
  sys:run{ sweeps = 30, every = 10, trajectory = tr }
  tr:close()
  local function png_size(path)
    local f = io.open(path, "rb")
    if not f then return nil end
    local head = f:read(24)
    f:close()
    if head:sub(1, 8) ~= "\137PNG\r\n\26\n" then return nil end
    return string.unpack(">I4I4", head, 17)
  end
  local ok = os.execute(("%s export --quiet --frames 2 --scale 3 %s %s"):format(CARLO, D .. "/lattice.ctr",
    D .. "/one.png"))
  local w, h = png_size(D .. "/one.png")
  check.ok("lua/traj/export-png", ok and w == 60 and h == 60, ("%s x %s"):format(w, h))
  ok = os.execute(("%s export --quiet %s %s"):format(CARLO, D .. "/lattice.ctr", D .. "/seq.png"))
  check.ok("lua/traj/export-png-sequence", ok and png_size(D .. "/seq-000001.png") and
    png_size(D .. "/seq-000003.png") and not png_size(D .. "/seq-000004.png"))
  -- a height field (any lattice/... chunk other than spins) through the colour ramp
  local h = carlo.array("i32", { shape = { 30, 40 } })
  for i = 1, #h do h[i] = (i - 1) % 40 - 7 end
  local ht = carlo.trajectory(D .. "/height.ctr", "w")
  ht:write { ["configuration/step"] = 1, ["lattice/height"] = h }
  ht:close()
  ok = os.execute(("%s export --quiet --scale 2 %s %s"):format(CARLO, D .. "/height.ctr", D .. "/height.png"))
  w, h = png_size(D .. "/height.png")
  check.ok("lua/traj/export-png-height-ramp", ok and w == 80 and h == 60, ("%s x %s"):format(w, h))
  -- what cannot be exported says so and leaves no file
  local bad = os.execute(("%s export --quiet %s %s 2>/dev/null"):format(CARLO, D .. "/lattice.ctr",
    D .. "/lattice.gsd"))
  check.ok("lua/traj/export-lattice-to-gsd-refused", not bad and not io.open(D .. "/lattice.gsd"))
  bad = os.execute(("%s export --quiet %s %s 2>/dev/null"):format(CARLO, D .. "/lattice.ctr", D .. "/x.csv"))
  check.ok("lua/traj/export-unknown-format-refused", not bad)
  bad = os.execute(("%s export --quiet --frames 9:12 %s %s 2>/dev/null"):format(CARLO, D .. "/lattice.ctr",
    D .. "/x.png"))
  check.ok("lua/traj/export-frames-out-of-range-refused", not bad)
end
