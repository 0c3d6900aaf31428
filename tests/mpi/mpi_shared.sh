#!/usr/bin/env bash
# tests/mpi/mpi_shared.sh — the shared staging of the split GPU hard particles' halos on 1, 2, 3
# and 4 ranks, on the CPU (tests/unit/mpi_shared.c: turns of writes into each rank's part of an
# MPI-3 shared window, notes of no bytes to both neighbours, reads of theirs).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/mpi.sh
BIN=${BUILD:-build}/tests/unit_mpi_shared
if [ ! -x "$BIN" ]; then
    echo "FAIL mpi/mpi_shared: $BIN not built (make test builds it)"; exit 0
fi
for n in 1 2 3 4; do
    out=$($MPIRUN -np $n "$BIN" 2>&1)
    rc=$?
    grep '^FAIL ' <<<"$out" || true
    fails=$(grep -c '^FAIL ' <<<"$out")
    passes=$(grep -c '^PASS ' <<<"$out")
    if [ $rc -eq 0 ] && [ "$fails" -eq 0 ] && [ "$passes" -eq $((3 * n)) ]; then
        echo "PASS mpi/mpi_shared/np$n"
    else
        echo "FAIL mpi/mpi_shared/np$n: exit $rc, $passes PASS lines from $n ranks (want $((3 * n)))"
        grep -vE '^(PASS|FAIL) ' <<<"$out" | head -n 8 | sed 's/^/    /'
    fi
done
rm -rf "$MPI_TMP"
