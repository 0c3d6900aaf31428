-- conformance_models.lua — the table of models the conformance suite runs its one generic script
-- on (tests/lua/conformance.lua, tests/gpu/conformance.lua): how to make each with a given init,
-- seed and device, how much a short run is, and the kind of its snapshot.
local carlo = require "carlo"
local kmc_models = require "kmc_models"

local M = {}

M.list = {
  { name = "potts", ctor = "potts", kind = "lattice", init = "ordered", n = 20,
    args = { L = 16, q = 3, T = 1.2 } },
  { name = "potts_ensemble", ctor = "potts_ensemble", kind = "lattice", init = "random", n = 20,
    replicas = 3, args = { L = 16, q = 3, temperatures = { 1.0, 1.1, 1.2 } } },
  { name = "hard_disks", ctor = "hard_disks", kind = "particles", dim = 2, init = "hex", n = 20,
    args = { N = 64, phi = 0.6 } },
  { name = "hard_spheres", ctor = "hard_spheres", kind = "particles", dim = 3, init = "fcc", n = 10,
    args = { N = 108, phi = 0.45 } },
  { name = "hard_polygons", ctor = "hard_polygons", kind = "particles", dim = 2, init = "hex", n = 10,
    args = { vertices = carlo.shapes.pentagon.vertices, N = 64, phi = 0.5 } },
  { name = "hard_polyhedra", ctor = "hard_polyhedra", kind = "particles", dim = 3, init = "sc", n = 5,
    args = { vertices = carlo.shapes.cube.vertices, N = 64, phi = 0.3 } },
  { name = "lj_decomposition", ctor = "lj", kind = "particles", dim = 3, init = "fcc", n = 5,
    args = { N = 108, rho = 0.6, T = 1.5, mode = "decomposition" } },
  { name = "lj_checkerboard", ctor = "lj", kind = "particles", dim = 3, init = "fcc", n = 5,
    args = { N = 500, rho = 0.776, T = 0.85, mode = "checkerboard" } },
  { name = "kmc_sos", ctor = "kmc", kind = "lattice", continuous = true, n = 2000,
    args = { model = "sos_growth", m = 16, n = 16, bond = 1 } },
  { name = "kmc_lua_model", ctor = "kmc", kind = "lattice", continuous = true, n = 2000,
    args = { states = 3, neighbourhood = 8, rates = kmc_models.three_state(0.3), m = 16, n = 16 } },
}

-- A copy of t with the entries of extra added.
function M.with(t, extra)
  local r = {}
  for k, v in pairs(t) do r[k] = v end
  for k, v in pairs(extra or {}) do r[k] = v end
  return r
end

-- A system of model m: o.seed, o.init (nil: the model's default), o.device, extra keys in o.extra.
function M.make(m, o)
  local args = M.with(m.args, { seed = o.seed, init = o.init, device = o.device, quiet = true })
  return carlo[m.ctor](M.with(args, o.extra))
end

-- The configuration as one comparable value (arrays compare element by element with ==).
function M.state_of(sys)
  local parts = {}
  for k = 1, sys.replicas do
    local s = sys:snapshot(k)
    parts[#parts + 1] = s.state or s.position
  end
  return parts
end

-- The same configuration and step (and model time and events for continuous models).
function M.same_state(m, a, b)
  local x, y = M.state_of(a), M.state_of(b)
  if #x ~= #y then return false end
  for k = 1, #x do
    if not (x[k] == y[k]) then return false end
  end
  return a.step == b.step and (not m.continuous or (a.t == b.t and a.events == b.events))
end

-- A run of k units: sweeps, or events for continuous-time models.
function M.amount(m, k)
  if m.continuous then return { events = k } end
  return { sweeps = k }
end

return M
