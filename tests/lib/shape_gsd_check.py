#!/usr/bin/env python3
"""Checks for tests/lua/shape_gsd.lua: shape trajectories exported to GSD, read by python3-gsd:
orientations equal to the trajectory's (quaternions w, x, y, z, unit), positions equal, and
particles/type_shapes the shape as HOOMD specifies it, against what the Lua side wrote
(NAME.expect: a JSON object, the shape's hull from carlo.shape_hull).
Also: shape_gsd_check.py --png FILE PHI: the image of sys:png covered by the shapes in the
fraction phi of its pixels (filter-0 RGB rows as carlo writes them; standard library only).
usage: shape_gsd_check.py DIR NAME... | --png FILE PHI"""
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "scripts"))


def result(name, ok, why=""):
    print(("PASS %s" % name) if ok else ("FAIL %s: %s" % (name, why)))
    sys.stdout.flush()


def gsd_open(path):
    import gsd.hoomd
    try:
        return gsd.hoomd.open(path, "r")
    except ValueError:
        return gsd.hoomd.open(path, "rb")


def same_shape(got, want):
    if got.get("type") != want["type"]:
        return False, "type %r, want %r" % (got.get("type"), want["type"])
    if want["type"] == "Ellipsoid":
        for k in "abc":
            if abs(got.get(k, -1) - want[k]) > 1e-7 * want[k]:
                return False, "%s = %r, want %r" % (k, got.get(k), want[k])
        return True, ""
    if abs(got.get("rounding_radius", -1) - want["rounding_radius"]) > 1e-9:
        return False, "rounding_radius %r, want %r" % (got.get("rounding_radius"), want["rounding_radius"])
    gv, wv = got.get("vertices", []), want["vertices"]
    if len(gv) != len(wv):
        return False, "%d vertices, want %d" % (len(gv), len(wv))
    for w in wv:  # the same set of points, in any order
        if not any(len(g) == len(w) and max(abs(a - b) for a, b in zip(g, w)) < 1e-7 for g in gv):
            return False, "vertex %r missing" % (w,)
    return True, ""


def png_coverage(path, phi):
    import struct
    import zlib
    with open(path, "rb") as f:
        b = f.read()
    name = "lua/shape_gsd/png-coverage-" + os.path.basename(path).split(".")[0]
    if b[:8] != b"\x89PNG\r\n\x1a\n":
        return result(name, False, "not a PNG")
    pos, idat, w, h = 8, b"", 0, 0
    while pos < len(b):
        n, kind = struct.unpack(">I4s", b[pos:pos + 8])
        data = b[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h = struct.unpack(">II", data[:8])
        elif kind == b"IDAT":
            idat += data
        pos += 12 + n
    raw = zlib.decompress(idat)
    row = 1 + 3 * w
    covered = sum(1 for y in range(h) for x in range(w)
                  if raw[y * row + 1 + 3 * x:y * row + 4 + 3 * x] != b"\xff\xff\xff")
    frac = covered / float(w * h)
    # pixels are in or out by their centres: the error is the outline's width in pixels
    if os.environ.get("SHAPE_GSD_VERBOSE"):
        print("# %s covered %.4f, phi %.4f" % (path, frac, phi))
    result(name, abs(frac - phi) < 0.01, "covered %.4f of %d x %d, phi %.4f" % (frac, w, h, phi))


def main():
    if sys.argv[1] == "--png":
        return png_coverage(sys.argv[2], float(sys.argv[3]))
    d, names = sys.argv[1], sys.argv[2:]
    try:
        import numpy as np
        import ctr
        import gsd.hoomd  # noqa: F401
    except ImportError as e:
        for n in names:
            print("SKIP lua/shape_gsd/read-%s: python module missing (%s)" % (n, e))
        return
    for n in names:
        src = ctr.open(os.path.join(d, n + ".ctr"))
        g = gsd_open(os.path.join(d, n + ".gsd"))
        with open(os.path.join(d, n + ".expect")) as f:
            want = json.load(f)
        ok, why = len(g) == len(src) > 0, "frame counts %d, %d" % (len(g), len(src))
        for k in range(len(src) if ok else 0):
            f, h = src[k], g[k]
            q = np.asarray(h.particles.orientation, dtype=np.float64)
            if not (np.array_equal(h.particles.orientation, f["particles/orientation"])
                    and np.array_equal(h.particles.position, f["particles/position"])):
                ok, why = False, "frame %d: orientation or position differs from the trajectory" % k
                break
            if np.max(np.abs(np.sum(q * q, axis=1) - 1)) > 1e-5:
                ok, why = False, "frame %d: quaternions not unit" % k
                break
            if want["dim"] == 2 and np.max(np.abs(q[:, 1:3])) != 0:
                ok, why = False, "frame %d: a 2D orientation turns about another axis than z" % k
                break
            if len(h.particles.type_shapes) != 1:
                ok, why = False, "frame %d: %d type shapes" % (k, len(h.particles.type_shapes))
                break
            ok, why = same_shape(h.particles.type_shapes[0], want)
            if not ok:
                why = "frame %d: %s" % (k, why)
                break
        result("lua/shape_gsd/read-%s" % n, ok, why)


if __name__ == "__main__":
    main()
