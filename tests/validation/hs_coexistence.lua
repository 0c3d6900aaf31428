-- validate/hard/coexistence: the fluid-fcc coexistence pressure of hard spheres by
-- workflows/hs_coexistence.lua (fluid EOS from rho = 0, fcc EOS, mu of both branches), the fcc
-- anchored at rho = 1.0409 by Polson et al.'s N -> infinity beta F_ex / N = 5.91889(4) (its
-- finite-size term out), against Vega & Noya (2007), p* = 11.54(4)
-- (workflows/data/hs_free_energy.tsv): within three combined error bars. On the GPU (SKIP
-- without one); the workflow's defaults, minutes.
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
local r = run("device=gpu", ("solid_fex=%.5f"):format(fex[1]), ("solid_fex_err=%g"):format(fex[2]),
              "out=" .. check.tmp .. "/hs_coexistence")
check.ok("validate/hard/coexistence-crossing", r ~= nil, "mu_fluid and mu_solid do not cross")
if r then
  print(("# p* = %.4f +- %.4f, rho_fluid = %.4f +- %.4f, rho_solid = %.4f +- %.4f; Vega & Noya %.2f +- %.2f")
    :format(r.P, r.P_err, r.rho_fluid, r.rho_fluid_err, r.rho_solid, r.rho_solid_err, pco[1], pco[2]))
  check.agree("validate/hard/coexistence-pressure", r.P, r.P_err, pco[1], pco[2], 3)
end
