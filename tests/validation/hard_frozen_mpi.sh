#!/usr/bin/env bash
# validate/hard/frozen_mpi — decompose = "frozen" keeps the distribution: 1024 hard disks at
# phi = 0.698 from random starts, five seeds whole in one process and five split with frozen
# edges on 4 ranks (tests/mpi/hard_frozen_long.lua: 5000 sweeps, then 20000 sampled). The
# pressures' means over the seeds must agree within 4 standard errors of their difference, each
# standard error the larger of the seeds' spread and the runs' own error bars (about 3 minutes
# on 2 cores). SKIP where carlo has no MPI or there is no mpirun.
set -u
cd "$(dirname "$0")/../.."
CARLO=${CARLO:-${BUILD:-build}/carlo}
if ! "$CARLO" -e 'os.exit(carlo.mpi.built and 0 or 1)' >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
    echo "SKIP validation/hard_frozen_mpi: needs carlo built with MPI (make MPI=1) and mpirun"
    exit 0
fi
. tests/lib/mpi.sh
MPIRUN=${MPIRUN/timeout 120/timeout 900}
out=$MPI_TMP/runs
for seed in 1 2 3 4 5; do
    "$CARLO" --quiet tests/mpi/hard_frozen_long.lua whole "$seed" >>"$out" ||
        echo "FAIL validation/hard_frozen_mpi/whole_$seed: exited $?"
    $MPIRUN -np 4 "$CARLO" --quiet tests/mpi/hard_frozen_long.lua frozen "$seed" >>"$out" ||
        echo "FAIL validation/hard_frozen_mpi/frozen_$seed: mpirun exited $?"
done
awk '
{ n[$1]++; s[$1] += $3; q[$1] += $3 * $3; e[$1] += $4 * $4; printf "     %s seed %d: P = %.4f +- %.4f\n", $1, $2, $3, $4 }
END {
    if (n["whole"] != 5 || n["frozen"] != 5) { print "FAIL validation/hard_frozen_mpi/pressure: runs missing"; exit }
    v = 0
    for (k in n) {
        m[k] = s[k] / n[k]
        spread = (q[k] - n[k] * m[k] * m[k]) / (n[k] - 1) / n[k]  # the squared standard error of the mean
        own = e[k] / (n[k] * n[k])
        v += spread > own ? spread : own
    }
    d = m["frozen"] - m["whole"]
    msg = sprintf("P %.4f frozen (4 ranks), %.4f whole: difference %.4f, %.1f standard errors", m["frozen"], m["whole"], d, d / sqrt(v))
    if (d * d < 16 * v) print "PASS validation/hard_frozen_mpi/pressure: " msg
    else print "FAIL validation/hard_frozen_mpi/pressure: " msg
}' "$out"
rm -rf "$MPI_TMP"
