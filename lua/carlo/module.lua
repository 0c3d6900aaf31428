-- carlo: the pure-Lua layer of the module, compiled into carlo and carlo.so.
-- luaopen_carlo has already put the C functions in the module table; each file below
-- adds its part: ladders and schedules, TSV logs, annealing and hysteresis protocols.
-- The parts return nothing, so that package.loaded holds the module table under "carlo"
-- alone and an error's traceback names a function carlo.x, not carlo.ladder.x.
local carlo = require "carlo"
require "carlo.ladder"
require "carlo.log"
require "carlo.schedule"
require "carlo.anneal"
require "carlo.hysteresis"
require "carlo.ensemble"
require "carlo.options"
require "carlo.shapes"
require "carlo.free_energy"
require "carlo.mpi"
