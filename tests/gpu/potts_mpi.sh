#!/usr/bin/env bash
# tests/gpu/potts_mpi.sh — Potts lattices split over the GPUs of 1, 2 and 4 ranks
# (tests/gpu/potts_mpi.lua checks each run against one GPU and the CPU; here the files of the
# runs are compared too), with the halos staged through host memory and, where the MPI is
# CUDA-aware, passed from GPU memory; a checkpoint saved on 4 ranks continues on 2, and one
# saved on 1 on 4. Ranks take GPUs by node-local rank modulo the GPUs: 4 ranks on 2 GPUs share
# them two and two. SKIP without MPI or without a GPU.
#   make MPI=1 && CARLO=build/carlo tests/gpu/potts_mpi.sh
set -u
cd "$(dirname "$0")/../.."
. tests/lib/mpi_gpu.sh
mpi_gpu_ready gpu/potts_mpi || exit 0
. tests/lib/mpi.sh
T=$MPI_TMP
"$CARLO" --quiet tests/gpu/potts_mpi.lua "$T/plain" staged || echo "FAIL gpu/potts_mpi/plain: exited $?"
for halo in staged direct; do
    for n in 1 2 4; do
        $MPIRUN -np $n "$CARLO" --quiet tests/gpu/potts_mpi.lua "$T/$halo$n" $halo ||
            echo "FAIL gpu/potts_mpi/np${n}_$halo: mpirun exited $?"
        # a run that skipped (an MPI that is not CUDA-aware) writes no file
        [ -f "$T/$halo$n" ] && same "gpu/potts_mpi/np${n}_${halo}_file" "$T/plain" "$T/$halo$n"
    done
done
# checkpoints across rank counts: saved on 4 loaded on 2, saved on 1 loaded on 4
$MPIRUN -np 2 "$CARLO" --quiet tests/gpu/potts_mpi.lua "$T/a" staged "$T/staged4.ckpt" ||
    echo "FAIL gpu/potts_mpi/load_4_to_2: exited $?"
$MPIRUN -np 4 "$CARLO" --quiet tests/gpu/potts_mpi.lua "$T/b" staged "$T/staged1.ckpt" ||
    echo "FAIL gpu/potts_mpi/load_1_to_4: exited $?"
# every rank says which GPU it runs on
out=$($MPIRUN -np 2 "$CARLO" --devices 2>&1)
if [ "$(grep -c '^mpi: rank [01] of 2, .*gpu [0-9]' <<<"$out")" = 2 ]; then
    echo "PASS gpu/potts_mpi/devices_per_rank"
else
    echo "FAIL gpu/potts_mpi/devices_per_rank: carlo --devices on 2 ranks said:"
    head -n 12 <<<"$out" | sed 's/^/    /'
fi
rm -rf "$T"
