#!/usr/bin/env bash
# tests/mpi/hard_split.sh — hard disks and spheres split over 1, 2, 3 and 4 ranks equal the
# whole systems bit for bit (tests/mpi/hard_split.lua checks on each run; here the files of the
# runs are compared too), and a checkpoint goes on across rank counts: saved on 4 ranks,
# continued on 2, saved, continued in one process.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/mpi.sh
mpi_runs mpi/hard_split tests/mpi/hard_split.lua 1 2 3 4
# 4 -> 2 -> 1: each run loads the previous one's checkpoint and continues 50 sweeps
mpi_chain_421 mpi/hard_split tests/mpi/hard_split.lua 300
rm -rf "$MPI_TMP"
