-- lua/files/save: sys:save and carlo.trajectory lose nothing and leave nothing behind: no save
-- over a trajectory being written, saves through symbolic links, no 0-byte or temporary
-- files after a failure, stale temporary files of killed saves cleaned up.
local carlo = require "carlo"
local check = require "check"
local D = check.tmp .. "/lua-files-save"
os.execute("rm -rf " .. D .. " && mkdir -p " .. D)
local CARLO = os.getenv("CARLO") or "build/carlo"

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

local function sh(cmd) return os.execute(cmd) == true end

local function listing(dir)
  local p = io.popen("ls -A " .. dir)
  local s = p:read("a")
  p:close()
  return s
end

-- run a chunk in a child carlo under a shell prefix; its output and whether it succeeded
local function run(prefix, chunk)
  local p = io.popen(("%s %s --quiet -e %q 2>&1"):format(prefix, CARLO, chunk))
  local out = p:read("a")
  local ok = p:close()
  return out, ok
end

local sys = carlo.potts{ L = 8, q = 3, T = 1.0, seed = 3, device = "cpu" }

-- s:save onto the file of an open trajectory: refused, every frame kept
do
  local path = D .. "/run.ctr"
  local tr = carlo.trajectory(path, "w")
  sys:run{ sweeps = 3, every = 1, trajectory = tr }
  check.raises("lua/files/save-onto-open-trajectory-refused", function() sys:save(path) end,
    "open for writing", "close it first")
  sys:run{ sweeps = 2, every = 1, trajectory = tr }
  tr:close()
  local back = carlo.trajectory(path)
  check.eq("lua/files/save-onto-open-trajectory-frames-kept", #back, 5)
  back:close()
  sys:save(path) -- closed: now it may be replaced
  check.eq("lua/files/save-after-trajectory-closed", carlo.load(path).step, sys.step)
end

-- through a symbolic link: the file it names is written, the link stays
do
  os.execute("mkdir -p " .. D .. "/store")
  local target, link = D .. "/store/state.ctr", D .. "/state.ctr"
  sys:save(target)
  sh(("ln -s store/state.ctr %s"):format(link))
  sys:run{ sweeps = 4 }
  sys:save(link)
  check.ok("lua/files/save-through-symlink-keeps-link", sh("test -L " .. link),
    "the link was replaced by a file")
  check.eq("lua/files/save-through-symlink-writes-target", carlo.load(target).step, sys.step)
  sh(("ln -s store/later.ctr %s/later.ctr"):format(D))
  sys:save(D .. "/later.ctr")
  check.ok("lua/files/save-through-dangling-symlink", sh("test -L " .. D .. "/later.ctr") and
    carlo.load(D .. "/store/later.ctr").step == sys.step)
  check.ok("lua/files/save-through-symlink-no-temp", not listing(D .. "/store"):find("%.tmp%d") and
    not listing(D):find("%.tmp%d"), listing(D) .. listing(D .. "/store"))
end

-- a full disk at open: no 0-byte trajectory and no temporary checkpoint stay behind
do
  local out, ok = run("trap '' XFSZ; ulimit -f 0;", ([[
local ok1 = pcall(carlo.trajectory, %q, "w")
local s = carlo.potts{ L = 8, q = 3, T = 1, seed = 1, device = "cpu" }
local ok2, err = pcall(s.save, s, %q)
assert(not ok1 and not ok2, "no failure")
print(err)
]]):format(D .. "/full.ctr", D .. "/full-state.ctr"))
  check.ok("lua/files/failed-open-leaves-no-trajectory", ok and not exists(D .. "/full.ctr"), out)
  check.ok("lua/files/failed-save-leaves-no-temp", ok and not listing(D):find("full%-state"),
    listing(D) .. out)
end

-- a save killed (SIGKILL) half-way leaves PATH.tmpPID: the next save of the path removes it
do
  local path = D .. "/big.ctr"
  local stale
  for _ = 1, 5 do
    local script = D .. "/saver.lua"
    local f = io.open(script, "w")
    f:write(([[
local s = carlo.potts{ L = 2048, q = 9, T = 2, seed = 1, device = "cpu" }
while true do s:save(%q) end
]]):format(path))
    f:close()
    -- one shell starts the saver, kills it while a temporary file exists, and reaps it
    local p = io.popen(("exec 2>/dev/null; %s --quiet %s >/dev/null 2>&1 & pid=$!; for i in $(seq 4000); do " ..
      "[ -e %s.tmp$pid ] && break; sleep 0.005; done; kill -9 $pid; wait $pid 2>/dev/null; echo $pid")
      :format(CARLO, script, path))
    local pid = p:read("l")
    p:close()
    stale = ("%s.tmp%s"):format(path, pid)
    if exists(stale) then break end
  end
  local had = exists(stale)
  sys:save(path)
  check.ok("lua/files/save-removes-stale-temp-of-killed-save", had and not exists(stale),
    ("temporary file %s before %s, after %s"):format(stale, tostring(had), tostring(exists(stale))))
  -- a temporary file of a live process stays (its save may be under way)
  local live = ("%s.tmp%d"):format(path, 1)
  local f = io.open(live, "wb")
  f:write("\137CTR\r\n\26\n")
  f:close()
  sys:save(path)
  check.ok("lua/files/save-keeps-temp-of-live-process", exists(live))
  os.remove(live)
end
