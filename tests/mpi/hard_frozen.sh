#!/usr/bin/env bash
# tests/mpi/hard_frozen.sh — hard disks and pentagons split with frozen edges (decompose =
# "frozen") on 1, 2, 3 and 4 ranks: tests/mpi/hard_frozen.lua's checks on each (the chain
# depends on the ranks, so no file is compared across them), and workflows/hard_disk_eos.lua with
# decompose=frozen on 2 ranks.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/mpi.sh
export CARLO_TEST_TMP=$MPI_TMP
"$CARLO" --quiet tests/mpi/hard_frozen.lua || echo "FAIL mpi/hard_frozen/plain: exited $?"
for n in 2 3 4; do
    $MPIRUN -np "$n" "$CARLO" --quiet tests/mpi/hard_frozen.lua || echo "FAIL mpi/hard_frozen/np$n: mpirun exited $?"
done
# the equation-of-state workflow split with frozen edges on 2 ranks (a tiny run: its header and
# its row, printed once, by rank 0)
$MPIRUN -np 2 "$CARLO" --quiet workflows/hard_disk_eos.lua N=1024 sweeps=200 equilibrate=50 phi=0.698 \
    decompose=frozen device=cpu >"$MPI_TMP/eos" 2>&1 || echo "FAIL mpi/hard_frozen/eos_workflow: mpirun exited $?"
if grep -q "split over 2 ranks (frozen edges)" "$MPI_TMP/eos" && [ "$(grep -c '^0\.698' "$MPI_TMP/eos")" = 1 ]; then
    echo "PASS mpi/hard_frozen/eos_workflow"
else
    echo "FAIL mpi/hard_frozen/eos_workflow: $(head -c 400 "$MPI_TMP/eos")"
fi
rm -rf "$MPI_TMP"
