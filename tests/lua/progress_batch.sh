#!/usr/bin/env bash
# lua/progress/*: a run whose stderr is not a terminal (a batch job) prints a plain progress line
# every CARLO_PROGRESS_INTERVAL seconds (60 by default) and one at its end; no carriage
# returns; nothing with an interval of 0, with --quiet, or for a run shorter than the interval.
CARLO=${CARLO:-build/carlo}
T=${CARLO_TEST_TMP:-/tmp}
ok() { if eval "$2"; then echo "PASS lua/progress/$1"; else echo "FAIL lua/progress/$1: $3"; fi; }

# a run of about a second (sweeps of 128^2 spins; 1500 of them take ~0.3-2 s here)
run='local s = carlo.potts{ L = 128, q = 3, T = 1, seed = 1, device = "cpu" }; s:run{ sweeps = 1500 }'

CARLO_PROGRESS_INTERVAL=0.1 "$CARLO" -e "$run" 2>"$T/progress.err" >/dev/null
lines=$(grep -c '^potts: [0-9]*/1500 sweeps' "$T/progress.err")
ok batch-lines '[ "$lines" -ge 2 ] && [ "$lines" -eq "$(wc -l <"$T/progress.err")" ]' \
    "$lines progress lines in: $(head -c 600 "$T/progress.err")"
ok batch-no-carriage-return '! grep -q $'"'"'[\r\033]'"'"' "$T/progress.err"' \
    "a carriage return or escape in $(head -c 300 "$T/progress.err" | od -c | head -5)"
ok batch-final-line 'tail -n 1 "$T/progress.err" | grep -q "^potts: 1500/1500 sweeps (100 %), .* sweeps/s, done in "' \
    "last line $(tail -n 1 "$T/progress.err")"
ok batch-eta 'grep -q "elapsed [0-9]*:[0-9][0-9]:[0-9][0-9], ETA [0-9]*:[0-9][0-9]:[0-9][0-9]$" "$T/progress.err"' \
    "no ETA in $(head -n 2 "$T/progress.err")"

CARLO_PROGRESS_INTERVAL=0 "$CARLO" -e "$run" 2>"$T/progress0.err" >/dev/null
ok batch-interval-zero '[ ! -s "$T/progress0.err" ]' "printed $(head -c 300 "$T/progress0.err")"

CARLO_PROGRESS_INTERVAL=0.1 "$CARLO" --quiet -e "$run" 2>"$T/progressq.err" >/dev/null
ok batch-quiet '[ ! -s "$T/progressq.err" ]' "printed $(head -c 300 "$T/progressq.err")"

env -u CARLO_PROGRESS_INTERVAL "$CARLO" -e "$run" 2>"$T/progressd.err" >/dev/null
ok batch-default-minute '[ ! -s "$T/progressd.err" ]' "a 1 s run printed $(head -c 300 "$T/progressd.err")"

CARLO_PROGRESS_INTERVAL=soon "$CARLO" -e "$run" 2>"$T/progressb.err" >/dev/null
ok batch-bad-interval 'grep -q "CARLO_PROGRESS_INTERVAL=soon is not a number of seconds" "$T/progressb.err"' \
    "printed $(head -c 300 "$T/progressb.err")"
