-- validate/hard: the papers' numbers, on the GPU (SKIP without one; a few minutes each).
--  * 65536 disks at phi = 0.698 (fluid, next to the liquid-hexatic coexistence): MPMC Table 2,
--    P* = 9.1709(1), and the event-chain 9.1708(4);
--  * 131072 spheres at phi = 0.60 from fcc: HPMC Table 1, beta P v0 = 9.3134(2).
-- The papers' errors are two standard errors; ours come from blocking, and the runs here are
-- orders of magnitude shorter, so the test is whether the paper's value lies within three of
-- the combined error bars.
local carlo = require "carlo"
local check = require "check"
if not check.gpu_or_skip("validate/hard/papers") then return end

local disks = carlo.hard_disks{ N = 65536, phi = 0.698, seed = 11, device = "gpu", quiet = true }
disks:run{ sweeps = 300000 }
local s = disks:sample{ sweeps = 1500000, every = 20, quiet = true }
print(("# 65536 disks phi 0.698: P_gr %.5f +- %.5f (tau %.0f), P_sdf %.5f +- %.5f; MPMC 9.1709(1)")
  :format(s.P_gr.mean, s.P_gr.err, s.P_gr.tau, s.P_sdf.mean, s.P_sdf.err))
check.ok("validate/hard/table2-plateau", s.P_gr.plateau and s.P_sdf.plateau)
check.agree("validate/hard/table2-0.698-gr", s.P_gr.mean, s.P_gr.err, 9.1709, 0.00005, 3)
check.agree("validate/hard/table2-0.698-sdf", s.P_sdf.mean, s.P_sdf.err, 9.1709, 0.00005, 3)
disks:close()

local v0 = math.pi / 6
local sp = carlo.hard_spheres{ N = 131072, phi = 0.60, init = "fcc", seed = 12, device = "gpu", quiet = true }
sp:tune{ target = 0.2, rounds = 20, sweeps = 500 }
sp:run{ sweeps = 20000 }
local q = sp:sample{ sweeps = 200000, every = 10, quiet = true }
print(("# 131072 spheres phi 0.60: beta P v0 gr %.5f +- %.5f, sdf %.5f +- %.5f; HPMC 9.3134(2)")
  :format(q.P_gr.mean * v0, q.P_gr.err * v0, q.P_sdf.mean * v0, q.P_sdf.err * v0))
check.ok("validate/hard/hpmc-plateau", q.P_gr.plateau and q.P_sdf.plateau)
check.agree("validate/hard/hpmc-spheres-0.60-gr", q.P_gr.mean * v0, q.P_gr.err * v0, 9.3134, 0.0001, 3)
check.agree("validate/hard/hpmc-spheres-0.60-sdf", q.P_sdf.mean * v0, q.P_sdf.err * v0, 9.3134, 0.0001, 3)
