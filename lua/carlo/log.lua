-- carlo.log: tab-separated logs with a header row, flushed after every row so that a run
-- killed at any point keeps every row it wrote.
--   local out = carlo.log("heating.tsv" [, { columns = {"T", "e", ...}, append = false }])
--   out:row{ T = 0.72, e = s.e }   -- an estimate { mean =, err = } fills columns e and e_err
--   out:close()                    -- also done by the garbage collector and at exit
-- Without columns =, the first row fixes them: step, t, time, T, beta first, then the rest
-- in alphabetical order. A later row with a new key is an error; a missing key writes nan.
local carlo = require "carlo"

local Log = {}
Log.__index = Log

local leading = { step = 1, t = 2, time = 3, T = 4, beta = 5 }

local function flatten(row)
  local flat = {}
  for k, v in pairs(row) do
    if type(k) ~= "string" then error("log:row: column names must be strings", 3) end
    if type(v) == "table" and v.mean ~= nil then
      flat[k] = v.mean
      flat[k .. "_err"] = v.err
    else
      flat[k] = v
    end
  end
  return flat
end

local function format(v)
  if v == nil then return "nan" end
  if math.type(v) == "integer" then return tostring(v) end
  if type(v) == "number" then
    if v ~= v then return "nan" end
    return ("%.12g"):format(v)
  end
  if type(v) == "boolean" then return v and "1" or "0" end
  local s = tostring(v)
  if s:find("[\t\n]") then error("log:row: values may not contain tabs or newlines", 4) end
  return s
end

function Log:row(row)
  if not self.file then error("log:row: the log is closed", 2) end
  if type(row) ~= "table" then error("log:row: expects a table of column = value", 2) end
  local flat = flatten(row)
  if not self.columns then
    local cols = {}
    for k in pairs(flat) do cols[#cols + 1] = k end
    table.sort(cols, function(a, b)
      local pa, pb = leading[a] or 99, leading[b] or 99
      if pa ~= pb then return pa < pb end
      return a < b
    end)
    self.columns = cols
  end
  if not self.header_written then
    self.file:write(table.concat(self.columns, "\t"), "\n")
    self.header_written = true
    self.known = {}
    for _, c in ipairs(self.columns) do self.known[c] = true end
  end
  for k in pairs(flat) do
    if not self.known[k] then
      error(("log:row: column '%s' is not in the header of %s (declare columns = up front)")
        :format(k, self.path), 2)
    end
  end
  local out = {}
  for i, c in ipairs(self.columns) do out[i] = format(flat[c]) end
  self.file:write(table.concat(out, "\t"), "\n")
  self.file:flush()
  self.rows = self.rows + 1
  return self
end

function Log:close()
  if self.file then
    self.file:close()
    self.file = nil
  end
end

Log.__close = Log.close
Log.__gc = Log.close

function carlo.log(path, opts)
  if type(path) ~= "string" then error("carlo.log: expects a file name", 2) end
  opts = opts or {}
  for k in pairs(opts) do
    if k ~= "columns" and k ~= "append" then
      error(("carlo.log: unknown option '%s' (allowed: columns, append)"):format(tostring(k)), 2)
    end
  end
  local existed = false
  if opts.append then
    local f = io.open(path, "r")
    if f then existed = f:read(1) ~= nil; f:close() end
  end
  local f, err = io.open(path, opts.append and "a" or "w")
  if not f then error("carlo.log: " .. err, 2) end
  local self = setmetatable({ file = f, path = path, rows = 0, columns = opts.columns }, Log)
  if opts.columns then
    self.known = {}
    for _, c in ipairs(opts.columns) do self.known[c] = true end
  end
  if existed then -- appending under the existing header
    if not opts.columns then
      local h = io.open(path, "r")
      local line = h:read("l")
      h:close()
      self.columns = {}
      for c in line:gmatch("[^\t]+") do self.columns[#self.columns + 1] = c end
    end
    self.header_written = true
    self.known = {}
    for _, c in ipairs(self.columns) do self.known[c] = true end
  end
  return self
end

return carlo
