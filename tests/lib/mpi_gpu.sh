# tests/lib/mpi_gpu.sh — sourced by tests/gpu/*_mpi.sh: mpi_gpu_ready NAME [gpu|cpu] returns 0
# when $CARLO was built with MPI, the launcher ($CARLO_MPIRUN's first word, else mpirun) is
# there and, for gpu (the default), carlo sees a GPU; else it prints NAME's SKIP line (a FAIL
# for a missing GPU under CARLO_REQUIRE_GPU=1) and returns 1. Then source tests/lib/mpi.sh.
CARLO=${CARLO:-build/carlo}
export LUA_PATH=${LUA_PATH:-"tests/lib/?.lua;;"}
mpi_gpu_ready() {
    local name=$1 device=${2:-gpu} launcher=${CARLO_MPIRUN:-mpirun}
    if ! "$CARLO" -e 'os.exit(carlo.mpi.built and 0 or 1)' >/dev/null 2>&1; then
        echo "SKIP $name: this carlo was built without MPI (make MPI=1)"; return 1
    fi
    if ! command -v "${launcher%% *}" >/dev/null 2>&1; then
        echo "SKIP $name: no ${launcher%% *}"; return 1
    fi
    if [ "$device" = gpu ] && ! "$CARLO" -e 'os.exit(#carlo.devices().gpus > 0 and 0 or 1)' >/dev/null 2>&1; then
        if [ "${CARLO_REQUIRE_GPU:-}" = 1 ]; then echo "FAIL $name: no GPU"; else echo "SKIP $name: no GPU"; fi
        return 1
    fi
    return 0
}
