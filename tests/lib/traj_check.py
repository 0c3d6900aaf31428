#!/usr/bin/env python3
"""Checks for tests/lua/traj_export.lua: the exported GSD read by python3-gsd, the XYZ read
by ASE, and scripts/ctr.py, against each other and against the exact positions.
usage: traj_check.py DIR PRECISION NAME..."""
import gzip
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "scripts"))


def result(name, ok, why=""):
    print(("PASS %s" % name) if ok else ("FAIL %s: %s" % (name, why)))
    sys.stdout.flush()


def main():
    d, prec, names = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
    try:
        import ctr
        import gsd.hoomd
        import ase.io
    except ImportError as e:
        for n in names:
            print("SKIP lua/traj/export-%s: python module missing (%s)" % (n, e))
        return
    for n in names:
        exact = ctr.open(os.path.join(d, n + "-exact.ctr"))
        quant = ctr.open(os.path.join(d, n + "-q.ctr"))
        g_exact = gsd.hoomd.open(os.path.join(d, n + "-exact.gsd"), "rb")
        g_quant = gsd.hoomd.open(os.path.join(d, n + "-q.gsd"), "rb")
        # every position: GSD from the exact file equals the exact positions bit for bit
        ok, why = len(g_exact) == len(exact) > 0, "frame counts %d, %d" % (len(g_exact), len(exact))
        for k in range(len(exact)):
            if not ok:
                break
            f, g = exact[k], g_exact[k]
            p = f["particles/position"]
            box = f["configuration/box"]
            types = [bytes(r).split(b"\0")[0].decode() for r in f["particles/types"]]
            ok = (np.array_equal(g.particles.position, p) and np.array_equal(g.configuration.box, box)
                  and g.configuration.step == f["configuration/step"][0]
                  and g.particles.N == len(p) and list(g.particles.types) == types
                  and np.array_equal(g.particles.typeid, f["particles/typeid"])
                  and g.configuration.dimensions == (2 if box[2] == 0 else 3)
                  and abs(g.log["energy"][0] - f["log/energy"][0]) == 0)
            why = "frame %d differs" % k
        result("lua/traj/export-gsd-every-position-%s" % n, ok, why)
        # quantized: within half the precision (periodic), inside the box; both decoders agree
        worst, outside, agree = 0.0, 0, True
        for k in range(len(exact)):
            p = exact.read(k, "particles/position").astype(np.float64)
            q = g_quant[k].particles.position.astype(np.float64)
            box = g_quant[k].configuration.box.astype(np.float64)
            agree &= np.array_equal(quant.read(k, "particles/position"), g_quant[k].particles.position)
            dlt = q - p
            for dim in range(3 if box[2] > 0 else 2):
                L = box[dim]
                dlt[:, dim] -= L * np.floor(dlt[:, dim] / L + 0.5)
                outside += int(np.sum((q[:, dim] < -L / 2) | (q[:, dim] >= L / 2)))
            bound = prec / 2 + np.abs(p) * 2.0 ** -24 + 1e-12
            worst = max(worst, float(np.max(np.abs(dlt) - bound)))
        result("lua/traj/export-gsd-quantized-within-half-precision-%s" % n, worst <= 0,
               "exceeds the bound by %g" % worst)
        result("lua/traj/export-gsd-quantized-inside-box-%s" % n, outside == 0, "%d coordinates outside" % outside)
        result("lua/traj/export-ctr-py-agrees-with-carlo-%s" % n, agree, "scripts/ctr.py and the export differ")
        # XYZ read by ASE: the same float32 positions, the box as the cell, the type names
        for suffix in ("xyz", "xyz.gz"):
            atoms = ase.io.read(os.path.join(d, n + "-exact." + suffix), index=":")
            ok, why = len(atoms) == len(exact), "%d frames" % len(atoms)
            for k, a in enumerate(atoms):
                if not ok:
                    break
                p = exact.read(k, "particles/position")
                box = exact.read(k, "configuration/box").astype(np.float64)
                cell = np.array(a.cell)
                ok = (np.array_equal(a.positions.astype(np.float32), p)
                      and np.allclose(np.diag(cell), box[:3], rtol=1e-7, atol=0)
                      and list(a.pbc) == [True, True, bool(box[2] > 0)]
                      and a.info["step"] == exact.info(k)["step"]
                      and list(set(a.arrays["type_name"])) == [exact[k]["particles/types"].tobytes().split(b"\0")[0].decode()])
                why = "frame %d differs" % k
            result("lua/traj/export-%s-read-by-ase-%s" % (suffix.replace(".", "-"), n), ok, why)
        with open(os.path.join(d, n + "-exact.xyz"), "rb") as a, gzip.open(os.path.join(d, n + "-exact.xyz.gz"), "rb") as b:
            result("lua/traj/export-xyz-gz-same-text-%s" % n, a.read() == b.read(), "the two differ")


main()
