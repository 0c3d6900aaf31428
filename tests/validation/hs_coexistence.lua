-- validate/hard/coexistence: the fluid-fcc coexistence pressure of hard spheres by
-- workflows/hs_coexistence.lua (fluid EOS from rho = 0, fcc EOS, mu of both branches), the fcc
-- anchored at rho = 1.0409 by Polson et al.'s N -> infinity beta F_ex / N = 5.91889(4) (its
-- finite-size term out), against Vega & Noya (2007), p* = 11.54(4)
-- (workflows/data/hs_free_energy.tsv): within three combined error bars. On the GPU (SKIP
-- without one); the workflow's defaults (every pressure of both branches one system, all
-- advanced together), minutes. Arguments after the file name go to the workflow
-- (carlo tests/validation/hs_coexistence.lua sweeps=40000).
local carlo = require "carlo"
local check = require "check"
if not check.gpu_or_skip("validate/hard/coexistence") then return end

local ref = {}
for line in io.lines("workflows/data/hs_free_energy.tsv") do
  local k, v, e = line:match("^([%w_]+)\t(%d+%.%d+)%((%d+)%)")
  if k then ref[k] = { tonumber(v), tonumber(e) * 10 ^ -(#v - v:find(".", 1, true)) } end
end
local fex, pco = assert(ref.betaFex_per_N_fcc), assert(ref.coexistence_pressure)
local run = assert(loadfile("workflows/hs_coexistence.lua"))
-- the workflow's own arguments may follow (sweeps=40000, N_fluid=2000, ...): they come last
local args = { "device=gpu", ("solid_fex=%.5f"):format(fex[1]), ("solid_fex_err=%g"):format(fex[2]),
               "out=" .. check.tmp .. "/hs_coexistence" }
for _, a in ipairs(arg or {}) do args[#args + 1] = a end
local r = run(table.unpack(args))
check.ok("validate/hard/coexistence-crossing", r ~= nil, "mu_fluid and mu_solid do not cross")
if r then
  print(("# p* = %.4f +- %.4f, rho_fluid = %.4f +- %.4f, rho_solid = %.4f +- %.4f; Vega & Noya %.2f +- %.2f")
    :format(r.P, r.P_err, r.rho_fluid, r.rho_fluid_err, r.rho_solid, r.rho_solid_err, pco[1], pco[2]))
  check.agree("validate/hard/coexistence-pressure", r.P, r.P_err, pco[1], pco[2], 3)
end
