-- lua/files/export: carlo export finishes what it starts and leaves nothing half-written:
-- Ctrl-C finishes the output with the frames so far, --skip-damaged exports every intact frame,
-- a failed image leaves no 0-byte file, GSD log/ quantities are in every frame, and 2D XYZ
-- cells are valid.
local carlo = require "carlo"
local check = require "check"
local D = check.tmp .. "/lua-files-export"
os.execute("rm -rf " .. D .. " && mkdir -p " .. D)
local CARLO = os.getenv("CARLO") or "build/carlo"

local slurp = check.slurp

local function exists(path) return slurp(path) ~= nil end

-- a shell command's output (stdout and stderr) and exit status
local function sh(cmd)
  local p = io.popen("{ " .. cmd .. "; } 2>&1; echo \"rc=$?\"")
  local out = p:read("a")
  p:close()
  local rc = tonumber(out:match("rc=(%d+)\n$"))
  return out:gsub("rc=%d+\n$", ""), rc
end

local function export(args) return sh(("%s export %s"):format(CARLO, args)) end

-- particles on a jittered cubic grid (dims 3) or square grid (dims 2), inside the box
local function particles(n, dims, seed)
  math.randomseed(seed)
  local N = dims == 3 and n * n * n or n * n
  local pos = carlo.array("f32", { shape = { N, 3 } })
  local L = n * 1.2
  local i = 0
  for a = 0, n - 1 do
    for b = 0, n - 1 do
      for c = 0, (dims == 3 and n - 1 or 0) do
        pos[3 * i + 1] = (a + 0.5) * 1.2 - L / 2 + (math.random() - 0.5) * 0.1
        pos[3 * i + 2] = (b + 0.5) * 1.2 - L / 2 + (math.random() - 0.5) * 0.1
        pos[3 * i + 3] = dims == 3 and (c + 0.5) * 1.2 - L / 2 + (math.random() - 0.5) * 0.1 or 0
        i = i + 1
      end
    end
  end
  return pos, { L, L, dims == 3 and L or 0, 0, 0, 0 }
end

-- frames of particles; extra(k) adds chunks to frame k
local function trajectory(path, nframes, n, dims, extra)
  local tr = carlo.trajectory(path, "w")
  local pos, box = particles(n, dims, 1)
  for k = 1, nframes do
    local f = { ["configuration/step"] = 10 * k, ["configuration/box"] = box, ["particles/position"] = pos }
    for name, v in pairs(extra and extra(k) or {}) do f[name] = v end
    tr:write(f)
  end
  tr:close()
end

