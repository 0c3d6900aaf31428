/* codec.c — see codec.h. A DELTA/QUANT block, before deflate, is
 *   per stream j: u8 mode (0 offset, 1 delta), u8 width (bytes), 6 zero bytes, u64 base
 *   per stream j: width byte planes of its n_j transformed values (low byte plane first)
 * where values are first mapped to order-preserving unsigned keys of `bits` bits; mode 0
 * stores key - base (base = the minimum), mode 1 stores zigzag(key_i - key_i-1) in the
 * same bits (base = the first key). The choice per stream is whichever sums fewer bits. */
#include "traj/codec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/error.h"

#define STREAM_HEAD 16

int traj_codec_streams(int codec, uint64_t cols)
{
    if (codec == TRAJ_CODEC_ZLIB)
        return 1;
    return cols >= 1 && cols <= TRAJ_MAX_STREAMS ? (int)cols : 1;
}

/* ---------- boxes ---------- */

int traj_box_inside(const double box[6], const double r[3])
{
    double Lx = box[0], Ly = box[1], Lz = box[2], xy = box[3], xz = box[4], yz = box[5];
    double z = Lz > 0 ? r[2] : 0;
    if (Lz > 0) {
        double s3 = z / Lz;
        if (!(s3 >= -0.5 && s3 < 0.5))
            return 0;
    }
    double yy = r[1] - yz * z;
    double s2 = yy / Ly;
    double s1 = (r[0] - xy * yy - xz * z) / Lx;
    return s2 >= -0.5 && s2 < 0.5 && s1 >= -0.5 && s1 < 0.5;
}

void traj_box_wrap(const double box[6], double r[3])
{
    double Lx = box[0], Ly = box[1], Lz = box[2], xy = box[3], xz = box[4], yz = box[5];
    if (Lz > 0) {
        double k = floor(r[2] / Lz + 0.5);
        r[0] -= k * xz * Lz;
        r[1] -= k * yz * Lz;
        r[2] -= k * Lz;
    }
    double z = Lz > 0 ? r[2] : 0;
    double k = floor((r[1] - yz * z) / Ly + 0.5);
    r[0] -= k * xy * Ly;
    r[1] -= k * Ly;
    double yy = r[1] - yz * z;
    k = floor((r[0] - xy * yy - xz * z) / Lx + 0.5);
    r[0] -= k * Lx;
}

/* ---------- planning ---------- */

static double elem_f(const carlo_chunk *c, size_t i)
{
    return c->type == CARLO_F32 ? (double)((const float *)c->data)[i] : ((const double *)c->data)[i];
}

static int box_of(const carlo_frame *f, double box[6])
{
    const carlo_chunk *b = carlo_frame_find(f, "configuration/box");
    if (!b || b->rows * b->cols != 6 || (b->type != CARLO_F32 && b->type != CARLO_F64))
        return 0;
    for (int i = 0; i < 6; i++) {
        box[i] = elem_f(b, (size_t)i);
        if (!isfinite(box[i]))
            return 0;
    }
    return box[0] > 0 && box[1] > 0;
}

enum { CAND_NONE, CAND_NIBBLE, CAND_QUANT };

int traj_plan_begin(const carlo_chunk *c, const carlo_frame *f, double precision, traj_plan *p)
{
    memset(p, 0, sizeof *p);
    size_t es = carlo_dtype_size(c->type);
    uint64_t n = c->rows * c->cols;
    if (c->type == CARLO_U8 || c->type == CARLO_I8)
        p->codec = TRAJ_CODEC_ZLIB;
    else if (c->type == CARLO_F32 || c->type == CARLO_F64)
        p->codec = TRAJ_CODEC_SHUFFLE;
    else
        p->codec = TRAJ_CODEC_DELTA;
    if (c->type == CARLO_U8 && n >= 64) {
        p->candidate = CAND_NIBBLE;
        p->sample_stride = n / 65536 + 1;
    } else if (p->codec == TRAJ_CODEC_SHUFFLE && precision > 0 && isfinite(precision) &&
               strcmp(c->name, "particles/position") == 0 && c->cols >= 1 &&
               c->cols <= TRAJ_MAX_STREAMS) {
        p->candidate = CAND_QUANT;
        p->precision = precision;
        if ((c->cols == 2 || c->cols == 3) && f && box_of(f, p->box))
            p->flags |= TRAJ_PAYLOAD_WRAP;
    }
    p->streams = traj_codec_streams(p->codec, c->cols);
    uint64_t row_bytes = c->cols * es;
    p->rows_per_block = row_bytes ? TRAJ_BLOCK_BYTES / row_bytes : 1;
    if (p->rows_per_block < 1)
        p->rows_per_block = 1;
    p->nblocks = (c->rows && c->cols) ? (c->rows + p->rows_per_block - 1) / p->rows_per_block : 0;
    return p->candidate != CAND_NONE && p->nblocks > 0;
}

