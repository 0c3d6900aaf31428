#!/usr/bin/env bash
# tests/mpi/kmc_split.sh — KMC lattices split over 1, 2, 3 and 4 ranks follow the unsplit
# trajectory bit for bit (tests/mpi/kmc_split.lua checks on each run; here the files of the
# runs are compared too), and a checkpoint continues on another number of ranks: saved on 4,
# continued on 2, saved again and continued on 1.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/mpi.sh
mpi_runs mpi/kmc_split tests/mpi/kmc_split.lua 1 2 3 4
# restarts across rank counts: 4 -> 2 -> 1
mpi_resume mpi/kmc_split tests/mpi/kmc_split.lua 4 2 r2 "$MPI_TMP/np4.ckpt" 1
mpi_resume mpi/kmc_split tests/mpi/kmc_split.lua 2 1 r1 "$MPI_TMP/r2.ckpt" 2
rm -rf "$MPI_TMP"
