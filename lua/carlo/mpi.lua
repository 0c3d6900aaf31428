-- carlo.mpi's Lua half: which rank writes which file (carlo-mpi(7)). Under mpirun every rank
-- runs the same script; a system made on every rank alike is the same system R times, so its
-- files (sys:save, run{ trajectory = } and run{ checkpoint = }) are written by rank 0 alone.
-- A system that is one rank's own (an ensemble's replicas, or one a script made per rank) is
-- marked with carlo.mpi.own(sys): that rank writes its files. Likewise a trajectory opened for
-- writing is rank 0's file; on the other ranks it is a scratch file, deleted as it is opened,
-- unless opened with { own = true } (a rank's own file).
--   local sys = carlo.mpi.own(carlo.potts{ L = 64, q = 3, T = 1, seed = 7 + carlo.mpi.rank })
--   sys:save(("run.%d.ckpt"):format(carlo.mpi.rank))
local carlo = require "carlo"
local mpi = carlo.mpi

local owned = setmetatable({}, { __mode = "k" })

-- Mark sys as this rank's own; returns sys.
function mpi.own(sys)
  if type(sys) ~= "userdata" then
    error(("carlo.mpi.own: expects a system (got a %s)"):format(type(sys)), 2)
  end
  owned[sys] = true
  return sys
end

-- Whether this rank writes sys's files: rank 0, or the rank that owns sys.
function mpi.writes(sys)
  return mpi.rank == 0 or owned[sys] == true
end

-- A system split over the ranks (a Potts lattice with decompose = true): its frames and
-- checkpoints gather from every rank, so every rank takes part in them.
local function split(sys)
  local ok, v = pcall(function() return sys.decomposed end)
  return ok and v == true
end

-- The run keys that write files, dropped on ranks that do not write them.
local function without_files(t)
  if type(t) ~= "table" or (t.trajectory == nil and t.checkpoint == nil) then return t end
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  if c.trajectory ~= nil then c.trajectory, c.every = nil, nil end
  c.checkpoint = nil
  return c
end

-- What a save on a rank that does not write checks: the file name, as the writing rank does.
local function check_save(sys, path)
  if type(path) ~= "string" then
    error(("%s:save: expects a file name (got %s)"):format(tostring(sys.model), type(path)), 3)
  end
end

-- A split system's ranks must do the same sweeps: a walltime, measured on each rank, could
-- stop them at different ones.
local function check_run(sys, t)
  if type(t) == "table" and t.walltime ~= nil and split(sys) then
    error(("%s:run: walltime is refused for a system split over %d MPI ranks (each rank's clock "
      .. "could stop it at another sweep); give sweeps"):format(tostring(sys.model), mpi.size), 3)
  end
end

if mpi.size > 1 then
  local writer = mpi.rank == 0
  for name, mt in pairs(debug.getregistry()) do
    local methods = type(name) == "string" and type(mt) == "table" and rawget(mt, "methods")
    if type(methods) == "table" and methods.save and methods.run then
      local save, run, png = methods.save, methods.run, methods.png
      methods.save = function(sys, ...)
        if writer or owned[sys] then return save(sys, ...) end
        check_save(sys, ...)
        if split(sys) then mpi._checkpoint(sys) end
      end
      -- a split system's frames go to the scratch file carlo.trajectory gives these ranks
      methods.run = function(sys, t, ...)
        check_run(sys, t)
        if writer or owned[sys] or split(sys) then return run(sys, t, ...) end
        return run(sys, without_files(t), ...)
      end
      if png and not writer then
        methods.png = function(sys, path, ...)
          if owned[sys] then return png(sys, path, ...) end
          if split(sys) then
            local scratch = os.tmpname()
            local ok, err = pcall(png, sys, scratch, ...)
            os.remove(scratch)
            if not ok then error(err, 2) end
          end
        end
      end
    end
  end
end

-- carlo.trajectory(path, mode, opts): opts.own (every rank writes its file) is read here.
local trajectory = carlo.trajectory
carlo.trajectory = function(path, mode, opts, ...)
  local writing = type(mode) == "string" and mode ~= "r"
  local own = false
  if writing and type(opts) == "table" and opts.own ~= nil then
    own = opts.own
    local c = {}
    for k, v in pairs(opts) do c[k] = v end
    c.own = nil
    opts = c
  end
  if not writing or own or mpi.rank == 0 then return trajectory(path, mode, opts, ...) end
  local scratch = os.tmpname()
  local ok, t = pcall(trajectory, scratch, "w", opts, ...)
  os.remove(scratch)
  if not ok then error(t, 2) end
  return t
end
