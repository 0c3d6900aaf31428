-- make bench: runs every scripts/bench/*.lua in name order; each prints its own table
-- (GPU and one CPU thread measured in the same run). Arguments are passed on, so
--   build/carlo scripts/bench.lua potts      runs only scripts/bench/potts.lua
local only = arg and arg[1]
local p = io.popen("ls scripts/bench/*.lua 2>/dev/null")
local files = {}
for f in p:lines() do files[#files + 1] = f end
p:close()
table.sort(files)
if #files == 0 then error("bench: no scripts in scripts/bench") end
for _, f in ipairs(files) do
  local name = f:match("([^/]+)%.lua$")
  if not only or only == name then
    print(("== %s =="):format(name))
    local chunk = assert(loadfile(f))
    chunk(table.unpack(arg or {}, 2))
  end
end
