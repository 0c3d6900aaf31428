# tests/lib/mpi.sh — sourced by tests/mpi/*.sh: $MPIRUN launches carlo on N ranks
# ($MPIRUN -np N "$CARLO" ...); CARLO_MPIRUN replaces the launcher. Open MPI runs as root only
# when told so, and runs more ranks than cores only with --oversubscribe.
MPIRUN=${CARLO_MPIRUN:-mpirun --oversubscribe}
if [ -z "${CARLO_MPIRUN:-}" ] && [ "$(id -u)" -eq 0 ]; then
    MPIRUN="$MPIRUN --allow-run-as-root"
fi
# shared-memory transport without ptrace rights (containers): copy through the shared segment
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
# a rank that waits for ever on another (a collective one rank skipped) fails, not hangs
MPIRUN="timeout 120 $MPIRUN"
CARLO=${CARLO:-build/carlo}
export LUA_PATH=${LUA_PATH:-"tests/lib/?.lua;;"} # tests/lib/check.lua for the scripts
MPI_TMP=$(mktemp -d "${CARLO_TEST_TMP:-/tmp}/mpi.XXXXXX")

# same NAME FILE_A FILE_B: PASS when the files are identical byte for byte.
same() {
    if [ -s "$2" ] && cmp -s "$2" "$3"; then
        echo "PASS $1"
    else
        echo "FAIL $1: $(basename "$2") and $(basename "$3") differ or are missing"
        diff "$2" "$3" 2>&1 | head -n 6 | sed 's/^/    /'
    fi
}

# mpi_runs NAME SCRIPT R...: SCRIPT OUT once without mpirun (OUT = $MPI_TMP/plain) and on each
# number of ranks R (OUT = $MPI_TMP/npR); each file must equal the plain one.
mpi_runs() {
    local name=$1 script=$2 n
    shift 2
    "$CARLO" --quiet "$script" "$MPI_TMP/plain" || echo "FAIL $name/plain: exited $?"
    for n in "$@"; do
        $MPIRUN -np "$n" "$CARLO" --quiet "$script" "$MPI_TMP/np$n" ||
            echo "FAIL $name/np$n: mpirun exited $?"
        same "$name/np${n}_file" "$MPI_TMP/plain" "$MPI_TMP/np$n"
    done
}

# mpi_resume NAME SCRIPT FROM TO OUT CHECKPOINT [ARG...]: SCRIPT $MPI_TMP/OUT CHECKPOINT ARG...
# on TO ranks (TO = plain: one process without mpirun), the checkpoint saved on FROM.
mpi_resume() {
    local name=$1 script=$2 from=$3 to=$4 out=$5 ckpt=$6
    shift 6
    if [ "$to" = plain ]; then
        "$CARLO" --quiet "$script" "$MPI_TMP/$out" "$ckpt" "$@" ||
            echo "FAIL $name/load_${from}_to_1: exited $?"
    else
        $MPIRUN -np "$to" "$CARLO" --quiet "$script" "$MPI_TMP/$out" "$ckpt" "$@" ||
            echo "FAIL $name/load_${from}_to_$to: exited $?"
    fi
}

# mpi_chain_421 NAME SCRIPT STEP: SCRIPT's checkpoint of the 4-rank run of mpi_runs
# ($MPI_TMP/np4.ckpt) loaded and continued on 2 ranks, that run's ($MPI_TMP/a.ckpt) in one
# process without mpirun ($MPI_TMP/b); PASS NAME/chain_4_2_1 when the last run's file says it
# reached step STEP.
mpi_chain_421() {
    local name=$1 script=$2 step=$3
    mpi_resume "$name" "$script" 4 2 a "$MPI_TMP/np4.ckpt"
    mpi_resume "$name" "$script" 2 plain b "$MPI_TMP/a.ckpt"
    if grep -q "step $step" "$MPI_TMP/b"; then
        echo "PASS $name/chain_4_2_1"
    else
        echo "FAIL $name/chain_4_2_1: the last run did not reach step $step"
    fi
}
