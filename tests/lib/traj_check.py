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


def gsd_open(path):
    """gsd.hoomd.open for reading: mode 'r' (gsd >= 3; 'rb' is gone in gsd 4), else 'rb'."""
    import gsd.hoomd
    try:
        return gsd.hoomd.open(path, "r")
    except ValueError:
        return gsd.hoomd.open(path, "rb")


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
        g_exact = gsd_open(os.path.join(d, n + "-exact.gsd"))
        g_quant = gsd_open(os.path.join(d, n + "-q.gsd"))
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
                # 2D (Lz = 0): the third cell vector is the unit vector along z, not zero
                lz = box[2] if box[2] > 0 else 1.0
                ok = (np.array_equal(a.positions.astype(np.float32), p)
                      and np.allclose(np.diag(cell), [box[0], box[1], lz], rtol=1e-7, atol=0)
                      and abs(np.linalg.det(cell)) > 0
                      and list(a.pbc) == [True, True, bool(box[2] > 0)]
                      and a.info["step"] == exact.info(k)["step"]
                      and list(set(a.arrays["type_name"])) == [exact[k]["particles/types"].tobytes().split(b"\0")[0].decode()])
                why = "frame %d differs" % k
            result("lua/traj/export-%s-read-by-ase-%s" % (suffix.replace(".", "-"), n), ok, why)
        with open(os.path.join(d, n + "-exact.xyz"), "rb") as a, gzip.open(os.path.join(d, n + "-exact.xyz.gz"), "rb") as b:
            result("lua/traj/export-xyz-gz-same-text-%s" % n, a.read() == b.read(), "the two differ")

    # a log quantity written in only some frames: gsd.hoomd sees it in every frame, carrying
    # the last value (without it, frame 3 would repeat frame 1's value)
    logs = os.path.join(d, "logs.gsd")
    if os.path.exists(logs):
        with gsd_open(logs) as g:
            got = [float(f.log["energy"][0]) if "energy" in f.log else None for f in g]
        result("lua/traj/export-gsd-log-carried-read-by-gsd", got == [-1.5, -3.0, -3.0, -6.0],
               "log/energy per frame: %s" % got)

    check_ctr_py(os.path.join(d, names[0] + "-exact.ctr"), d)


def check_ctr_py(src, d):
    """scripts/ctr.py on damaged copies of src: a zeroed file header (frames recovered by
    scanning, with a warning) and two chunk entries sharing one payload (refused)."""
    import ctr
    import struct
    import warnings
    import zlib
    with open(src, "rb") as f:
        data = bytearray(f.read())
    hdr = os.path.join(d, "ctr-py-header.ctr")
    with open(hdr, "wb") as f:
        f.write(bytes(64) + data[64:])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        t = ctr.open(hdr)
    ref = ctr.open(src)
    ok = len(t) == len(ref) > 0 and all(
        all(np.array_equal(a, ref[k][n]) for n, a in t[k].items()) for k in range(len(t)))
    result("lua/traj/ctr-py-damaged-header-recovered", ok and t.header_damaged and
           any("header is damaged" in str(x.message) for x in w), "%d frames of %d" % (len(t), len(ref)))
    h = 64  # frame 0: make entry 1 point at entry 0's payload, every CRC fixed
    nch, length = struct.unpack_from("<I", data, h + 4)[0], struct.unpack_from("<Q", data, h + 24)[0]
    e0, e1 = h + 48, h + 48 + 128
    data[e1 + 64:e1 + 112] = data[e0 + 64:e0 + 112]
    struct.pack_into("<I", data, h + 36, zlib.crc32(data[h + 48:h + 48 + 128 * nch]) & 0xFFFFFFFF)
    struct.pack_into("<I", data, h + 44, zlib.crc32(data[h:h + 44]) & 0xFFFFFFFF)
    data[h + length - 24 + 4:h + length - 24 + 8] = data[h + 44:h + 48]
    shared = os.path.join(d, "ctr-py-shared.ctr")
    with open(shared, "wb") as f:
        f.write(data)
    try:
        ctr.open(shared)[0]
        ok, why = False, "read without error"
    except ctr.CtrError as e:
        ok, why = "overlaps" in str(e), str(e)
    result("lua/traj/ctr-py-shared-payload-refused", ok, why)


main()
