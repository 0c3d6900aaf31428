#!/usr/bin/env bash
# tests/mpi/potts_split.sh — Potts lattices split over 1, 2, 3 and 4 ranks equal the unsplit
# lattices bit for bit (tests/mpi/potts_split.lua checks on each run; here the files of the
# runs are compared too), and a checkpoint saved on one number of ranks continues on another.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/mpi.sh
for n in 1 2 3 4; do
    $MPIRUN -np $n "$CARLO" --quiet tests/mpi/potts_split.lua "$MPI_TMP/np$n" ||
        echo "FAIL mpi/potts_split/np$n: mpirun exited $?"
done
"$CARLO" --quiet tests/mpi/potts_split.lua "$MPI_TMP/plain" || echo "FAIL mpi/potts_split/plain: exited $?"
for n in 1 2 3 4; do
    same "mpi/potts_split/np${n}_file" "$MPI_TMP/plain" "$MPI_TMP/np$n"
done
# checkpoints across rank counts: saved on 3 loaded on 2, saved on 4 loaded on 3, on 1 loaded on 4
$MPIRUN -np 2 "$CARLO" --quiet tests/mpi/potts_split.lua "$MPI_TMP/a" "$MPI_TMP/np3.ckpt" || echo "FAIL mpi/potts_split/load_3_to_2: exited $?"
$MPIRUN -np 3 "$CARLO" --quiet tests/mpi/potts_split.lua "$MPI_TMP/b" "$MPI_TMP/np4.ckpt" || echo "FAIL mpi/potts_split/load_4_to_3: exited $?"
$MPIRUN -np 4 "$CARLO" --quiet tests/mpi/potts_split.lua "$MPI_TMP/c" "$MPI_TMP/np1.ckpt" || echo "FAIL mpi/potts_split/load_1_to_4: exited $?"
rm -rf "$MPI_TMP"
