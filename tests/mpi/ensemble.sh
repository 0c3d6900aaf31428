#!/usr/bin/env bash
# tests/mpi/ensemble.sh — an ensemble of 16 Potts replicas on 1, 2 and 4 ranks gives the
# sample means, errors, tempering counters and checkpoint files of one plain process bit for bit,
# and so does a population annealing of 12 members whose copies cross between ranks
# (tests/mpi/ensemble.lua writes them from rank 0), and a saved ensemble loaded on as many ranks
# continues as the unsaved one does.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/mpi.sh
"$CARLO" --quiet tests/mpi/ensemble.lua "$MPI_TMP/plain" || echo "FAIL mpi/ensemble/plain: exited $?"
for n in 1 2 4; do
    $MPIRUN -np $n "$CARLO" --quiet tests/mpi/ensemble.lua "$MPI_TMP/np$n" ||
        echo "FAIL mpi/ensemble/np$n: mpirun exited $?"
    same "mpi/ensemble/np${n}_samples" "$MPI_TMP/plain" "$MPI_TMP/np$n"
    bad=0
    for f in "$MPI_TMP"/plain.ens*; do
        cmp -s "$f" "$MPI_TMP/np$n${f#"$MPI_TMP"/plain}" || bad=$((bad + 1))
    done
    [ $bad -eq 0 ] && echo "PASS mpi/ensemble/np${n}_checkpoints" ||
        echo "FAIL mpi/ensemble/np${n}_checkpoints: $bad of the 17 files differ from one process's"
done
if [ "$(grep -c ' same$' "$MPI_TMP/plain" 2>/dev/null)" = 16 ]; then
    echo "PASS mpi/ensemble/load_continues"
else
    echo "FAIL mpi/ensemble/load_continues: a loaded ensemble did not continue as the saved one"
fi
rm -rf "$MPI_TMP"