/* Margins of the box test: a box stored in single precision, or a position a rounding past
 * a face, still counts as inside (decoding wraps it in); positions further out (unwrapped
 * trajectories) leave the whole chunk unwrapped. */
static void box_margin(const traj_plan *p, double m[3])
{
    for (int d = 0; d < 3; d++)
        m[d] = p->box[d] > 0 ? p->precision / p->box[d] + 1e-6 : 0;
}

void traj_block_stats_get(const carlo_chunk *c, const traj_plan *p, uint64_t r0, uint64_t r1,
                          traj_block_stats *s)
{
    memset(s, 0, sizeof *s);
    uint64_t cols = c->cols;
    if (p->candidate == CAND_NIBBLE) {
        const uint8_t *v = c->data;
        size_t from = (size_t)(r0 * cols), to = (size_t)(r1 * cols), st = (size_t)p->sample_stride;
        uint8_t m = 0;
        for (size_t i = from; i < to; i++)
            m |= v[i]; /* an upper bound of the maximum, all the test needs */
        s->bits = m;
        size_t i = (from + st - 1) / st * st;
        if (i == 0)
            i = st;
        for (; i < to; i += st, s->tried++)
            s->same += v[i] == v[i - 1];
        return;
    }
    if (p->candidate != CAND_QUANT)
        return;
    s->finite = 1;
    for (uint64_t d = 0; d < cols; d++) {
        s->lo[d] = INFINITY;
        s->hi[d] = -INFINITY;
    }
    int finite = 1;
#define SCAN(T)                                                        \
    do {                                                               \
        const T *x = c->data;                                          \
        for (uint64_t i = r0; i < r1; i++)                             \
            for (uint64_t d = 0; d < cols; d++) {                      \
                double v = x[i * cols + d];                            \
                finite &= v == v;                                      \
                s->lo[d] = v < s->lo[d] ? v : s->lo[d];                \
                s->hi[d] = v > s->hi[d] ? v : s->hi[d];                \
            }                                                          \
    } while (0)
    if (c->type == CARLO_F32)
        SCAN(float);
    else
        SCAN(double);
#undef SCAN
    s->finite = finite;
    const double *box = p->box;
    if ((p->flags & TRAJ_PAYLOAD_WRAP) && !(box[3] == 0 && box[4] == 0 && box[5] == 0)) {
        double m[3];
        box_margin(p, m);
        for (uint64_t i = r0; i < r1; i++) { /* triclinic: in box coordinates */
            double z = cols == 3 && box[2] > 0 ? elem_f(c, (size_t)(i * cols + 2)) : 0;
            double yy = elem_f(c, (size_t)(i * cols + 1)) - box[5] * z;
            double f3[3] = {(elem_f(c, (size_t)(i * cols)) - box[3] * yy - box[4] * z) / box[0],
                            yy / box[1], box[2] > 0 ? z / box[2] : 0};
            for (int d = 0; d < 3; d++)
                if (!(f3[d] >= -0.5 - m[d] && f3[d] < 0.5 + m[d])) {
                    s->outside++;
                    break;
                }
        }
    }
}

