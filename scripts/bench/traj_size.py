#!/usr/bin/env python3
"""Size table for scripts/bench/traj.lua: for each NAME, NAME-exact.ctr (positions as written)
and NAME-q.ctr (quantized at PRECISION) in DIR, against raw float32 positions, gzip of the raw
float32 (level 6), and XTC written by MDAnalysis at the same precision.
usage: traj_size.py DIR PRECISION NAME..."""
import gzip
import math
import os
import sys
import tempfile
import warnings

import numpy as np

with warnings.catch_warnings():  # MDAnalysis imports xdrlib, deprecated on new Pythons
    warnings.simplefilter("ignore")
    try:
        import xdrlib  # noqa: F401
    except ImportError:
        pass

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ctr  # noqa: E402


def xtc_size(frames, boxes, precision, path):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import MDAnalysis as mda
            from MDAnalysis.coordinates.XTC import XTCWriter
    except ImportError:
        return None, None
    n = len(frames[0])
    u = mda.Universe.empty(n, trajectory=True)
    decimals = int(round(-math.log10(precision)))
    worst = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with XTCWriter(path, n, convert_units=False, precision=decimals) as w:
            for p, b in zip(frames, boxes):
                u.atoms.positions = p
                u.dimensions = [b[0], b[1], b[2] if b[2] > 0 else 1.0, 90, 90, 90]
                w.write(u)
        r = mda.Universe.empty(n, trajectory=False)
        r.load_new(path, format="XTC", convert_units=False)
        for k, ts in enumerate(r.trajectory):
            worst = max(worst, float(np.max(np.abs(ts.positions - frames[k]))))
    return os.path.getsize(path), worst


def main():
    d, prec, names = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
    mb = 1e6
    print("%-16s %8s %9s %10s %10s %10s %10s %9s" % ("data", "N", "raw f32", "gzip f32", "XTC",
                                                     "ctr exact", "ctr q", "q vs XTC"))
    for name in names:
        with ctr.open(os.path.join(d, name + "-exact.ctr")) as t:
            frames = [t.read(k, "particles/position") for k in range(len(t))]
            boxes = [t.read(k, "configuration/box") for k in range(len(t))]
        raw = b"".join(f.tobytes() for f in frames)
        gz = len(gzip.compress(raw, 6))
        with tempfile.TemporaryDirectory() as tmp:
            xtc, worst = xtc_size(frames, boxes, prec, os.path.join(tmp, "x.xtc"))
        ex = os.path.getsize(os.path.join(d, name + "-exact.ctr"))
        q = os.path.getsize(os.path.join(d, name + "-q.ctr"))
        cols = "%10.1f" % (xtc / mb) if xtc else "%10s" % "n/a"
        ratio = "%8.2fx" % (xtc / q) if xtc else "%9s" % "n/a"
        print("%-16s %8d %9.1f %10.1f %s %10.1f %10.1f %s" % (name, len(frames[0]), len(raw) / mb, gz / mb,
                                                              cols, ex / mb, q / mb, ratio))
        if worst is not None and worst > prec:
            print("  (XTC read back with error %g > precision: check the XTC column)" % worst)
    print("MB (10^6 bytes) for all frames; 'q vs XTC' = XTC size / quantized .ctr size "
          "(> 1: the .ctr file is smaller)")


main()