-- the frame records of a .ctr file: { offset, length } each (0-based offsets)
local function records(bytes)
  local out, off = {}, 64
  while off + 48 <= #bytes and bytes:sub(off + 1, off + 4) == "CFRM" do
    local len = string.unpack("<I8", bytes, off + 25)
    out[#out + 1] = { off, len }
    off = off + len
  end
  return out
end

-- complete XYZ frames in text, and whether anything follows the last one
local function xyz_frames(text)
  local frames, pos = {}, 1
  while pos <= #text do
    local n, after = text:match("^(%d+)\n()", pos)
    if not n then return frames, true end
    local comment, body = text:match("^([^\n]*)\n()", after)
    if not comment then return frames, true end
    pos = body
    for _ = 1, tonumber(n) do
      local nxt = text:find("\n", pos, true)
      if not nxt then return frames, true end
      pos = nxt + 1
    end
    frames[#frames + 1] = comment
  end
  return frames, false
end

-- a GSD file's index: frames[k] = { name = { N =, M =, type =, at = } } (k from 1)
local function gsd_frames(bytes)
  if not bytes or #bytes < 256 then return nil end
  local magic, index_at, nidx, names_at, units = string.unpack("<I8I8I8I8I8", bytes)
  if magic ~= 0x65DF65DF65DF65DF or index_at == 0 then return nil end
  local names = {}
  for name in bytes:sub(names_at + 1, names_at + units * 64):gmatch("[^%z]+") do names[#names + 1] = name end
  local frames = {}
  for i = 0, nidx - 1 do
    local frame, N, at, M, id, typ = string.unpack("<I8I8i8I4I2B", bytes, index_at + 1 + 32 * i)
    if N > 0 then
      frames[frame + 1] = frames[frame + 1] or {}
      frames[frame + 1][names[id + 1]] = { N = N, M = M, type = typ, at = at }
    end
  end
  return frames
end

-- Ctrl-C: the export stops at a frame boundary, finishes its file and exits 130
do
  local src = D .. "/long.ctr"
  trajectory(src, 30, 150, 2)
  local default_int = select(2, sh("env --default-signal=INT true")) == 0 and "env --default-signal=INT " or ""
  for _, ext in ipairs { "xyz", "xyz.gz", "gsd" } do
    local out = D .. "/long." .. ext
    -- a background job of a shell script ignores SIGINT; one from a terminal does not
    local text, rc = sh(("%s%s export %s %s & pid=$!; for i in $(seq 3000); do [ -s %s ] && break; " ..
      "sleep 0.002; done; kill -INT $pid; wait $pid"):format(default_int, CARLO, src, out, out))
    local frames, ok
    if ext == "gsd" then
      local g = gsd_frames(slurp(out))
      frames = g and #g or 0
      ok = g ~= nil and g[frames]["particles/position"] ~= nil
    else
      local body = ext == "xyz" and slurp(out) or select(1, sh("gzip -dc " .. out))
      local list, trailing = xyz_frames(body or "")
      frames, ok = #list, not trailing
      if ext == "xyz.gz" then ok = ok and select(2, sh("gzip -t " .. out)) == 0 end
    end
    check.ok("lua/files/export-ctrl-c-finishes-" .. ext:gsub("%.", "-"), rc == 130 and ok and frames >= 1 and
      frames < 30 and text:find(("interrupted: %s holds frames 1 to %d"):format(out, frames), 1, true),
      ("rc %s, %d whole frames (intact %s): %s"):format(tostring(rc), frames, tostring(ok), text))
  end
end

-- damaged frames: an error naming the frame (and --skip-damaged), or left out with a notice
do
  local src = D .. "/damaged.ctr"
  trajectory(src, 5, 12, 3)
  local bytes = slurp(src)
  local rec = records(bytes)
  local at = rec[3][1] + rec[3][2] // 2 -- the middle of frame 3: its positions' payload
  local bad = bytes:sub(1, at) .. string.char(bytes:byte(at + 1) ~ 0x10) .. bytes:sub(at + 2)
  local f = io.open(src, "wb")
  f:write(bad)
  f:close()
  local out, rc = export(("%s %s/d.xyz"):format(src, D))
  check.ok("lua/files/export-damaged-frame-refused", rc == 1 and out:find("frame 3", 1, true) and
    out:find("--skip-damaged", 1, true) and not exists(D .. "/d.xyz"), out)
  out, rc = export(("--skip-damaged %s %s/d.xyz"):format(src, D))
  local list = xyz_frames(slurp(D .. "/d.xyz") or "")
  local numbers = {}
  for i, c in ipairs(list) do numbers[i] = c:match("frame=(%d+)") end
  check.ok("lua/files/export-skip-damaged", rc == 0 and table.concat(numbers, ",") == "1,2,4,5" and
    out:find("frame 3 skipped (damaged)", 1, true), ("rc %s, frames %s: %s")
    :format(tostring(rc), table.concat(numbers, ","), out))
  -- a file without its index whose frame 2 lost its head: the scan marks it damaged
  local cut = bad:sub(1, rec[5][1] + rec[5][2])
  local h = rec[2][1] + 10
  cut = cut:sub(1, h) .. string.char(cut:byte(h + 1) ~ 0xff) .. cut:sub(h + 2)
  f = io.open(D .. "/scanned.ctr", "wb")
  f:write(cut)
  f:close()
  out, rc = export(("--skip-damaged %s/scanned.ctr %s/s.gsd"):format(D, D))
  local g = gsd_frames(slurp(D .. "/s.gsd"))
  check.ok("lua/files/export-skip-damaged-scanned", rc == 0 and g and #g == 3 and
    out:find("frame 2 skipped (damaged)", 1, true) and out:find("frame 3 skipped (damaged)", 1, true),
    ("rc %s, %s frames: %s"):format(tostring(rc), g and #g or "no", out))
end

-- GSD: a log/ quantity missing from a frame carries the last value (readers would repeat the
-- first frame's, or fail); one missing from the first exported frame is refused
do
  local src = D .. "/logs.ctr"
  trajectory(src, 4, 5, 3, function(k) return k ~= 3 and { ["log/energy"] = -k * 1.5 } or {} end)
  local out, rc = export(("%s %s/logs.gsd"):format(src, D))
  local bytes = slurp(D .. "/logs.gsd")
  local g = gsd_frames(bytes)
  local values = {}
  for k = 1, g and #g or 0 do
    local e = g[k]["log/energy"]
    values[k] = e and e.type == 10 and string.unpack("<d", bytes, e.at + 1) or "none"
  end
  check.ok("lua/files/export-gsd-log-in-every-frame", rc == 0 and table.concat(values, ",") ==
    "-1.5,-3.0,-3.0,-6.0", ("rc %s, log/energy per frame: %s %s"):format(tostring(rc),
    table.concat(values, ","), out))
  local late = D .. "/late.ctr"
  trajectory(late, 3, 5, 3, function(k) return k >= 2 and { ["log/late"] = k } or {} end)
  out, rc = export(("%s %s/late.gsd"):format(late, D))
  check.ok("lua/files/export-gsd-log-missing-from-first-frame-refused", rc == 1 and
    out:find("log/late is in frame 2 but not in frame 1", 1, true) and out:find("--frames 2:", 1, true) and
    not exists(D .. "/late.gsd"), out)
  out, rc = export(("--frames 2: %s %s/late.gsd"):format(late, D))
  g = gsd_frames(slurp(D .. "/late.gsd"))
  check.ok("lua/files/export-gsd-log-from-its-first-frame", rc == 0 and g and #g == 2 and
    g[1]["log/late"] and g[2]["log/late"], out)
end

-- XYZ of a 2D system: a valid third lattice vector (the unit vector along z), not zero
do
  local src = D .. "/flat.ctr"
  trajectory(src, 1, 4, 2)
  local _, rc = export(("%s %s/flat.xyz"):format(src, D))
  local text = slurp(D .. "/flat.xyz") or ""
  local lattice = text:match('Lattice="([^"]*)"') or ""
  local v = {}
  for x in lattice:gmatch("%S+") do v[#v + 1] = tonumber(x) end
  local origin = text:match('Origin="([^"]*)"') or ""
  check.ok("lua/files/export-xyz-2d-cell-valid", rc == 0 and #v == 9 and v[7] == 0 and v[8] == 0 and
    v[9] == 1 and origin:match("%S+ %S+ (%S+)") == "-0.5" and text:find('pbc="T T F"', 1, true),
    lattice .. " / " .. origin)
end

-- a write that fails leaves no file: PNG (one image, and a numbered sequence), XYZ; an output
-- that is not a regular file (a link to /dev/full) is never removed
do
  local sys = carlo.potts{ L = 16, q = 3, T = 1, seed = 1, device = "cpu" }
  local src = D .. "/lattice.ctr"
  local tr = carlo.trajectory(src, "w")
  sys:run{ sweeps = 3, every = 1, trajectory = tr }
  tr:close()
  local limit = "trap '' XFSZ; ulimit -f 0; "
  local _, rc1 = sh(limit .. ("%s export --frames 2 %s %s/one.png"):format(CARLO, src, D))
  local _, rc2 = sh(limit .. ("%s export %s %s/seq.png"):format(CARLO, src, D))
  local left = select(1, sh("ls " .. D .. " | grep png"))
  check.ok("lua/files/export-png-failure-leaves-no-file", rc1 == 1 and rc2 == 1 and left == "",
    ("rc %s %s, left: %s"):format(tostring(rc1), tostring(rc2), left))
  local p3 = D .. "/p3.ctr"
  trajectory(p3, 2, 6, 3)
  local _, rc3 = sh(limit .. ("%s export %s %s/full.xyz.gz"):format(CARLO, p3, D))
  check.ok("lua/files/export-xyz-failure-leaves-no-file", rc3 == 1 and not exists(D .. "/full.xyz.gz"))
  sh(("ln -s /dev/full %s/dev.gsd"):format(D))
  local out, rc4 = export(("%s %s/dev.gsd"):format(p3, D))
  check.ok("lua/files/export-failure-keeps-device-output", rc4 == 1 and
    select(2, sh(("test -L %s/dev.gsd && test -c /dev/full"):format(D))) == 0, out)
end