void traj_plan_finish(const carlo_chunk *c, traj_plan *p, const traj_block_stats *s, uint64_t n)
{
    if (p->candidate == CAND_NIBBLE) {
        /* two states per byte for values below 16, unless neighbours mostly repeat (ordered
         * domains), where runs of whole bytes deflate better (measured on Potts lattices:
         * packing wins below about 60% equal neighbours and loses above) */
        uint8_t bits = 0;
        uint64_t same = 0, tried = 0;
        for (uint64_t b = 0; b < n; b++) {
            bits |= s[b].bits;
            same += s[b].same;
            tried += s[b].tried;
        }
        if (bits < 16 && same * 10 < tried * 6)
            p->codec = TRAJ_CODEC_NIBBLE;
    } else if (p->candidate == CAND_QUANT) {
        /* every value finite and round(x / p) within the keys' range, else stored exactly */
        double limit = (c->type == CARLO_F32 ? 1073741824.0 : 4503599627370496.0) * p->precision * 0.99;
        double lo[TRAJ_MAX_STREAMS], hi[TRAJ_MAX_STREAMS];
        int ok = 1;
        uint64_t outside = 0;
        for (uint64_t d = 0; d < c->cols; d++) {
            lo[d] = INFINITY;
            hi[d] = -INFINITY;
        }
        for (uint64_t b = 0; b < n; b++) {
            ok &= s[b].finite;
            outside += s[b].outside;
            for (uint64_t d = 0; d < c->cols; d++) {
                lo[d] = s[b].lo[d] < lo[d] ? s[b].lo[d] : lo[d];
                hi[d] = s[b].hi[d] > hi[d] ? s[b].hi[d] : hi[d];
            }
        }
        for (uint64_t d = 0; d < c->cols; d++)
            ok &= lo[d] > -limit && hi[d] < limit;
        if (!ok) {
            p->precision = 0;
            p->flags = 0;
            memset(p->box, 0, sizeof p->box);
            return;
        }
        p->codec = TRAJ_CODEC_QUANT;
        p->streams = traj_codec_streams(p->codec, c->cols);
        if (p->flags & TRAJ_PAYLOAD_WRAP) {
            const double *box = p->box;
            int inside = outside == 0;
            if (box[3] == 0 && box[4] == 0 && box[5] == 0) { /* orthorhombic: bounds decide */
                double m[3];
                box_margin(p, m);
                for (uint64_t d = 0; d < c->cols; d++)
                    if (!(d == 2 && !(box[2] > 0)) &&
                        !(lo[d] >= (-0.5 - m[d]) * box[d] && hi[d] < (0.5 + m[d]) * box[d]))
                        inside = 0;
            }
            if (!inside) {
                p->flags &= ~TRAJ_PAYLOAD_WRAP;
                memset(p->box, 0, sizeof p->box);
            }
        }
    }
}

void traj_plan_chunk(const carlo_chunk *c, const carlo_frame *f, double precision, traj_plan *p)
{
    if (!traj_plan_begin(c, f, precision, p)) {
        p->precision = 0;
        p->flags = 0;
        memset(p->box, 0, sizeof p->box);
        return;
    }
    traj_block_stats *s = calloc((size_t)p->nblocks, sizeof *s);
    if (!s) { /* out of memory: plan for exact storage */
        p->precision = 0;
        p->flags = 0;
        memset(p->box, 0, sizeof p->box);
        return;
    }
    for (uint64_t b = 0; b < p->nblocks; b++) {
        uint64_t r0 = b * p->rows_per_block, r1 = r0 + p->rows_per_block;
        traj_block_stats_get(c, p, r0, r1 < c->rows ? r1 : c->rows, &s[b]);
    }
    traj_plan_finish(c, p, s, p->nblocks);
    free(s);
}

uint64_t traj_max_raw(int codec, carlo_dtype type, uint64_t stored)
{
    uint64_t f = (codec == TRAJ_CODEC_DELTA || codec == TRAJ_CODEC_QUANT) ? carlo_dtype_size(type)
                 : codec == TRAJ_CODEC_NIBBLE ? 2 : 1;
    if (stored > UINT64_MAX / (TRAJ_INFLATE_RATIO * 8))
        return UINT64_MAX;
    return stored * TRAJ_INFLATE_RATIO * f;
}

/* ---------- keys ---------- */

static int is_signed(carlo_dtype t)
{
    return t == CARLO_I8 || t == CARLO_I16 || t == CARLO_I32 || t == CARLO_I64;
}

static int key_bits(int codec, carlo_dtype t)
{
    if (codec == TRAJ_CODEC_QUANT)
        return t == CARLO_F32 ? 32 : 64;
    return (int)carlo_dtype_size(t) * 8;
}

static inline uint64_t mask_of(int bits) { return bits == 64 ? UINT64_MAX : (((uint64_t)1 << bits) - 1); }

