#!/usr/bin/env bash
# tests/mpi/hard_frozen.sh — hard disks and pentagons split with frozen edges (decompose =
# "frozen") on 1, 2, 3 and 4 ranks: tests/mpi/hard_frozen.lua's checks on each (the chain
# depends on the ranks, so no file is compared across them).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/mpi.sh
export CARLO_TEST_TMP=$MPI_TMP
"$CARLO" --quiet tests/mpi/hard_frozen.lua || echo "FAIL mpi/hard_frozen/plain: exited $?"
for n in 2 3 4; do
    $MPIRUN -np "$n" "$CARLO" --quiet tests/mpi/hard_frozen.lua || echo "FAIL mpi/hard_frozen/np$n: mpirun exited $?"
done
rm -rf "$MPI_TMP"
