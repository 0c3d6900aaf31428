#!/usr/bin/env bash
# lua/fe/pymbar: carlo.mbar against pymbar's MBAR (Shirts and Chodera's own implementation) on
# the same samples: a short Lennard-Jones temperature ladder (N = 64, rho = 0.5) sampled by
# carlo.anneal, its reduced energies u_k(x_n) = E_n / T_k written out, both solvers run on them
# with no subsampling on either side. The free energies must agree to 1e-6 relative (of
# max(|f|, 1)), their error bars to 1e-3 relative. SKIP where python3 cannot import pymbar
# (scripts/install-deps --tests installs it).
CARLO=${CARLO:-build/carlo}
T=${CARLO_TEST_TMP:-/tmp}
name=lua/fe/pymbar
if ! command -v python3 >/dev/null 2>&1 || ! python3 -c "import pymbar" >/dev/null 2>&1; then
    echo "SKIP $name: python3 cannot import pymbar (pip install pymbar, or scripts/install-deps --tests)"
    exit 0
fi
if ! $CARLO --quiet - "$T/pymbar_u.txt" "$T/pymbar_carlo.txt" <<'LUA'
local carlo = require "carlo"
carlo.threads(1)
local upath, fpath = ...
local sys = carlo.lj{ N = 64, rho = 0.5, T = 2.4, seed = 5, init = "random", device = "cpu" }
sys:run{ sweeps = 500 }
local temps = { 2.4, 2.2, 2.0, 1.85, 1.7 }
local rows = carlo.anneal{ system = sys, schedule = temps, control = "T", equilibrate = 300,
                           measure = 2000, every = 10, observe = { series = true }, quiet = true }
local mb = carlo.mbar{ samples = rows, subsample = false }
local u = assert(io.open(upath, "w"))
local energy = {}
for k, s in ipairs(rows) do
  energy[k] = {}
  for j = 1, #s.series.U do energy[k][j] = s.series.U[j] * sys.N end
end
u:write(("%d"):format(#temps))
for k = 1, #temps do u:write((" %d"):format(#energy[k])) end
u:write("\n")
for k = 1, #temps do
  local line = {}
  for l = 1, #temps do for _, e in ipairs(energy[l]) do line[#line + 1] = ("%.17g"):format(e / temps[k]) end end
  u:write(table.concat(line, " "), "\n")
end
u:close()
local f = assert(io.open(fpath, "w"))
for k = 1, #temps do f:write(("%.17g %.17g\n"):format(mb.f[k], mb.df[k])) end
f:close()
LUA
then
    echo "FAIL $name: the carlo side failed"
    exit 0
fi
out=$(python3 - "$T/pymbar_u.txt" "$T/pymbar_carlo.txt" 2>&1 <<'PY'
import sys
import numpy as np
from pymbar import MBAR

upath, fpath = sys.argv[1], sys.argv[2]
with open(upath) as fh:
    head = fh.readline().split()
    K = int(head[0])
    N_k = np.array([int(x) for x in head[1:1 + K]])
    u_kn = np.array([[float(x) for x in fh.readline().split()] for _ in range(K)])
ours = np.loadtxt(fpath)
m = MBAR(u_kn, N_k, relative_tolerance=1e-13, maximum_iterations=100000)
r = m.compute_free_energy_differences()
f = r["Delta_f"][0, :]
df = r["dDelta_f"][0, :]
scale = np.maximum(np.abs(f), 1.0)
dev = np.max(np.abs(ours[:, 0] - f) / scale)
print(("PASS" if dev < 1e-6 else "FAIL") + " lua/fe/pymbar/f" +
      ("" if dev < 1e-6 else ": max relative difference %.3g (carlo %s, pymbar %s)" % (dev, ours[:, 0], f)))
ddev = np.max(np.abs(ours[1:, 1] - df[1:]) / df[1:])
print(("PASS" if ddev < 1e-3 else "FAIL") + " lua/fe/pymbar/df" +
      ("" if ddev < 1e-3 else ": max relative difference %.3g (carlo %s, pymbar %s)" % (ddev, ours[:, 1], df)))
print("# f relative difference %.3g, df %.3g" % (dev, ddev))
PY
)
if grep -qE '^(PASS|FAIL)' <<<"$out"; then
    grep -E '^(PASS|FAIL)' <<<"$out"
    [ -n "$CARLO_TEST_VERBOSE" ] && grep '^#' <<<"$out"
else
    echo "FAIL $name: the pymbar side failed: $(tail -3 <<<"$out")"
fi
exit 0