/* Keys of n elements starting at element `start` with stride `stride`. */
static void load_keys(const carlo_chunk *c, int codec, double precision, size_t start, size_t stride,
                      size_t n, uint64_t *key)
{
    int bits = key_bits(codec, c->type);
    uint64_t mask = mask_of(bits), sign = (uint64_t)1 << (bits - 1);
    const uint8_t *base = c->data;
    if (codec == TRAJ_CODEC_QUANT) {
        /* x * (1 / p) rounds like x / p but at a half-way point, where both are p/2 away */
        double inv = 1.0 / precision;
        if (c->type == CARLO_F32) {
            const float *x = (const float *)base + start;
            for (size_t i = 0; i < n; i++) {
                double t = (double)x[i * stride] * inv;
                int64_t q = (int64_t)(t + (t >= 0 ? 0.5 : -0.5));
                key[i] = ((uint64_t)q ^ sign) & mask;
            }
        } else {
            const double *x = (const double *)base + start;
            for (size_t i = 0; i < n; i++) {
                double t = x[i * stride] * inv;
                int64_t q = (int64_t)(t + (t >= 0 ? 0.5 : -0.5));
                key[i] = ((uint64_t)q ^ sign) & mask;
            }
        }
        return;
    }
    int sgn = is_signed(c->type);
#define LOAD(T)                                                                 \
    do {                                                                        \
        const T *v = (const T *)base + start;                                   \
        for (size_t i = 0; i < n; i++)                                          \
            key[i] = sgn ? (((uint64_t)(int64_t)v[i * stride]) ^ sign) & mask   \
                         : (uint64_t)v[i * stride];                             \
    } while (0)
    switch (c->type) {
    case CARLO_U8: LOAD(uint8_t); break;
    case CARLO_I8: LOAD(int8_t); break;
    case CARLO_U16: LOAD(uint16_t); break;
    case CARLO_I16: LOAD(int16_t); break;
    case CARLO_U32: LOAD(uint32_t); break;
    case CARLO_I32: LOAD(int32_t); break;
    case CARLO_U64: LOAD(uint64_t); break;
    case CARLO_I64: LOAD(int64_t); break;
    default: break;
    }
#undef LOAD
}

static void store_keys(carlo_dtype type, int codec, double precision, const uint64_t *key, size_t n,
                       void *dst, size_t start, size_t stride)
{
    int bits = key_bits(codec, type);
    uint64_t sign = (uint64_t)1 << (bits - 1);
    int shift = 64 - bits;
    if (codec == TRAJ_CODEC_QUANT) {
        for (size_t i = 0; i < n; i++) {
            int64_t q = (int64_t)((key[i] ^ sign) << shift) >> shift;
            double x = (double)q * precision;
            if (type == CARLO_F32)
                ((float *)dst)[start + i * stride] = (float)x;
            else
                ((double *)dst)[start + i * stride] = x;
        }
        return;
    }
    int sgn = is_signed(type);
#define STORE(T)                                                                           \
    do {                                                                                   \
        T *v = (T *)dst + start;                                                           \
        for (size_t i = 0; i < n; i++)                                                     \
            v[i * stride] = sgn ? (T)((int64_t)((key[i] ^ sign) << shift) >> shift) : (T)key[i]; \
    } while (0)
    switch (type) {
    case CARLO_U8: STORE(uint8_t); break;
    case CARLO_I8: STORE(int8_t); break;
    case CARLO_U16: STORE(uint16_t); break;
    case CARLO_I16: STORE(int16_t); break;
    case CARLO_U32: STORE(uint32_t); break;
    case CARLO_I32: STORE(int32_t); break;
    case CARLO_U64: STORE(uint64_t); break;
    case CARLO_I64: STORE(int64_t); break;
    default: break;
    }
#undef STORE
}

static int bitlen(uint64_t v) { return v ? 64 - __builtin_clzll(v) : 0; }

static inline uint64_t zigzag(uint64_t d, int bits)
{
    int shift = 64 - bits;
    int64_t s = (int64_t)(d << shift) >> shift; /* sign-extend from bits */
    return ((uint64_t)s << 1) ^ (uint64_t)(s >> 63);
}

static uint64_t unzigzag(uint64_t z) { return (z >> 1) ^ (0 - (z & 1)); }

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static double histogram_bits(const uint32_t *h, uint32_t m)
{
    double e = 0;
    for (int v = 0; v < 256; v++)
        if (h[v]) {
            double q = (double)h[v] / (double)m;
            e -= q * log2(q);
        }
    return e;
}

/* Choose the mode of a stream of keys and write its header and byte planes at out; returns
 * the bytes of planes written. The mode whose byte planes carry fewer bits (the sum of the
 * planes' entropies, from a sample) wins: deltas for particles in spatial order, offsets
 * from the minimum for particles in random order (where deltas are often small but their
 * planes cost more). */
