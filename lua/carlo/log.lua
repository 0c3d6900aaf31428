-- carlo.log: tab-separated logs with a header row, flushed after every row so that a run
-- killed at any point keeps every row it wrote.
--   local out = carlo.log("heating.tsv" [, { columns = {"T", "e", ...}, append = false,
--                                            system = sys, header = { key = value, ... } }])
--   out:row{ T = 0.72, e = s.e }   -- an estimate { mean =, err = } fills columns e and e_err
--                                  -- (and e_plateau, 1 or 0, when it carries plateau)
--   out:close()                    -- also done by the garbage collector and at exit
-- Under mpirun (carlo-mpi(7)) rank 0 writes the file and the other ranks check their rows but
-- write them nowhere, unless the log is their own: carlo.log(path, { own = true }).
-- The file starts with comment lines ('#', which gnuplot, numpy and pandas' comment='#'
-- skip): the carlo version and the date, then what the caller passed: with system = sys its
-- model, seed, device and the values of its controls (sys.controls), and the header table's
-- keys in order. The column row and the rows follow as before. Appending adds such a block
-- below the rows already there.
-- Without columns =, the first row fixes them: step, t, time, T, beta first, then the rest
-- in alphabetical order. A later row with a new key is an error; a missing key writes nan.
-- A write, flush or close that fails (a full disk) is an error: no row is lost silently.
local carlo = require "carlo"

local Log = {}
Log.__index = Log

local leading = { step = 1, t = 2, time = 3, T = 4, beta = 5 }

-- The row's columns; a plateau flag is an optional column (optional[name] = true): written
-- where the header has it, dropped where a declared header does not.
local function flatten(row)
  local flat, optional = {}, {}
  for k, v in pairs(row) do
    if type(k) ~= "string" then error("log:row: column names must be strings", 3) end
    if type(v) == "table" and v.mean ~= nil then
      flat[k] = v.mean
      flat[k .. "_err"] = v.err
      if v.plateau ~= nil then -- 1: the error bar is trusted
        flat[k .. "_plateau"] = v.plateau
        optional[k .. "_plateau"] = true
      end
    else
      flat[k] = v
    end
  end
  return flat, optional
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

-- Write and flush, or raise naming the file (level: the caller to blame).
local function put(self, text, level)
  local ok, err = self.file:write(text)
  if ok then ok, err = self.file:flush() end
  if not ok then
    error(("carlo.log: writing %s failed: %s"):format(self.path, tostring(err)), level + 1)
  end
end

function Log:row(row)
  if not self.file then error("log:row: the log is closed", 2) end
  if type(row) ~= "table" then error("log:row: expects a table of column = value", 2) end
  local flat, optional = flatten(row)
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
  local text = {}
  if not self.header_written then
    text[1] = table.concat(self.columns, "\t") .. "\n"
    self.known = {}
    for _, c in ipairs(self.columns) do self.known[c] = true end
  end
  for k in pairs(flat) do
    if not self.known[k] and not optional[k] then
      error(("log:row: column '%s' is not in the header of %s (declare columns = up front)")
        :format(k, self.path), 2)
    end
  end
  local out = {}
  for i, c in ipairs(self.columns) do out[i] = format(flat[c]) end
  text[#text + 1] = table.concat(out, "\t") .. "\n"
  put(self, table.concat(text), 2)
  self.header_written = true
  self.rows = self.rows + 1
  return self
end

-- Close, raising when the last write-back fails (not from the collector, which cannot).
function Log:close()
  local f = self.file
  if not f then return end
  self.file = nil
  local ok, err = f:close()
  if not ok then error(("carlo.log: closing %s failed: %s"):format(self.path, tostring(err)), 2) end
end

Log.__close = Log.close
Log.__gc = function(self)
  if self.file then pcall(self.file.close, self.file); self.file = nil end
end

local function header_value(where, key, v)
  local t = type(v)
  if t == "number" then
    return math.type(v) == "integer" and tostring(v) or ("%.17g"):format(v)
  elseif t == "string" or t == "boolean" then
    local s = tostring(v)
    if s:find("[\r\n]") then error(("%s: header value of '%s' holds a newline"):format(where, key), 4) end
    return s
  end
  error(("%s: header value of '%s' must be a number, string or boolean (got a %s)")
    :format(where, key, t), 4)
end

-- The comment lines: carlo, the date, the system's description and the caller's table.
local function header_lines(opts, verb)
  local lines = { ("# carlo %s log, %s %s"):format(carlo.version, verb, os.date("!%Y-%m-%dT%H:%M:%SZ")) }
  local sys = opts.system
  if sys ~= nil then
    local function field(k)
      local ok, v = pcall(function() return sys[k] end)
      if ok then return v end
    end
    for _, k in ipairs { "model", "seed", "device" } do
      local v = field(k)
      if v ~= nil then lines[#lines + 1] = ("# %s: %s"):format(k, header_value("carlo.log", k, v)) end
    end
    local controls = field("controls")
    if type(controls) == "table" then
      for _, c in ipairs(controls) do
        local v = field(c)
        if v ~= nil then lines[#lines + 1] = ("# %s = %s"):format(c, header_value("carlo.log", c, v)) end
      end
    end
  end
  if opts.header ~= nil then
    local keys = {}
    for k in pairs(opts.header) do
      if type(k) ~= "string" or k:find("[\r\n]") then
        error("carlo.log: header keys must be strings without newlines", 3)
      end
      keys[#keys + 1] = k
    end
    table.sort(keys)
    for _, k in ipairs(keys) do
      lines[#lines + 1] = ("# %s: %s"):format(k, header_value("carlo.log", k, opts.header[k]))
    end
  end
  return table.concat(lines, "\n") .. "\n"
end

local allowed = { columns = true, append = true, header = true, system = true, own = true }

function carlo.log(path, opts)
  if type(path) ~= "string" then error("carlo.log: expects a file name", 2) end
  opts = opts or {}
  for k in pairs(opts) do
    if not allowed[k] then
      error(("carlo.log: unknown option '%s' (allowed: append, columns, header, own, system)")
        :format(tostring(k)), 2)
    end
  end
  if opts.header ~= nil and type(opts.header) ~= "table" then
    error("carlo.log: header must be a table of key = value", 2)
  end
  -- appending under an existing column row: the first line that is not a comment
  local columns_row, existed
  if opts.append then
    local f = io.open(path, "r")
    if f then
      existed = f:read(0) ~= nil
      for line in f:lines() do
        if line:sub(1, 1) ~= "#" then columns_row = line; break end
      end
      f:close()
    end
  end
  local header = header_lines(opts, existed and "appended" or "written")
  local target = (carlo.mpi.rank == 0 or opts.own) and path or "/dev/null"
  local f, err = io.open(target, opts.append and "a" or "w")
  if not f then error("carlo.log: " .. err, 2) end
  local self = setmetatable({ file = f, path = path, rows = 0, columns = opts.columns }, Log)
  if opts.columns then
    self.known = {}
    for _, c in ipairs(opts.columns) do self.known[c] = true end
  end
  if columns_row then
    if not opts.columns then
      self.columns = {}
      for c in columns_row:gmatch("[^\t]+") do self.columns[#self.columns + 1] = c end
    end
    self.header_written = true
    self.known = {}
    for _, c in ipairs(self.columns) do self.known[c] = true end
  end
  local ok, perr = pcall(put, self, header, 1)
  if not ok then
    pcall(f.close, f)
    self.file = nil
    error(perr, 2)
  end
  return self
end
