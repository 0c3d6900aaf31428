#!/usr/bin/env bash
# unit/man/*: every man page renders without a warning (groff -man -ww -z).
if ! command -v groff >/dev/null; then echo "SKIP unit/man/render: groff is not installed"; exit 0; fi
for m in man/*.[1-9]; do
    out=$(groff -man -ww -z "$m" 2>&1)
    if [ -z "$out" ]; then echo "PASS unit/man/$(basename "$m")"; else echo "FAIL unit/man/$(basename "$m"): $out"; fi
done
