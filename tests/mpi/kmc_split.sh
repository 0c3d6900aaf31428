#!/usr/bin/env bash
# tests/mpi/kmc_split.sh — KMC lattices split over 1, 2, 3 and 4 ranks follow the unsplit
# trajectory bit for bit (tests/mpi/kmc_split.lua checks on each run; here the files of the
# runs are compared too), and a checkpoint continues on another number of ranks: saved on 4,
# continued on 2, saved again and continued on 1.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/mpi.sh
for n in 1 2 3 4; do
    $MPIRUN -np $n "$CARLO" --quiet tests/mpi/kmc_split.lua "$MPI_TMP/np$n" ||
        echo "FAIL mpi/kmc_split/np$n: mpirun exited $?"
done
"$CARLO" --quiet tests/mpi/kmc_split.lua "$MPI_TMP/plain" || echo "FAIL mpi/kmc_split/plain: exited $?"
for n in 1 2 3 4; do
    same "mpi/kmc_split/np${n}_file" "$MPI_TMP/plain" "$MPI_TMP/np$n"
done
# restarts across rank counts: 4 -> 2 -> 1
$MPIRUN -np 2 "$CARLO" --quiet tests/mpi/kmc_split.lua "$MPI_TMP/r2" "$MPI_TMP/np4.ckpt" 1 ||
    echo "FAIL mpi/kmc_split/load_4_to_2: exited $?"
$MPIRUN -np 1 "$CARLO" --quiet tests/mpi/kmc_split.lua "$MPI_TMP/r1" "$MPI_TMP/r2.ckpt" 2 ||
    echo "FAIL mpi/kmc_split/load_2_to_1: exited $?"
rm -rf "$MPI_TMP"