static inline __attribute__((always_inline)) size_t transform(const uint64_t *key, size_t n, int bits,
                                                               uint8_t *head, uint8_t *out, int *width)
{
    uint64_t mask = mask_of(bits);
    uint64_t mn = UINT64_MAX, top = 0, maxzz = 0;
    for (size_t i = 0; i < n; i++) {
        if (key[i] < mn)
            mn = key[i];
        if (key[i] > top)
            top = key[i];
        if (i) {
            uint64_t z = zigzag((key[i] - key[i - 1]) & mask, bits);
            if (z > maxzz)
                maxzz = z;
        }
    }
    int w_off = (bitlen(top - mn) + 7) / 8, w_delta = (bitlen(maxzz) + 7) / 8;
    if (w_off < 1)
        w_off = 1;
    if (w_delta < 1)
        w_delta = 1;
    uint32_t h_off[8][256], h_delta[8][256], m = 0;
    memset(h_off, 0, sizeof h_off);
    memset(h_delta, 0, sizeof h_delta);
    size_t stride = n / 16384 + 1;
    for (size_t i = 1; i < n; i += stride, m++) {
        uint64_t v = key[i] - mn, z = zigzag((key[i] - key[i - 1]) & mask, bits);
        for (int b = 0; b < w_off; b++)
            h_off[b][(v >> (8 * b)) & 255]++;
        for (int b = 0; b < w_delta; b++)
            h_delta[b][(z >> (8 * b)) & 255]++;
    }
    double cost_off = 0, cost_delta = 0;
    for (int b = 0; m && b < w_off; b++)
        cost_off += histogram_bits(h_off[b], m);
    for (int b = 0; m && b < w_delta; b++)
        cost_delta += histogram_bits(h_delta[b], m);
    int delta = m && cost_delta < cost_off;
    uint64_t base = !n ? 0 : delta ? key[0] : mn;
    int w = delta ? w_delta : w_off;
    memset(head, 0, STREAM_HEAD);
    head[0] = (uint8_t)delta;
    head[1] = (uint8_t)w;
    put64(head + 8, base);
    uint64_t prev = base;
    for (size_t i = 0; i < n; i++) {
        uint64_t v;
        if (delta) {
            v = zigzag((key[i] - prev) & mask, bits);
            prev = key[i];
        } else {
            v = key[i] - mn;
        }
        switch (w) { /* the byte planes, low byte first */
        case 8: out[7 * n + i] = (uint8_t)(v >> 56); /* fall through */
        case 7: out[6 * n + i] = (uint8_t)(v >> 48); /* fall through */
        case 6: out[5 * n + i] = (uint8_t)(v >> 40); /* fall through */
        case 5: out[4 * n + i] = (uint8_t)(v >> 32); /* fall through */
        case 4: out[3 * n + i] = (uint8_t)(v >> 24); /* fall through */
        case 3: out[2 * n + i] = (uint8_t)(v >> 16); /* fall through */
        case 2: out[n + i] = (uint8_t)(v >> 8); /* fall through */
        default: out[i] = (uint8_t)v;
        }
    }
    *width = w;
    return (size_t)w * n;
}

/* ---------- blocks ---------- */

/* Bits per byte of a plane, from the histogram of a sample of it. */
static double plane_entropy(const uint8_t *p, size_t n)
{
    size_t h[256] = {0}, stride = n / 16384 + 1, m = 0;
    for (size_t i = 0; i < n; i += stride, m++)
        h[p[i]]++;
    double e = 0;
    for (int v = 0; v < 256; v++)
        if (h[v]) {
            double q = (double)h[v] / (double)m;
            e -= q * log2(q);
        }
    return e;
}

typedef struct zout {
    z_stream z;
    uint8_t *buf;
    size_t cap;
} zout;

/* Deflate more input, growing the output buffer as needed. */
static int zout_feed(zout *o, const uint8_t *in, size_t n, int flush)
{
    o->z.next_in = (Bytef *)in;
    o->z.avail_in = (uInt)n;
    for (;;) {
        if (o->z.avail_out == 0) {
            size_t used = o->cap, cap = o->cap * 2;
            uint8_t *nb = realloc(o->buf, cap);
            if (!nb)
                return carlo_seterr("out of host memory: %zu bytes asked for a compressed block", cap);
            o->buf = nb;
            o->cap = cap;
            o->z.next_out = nb + used;
            o->z.avail_out = (uInt)(cap - used);
        }
        int rc = deflate(&o->z, flush);
        if (rc == Z_STREAM_END)
            return 0;
        if (rc != Z_OK && rc != Z_BUF_ERROR)
            return carlo_seterr("zlib: deflate failed (%d)", rc);
        if (o->z.avail_in == 0 && flush == Z_NO_FLUSH)
            return 0;
        if (rc == Z_BUF_ERROR && o->z.avail_out != 0)
            return carlo_seterr("zlib: deflate made no progress");
    }
}

