#!/usr/bin/env bash
# tests/gpu/kmc_mpi.sh — KMC lattices split over the GPUs of 1, 2 and 4 ranks
# (tests/gpu/kmc_mpi.lua checks each run against one GPU and the CPU; here the files of the
# runs are compared too, and with the run of one process without mpirun); a checkpoint saved on
# 4 ranks continues on 2, saved again continues on 1. Ranks take GPUs by node-local rank modulo
# the GPUs: 4 ranks on 2 GPUs (or on 1) share them. SKIP without MPI or without a GPU.
#   make MPI=1 && CARLO=build/carlo tests/gpu/kmc_mpi.sh
set -u
cd "$(dirname "$0")/../.."
. tests/lib/mpi_gpu.sh
mpi_gpu_ready gpu/kmc_mpi || exit 0
. tests/lib/mpi.sh
MPIRUN=${MPIRUN/timeout 120/timeout 600}
mpi_runs gpu/kmc_mpi tests/gpu/kmc_mpi.lua 1 2 4
# checkpoints across rank counts: 4 -> 2 -> 1
mpi_resume gpu/kmc_mpi tests/gpu/kmc_mpi.lua 4 2 r2 "$MPI_TMP/np4.ckpt" 1
mpi_resume gpu/kmc_mpi tests/gpu/kmc_mpi.lua 2 1 r1 "$MPI_TMP/r2.ckpt" 2
rm -rf "$MPI_TMP"
