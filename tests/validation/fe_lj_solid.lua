-- validate/fe/lj-solid: Frenkel-Ladd free energies of the Lennard-Jones fcc solid
-- (workflows/lj_frenkel_ladd.lua: the Einstein molecule, the harmonic tether in the checkerboard)
-- are consistent with the equation of state. N = 256, T = 2, rc = 2.5 shifted (the force is
-- continuous at the cutoff, so the virial pressure is exactly -dA/dV of the sampled potential);
-- beta A / N by Frenkel-Ladd at rho = 1.20 and 1.30, and their difference against the
-- thermodynamic integration of the sampled pressure along the isotherm,
--     beta A(rho2) / N - beta A(rho1) / N = int_rho1^rho2 beta P / rho^2 drho
-- (Gauss-Legendre on 5 densities), within 3 combined error bars; and at lambda_max the msd
-- within 2% of the ideal Einstein molecule's (the interactions a perturbation there). No value
-- for LJ solids is recorded in the project: this checks the tether's chain, the lattice and
-- perturbation terms and the quadrature together (the lattice term changes by 0.62 and the
-- integral by 0.59 between the two densities; the error bar of the difference is about 0.01).
-- On the CPU (2 threads): 1.2197(94) against 1.2268(9), 90 s of CPU time.
local carlo = require "carlo"
local check = require "check"

local fl = assert(loadfile("workflows/lj_frenkel_ladd.lua"))("--module")
local device = check.has_gpu() and "gpu" or "cpu"
local o = { T = 2.0, N = 256, rc = 2.5, shift = true, tail = false, nodes = 10, lambda_max = 2e4, c = 0,
            sweeps = 5000, equilibrate = 1000, every = 4, seed = 2027, device = device }
local rho1, rho2 = 1.20, 1.30

local t1 = fl.frenkel_ladd(o, rho1)
o.seed = 2028
local t2 = fl.frenkel_ladd(o, rho2)
o.seed = 2029
local p = fl.pressure_path(o, rho1, rho2, 5)
for _, t in ipairs{ t1, t2 } do
  print(("# rho = %.2f: einstein %.6f reference %.6f lattice %.6f perturbation %.6f +- %.6f integral "
    .. "%.6f +- %.6f; beta A / N = %.6f +- %.6f (c = %.4g, msd at lambda_max %.4f of ideal)")
    :format(t.rho, t.einstein, t.reference, t.lattice, t.perturbation, t.perturbation_err, t.integral,
      t.integral_err, t.A, t.A_err, t.c, t.top_ratio))
end
for i, r in ipairs(p.rho) do print(("# rho = %.5f: P = %.5f +- %.5f"):format(r, p.P[i].mean, p.P[i].err)) end
local dA, edA = t2.A - t1.A, math.sqrt(t1.A_err ^ 2 + t2.A_err ^ 2)
print(("# delta beta A / N: Frenkel-Ladd %.6f +- %.6f, pressure %.6f +- %.6f (%s)"):format(dA, edA, p.value,
  p.err, device))
check.agree("validate/fe/lj-solid-delta-A", dA, edA, p.value, p.err, 3)
check.ok("validate/fe/lj-solid-top-node", math.abs(t1.top_ratio - 1) < 0.02 and math.abs(t2.top_ratio - 1) < 0.02,
  ("msd at lambda_max: %.4f and %.4f of the ideal Einstein molecule's"):format(t1.top_ratio, t2.top_ratio))