/* Deflate `parts` consecutive pieces as one zlib stream, each with its own parameters:
 * level 0 (stored) for a piece that looks random, RLE for filtered integers and lattices
 * (fast, and as small as LZ77 on them), LZ77 at `level` for the other float planes. */
static int deflate_parts(const uint8_t *in, const size_t *len, const int *kind, int parts, int level,
                         uint8_t **out, size_t *outlen)
{
    zout o;
    memset(&o, 0, sizeof o);
    size_t total = 0;
    for (int i = 0; i < parts; i++)
        total += len[i];
    if (deflateInit2(&o.z, level, Z_DEFLATED, 15, 8, Z_RLE) != Z_OK)
        return carlo_seterr("zlib: deflateInit failed");
    o.cap = total + total / 64 + 256;
    o.buf = malloc(o.cap);
    if (!o.buf) {
        deflateEnd(&o.z);
        return carlo_seterr("out of host memory: %zu bytes asked for a compressed block", o.cap);
    }
    o.z.next_out = o.buf;
    o.z.avail_out = (uInt)o.cap;
    int cur_level = level, cur_strategy = Z_RLE, rc = 0;
    for (int i = 0; i < parts && !rc; i++) {
        int want_level = level, want_strategy = Z_RLE;
        double e = len[i] >= 4096 ? plane_entropy(in, len[i]) : 0;
        if (e > 7.9)
            want_level = 0;
        else if (kind[i] == 1 && e < 5) /* exponents and signs: repeats worth LZ77 */
            want_strategy = Z_DEFAULT_STRATEGY;
        if (want_level != cur_level || want_strategy != cur_strategy) {
            if (o.z.avail_out < 64)
                rc = zout_feed(&o, NULL, 0, Z_BLOCK);
            if (!rc && deflateParams(&o.z, want_level, want_strategy) != Z_OK)
                rc = carlo_seterr("zlib: deflateParams failed");
            cur_level = want_level;
            cur_strategy = want_strategy;
        }
        if (!rc)
            rc = zout_feed(&o, in, len[i], Z_NO_FLUSH);
        in += len[i];
    }
    if (!rc)
        rc = zout_feed(&o, NULL, 0, Z_FINISH);
    *outlen = (size_t)o.z.total_out;
    deflateEnd(&o.z);
    if (rc) {
        free(o.buf);
        return -1;
    }
    *out = o.buf;
    return 0;
}

static int deflate_all(const uint8_t *in, size_t n, int level, uint8_t **out, size_t *outlen)
{
    int kind = 0;
    return deflate_parts(in, &n, &kind, 1, level, out, outlen);
}

int traj_encode_block(const carlo_chunk *c, const traj_plan *p, uint64_t r0, uint64_t r1, int level,
                      uint8_t **out, size_t *outlen)
{
    size_t es = carlo_dtype_size(c->type);
    size_t n = (size_t)((r1 - r0) * c->cols);
    const uint8_t *src = (const uint8_t *)c->data + (size_t)(r0 * c->cols) * es;
    if (p->codec == TRAJ_CODEC_ZLIB)
        return deflate_all(src, n * es, level, out, outlen);
    if (p->codec == TRAJ_CODEC_NIBBLE) {
        size_t m = (n + 1) / 2;
        uint8_t *plain = carlo_malloc(m, "a block");
        if (!plain)
            return -1;
        for (size_t i = 0; i < n / 2; i++)
            plain[i] = (uint8_t)(src[2 * i] | (src[2 * i + 1] << 4));
        if (n % 2)
            plain[m - 1] = src[n - 1];
        int kind = 1; /* domains repeat from row to row: LZ77 when the entropy is low */
        int rc = deflate_parts(plain, &m, &kind, 1, level, out, outlen);
        free(plain);
        return rc;
    }
    if (p->codec == TRAJ_CODEC_SHUFFLE) { /* per stream, its byte planes */
        uint8_t *plain = carlo_malloc(n * es, "a block");
        if (!plain)
            return -1;
        size_t len[TRAJ_MAX_STREAMS * 8], S = (size_t)p->streams, per = n / S, k = 0;
        int kind[TRAJ_MAX_STREAMS * 8];
        for (size_t j = 0; j < S; j++)
            for (size_t b = 0; b < es; b++, k++) {
                uint8_t *dst = plain + k * per;
                const uint8_t *s = src + j * es + b;
                for (size_t i = 0; i < per; i++)
                    dst[i] = s[i * S * es];
                len[k] = per;
                kind[k] = 1;
            }
        int rc = deflate_parts(plain, len, kind, (int)k, level, out, outlen);
        free(plain);
        return rc;
    }
    int S = p->streams, bits = key_bits(p->codec, c->type);
    size_t per = n / (size_t)S;
    uint64_t *key = carlo_malloc(carlo_mulsize(per ? per : 1, sizeof *key), "block keys");
    uint8_t *plain = key ? carlo_malloc(STREAM_HEAD * (size_t)S + n * es, "a block") : NULL;
    if (!plain) {
        free(key);
        return -1;
    }
    size_t pos = STREAM_HEAD * (size_t)S;
    size_t len[1 + TRAJ_MAX_STREAMS * 8];
    int kind[1 + TRAJ_MAX_STREAMS * 8] = {0}, parts = 1;
    len[0] = pos;
    for (int j = 0; j < S; j++) {
        load_keys(c, p->codec, p->precision, (size_t)(r0 * c->cols) + (size_t)j, (size_t)S, per, key);
        int width;
        uint8_t *h = plain + STREAM_HEAD * (size_t)j;
        switch (bits) { /* constant widths: the shifts fold */
        case 8: pos += transform(key, per, 8, h, plain + pos, &width); break;
        case 16: pos += transform(key, per, 16, h, plain + pos, &width); break;
        case 32: pos += transform(key, per, 32, h, plain + pos, &width); break;
        default: pos += transform(key, per, 64, h, plain + pos, &width); break;
        }
        for (int b = 0; b < width; b++)
            len[parts++] = per;
    }
    free(key);
    int rc = deflate_parts(plain, len, kind, parts, level, out, outlen);
    free(plain);
    return rc;
}

