#!/usr/bin/env bash
# validation/traj/fuzz: the .ctr reader under libFuzzer (with ASan and UBSan) for at least
# 60 s (CARLO_FUZZ_SECONDS), seeded with small valid files of every codec written by carlo.
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
CARLO=${CARLO:-$BUILD/carlo}
SECONDS_TO_RUN=${CARLO_FUZZ_SECONDS:-60}
name=validation/traj/fuzz-reader
if ! command -v clang >/dev/null 2>&1 && ! command -v clang-14 >/dev/null 2>&1; then
    echo "SKIP $name: clang not found (apt-get install clang libclang-rt-14-dev)"
    exit 0
fi
if ! make -s BUILD="$BUILD" "$BUILD/fuzz/traj_fuzz" >/tmp/traj_fuzz_build.$$ 2>&1; then
    if grep -q "libclang_rt.fuzzer\|cannot find.*fuzzer" /tmp/traj_fuzz_build.$$; then
        echo "SKIP $name: the libFuzzer runtime is missing (apt-get install libclang-rt-14-dev)"
        rm -f /tmp/traj_fuzz_build.$$
        exit 0
    fi
    echo "FAIL $name: the fuzz target does not build"
    tail -n 20 /tmp/traj_fuzz_build.$$
    rm -f /tmp/traj_fuzz_build.$$
    exit 0
fi
rm -f /tmp/traj_fuzz_build.$$
work=$(mktemp -d "${CARLO_TEST_TMP:-/tmp}/traj-fuzz.XXXXXX")
mkdir -p "$work/corpus" "$work/crashes"
# seeds: every codec, a wrapped quantized chunk, a checkpoint, a file without an index, a
# file with a damaged header
"$CARLO" --quiet - <<LUA
local D = "$work/corpus/"
local tr = carlo.trajectory(D .. "tables.ctr", "w", { threads = 0 })
for k = 1, 2 do
  local f = { ["configuration/step"] = k, ["log/e"] = -k / 3, ["log/s"] = "x" }
  for i, t in ipairs { "u8", "i16", "u32", "i64", "f32", "f64" } do
    local a = carlo.array(t, { shape = { 3, 2 + i } })
    for j = 1, #a do a[j] = (j * 7 + k) % 50 end
    f["lattice/" .. t] = a
  end
  tr:write(f)
end
tr:close()
tr = carlo.trajectory(D .. "positions.ctr", "w", { threads = 0, precision = 1e-2 })
local p = carlo.array("f32", { shape = { 6, 3 } })
for j = 1, #p do p[j] = ((j * 37) % 19) / 2 - 4.75 end
tr:write { ["configuration/box"] = { 10, 10, 10, 0, 0, 0 }, ["particles/position"] = p,
           ["particles/types"] = { "A", "B" }, ["particles/typeid"] = carlo.array("u32", 6, 1) }
tr:close()
local sys = carlo.potts{ L = 4, q = 3, T = 1, seed = 1, device = "cpu" }
sys:save(D .. "checkpoint.ctr")
local big = carlo.potts{ L = 20, q = 9, T = 2, seed = 1, device = "cpu" } -- packed states
big:save(D .. "nibble.ctr")
tr = carlo.trajectory(D .. "potts.ctr", "w", { threads = 0 })
sys:run{ sweeps = 3, every = 1, trajectory = tr }
tr:close()
LUA
# a file whose writer never closed it: cut off the index
if [ -f "$work/corpus/potts.ctr" ]; then
    size=$(stat -c %s "$work/corpus/potts.ctr")
    head -c $((size - 150)) "$work/corpus/potts.ctr" >"$work/corpus/cut.ctr"
    # and one whose file header is damaged: its frames are found by scanning
    { head -c 64 /dev/zero; tail -c +65 "$work/corpus/potts.ctr"; } >"$work/corpus/noheader.ctr"
fi
log="$work/fuzz.log"
"$BUILD/fuzz/traj_fuzz" -max_total_time="$SECONDS_TO_RUN" -max_len=4096 -rss_limit_mb=1024 \
    -malloc_limit_mb=256 -artifact_prefix="$work/crashes/" -print_final_stats=1 \
    "$work/corpus" >"$log" 2>&1
rc=$?
runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
if [ $rc -eq 0 ] && [ -z "$(ls -A "$work/crashes")" ]; then
    echo "PASS $name (${runs:-?} inputs in ${SECONDS_TO_RUN} s, no finding)"
    rm -rf "$work"
else
    echo "FAIL $name: libFuzzer exited $rc; inputs kept in $work/crashes"
    grep -E "ERROR|SUMMARY|==[0-9]+==" "$log" | head -n 10
fi
exit 0
