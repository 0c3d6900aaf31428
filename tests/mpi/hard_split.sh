#!/usr/bin/env bash
# tests/mpi/hard_split.sh — hard disks and spheres split over 1, 2, 3 and 4 ranks equal the
# whole systems bit for bit (tests/mpi/hard_split.lua checks on each run; here the files of the
# runs are compared too), and a checkpoint goes on across rank counts: saved on 4 ranks,
# continued on 2, saved, continued in one process.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/mpi.sh
for n in 1 2 3 4; do
    $MPIRUN -np $n "$CARLO" --quiet tests/mpi/hard_split.lua "$MPI_TMP/np$n" ||
        echo "FAIL mpi/hard_split/np$n: mpirun exited $?"
done
"$CARLO" --quiet tests/mpi/hard_split.lua "$MPI_TMP/plain" || echo "FAIL mpi/hard_split/plain: exited $?"
for n in 1 2 3 4; do
    same "mpi/hard_split/np${n}_file" "$MPI_TMP/plain" "$MPI_TMP/np$n"
done
# 4 -> 2 -> 1: each run loads the previous one's checkpoint and continues 50 sweeps
$MPIRUN -np 2 "$CARLO" --quiet tests/mpi/hard_split.lua "$MPI_TMP/a" "$MPI_TMP/np4.ckpt" ||
    echo "FAIL mpi/hard_split/load_4_to_2: exited $?"
"$CARLO" --quiet tests/mpi/hard_split.lua "$MPI_TMP/b" "$MPI_TMP/a.ckpt" ||
    echo "FAIL mpi/hard_split/load_2_to_1: exited $?"
grep -q "step 300" "$MPI_TMP/b" && echo "PASS mpi/hard_split/chain_4_2_1" ||
    echo "FAIL mpi/hard_split/chain_4_2_1: the last run did not reach step 300"
rm -rf "$MPI_TMP"
