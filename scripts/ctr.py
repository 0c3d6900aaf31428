#!/usr/bin/env python3
"""ctr.py - read carlo trajectories and checkpoints (.ctr) from Python.

Needs only the standard library (zlib, struct) and numpy. The format is described in
carlo-traj(5). Frames are numbered from 0 here, as in numpy (the Lua API counts from 1).

    import ctr                                  # scripts/ on sys.path, or copy this file
    with ctr.open("run.ctr") as t:
        print(len(t))                           # complete frames
        f = t[0]                                # {name: numpy array}
        pos = t.read(-1, "particles/position")  # one chunk of the last frame
        t.info(0)                               # step and each chunk's type, shape, precision

    python3 scripts/ctr.py run.ctr              # list the frames and their chunks
    python3 scripts/ctr.py run.ctr 3            # print frame 3's chunks

Every chunk is checked against its CRC32; a damaged file raises CtrError naming the frame
and the chunk, and chunks whose data overlap are refused. A file whose writer was killed has
no index: its complete frames are found by scanning, as carlo does; so are those of a file
whose header is damaged (with a warning).
"""
import builtins
import os
import struct
import sys
import warnings
import zlib

import numpy as np

__all__ = ["open", "CtrFile", "CtrError"]

MAGIC = b"\x89CTR\r\n\x1a\n"
HEADER, HEAD, ENTRY, TAIL = 64, 48, 128, 24
FRAME_MAGIC, TAIL_MAGIC = b"CFRM", b"CEND"
INDEX_MAGIC, FOOTER_MAGIC = b"CIDX", b"CTRX"
FOOTER, INDEX_HEAD, INDEX_ENTRY = 32, 16, 32
HAS_STEP, WRAP = 1, 1
ZLIB, SHUFFLE, DELTA, QUANT, NIBBLE = 0, 1, 2, 3, 4
CODECS = ["zlib", "shuffle", "delta", "quantized", "nibble"]
DTYPES = [np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.uint64, np.int64,
          np.float32, np.float64]
MAX_STREAMS = 16


class CtrError(Exception):
    """A file that is not a .ctr file, or one whose data is damaged."""


def _crc(b):
    return zlib.crc32(b) & 0xFFFFFFFF


def _box_inside(box, r):
    """Boolean per row of r (n x 3): inside [-1/2, 1/2) in box coordinates."""
    Lx, Ly, Lz, xy, xz, yz = box
    z = r[:, 2] if Lz > 0 else np.zeros(len(r))
    ok = np.ones(len(r), bool)
    if Lz > 0:
        s3 = z / Lz
        ok &= (s3 >= -0.5) & (s3 < 0.5)
    yy = r[:, 1] - yz * z
    s2 = yy / Ly
    s1 = (r[:, 0] - xy * yy - xz * z) / Lx
    return ok & (s2 >= -0.5) & (s2 < 0.5) & (s1 >= -0.5) & (s1 < 0.5)


def _box_wrap(box, r):
    Lx, Ly, Lz, xy, xz, yz = box
    r = r.copy()
    if Lz > 0:
        k = np.floor(r[:, 2] / Lz + 0.5)
        r[:, 0] -= k * xz * Lz
        r[:, 1] -= k * yz * Lz
        r[:, 2] -= k * Lz
    z = r[:, 2] if Lz > 0 else np.zeros(len(r))
    k = np.floor((r[:, 1] - yz * z) / Ly + 0.5)
    r[:, 0] -= k * xy * Ly
    r[:, 1] -= k * Ly
    yy = r[:, 1] - yz * z
    k = np.floor((r[:, 0] - xy * yy - xz * z) / Lx + 0.5)
    r[:, 0] -= k * Lx
    return r


def _streams(codec, cols):
    if codec == ZLIB:
        return 1
    return cols if 1 <= cols <= MAX_STREAMS else 1


