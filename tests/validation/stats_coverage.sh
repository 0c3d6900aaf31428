#!/usr/bin/env bash
# validate/core/stats — the coverage of the blocking error bars on long AR(1) series with long
# correlation times (tau = 100 and 1000 at n = 10^6; 4000 series each, ~1 min on 2 cores).
# The short version runs in tests/unit/stats.c.
set -u
exec "${BUILD:-build}/tests/unit_stats" heavy
