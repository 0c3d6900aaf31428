#!/usr/bin/env bash
# tests/gpu/shape_mpi.sh — hard shapes split over the GPUs of 1, 2, 3 and 4 ranks: the script of
# tests/mpi/shape_split.lua with the split systems on the ranks' GPUs, each checked against the
# whole system on the CPU, the files of the runs compared with the run of one process without
# mpirun; a checkpoint saved on 4 ranks continues on 2, saved again continues on 1. Ranks take
# GPUs by node-local rank modulo the GPUs: 4 ranks on 2 GPUs (or on 1) share them. SKIP without
# MPI or without a GPU.
#   make MPI=1 && CARLO=build/carlo tests/gpu/shape_mpi.sh
set -u
cd "$(dirname "$0")/../.."
. tests/lib/mpi_gpu.sh
mpi_gpu_ready gpu/shape_mpi || exit 0
. tests/lib/mpi.sh
MPIRUN=${MPIRUN/timeout 120/timeout 600}
export SHAPE_SPLIT_DEVICE=gpu
mpi_runs gpu/shape_mpi tests/mpi/shape_split.lua 1 2 3 4
# checkpoints across rank counts: 4 -> 2 -> 1
mpi_chain_421 gpu/shape_mpi tests/mpi/shape_split.lua 200
rm -rf "$MPI_TMP"
