#!/usr/bin/env bash
# tests/mpi/devices.sh — carlo --devices under mpirun: every rank prints its list and its place
# (rank k of R, its node-local rank; one machine here, so the same k), and which GPU it runs on
# (the node-local rank modulo the GPUs; "no GPU" on a machine without one).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/mpi.sh
out=$($MPIRUN -np 3 "$CARLO" --devices 2>&1)
ngpu=$("$CARLO" -e 'print(#carlo.devices().gpus)' 2>/dev/null)
bad=0
for k in 0 1 2; do
    if [ "${ngpu:-0}" -gt 0 ]; then want="mpi: rank $k of 3, rank $k on its node, runs on gpu $((k % ngpu))"
    else want="mpi: rank $k of 3, rank $k on its node, no GPU"; fi
    grep -qxF "$want" <<<"$out" || { bad=1; echo "    missing: $want"; }
done
if [ $bad -eq 0 ] && [ "$(grep -c '^carlo ' <<<"$out")" = 3 ]; then
    echo "PASS mpi/devices/per_rank"
else
    echo "FAIL mpi/devices/per_rank: carlo --devices on 3 ranks said:"
    head -n 12 <<<"$out" | sed 's/^/    /'
fi
rm -rf "$MPI_TMP"
