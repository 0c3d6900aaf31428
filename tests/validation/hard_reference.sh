#!/usr/bin/env bash
# validate/hard/reference: the checkerboard scheme against the serial reference at higher
# density with the paper's pressure estimator (tests/unit/hard_serial.c, about 10 minutes).
exec "${BUILD:-build}/tests/unit_hard_serial" validate
