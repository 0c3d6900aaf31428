#!/usr/bin/env bash
# tests/mpi/potts_split.sh — Potts lattices split over 1, 2, 3 and 4 ranks equal the unsplit
# lattices bit for bit (tests/mpi/potts_split.lua checks on each run; here the files of the
# runs are compared too), and a checkpoint saved on one number of ranks continues on another.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/mpi.sh
mpi_runs mpi/potts_split tests/mpi/potts_split.lua 1 2 3 4
# checkpoints across rank counts: saved on 3 loaded on 2, saved on 4 loaded on 3, on 1 loaded on 4
mpi_resume mpi/potts_split tests/mpi/potts_split.lua 3 2 a "$MPI_TMP/np3.ckpt"
mpi_resume mpi/potts_split tests/mpi/potts_split.lua 4 3 b "$MPI_TMP/np4.ckpt"
mpi_resume mpi/potts_split tests/mpi/potts_split.lua 1 4 c "$MPI_TMP/np1.ckpt"
rm -rf "$MPI_TMP"
