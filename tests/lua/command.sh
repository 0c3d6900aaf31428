#!/usr/bin/env bash
# lua/command/*: the carlo command — exit codes, tracebacks, arguments, Ctrl-C, the Lua module.
CARLO=${CARLO:-build/carlo}
T=${CARLO_TEST_TMP:-/tmp}
ok() { if eval "$2"; then echo "PASS lua/command/$1"; else echo "FAIL lua/command/$1: $3"; fi; }

out=$($CARLO -e 'error("x")' 2>&1); rc=$?
ok error-exit-1 '[ $rc -eq 1 ] && grep -q "(command line):1: x" <<<"$out" && grep -q traceback <<<"$out"' "rc=$rc out=$out"

printf 'local a = 1\n\nerror("boom")\n' > "$T/boom.lua"
out=$($CARLO "$T/boom.lua" 2>&1); rc=$?
ok script-error-names-file-line '[ $rc -eq 1 ] && grep -q "boom.lua:3: boom" <<<"$out"' "rc=$rc out=$out"

out=$($CARLO -e 'print(#arg)' 2>&1 </dev/null)
printf 'print(arg[0], arg[1], arg[2], select("#", ...))\n' > "$T/args.lua"
out=$($CARLO "$T/args.lua" one two 2>&1)
ok script-args '[ "$out" = "$T/args.lua	one	two	2" ]' "got '$out'"

out=$(echo 'print(carlo.version)' | $CARLO - 2>&1)
ok stdin-script '[ -n "$out" ] && [ "$out" = "$($CARLO --version | cut -d" " -f2)" ]' "got '$out'"

$CARLO --version >/dev/null; ok version '[ $? -eq 0 ]' "nonzero exit"
out=$($CARLO --devices); ok devices 'grep -q "cpu: [0-9]* threads" <<<"$out"' "got '$out'"
$CARLO --device tpu -e '' 2>/dev/null; rc=$?
ok bad-device-option '[ $rc -eq 1 ]' "rc=$rc"
$CARLO --bogus 2>/dev/null; rc=$?
ok unknown-option '[ $rc -eq 1 ]' "rc=$rc"

# Ctrl-C during a long run: stops at a sweep boundary, the log keeps its rows, exit 130
cat > "$T/long.lua" <<'LUA'
local carlo = require "carlo"
local out = carlo.log(arg[1])
out:row{ step = 0, note = "started" }
local s = carlo.potts{ L = 256, q = 9, T = 0.7, seed = 1, device = "cpu" }
print("running"); io.stdout:flush()
s:run{ sweeps = 100000000 }
out:row{ step = s.step, note = "never" }
LUA
$CARLO --quiet "$T/long.lua" "$T/long.tsv" > "$T/long.out" 2>&1 &
pid=$!
for _ in $(seq 50); do grep -q running "$T/long.out" 2>/dev/null && break; sleep 0.1; done
sleep 0.5
kill -INT $pid
wait $pid; rc=$?
ok ctrl-c-exit-130 '[ $rc -eq 130 ] && grep -q interrupted "$T/long.out"' "rc=$rc, $(cat "$T/long.out")"
ok ctrl-c-keeps-log '[ "$(grep -vc "^#" "$T/long.tsv")" -eq 2 ] && grep -q started "$T/long.tsv"' "$(cat "$T/long.tsv")"

# the module in a stock Lua interpreter
if [ -n "${CARLO_SANITIZED:-}" ]; then
  echo "SKIP lua/command/stock-lua-require: a sanitized carlo.so cannot load into a stock lua5.4"
elif command -v lua5.4 >/dev/null; then
  out=$(lua5.4 -e 'package.cpath = "'"$(dirname "$CARLO")"'/?.so;" .. package.cpath
    local carlo = require "carlo"
    local s = carlo.potts{ L = 8, q = 3, T = 1, seed = 1, device = "cpu" }
    s:run{ sweeps = 10 }
    print(carlo.version, s.step, type(carlo.ladder))' 2>&1)
  ok stock-lua-require '[ "$out" = "$($CARLO --version | cut -d" " -f2)	10	function" ]' "got '$out'"
else
  echo "SKIP lua/command/stock-lua-require: no lua5.4 interpreter"
fi
