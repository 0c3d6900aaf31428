-- lua/files/log: carlo.log loses no row silently (a full disk is an error at the row that
-- fails) and every log starts with a commented header saying what wrote it.
local carlo = require "carlo"
local check = require "check"
local D = check.tmp .. "/lua-files-log"
os.execute("mkdir -p " .. D)
local CARLO = os.getenv("CARLO") or "build/carlo"

local slurp = check.slurp

-- run a script under a shell prefix; its output (stdout and stderr) and whether it succeeded
local function run(prefix, script)
  local path = D .. "/script.lua"
  local f = io.open(path, "w")
  f:write(script)
  f:close()
  local p = io.popen(("%s %s --quiet %s 2>&1"):format(prefix, CARLO, path))
  local out = p:read("a")
  local ok = p:close()
  return out, ok
end

-- a full disk: the header cannot be written, so carlo.log itself fails
check.raises("lua/files/log-disk-full-raises", function() carlo.log("/dev/full") end,
  "carlo.log: writing /dev/full failed", "No space left on device")

-- a disk that fills up during the run: the row that does not fit raises (the file-size limit
-- makes writes fail as a full disk would); every row before it is in the file
do
  local path = D .. "/full.tsv"
  local out, ok = run("trap '' XFSZ; ulimit -f 2;", ([[
local log = carlo.log(%q, { columns = { "step", "x" } })
for i = 1, 100000 do log:row{ step = i, x = i * 0.5 } end
print("every row written")
]]):format(path))
  local text = slurp(path) or ""
  local rows = 0
  for line in text:gmatch("[^\n]*\n") do
    if line:match("^%d+\t") then rows = rows + 1 end
  end
  check.ok("lua/files/log-row-on-full-disk-raises", not ok and out:find("carlo.log: writing " .. path
    .. " failed: File too large", 1, true) and not out:find("every row written", 1, true) and rows > 10,
    ("ok %s, %d rows kept: %s"):format(tostring(ok), rows, out:sub(1, 300)))
end

-- the header: carlo's version and the date, the system (model, seed, device, controls) and
-- the caller's table; then the column row and the rows, which readers that skip '#' see alone
do
  local path = D .. "/header.tsv"
  local sys = carlo.potts{ L = 8, q = 3, T = 0.75, seed = 7, device = "cpu" }
  local log = carlo.log(path, { system = sys, header = { protocol = "heating", sweeps = 1000 } })
  log:row{ step = 1, T = 0.75, e = { mean = -1.5, err = 0.01 } }
  log:close()
  local text = slurp(path)
  local comments, data = {}, {}
  for line in text:gmatch("([^\n]*)\n") do
    if line:sub(1, 1) == "#" then
      if #data > 0 then comments.late = true end
      comments[#comments + 1] = line
    else
      data[#data + 1] = line
    end
  end
  local head = table.concat(comments, "\n")
  check.ok("lua/files/log-header-version-and-date", text:sub(1, 1) == "#" and
    head:find("# carlo " .. carlo.version .. " log, written %d%d%d%d%-%d%d%-%d%dT") ~= nil, head)
  check.ok("lua/files/log-header-system", head:find("# model: potts", 1, true) and
    head:find("# seed: 7", 1, true) and head:find("# device: cpu", 1, true) and
    head:find("# T = 0.75", 1, true), head)
  check.ok("lua/files/log-header-caller-table", head:find("# protocol: heating", 1, true) and
    head:find("# sweeps: 1000", 1, true), head)
  check.ok("lua/files/log-header-then-columns", not comments.late and data[1] == "step\tT\te\te_err" and
    data[2] == "1\t0.75\t-1.5\t0.01" and #data == 2, table.concat(data, " | "))
  check.raises("lua/files/log-header-bad-value", function()
    carlo.log(D .. "/bad.tsv", { header = { f = function() end } })
  end, "header value of 'f' must be a number, string or boolean")
  check.raises("lua/files/log-unknown-option", function() carlo.log(D .. "/bad.tsv", { headr = {} }) end,
    "unknown option 'headr'")

  -- appending: the columns come from the first row that is not a comment; a block of comments
  -- says who appended
  local again = carlo.log(path, { append = true, header = { restart = true } })
  again:row{ e = { mean = -1.6, err = 0.02 }, T = 0.8, step = 2 }
  again:close()
  text = slurp(path)
  check.ok("lua/files/log-append-under-header", text:find("\n# carlo " .. carlo.version ..
    " log, appended ", 1, true) and text:find("# restart: true\n2\t0.8\t-1.6\t0.02\n", 1, true),
    text)
end

-- a closed log, and a second close, are quiet; a row after close is an error
do
  local log = carlo.log(D .. "/closed.tsv")
  log:row{ x = 1 }
  log:close()
  log:close()
  check.raises("lua/files/log-row-after-close", function() log:row{ x = 2 } end, "closed")
end