def _decode_block(codec, dtype, cols, rows, precision, raw):
    """One inflated block of `rows` rows -> flat array of rows * cols values."""
    es = np.dtype(dtype).itemsize
    n = rows * cols
    if codec == ZLIB:
        if len(raw) != n * es:
            raise ValueError("block decodes to %d bytes, expected %d" % (len(raw), n * es))
        return np.frombuffer(raw, dtype=dtype).copy()
    if codec == NIBBLE:
        if len(raw) != (n + 1) // 2:
            raise ValueError("block decodes to %d bytes, expected %d" % (len(raw), (n + 1) // 2))
        b = np.frombuffer(raw, np.uint8)
        out = np.empty(2 * len(b), np.uint8)
        out[0::2] = b & 15
        out[1::2] = b >> 4
        return out[:n].astype(dtype)
    if codec == SHUFFLE:
        if len(raw) != n * es:
            raise ValueError("block decodes to %d bytes, expected %d" % (len(raw), n * es))
        S = _streams(codec, cols)
        planes = np.frombuffer(raw, np.uint8).reshape(S, es, n // S)
        # element i of stream j is element i * S + j of the block
        return np.ascontiguousarray(planes.transpose(2, 0, 1)).view(dtype).reshape(n).copy()
    bits = (32 if dtype == np.float32 else 64) if codec == QUANT else es * 8
    mask = np.uint64((1 << bits) - 1)
    sign = np.uint64(1 << (bits - 1))
    shift = np.uint64(64 - bits)
    S = _streams(codec, cols)
    per = n // S
    heads = []
    want = 16 * S
    for j in range(S):
        mode, width = raw[16 * j], raw[16 * j + 1]
        base = struct.unpack_from("<Q", raw, 16 * j + 8)[0]
        if mode > 1 or width < 1 or width > bits // 8:
            raise ValueError("bad stream header (mode %d, width %d)" % (mode, width))
        heads.append((mode, width, base))
        want += width * per
    if len(raw) != want:
        raise ValueError("block decodes to %d bytes, its headers say %d" % (len(raw), want))
    out = np.empty(n, dtype=dtype)
    pos = 16 * S
    for j, (mode, width, base) in enumerate(heads):
        planes = np.frombuffer(raw, np.uint8, width * per, pos).reshape(width, per)
        pos += width * per
        key = np.zeros(per, np.uint64)
        for b in range(width):
            key |= planes[b].astype(np.uint64) << np.uint64(8 * b)
        base = np.uint64(base) & mask
        if mode == 1:
            d = (key >> np.uint64(1)) ^ (np.uint64(0) - (key & np.uint64(1)))
            with np.errstate(over="ignore"):
                key = (base + np.cumsum(d, dtype=np.uint64)) & mask
        else:
            with np.errstate(over="ignore"):
                key = (key + base) & mask
        if codec == QUANT:
            q = (((key ^ sign) << shift).view(np.int64) >> np.int64(64 - bits))
            vals = (q.astype(np.float64) * precision).astype(dtype)
        elif np.issubdtype(dtype, np.signedinteger):
            vals = (((key ^ sign) << shift).view(np.int64) >> np.int64(64 - bits)).astype(dtype)
        else:
            vals = key.astype(dtype)
        out[j::S] = vals
    return out


class CtrFile:
    """A .ctr file opened for reading. len(t) frames; t[k] -> {name: array}."""

    def __init__(self, path):
        self.path = path
        self._f = builtins.open(path, "rb")
        self.size = os.fstat(self._f.fileno()).st_size
        self.recovered = False
        self._frames = []  # (offset, length, step, flags)
        self.header_damaged = False
        h = self._read(0, HEADER + 1)
        if len(h) > self.size:  # /proc: a size of 0 and text to read
            raise CtrError("%s: its size (%d bytes) does not match what reading it gives: not a "
                           "regular file of data" % (path, self.size))
        if h[:min(8, len(h))] != MAGIC[:min(8, len(h))] and len(h) < HEADER:
            raise CtrError("%s is not a carlo trajectory or checkpoint (.ctr) file" % path)
        if len(h) < HEADER:
            self.recovered = True
            return
        if h[:8] == MAGIC and _crc(h[:60]) == struct.unpack_from("<I", h, 60)[0]:
            version = struct.unpack_from("<I", h, 8)[0]
            if version != 1:
                raise CtrError("%s: format version %d is not one this reader knows (1)" % (path, version))
            if not self._load_index():
                self._scan()
            return
        # a damaged header: every frame carries its own CRCs, so the frames are found by
        # scanning when the file still looks like a .ctr file (most of the magic, or frame 0)
        right = sum(a == b for a, b in zip(h[:8], MAGIC))
        first = self._frame_at(HEADER)
        if right < 6 and not (first and first[0] == 0):
            raise CtrError("%s is not a carlo trajectory or checkpoint (.ctr) file" % path)
        self.header_damaged = True
        warnings.warn("%s: the file header is damaged (CRC mismatch); frames recovered by scanning"
                      % path, stacklevel=3)
        self._scan()

    # -- layout --
    def _read(self, off, n):
        self._f.seek(off)
        return self._f.read(n)

    def _load_index(self):
        if self.size < HEADER + INDEX_HEAD + 4 + FOOTER:
            return False
        f = self._read(self.size - FOOTER, FOOTER)
        if f[:4] != FOOTER_MAGIC or _crc(f[:28]) != struct.unpack_from("<I", f, 28)[0]:
            return False
        at, count = struct.unpack_from("<QQ", f, 8)
        nbytes = INDEX_HEAD + count * INDEX_ENTRY + 4
        if count > self.size // INDEX_ENTRY or at < HEADER or at + nbytes + FOOTER != self.size:
            return False
        ix = self._read(at, nbytes)
        if ix[:4] != INDEX_MAGIC or struct.unpack_from("<Q", ix, 8)[0] != count or \
                _crc(ix[:-4]) != struct.unpack_from("<I", ix, nbytes - 4)[0]:
            return False
        frames, expect = [], HEADER
        for i in range(count):
            off, length, step, flags, _ = struct.unpack_from("<QQQII", ix, INDEX_HEAD + i * INDEX_ENTRY)
            if off != expect or length < HEAD + TAIL or length > at - off or flags & ~HAS_STEP:
                return False
            frames.append((off, length, step, flags))
            expect = off + length
        if expect != at:
            return False
        self._frames = frames
        return True

    def _frame_at(self, off):
        if off + HEAD + TAIL > self.size:
            return None
        h = self._read(off, HEAD)
        if h[:4] != FRAME_MAGIC or _crc(h[:44]) != struct.unpack_from("<I", h, 44)[0]:
            return None
        nch, frame, step, length, flags = struct.unpack_from("<IQQQI", h, 4)
        if nch > 32 or length < HEAD + nch * ENTRY + TAIL or length > self.size - off:
            return None
        t = self._read(off + length - TAIL, TAIL)
        if t[:4] != TAIL_MAGIC or t[4:8] != h[44:48] or struct.unpack_from("<QQ", t, 8) != (frame, length):
            return None
        return frame, (off, length, step, flags & HAS_STEP)

    def _scan(self):
        self.recovered = True
        off, last_step = HEADER, 0
        while off < self.size:
            got = self._frame_at(off)
            if got and got[0] == len(self._frames):
                o, length, step, flags = got[1]
                step = step if flags & HAS_STEP else last_step
                last_step = step
                self._frames.append((o, length, step, flags))
                off += length
                continue
            found = self._resync(off + 1, len(self._frames))
            if not found:
                break
            no, (o, length, step, flags) = found
            for _ in range(no - len(self._frames)):
                self._frames.append((off, o - off, last_step, -1))  # damaged
            step = step if flags & HAS_STEP else last_step
            last_step = step
            self._frames.append((o, length, step, flags))
            off = o + length

    def _resync(self, start, expect):
        data = self._read(start, self.size - start)
        i = data.find(FRAME_MAGIC)
        while i >= 0:
            got = self._frame_at(start + i)
            most = i // (HEAD + TAIL) + 1
            if got and expect < got[0] <= expect + most:
                return got
            i = data.find(FRAME_MAGIC, i + 1)
        return None

    # -- frames --
    def __len__(self):
        return len(self._frames)

    def _index(self, k):
        n = len(self._frames)
        if k < 0:
            k += n
        if not 0 <= k < n:
            raise IndexError("frame %d out of range (the file holds %d)" % (k, n))
        return k

    def _table(self, k):
        k = self._index(k)
        off, length, step, flags = self._frames[k]
        where = "%s: frame %d" % (self.path, k)
        if flags == -1:
            raise CtrError("%s is damaged (bytes %d to %d)" % (where, off, off + length))
        h = self._read(off, HEAD)
        if h[:4] != FRAME_MAGIC or _crc(h[:44]) != struct.unpack_from("<I", h, 44)[0]:
            raise CtrError("%s: frame header corrupt (CRC mismatch)" % where)
        nch, frame, _, hlen, hflags, table_crc = struct.unpack_from("<IQQQII", h, 4)
        if frame != k or hlen != length or nch > 32:
            raise CtrError("%s: the frame header disagrees with the index" % where)
        table = self._read(off + HEAD, nch * ENTRY)
        if _crc(table) != table_crc:
            raise CtrError("%s: chunk table corrupt (CRC mismatch)" % where)
        chunks = []
        for i in range(nch):
            e = table[i * ENTRY:(i + 1) * ENTRY]
            name = e[:64].split(b"\0", 1)[0].decode("ascii", "replace")
            typ, codec = e[64], e[65]
            crc, rows, cols, coff, stored = struct.unpack_from("<IQQQQ", e, 68)
            precision = struct.unpack_from("<d", e, 104)[0]
            if typ >= len(DTYPES) or codec > NIBBLE or coff + stored > length - TAIL:
                raise CtrError("%s, chunk '%s': corrupt table entry" % (where, name))
            chunks.append(dict(name=name, dtype=DTYPES[typ], codec=codec, crc=crc, rows=rows,
                               cols=cols, offset=off + coff, stored=stored, precision=precision))
        # payloads may not share bytes (entries pointing at one payload would let a small file
        # claim gigabytes)
        spans = sorted((c["offset"], c["stored"], c["name"]) for c in chunks)
        for (o1, s1, n1), (o2, _, n2) in zip(spans, spans[1:]):
            if o2 < o1 + s1:
                raise CtrError("%s, chunk '%s': its data overlaps that of chunk '%s' (the file is "
                               "corrupt)" % (where, n2, n1))
        return k, step, bool(hflags & HAS_STEP), chunks

    def info(self, k):
        """{'frame', 'step' (None without one), 'chunks': {name: {dtype, shape, precision, codec}}}"""
        k, step, has_step, chunks = self._table(k)
        return dict(frame=k, step=step if has_step else None,
                    chunks={c["name"]: dict(dtype=np.dtype(c["dtype"]).name, shape=(c["rows"], c["cols"]),
                                            precision=c["precision"], codec=CODECS[c["codec"]])
                            for c in chunks})

    def _decode(self, k, c):
        where = "%s: frame %d, chunk '%s'" % (self.path, k, c["name"])
        pay = self._read(c["offset"], c["stored"])
        if len(pay) != c["stored"] or _crc(pay) != c["crc"]:
            raise CtrError("%s: CRC mismatch (the file is corrupt)" % where)
        nblocks, pflags, precision = struct.unpack_from("<IId", pay, 0)
        pos = 16
        box = None
        if pflags & WRAP:
            box = struct.unpack_from("<6d", pay, pos)
            pos += 48
        blocks = [struct.unpack_from("<QQ", pay, pos + 16 * b) for b in range(nblocks)]
        pos += 16 * nblocks
        rows, cols, dtype, codec = c["rows"], c["cols"], c["dtype"], c["codec"]
        if sum(b[0] for b in blocks) != rows or pos + sum(b[1] for b in blocks) != len(pay):
            raise CtrError("%s: block table does not add up" % where)
        parts = []
        for b, (brows, zlen) in enumerate(blocks):
            try:
                raw = zlib.decompress(pay[pos:pos + zlen])
                parts.append(_decode_block(codec, dtype, cols, brows, precision, raw))
            except (zlib.error, ValueError) as e:
                raise CtrError("%s: block %d: %s (the file is corrupt)" % (where, b + 1, e))
            pos += zlen
        a = np.concatenate(parts) if parts else np.zeros(0, dtype)
        a = a.reshape(rows, cols) if cols != 1 else a.reshape(rows)
        if box is not None and cols in (2, 3):
            r = np.zeros((rows, 3))
            r[:, :cols] = a
            for _ in range(3):
                out = ~_box_inside(box, r)
                if not out.any():
                    break
                w = _box_wrap(box, r[out])
                a[out] = w[:, :cols].astype(dtype)
                r[out] = a[out].astype(np.float64) if cols == 3 else np.c_[a[out], np.zeros(out.sum())]
        return a

    def read(self, k, name):
        """Chunk `name` of frame k as a numpy array (rows, or rows x cols)."""
        k, _, _, chunks = self._table(k)
        for c in chunks:
            if c["name"] == name:
                return self._decode(k, c)
        raise KeyError("frame %d has no chunk '%s'" % (k, name))

    def __getitem__(self, k):
        k, _, _, chunks = self._table(k)
        return {c["name"]: self._decode(k, c) for c in chunks}

    def __iter__(self):
        for k in range(len(self)):
            yield self[k]

    def steps(self):
        """The step of every frame (frames without configuration/step take the one before)."""
        return [f[2] for f in self._frames]

    def close(self):
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def open(path):  # noqa: A001 - the module's verb, like gzip.open
    """Open a .ctr file for reading."""
    return CtrFile(path)


def _main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 1
    with open(argv[1]) as t:
        if len(argv) > 2:
            f = t[int(argv[2])]
            for name, a in f.items():
                print(name, a.dtype, a.shape)
                print(a)
            return 0
        print("%s: %d frames%s" % (argv[1], len(t), " (index rebuilt by scanning)" if t.recovered else ""))
        for k in range(len(t)):
            i = t.info(k)
            print("frame %d  step %s" % (k, i["step"]))
            for name, c in i["chunks"].items():
                extra = "  precision %g" % c["precision"] if c["precision"] else ""
                print("  %-28s %-8s %-16s %s%s" % (name, c["dtype"], "x".join(map(str, c["shape"])),
                                                 c["codec"], extra))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv))