/* Inflate exactly zlen bytes into exactly want bytes (at most cap). */
static int inflate_exact(const uint8_t *z, size_t zlen, uint8_t *out, size_t cap, size_t *got,
                         char *why, size_t whylen)
{
    z_stream s;
    memset(&s, 0, sizeof s);
    if (inflateInit(&s) != Z_OK) {
        snprintf(why, whylen, "zlib: inflateInit failed");
        return -1;
    }
    s.next_in = (Bytef *)z;
    s.avail_in = (uInt)zlen;
    s.next_out = out;
    s.avail_out = (uInt)cap;
    int rc = inflate(&s, Z_FINISH);
    *got = (size_t)s.total_out;
    size_t left = s.avail_in;
    inflateEnd(&s);
    if (rc == Z_STREAM_END && left == 0)
        return 0;
    if (rc == Z_STREAM_END)
        snprintf(why, whylen, "zlib stream ends %zu bytes early", left);
    else if (rc == Z_BUF_ERROR && s.avail_out == 0)
        snprintf(why, whylen, "zlib data decodes to more than the chunk holds");
    else
        snprintf(why, whylen, "zlib data corrupt (%s)", s.msg ? s.msg : "truncated");
    return -1;
}

int traj_decode_block(carlo_dtype type, uint64_t cols, const traj_plan *p, const uint8_t *z,
                      size_t zlen, uint64_t r0, uint64_t r1, void *dst, char *why, size_t whylen)
{
    size_t es = carlo_dtype_size(type);
    size_t n = (size_t)((r1 - r0) * cols);
    uint8_t *dst8 = (uint8_t *)dst + (size_t)(r0 * cols) * es;
    size_t got;
    if (p->codec == TRAJ_CODEC_ZLIB) {
        if (inflate_exact(z, zlen, dst8, n * es, &got, why, whylen))
            return -1;
        if (got != n * es) {
            snprintf(why, whylen, "block decodes to %zu bytes, expected %zu", got, n * es);
            return -1;
        }
        return 0;
    }
    if (p->codec == TRAJ_CODEC_NIBBLE) {
        size_t m = (n + 1) / 2;
        uint8_t *plain = malloc(m ? m : 1);
        if (!plain) {
            snprintf(why, whylen, "out of host memory: %zu bytes asked for a block", m);
            return -1;
        }
        if (inflate_exact(z, zlen, plain, m, &got, why, whylen)) {
            free(plain);
            return -1;
        }
        if (got != m || (n % 2 && plain[m - 1] >> 4)) {
            snprintf(why, whylen, "block decodes to %zu bytes, expected %zu", got, m);
            free(plain);
            return -1;
        }
        for (size_t i = 0; i < n / 2; i++) {
            dst8[2 * i] = plain[i] & 15;
            dst8[2 * i + 1] = plain[i] >> 4;
        }
        if (n % 2)
            dst8[n - 1] = plain[m - 1];
        free(plain);
        return 0;
    }
    int S = p->streams;
    size_t cap = (p->codec == TRAJ_CODEC_SHUFFLE ? 0 : STREAM_HEAD * (size_t)S) + n * es;
    uint8_t *plain = malloc(cap ? cap : 1);
    if (!plain) {
        snprintf(why, whylen, "out of host memory: %zu bytes asked for a block", cap);
        return -1;
    }
    if (inflate_exact(z, zlen, plain, cap, &got, why, whylen)) {
        free(plain);
        return -1;
    }
    if (p->codec == TRAJ_CODEC_SHUFFLE) {
        if (got != n * es) {
            snprintf(why, whylen, "block decodes to %zu bytes, expected %zu", got, n * es);
            free(plain);
            return -1;
        }
        size_t S = (size_t)p->streams, per = n / S, k = 0;
        for (size_t j = 0; j < S; j++)
            for (size_t b = 0; b < es; b++, k++) {
                const uint8_t *s = plain + k * per;
                uint8_t *d = dst8 + j * es + b;
                for (size_t i = 0; i < per; i++)
                    d[i * S * es] = s[i];
            }
        free(plain);
        return 0;
    }
    int bits = key_bits(p->codec, type);
    uint64_t mask = mask_of(bits);
    size_t per = n / (size_t)S, want = STREAM_HEAD * (size_t)S;
    if (got < want) {
        snprintf(why, whylen, "block too short for its stream headers");
        free(plain);
        return -1;
    }
    for (int j = 0; j < S; j++) {
        const uint8_t *h = plain + STREAM_HEAD * (size_t)j;
        if (h[0] > 1 || h[1] < 1 || h[1] > bits / 8) {
            snprintf(why, whylen, "bad stream header (mode %d, width %d)", h[0], h[1]);
            free(plain);
            return -1;
        }
        want += (size_t)h[1] * per;
    }
    if (got != want) {
        snprintf(why, whylen, "block decodes to %zu bytes, its headers say %zu", got, want);
        free(plain);
        return -1;
    }
    uint64_t *key = malloc((per ? per : 1) * sizeof *key);
    if (!key) {
        snprintf(why, whylen, "out of host memory: %zu bytes asked for block keys", per * 8);
        free(plain);
        return -1;
    }
    size_t pos = STREAM_HEAD * (size_t)S;
    for (int j = 0; j < S; j++) {
        const uint8_t *h = plain + STREAM_HEAD * (size_t)j;
        int width = h[1];
        uint64_t base = get64(h + 8) & mask;
        memset(key, 0, per * sizeof *key);
        for (int b = 0; b < width; b++) {
            const uint8_t *s = plain + pos;
            for (size_t i = 0; i < per; i++)
                key[i] |= (uint64_t)s[i] << (8 * b);
            pos += per;
        }
        if (h[0] == 1) {
            uint64_t prev = base;
            for (size_t i = 0; i < per; i++) {
                prev = (prev + unzigzag(key[i])) & mask;
                key[i] = prev;
            }
        } else {
            for (size_t i = 0; i < per; i++)
                key[i] = (key[i] + base) & mask;
        }
        store_keys(type, p->codec, p->precision, key, per, dst, (size_t)(r0 * cols) + (size_t)j,
                   (size_t)S);
    }
    free(key);
    free(plain);
    if (p->codec == TRAJ_CODEC_QUANT && (p->flags & TRAJ_PAYLOAD_WRAP) && (cols == 2 || cols == 3)) {
        /* rounding to the grid may carry a position just past the upper face: wrap it back,
         * re-checking after the rounding to the element type */
        for (uint64_t i = r0; i < r1; i++) {
            for (int pass = 0; pass < 3; pass++) {
                double r[3] = {0, 0, 0};
                for (uint64_t d = 0; d < cols; d++)
                    r[d] = type == CARLO_F32 ? (double)((float *)dst)[i * cols + d]
                                             : ((double *)dst)[i * cols + d];
                if (traj_box_inside(p->box, r))
                    break;
                traj_box_wrap(p->box, r);
                for (uint64_t d = 0; d < cols; d++) {
                    if (type == CARLO_F32)
                        ((float *)dst)[i * cols + d] = (float)r[d];
                    else
                        ((double *)dst)[i * cols + d] = r[d];
                }
            }
        }
    }
    return 0;
}
