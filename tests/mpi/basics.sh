#!/usr/bin/env bash
# tests/mpi/basics.sh — carlo.mpi's functions and file rules on 2 and 3 ranks
# (tests/mpi/basics.lua), print from rank 0 only, and an error on one rank stopping all of
# them with its message printed once, and so does an interrupt (SIGINT) of one rank.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/mpi.sh
for n in 2 3; do
    mkdir -p "$MPI_TMP/np$n"
    out=$($MPIRUN -np $n "$CARLO" --quiet tests/mpi/basics.lua "$MPI_TMP/np$n" 2>&1)
    rc=$?
    # every rank's verdicts, each once (rank 0's count for all)
    grep -E '^(PASS|FAIL) ' <<<"$out" | grep '^FAIL ' || true
    fails=$(grep -c '^FAIL ' <<<"$out")
    passes=$(grep -c '^PASS ' <<<"$out")
    if [ $rc -eq 0 ] && [ "$fails" -eq 0 ] && [ $((passes % n)) -eq 0 ] && [ "$passes" -gt 0 ]; then
        echo "PASS mpi/basics/np$n ($((passes / n)) checks on each rank)"
    else
        echo "FAIL mpi/basics/np$n: exit $rc, $passes PASS lines from $n ranks"
        grep -vE '^(PASS|FAIL) ' <<<"$out" | head -n 8 | sed 's/^/    /'
    fi
done

# print on ranks other than 0 is silent
out=$($MPIRUN -np 3 "$CARLO" -e 'print("hello")' 2>&1)
[ "$(grep -c '^hello$' <<<"$out")" = 1 ] && echo "PASS mpi/basics/print_rank0" ||
    echo "FAIL mpi/basics/print_rank0: $(grep -c '^hello$' <<<"$out") lines, want 1"

# an error on rank 1 only: every rank stops (no hang), status nonzero, the message once
t0=$SECONDS
out=$(timeout 60 $MPIRUN -np 3 "$CARLO" -e \
    'if carlo.mpi.rank == 1 then error("stop on rank one") end carlo.mpi.barrier()' 2>&1)
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$(grep -c 'stop on rank one' <<<"$out")" = 1 ] &&
    grep -q 'rank 1 of 3' <<<"$out"; then
    echo "PASS mpi/basics/error_one_rank ($((SECONDS - t0)) s)"
else
    echo "FAIL mpi/basics/error_one_rank: exit $rc; output:"
    head -n 8 <<<"$out" | sed 's/^/    /'
fi
# the same error on every rank: printed once
out=$(timeout 60 $MPIRUN -np 3 "$CARLO" -e 'error("stop everywhere")' 2>&1)
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$(grep -c 'stop everywhere' <<<"$out")" = 1 ]; then
    echo "PASS mpi/basics/error_all_ranks"
else
    echo "FAIL mpi/basics/error_all_ranks: exit $rc, message $(grep -c 'stop everywhere' <<<"$out") times"
fi
# Ctrl-C on one rank (SIGINT to its process): it stops at a sweep boundary, every rank ends,
# status 130, "interrupted" once
mkdir -p "$MPI_TMP/int"
$MPIRUN -np 2 "$CARLO" tests/mpi/interrupt.lua "$MPI_TMP/int" >"$MPI_TMP/int/out" 2>&1 &
job=$!
for _ in $(seq 100); do [ -f "$MPI_TMP/int/pid" ] && break; sleep 0.2; done
sleep 0.3
[ -f "$MPI_TMP/int/pid" ] && kill -INT "$(cat "$MPI_TMP/int/pid")"
wait $job
rc=$?
if [ $rc -eq 130 ] && [ "$(grep -c 'interrupted' "$MPI_TMP/int/out")" = 1 ]; then
    echo "PASS mpi/basics/interrupt_one_rank"
else
    echo "FAIL mpi/basics/interrupt_one_rank: exit $rc (want 130); output:"
    head -n 8 "$MPI_TMP/int/out" | sed 's/^/    /'
fi
rm -rf "$MPI_TMP"
