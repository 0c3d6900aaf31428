/* unit/traj — the .ctr container through its C API: exact round trips of every element type,
 * quantized positions within their bound and inside their box, the index and its rebuilding
 * after a kill, truncation at every byte, bit flips, forged sizes, failing writes, append
 * with dropped frames, and atomic checkpoints; and that nothing is lost or left behind:
 * damaged headers recovered, shared payloads refused, damaged stretches scanned fast,
 * /proc files refused, no file after a failed open, checkpoints that respect open writers,
 * symbolic links and the temporary files of killed saves. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "core/error.h"
#include "core/frame.h"
#include "traj/checkpoint.h"
#include "traj/codec.h"
#include "traj/format.h"
#include "traj/traj.h"
#include "unit/check.h"

static char dir[512];

static const char *tmp(const char *name)
{
    static char buf[4][700];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double unif(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }

static traj_file *open_opts(const char *path, char mode, double precision, int threads)
{
    traj_options o;
    traj_options_init(&o);
    o.precision = precision;
    o.threads = threads;
    o.quiet = 1;
    return traj_open(path, mode, &o);
}

static uint8_t *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(len ? (size_t)len : 1);
    if (fread(b, 1, (size_t)len, f) != (size_t)len)
        len = 0;
    fclose(f);
    *n = (size_t)len;
    return b;
}

/* Bytes as a file in memory (no disk traffic for the thousands of cut and flipped files). */
static const char *mem_file(const uint8_t *b, size_t n)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("ctr-test", 0);
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) || (n && pwrite(fd, b, n, 0) != (ssize_t)n))
        perror("memfd");
    return path;
}

static void write_file(const char *path, const uint8_t *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (fwrite(b, 1, n, f) != n)
        perror("write");
    fclose(f);
}

static int small_frames; /* the every-byte tests: a few small chunks, every codec */

/* A frame of every element type, shapes from scalars to wide lattices, seeded by k. */
static void make_frame(carlo_frame *f, int k)
{
    carlo_frame_init(f);
    rng_state = 1000 + (uint64_t)k;
    carlo_frame_add_u64(f, "configuration/step", (uint64_t)k * 100);
    if (small_frames) {
        float p[8 * 3];
        int32_t h[12];
        uint8_t st[70];
        for (int i = 0; i < 24; i++)
            p[i] = (float)(unif() * 10 - 5);
        for (int i = 0; i < 12; i++)
            h[i] = (int32_t)(rnd() % 1000) - 500;
        for (int i = 0; i < 70; i++)
            st[i] = (uint8_t)(rnd() % 9);
        carlo_frame_add_copy(f, "log/pos", CARLO_F32, 8, 3, p);
        carlo_frame_add_copy(f, "lattice/h", CARLO_I32, 3, 4, h);
        carlo_frame_add_copy(f, "lattice/s", CARLO_U8, 7, 10, st);
        carlo_frame_add_string(f, "log/comment", "hi");
        return;
    }
    const carlo_dtype types[] = {CARLO_U8, CARLO_I8, CARLO_U16, CARLO_I16, CARLO_U32,
                                 CARLO_I32, CARLO_U64, CARLO_I64, CARLO_F32, CARLO_F64};
    const uint64_t shapes[][2] = {{7, 3}, {40, 1}, {9, 33}, {0, 3}};
    char name[64];
    for (int t = 0; t < 10; t++) {
        const uint64_t *sh = shapes[(t + k) % 4];
        size_t n = (size_t)(sh[0] * sh[1]), es = carlo_dtype_size(types[t]);
        uint8_t *d = malloc(n * es + 1);
        for (size_t i = 0; i < n; i++) {
            uint64_t v = rnd();
            if (i % 5 == 1) v = 0;                       /* extremes and small values */
            if (i % 7 == 2) v = ~(uint64_t)0;
            if (i % 3 == 0) v &= 0xff;
            if (types[t] == CARLO_F32) {
                float x = (float)(unif() * 200 - 100);
                if (i == 4) x = -0.0f;
                memcpy(d + i * es, &x, 4);
            } else if (types[t] == CARLO_F64) {
                double x = unif() * 2e6 - 1e6;
                if (i == 4) x = 1e-300;
                memcpy(d + i * es, &x, 8);
            } else {
                memcpy(d + i * es, &v, es);
            }
        }
        snprintf(name, sizeof name, "lattice/t%d", t);
        carlo_frame_add_owned(f, name, types[t], sh[0], sh[1], d);
    }
    carlo_frame_add_string(f, "log/comment", "hello");
    /* states below 16: packed two per byte when neighbours differ, bytes when they repeat */
    uint8_t *st = malloc(37 * 11), *dom = malloc(37 * 11);
    for (int i = 0; i < 37 * 11; i++) {
        st[i] = (uint8_t)(rnd() % 9);
        dom[i] = (uint8_t)((i / 50 + k) % 5);
    }
    carlo_frame_add_owned(f, "lattice/states", CARLO_U8, 37, 11, st);
    carlo_frame_add_owned(f, "lattice/domains", CARLO_U8, 37, 11, dom);
}

static int frames_equal(const carlo_frame *a, const carlo_frame *b, char *why, size_t n)
{
    if (a->n != b->n) {
        snprintf(why, n, "%d chunks, expected %d", b->n, a->n);
        return 0;
    }
    for (int i = 0; i < a->n; i++) {
        const carlo_chunk *x = &a->chunk[i], *y = carlo_frame_find(b, x->name);
        if (!y || y->type != x->type || y->rows != x->rows || y->cols != x->cols ||
            memcmp(x->data, y->data, (size_t)(x->rows * x->cols) * carlo_dtype_size(x->type))) {
            snprintf(why, n, "chunk %s differs", x->name);
            return 0;
        }
    }
    return 1;
}

static void test_roundtrip(void)
{
    int threads[] = {0, 1, 3};
    for (int ti = 0; ti < 3; ti++) {
        const char *path = tmp("rt.ctr");
        traj_file *t = open_opts(path, 'w', 0, threads[ti]);
        int ok = t != NULL;
        for (int k = 0; ok && k < 6; k++) {
            carlo_frame f;
            make_frame(&f, k);
            ok = traj_write(t, &f) == 0;
            carlo_frame_free(&f);
        }
        ok = ok && traj_close(t) == 0;
        char why[200] = "open/write failed";
        t = ok ? open_opts(path, 'r', 0, 0) : NULL;
        ok = t && traj_count(t) == 6 && !traj_recovered(t);
        for (int k = 0; ok && k < 6; k++) {
            carlo_frame f, g;
            make_frame(&f, k);
            ok = traj_read_frame(t, (uint64_t)k, &g) == 0 && frames_equal(&f, &g, why, sizeof why);
            if (!ok && g.n == 0)
                snprintf(why, sizeof why, "%s", carlo_errmsg());
            carlo_frame_free(&f);
            carlo_frame_free(&g);
        }
        traj_close(t);
        char name[80];
        snprintf(name, sizeof name, "unit/traj/lossless-bitexact-threads%d", threads[ti]);
        CHECK(name, ok, "%s", why);
    }
}

static void test_large_blocks(void)
{
    /* 3 MiB of f32 over several blocks, and a wide u8 lattice, compressed by 4 threads */
    size_t n = 3 << 18, L = 1536;
    float *x = malloc(n * sizeof *x);
    uint8_t *s = malloc(L * L);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)sin((double)i * 0.001) * 1000.0f;
    for (size_t i = 0; i < L * L; i++)
        s[i] = (uint8_t)((i / 97 + i % 13) % 9);
    const char *path = tmp("big.ctr");
    traj_file *t = open_opts(path, 'w', 0, 4);
    carlo_frame f;
    carlo_frame_init(&f);
    carlo_frame_add(&f, "log/series", CARLO_F32, n, 1, x);
    carlo_frame_add(&f, "lattice/spins", CARLO_U8, L, L, s);
    int ok = t && traj_write(t, &f) == 0 && traj_write(t, &f) == 0 && traj_close(t) == 0;
    t = ok ? open_opts(path, 'r', 0, 0) : NULL;
    float *y = calloc(n, sizeof *y);
    uint8_t *u = calloc(L * L, 1);
    ok = t && traj_read_chunk(t, 1, "log/series", CARLO_F32, n, 1, y, n * sizeof *y) == 0 &&
         traj_read_chunk(t, 1, "lattice/spins", CARLO_U8, L, L, u, L * L) == 0 &&
         memcmp(x, y, n * sizeof *x) == 0 && memcmp(s, u, L * L) == 0;
    CHECK("unit/traj/multiblock-bitexact", ok, "%s", carlo_errmsg());
    /* the caller's buffer is checked, a missing chunk is 1, a wrong type is an error */
    int small = t ? traj_read_chunk(t, 0, "lattice/spins", CARLO_U8, 0, 0, u, 100) : 0;
    int missing = t ? traj_read_chunk(t, 0, "lattice/height", CARLO_U8, 0, 0, u, L * L) : 0;
    int wrong = t ? traj_read_chunk(t, 0, "lattice/spins", CARLO_I32, 0, 0, u, L * L) : 0;
    CHECK("unit/traj/read-buffer-checked", small == -1 && strstr(carlo_errmsg(), "needs") == NULL &&
          missing == 1 && wrong == -1, "small %d missing %d wrong %d: %s", small, missing, wrong,
          carlo_errmsg());
    traj_close(t);
    carlo_frame_free(&f);
    free(x); free(y); free(s); free(u);
}

/* Positions of N particles in a box centred on the origin, some on the faces. */
static void positions(float *p, size_t N, const double box[6], int dims)
{
    for (size_t i = 0; i < N; i++) {
        double s[3] = {unif() - 0.5, unif() - 0.5, dims == 3 ? unif() - 0.5 : 0};
        if (i % 10 == 0) s[i % 3 == 2 ? 1 : 0] = (i % 20 == 0) ? -0.5 : 0.5 - 1e-9;
        double z = s[2] * box[2];
        double y = s[1] * box[1] + box[5] * z;
        double x = s[0] * box[0] + box[3] * (y - box[5] * z) + box[4] * z;
        p[3 * i] = (float)x;
        p[3 * i + 1] = (float)y;
        p[3 * i + 2] = (float)z;
        for (int pass = 0; pass < 4; pass++) { /* float rounding may put it on a face: wrap */
            double r[3] = {p[3 * i], p[3 * i + 1], p[3 * i + 2]};
            if (traj_box_inside(box, r))
                break;
            traj_box_wrap(box, r);
            p[3 * i] = (float)r[0];
            p[3 * i + 1] = (float)r[1];
            p[3 * i + 2] = (float)r[2];
        }
    }
}

static void quant_case(const char *name, const double box[6], int dims, double prec)
{
    size_t N = 5000;
    float *p = malloc(N * 3 * sizeof *p), *q = malloc(N * 3 * sizeof *q);
    positions(p, N, box, dims);
    float fbox[6];
    for (int d = 0; d < 6; d++)
        fbox[d] = (float)box[d];
    double b32[6];
    for (int d = 0; d < 6; d++)
        b32[d] = fbox[d];
    const char *path = tmp("quant.ctr");
    traj_file *t = open_opts(path, 'w', prec, 2);
    carlo_frame f;
    carlo_frame_init(&f);
    carlo_frame_add_u64(&f, "configuration/step", 7);
    carlo_frame_add(&f, "configuration/box", CARLO_F32, 6, 1, fbox);
    carlo_frame_add(&f, "particles/position", CARLO_F32, N, 3, p);
    int ok = t && traj_write(t, &f) == 0 && traj_close(t) == 0;
    carlo_frame_free(&f);
    traj_frame_info info;
    t = ok ? open_opts(path, 'r', 0, 0) : NULL;
    ok = t && traj_read_chunk(t, 0, "particles/position", CARLO_F32, N, 3, q, N * 3 * sizeof *q) == 0 &&
         traj_frame_info_get(t, 0, &info) == 0;
    traj_close(t);
    double worst = 0, excess = 0;
    size_t outside = 0;
    for (size_t i = 0; ok && i < N; i++) {
        double r[3] = {q[3 * i], q[3 * i + 1], q[3 * i + 2]};
        if (!traj_box_inside(b32, r))
            outside++;
        double d[3] = {r[0] - p[3 * i], r[1] - p[3 * i + 1], r[2] - p[3 * i + 2]};
        traj_box_wrap(b32, d); /* periodic displacement */
        for (int c = 0; c < 3; c++) {
            double ax = fabs((double)p[3 * i + c]);
            double bound = prec / 2 + ldexp(1.0, -24) * (ax + prec) + 1e-12 * b32[0];
            if (fabs(d[c]) > worst) worst = fabs(d[c]);
            if (fabs(d[c]) - bound > excess) excess = fabs(d[c]) - bound;
        }
    }
    char n1[96], n2[96], n3[96];
    snprintf(n1, sizeof n1, "unit/traj/quantized-within-half-precision-%s", name);
    snprintf(n2, sizeof n2, "unit/traj/periodic-wrap-survives-%s", name);
    snprintf(n3, sizeof n3, "unit/traj/precision-stored-%s", name);
    CHECK(n1, ok && excess == 0 && worst > prec / 4, "%s worst error %.3g (precision %g), excess %.3g",
          ok ? "" : carlo_errmsg(), worst, prec, excess);
    CHECK(n2, ok && outside == 0, "%zu of %zu decoded positions outside the box", outside, N);
    int found = 0;
    for (int i = 0; ok && i < info.nchunks; i++)
        if (strcmp(info.chunk[i].name, "particles/position") == 0)
            found = info.chunk[i].precision == prec;
        else if (info.chunk[i].precision != 0)
            found = -1;
    CHECK(n3, found == 1, "info says %d", found);
    free(p);
    free(q);
}

static void test_quantized(void)
{
    double ortho[6] = {40, 40, 40, 0, 0, 0}, tric[6] = {10, 12, 14, 0.3, -0.2, 0.1};
    double flat[6] = {25, 30, 0, 0, 0, 0};
    quant_case("cubic", ortho, 3, 1e-3);
    quant_case("triclinic", tric, 3, 1e-3);
    quant_case("2d", flat, 2, 1e-2);
    /* unwrapped positions outside the box are kept where they are (no wrap) */
    size_t N = 1000;
    float *p = malloc(N * 3 * sizeof *p), *q = malloc(N * 3 * sizeof *q);
    for (size_t i = 0; i < 3 * N; i++)
        p[i] = (float)(unif() * 300 - 150);
    float box[6] = {20, 20, 20, 0, 0, 0};
    carlo_frame f;
    carlo_frame_init(&f);
    carlo_frame_add(&f, "configuration/box", CARLO_F32, 6, 1, box);
    carlo_frame_add(&f, "particles/position", CARLO_F32, N, 3, p);
    traj_file *t = open_opts(tmp("unwrapped.ctr"), 'w', 1e-3, 0);
    int ok = t && traj_write(t, &f) == 0 && traj_close(t) == 0;
    t = ok ? open_opts(tmp("unwrapped.ctr"), 'r', 0, 0) : NULL;
    ok = t && traj_read_chunk(t, 0, "particles/position", CARLO_F32, N, 3, q, N * 12) == 0;
    traj_close(t);
    double worst = 0;
    for (size_t i = 0; ok && i < 3 * N; i++)
        if (fabs((double)q[i] - p[i]) > worst)
            worst = fabs((double)q[i] - p[i]);
    CHECK("unit/traj/quantized-unwrapped-stay", ok && worst <= 0.5e-3 + 150 * ldexp(1.0, -24) &&
          worst > 1e-4, "worst %.3g", worst);
    carlo_frame_free(&f);
    free(p);
    free(q);
}

/* Frame record ends, parsed from the file's bytes. */
static size_t frame_ends(const uint8_t *b, size_t n, uint64_t *end, size_t max)
{
    size_t k = 0;
    uint64_t off = CTR_HEADER_BYTES;
    while (k < max && off + CTR_HEAD_BYTES <= n && ctr_get32(b + off) == CTR_FRAME_MAGIC) {
        off += ctr_get64(b + off + 24);
        end[k++] = off;
    }
    return k;
}

static int read_all_match(const char *path, size_t expect, char *why, size_t whylen)
{
    traj_file *t = open_opts(path, 'r', 0, 0);
    if (!t) {
        snprintf(why, whylen, "open: %s", carlo_errmsg());
        return expect == 0 && strstr(carlo_errmsg(), "not a carlo") == NULL ? -1 : -2;
    }
    size_t n = (size_t)traj_count(t);
    int rc = 0;
    if (n != expect) {
        snprintf(why, whylen, "%zu frames, expected %zu", n, expect);
        rc = -2;
    }
    for (size_t k = 0; rc == 0 && k < n; k++) {
        carlo_frame f, g;
        make_frame(&f, (int)k);
        if (traj_read_frame(t, k, &g)) {
            snprintf(why, whylen, "%s", carlo_errmsg());
            rc = -1;
        } else if (!frames_equal(&f, &g, why, whylen)) {
            rc = -3; /* silently wrong data */
        }
        carlo_frame_free(&f);
        carlo_frame_free(&g);
    }
    traj_close(t);
    return rc;
}

static void write_frames(const char *path, int n, int threads, int close_it)
{
    traj_file *t = open_opts(path, 'w', 0, threads);
    for (int k = 0; t && k < n; k++) {
        carlo_frame f;
        make_frame(&f, k);
        traj_write(t, &f);
        carlo_frame_free(&f);
    }
    if (close_it)
        traj_close(t);
    else
        traj_flush(t);
}

static void test_truncation(void)
{
    const char *path = tmp("cut-src.ctr");
    small_frames = 1;
    write_frames(path, 3, 0, 1);
    size_t n;
    uint8_t *b = read_file(path, &n);
    uint64_t end[8];
    size_t nf = frame_ends(b, n, end, 8);
    size_t bad = 0, first_bad = 0;
    char why[300] = "", first_why[300] = "";
    for (size_t c = 0; c <= n; c++) {
        const char *cut = mem_file(b, c);
        size_t expect = 0;
        while (expect < nf && end[expect] <= c)
            expect++;
        if (c == n)
            expect = nf;
        int rc = read_all_match(cut, expect, why, sizeof why);
        if (rc != 0 && !(rc == -1 && c == 0)) {
            if (!bad++) {
                first_bad = c;
                snprintf(first_why, sizeof first_why, "%s", why);
            }
        }
    }
    CHECK("unit/traj/truncated-at-every-byte-keeps-complete-frames", nf == 3 && bad == 0,
          "%zu of %zu cuts wrong, first at byte %zu: %s", bad, n + 1, first_bad, first_why);
    free(b);
    small_frames = 0;
}

static void flip_case(const char *label, const char *path)
{
    size_t n;
    uint8_t *orig = read_file(path, &n);
    uint64_t end[16];
    size_t nf = frame_ends(orig, n, end, 16);
    size_t silent = 0, unnamed = 0, tries = 400;
    char why[300], example[300] = "";
    for (size_t i = 0; i < tries; i++) {
        uint8_t *b = malloc(n);
        memcpy(b, orig, n);
        size_t at = (size_t)(rnd() % n);
        b[at] ^= (uint8_t)(1u << (rnd() % 8));
        const char *flipped = mem_file(b, n);
        free(b);
        /* inside a chunk's payload? */
        int payload = 0;
        uint64_t off = CTR_HEADER_BYTES;
        for (size_t k = 0; k < nf; k++) {
            uint32_t nc = ctr_get32(orig + off + 4);
            for (uint32_t c = 0; c < nc; c++) {
                const uint8_t *e = orig + off + CTR_HEAD_BYTES + c * CTR_ENTRY_BYTES;
                uint64_t s = off + ctr_get64(e + 88), len = ctr_get64(e + 96);
                if (at >= s && at < s + len)
                    payload = 1;
            }
            off = end[k];
        }
        int rc = read_all_match(flipped, nf, why, sizeof why);
        if (rc == -3)
            silent++;
        if (rc == -1 && payload && (!strstr(why, "frame ") || !strstr(why, "chunk '"))) {
            unnamed++;
            snprintf(example, sizeof example, "%s", why);
        }
        if (rc == -1 && !example[0])
            snprintf(example, sizeof example, "%s", why);
    }
    char name[96];
    snprintf(name, sizeof name, "unit/traj/bit-flips-caught-%s", label);
    CHECK(name, silent == 0 && unnamed == 0, "%zu silently wrong, %zu payload errors without frame "
          "and chunk (e.g. %s)", silent, unnamed, example);
    free(orig);
}

static void test_flips(void)
{
    write_frames(tmp("flip-src.ctr"), 3, 0, 1);
    flip_case("indexed", tmp("flip-src.ctr"));
    write_frames(tmp("flip-noindex.ctr"), 3, 0, 0); /* never closed: no index */
    flip_case("scanned", tmp("flip-noindex.ctr"));
}

/* Rewrite the chunk table of the only frame and fix every CRC, so only the size check remains. */
static void test_forged_size(void)
{
    const char *path = tmp("forged.ctr");
    write_frames(path, 1, 0, 1);
    size_t n;
    uint8_t *b = read_file(path, &n);
    uint64_t off = CTR_HEADER_BYTES;
    uint32_t nc = ctr_get32(b + off + 4);
    uint8_t *e = b + off + CTR_HEAD_BYTES + CTR_ENTRY_BYTES; /* the second chunk */
    ctr_put64(e + 72, (uint64_t)1 << 40);
    ctr_put64(e + 80, 3);
    uint8_t *h = b + off;
    ctr_put32(h + 36, (uint32_t)crc32(0, h + CTR_HEAD_BYTES, nc * CTR_ENTRY_BYTES));
    ctr_put32(h + 44, (uint32_t)crc32(0, h, 44));
    uint64_t len = ctr_get64(h + 24);
    ctr_put32(h + len - CTR_TAIL_BYTES + 4, ctr_get32(h + 44));
    write_file(path, b, n);
    free(b);
    traj_file *t = open_opts(path, 'r', 0, 0);
    carlo_frame g;
    int rc = t ? traj_read_frame(t, 0, &g) : 0;
    CHECK("unit/traj/forged-size-refused-before-allocation",
          t && rc == -1 && strstr(carlo_errmsg(), "more than its stored bytes can hold"),
          "rc %d: %s", rc, carlo_errmsg());
    traj_close(t);
}

static void big_frame(carlo_frame *f, float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((i * 2654435761u) % 1000003) * 1e-3f;
    carlo_frame_init(f);
    carlo_frame_add_u64(f, "configuration/step", 999999);
    carlo_frame_add(f, "log/big", CARLO_F32, n, 1, x);
}

static void test_killed_and_append(void)
{
    const char *path = tmp("killed.ctr");
    size_t nbig = 1 << 21;
    float *x = malloc(nbig * sizeof *x);
    pid_t pid = fork();
    if (pid == 0) { /* a run that writes frames until it is killed in the middle of a big one */
        traj_file *t = open_opts(path, 'w', 0, 2);
        for (int k = 0; k < 50; k++) {
            carlo_frame f;
            make_frame(&f, k);
            traj_write(t, &f);
            carlo_frame_free(&f);
        }
        carlo_frame f;
        big_frame(&f, x, nbig);
        traj_write(t, &f);
        traj_flush(t); /* 51 frames on disk: now kill me while I write more */
        kill(getppid(), SIGUSR1);
        for (;;)
            traj_write(t, &f);
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    int sig;
    sigwait(&set, &sig);
    usleep(100000);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    struct stat st;
    stat(path, &st);
    traj_file *t = open_opts(path, 'r', 0, 0);
    size_t n = t ? (size_t)traj_count(t) : 0;
    int recovered = t && traj_recovered(t), bad = 0;
    float *y = malloc(nbig * sizeof *y);
    carlo_frame big;
    big_frame(&big, x, nbig);
    for (size_t k = 0; t && k < n; k++) {
        if (k < 50) {
            carlo_frame f, g;
            make_frame(&f, (int)k);
            char why[200];
            bad += traj_read_frame(t, k, &g) || !frames_equal(&f, &g, why, sizeof why);
            carlo_frame_free(&f);
            carlo_frame_free(&g);
        } else {
            bad += traj_read_chunk(t, k, "log/big", CARLO_F32, nbig, 1, y, nbig * sizeof *y) ||
                   memcmp(x, y, nbig * sizeof *x);
        }
    }
    traj_close(t);
    carlo_frame_free(&big);
    free(x);
    free(y);
    CHECK("unit/traj/killed-run-keeps-complete-frames", recovered && n >= 51 && bad == 0,
          "recovered %d, %zu frames (%lld bytes), %d differ", recovered, n, (long long)st.st_size, bad);
    char why[300];
    int rc;
    /* append after the crash: drops the frames at or past the restart step, writes on */
    traj_options o;
    traj_options_init(&o);
    o.quiet = 1;
    o.threads = 2;
    t = traj_open(path, 'a', &o);
    int ok = t != NULL;
    for (int k = 30; ok && k < 40; k++) { /* step 3000 onwards again */
        carlo_frame f;
        make_frame(&f, k);
        ok = traj_write(t, &f) == 0;
        carlo_frame_free(&f);
    }
    ok = ok && traj_close(t) == 0;
    rc = ok ? read_all_match(path, 40, why, sizeof why) : -9;
    CHECK("unit/traj/append-after-crash", ok && rc == 0, "%s", ok ? why : carlo_errmsg());
    t = open_opts(path, 'r', 0, 0);
    int indexed = t && !traj_recovered(t);
    traj_close(t);
    CHECK("unit/traj/index-written-on-close", indexed, "index missing after close");
    /* restart = S drops the frames past step S at open */
    o.restart = 1050;
    t = traj_open(path, 'a', &o);
    uint64_t count = t ? traj_count(t) : 0;
    traj_close(t);
    CHECK("unit/traj/append-restart-drops-later-steps", count == 11, "%llu frames (want 11: steps "
          "0..1000)", (unsigned long long)count);
}

static void test_failing_writes(void)
{
    /* a file-size limit makes writes fail as a full disk would */
    const char *path = tmp("full.ctr");
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {20000, 20000};
        setrlimit(RLIMIT_FSIZE, &rl);
        traj_file *t = open_opts(path, 'w', 0, 2);
        int failed = 0;
        for (int k = 0; k < 200 && !failed; k++) {
            carlo_frame f;
            make_frame(&f, k);
            failed = traj_write(t, &f) != 0;
            carlo_frame_free(&f);
        }
        if (!failed)
            failed = traj_close(t) != 0;
        const char *m = carlo_errmsg();
        _exit(failed && strstr(m, "File too large") && strstr(m, "complete") ? 0 : 1);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK("unit/traj/write-failure-reported", WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "child status %d", status);
    traj_file *t = open_opts(path, 'r', 0, 0);
    size_t n = t ? (size_t)traj_count(t) : 0;
    traj_close(t);
    char why[300] = "";
    struct stat st;
    stat(path, &st);
    int rc = read_all_match(path, n, why, sizeof why);
    uint8_t *b;
    size_t len;
    b = read_file(path, &len);
    uint64_t end[64];
    size_t nf = frame_ends(b, len, end, 64);
    free(b);
    CHECK("unit/traj/write-failure-leaves-complete-frames", n > 0 && rc == 0 && nf == n &&
          end[n - 1] == len, "%zu frames, rc %d (%s), file %zu bytes, last frame ends at %llu", n, rc,
          why, len, nf ? (unsigned long long)end[nf - 1] : 0ull);
    /* /dev/full: the header cannot be written */
    t = open_opts("/dev/full", 'w', 0, 0);
    CHECK("unit/traj/disk-full-at-open", !t && strstr(carlo_errmsg(), "No space left"), "%s",
          t ? "opened" : carlo_errmsg());
    traj_close(t);
    t = open_opts("/nonexistent-dir/x.ctr", 'w', 0, 0);
    CHECK("unit/traj/unwritable-path", !t && strstr(carlo_errmsg(), "/nonexistent-dir/x.ctr") &&
          strstr(carlo_errmsg(), "No such file"), "%s", carlo_errmsg());
    traj_close(t);
    write_file(tmp("text.ctr"), (const uint8_t *)"hello, this is not a trajectory\n", 32);
    t = open_opts(tmp("text.ctr"), 'r', 0, 0);
    CHECK("unit/traj/not-a-container", !t && strstr(carlo_errmsg(), "not a carlo"), "%s",
          carlo_errmsg());
    traj_close(t);
    /* a single row over 1 GiB is refused before any data is touched */
    t = open_opts(tmp("wide.ctr"), 'w', 0, 0);
    carlo_frame wide;
    carlo_frame_init(&wide);
    float dummy[4] = {0};
    carlo_frame_add(&wide, "log/wide", CARLO_F32, 1, ((uint64_t)1 << 28) + 1, dummy);
    int rc_wide = t ? traj_write(t, &wide) : 0;
    CHECK("unit/traj/huge-row-refused", rc_wide == -1 && strstr(carlo_errmsg(), "rows of more than 1 GiB"),
          "%s", carlo_errmsg());
    traj_close(t);
    traj_file *a = open_opts(tmp("locked.ctr"), 'w', 0, 1);
    traj_file *b2 = open_opts(tmp("locked.ctr"), 'a', 0, 1);
    CHECK("unit/traj/one-writer-at-a-time", a && !b2 && strstr(carlo_errmsg(), "open for writing"),
          "%s", carlo_errmsg());
    traj_close(a);
    traj_close(b2);
}

static void test_checkpoint(void)
{
    const char *path = tmp("state.ctr");
    carlo_frame f, g;
    make_frame(&f, 3);
    int ok = traj_checkpoint_save(path, &f) == 0 && traj_checkpoint_load(path, &g) == 0;
    char why[200] = "";
    ok = ok && frames_equal(&f, &g, why, sizeof why);
    carlo_frame_free(&g);
    CHECK("unit/traj/checkpoint-roundtrip", ok, "%s %s", why, carlo_errmsg());
    /* a checkpoint that fails half-way leaves the previous one intact and no temporary file */
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {1500, 1500};
        setrlimit(RLIMIT_FSIZE, &rl);
        carlo_frame h;
        make_frame(&h, 4);
        int rc = traj_checkpoint_save(path, &h);
        _exit(rc != 0 && strstr(carlo_errmsg(), "previous checkpoint") ? 0 : 1);
    }
    int status;
    waitpid(pid, &status, 0);
    ok = traj_checkpoint_load(path, &g) == 0 && frames_equal(&f, &g, why, sizeof why);
    carlo_frame_free(&g);
    char cmd[800];
    snprintf(cmd, sizeof cmd, "ls %s | grep -q tmp", dir);
    int leftovers = system(cmd) == 0;
    CHECK("unit/traj/checkpoint-atomic", WIFEXITED(status) && WEXITSTATUS(status) == 0 && ok &&
          !leftovers, "status %d, intact %d, temporary files left %d", status, ok, leftovers);
    carlo_frame_free(&f);
}


/* ---------- files: nothing lost, nothing left behind ---------- */

/* A damaged 64-byte header: every frame carries its own CRCs, so the frames are recovered by
 * scanning; appending writes the header anew. */
static void test_damaged_header(void)
{
    const char *path = tmp("hdr.ctr");
    write_frames(path, 3, 0, 1);
    size_t n;
    uint8_t *b = read_file(path, &n), *c = malloc(n);
    int bad = 0;
    char why[300] = "", first[320] = "";
    for (int i = 0; i < 4; i++) {
        memcpy(c, b, n);
        if (i == 0)
            c[8] ^= 4;                /* the version, under a CRC that no longer matches */
        else if (i == 1)
            memset(c, 0, CTR_HEADER_BYTES);
        else if (i == 2)
            c[1] ^= 1;                /* a bit of the magic */
        else
            memset(c + 16, 0xff, 32); /* the writer's name */
        int rc = read_all_match(mem_file(c, n), 3, why, sizeof why);
        if (rc && !bad++)
            snprintf(first, sizeof first, "case %d: %s", i, why);
    }
    CHECK("unit/traj/damaged-header-frames-recovered", bad == 0, "%d of 4 cases: %s", bad, first);
    const char *apath = tmp("hdr-append.ctr");
    write_file(apath, c, n);
    traj_file *t = open_opts(apath, 'a', 0, 0);
    carlo_frame f;
    make_frame(&f, 3);
    int ok = t && traj_write(t, &f) == 0;
    carlo_frame_free(&f);
    ok = ok && traj_close(t) == 0;
    size_t m;
    uint8_t *after = read_file(apath, &m);
    ok = ok && m > CTR_HEADER_BYTES && memcmp(after, b, CTR_HEADER_BYTES) == 0 &&
         read_all_match(apath, 4, why, sizeof why) == 0;
    CHECK("unit/traj/damaged-header-rewritten-by-append", ok, "%s", t ? why : carlo_errmsg());
    free(after);
    free(b);
    free(c);
}

/* Two chunk entries pointing at one payload (all CRCs fixed): refused, since entries sharing
 * payloads let a few hundred KiB claim gigabytes. */
static void test_shared_payload(void)
{
    const char *path = tmp("shared.ctr");
    float a[256], z[256];
    for (int i = 0; i < 256; i++) {
        a[i] = (float)i * 0.5f;
        z[i] = (float)-i;
    }
    carlo_frame f;
    carlo_frame_init(&f);
    carlo_frame_add(&f, "log/a", CARLO_F32, 256, 1, a);
    carlo_frame_add(&f, "log/b", CARLO_F32, 256, 1, z);
    traj_file *t = open_opts(path, 'w', 0, 0);
    int ok = t && traj_write(t, &f) == 0 && traj_close(t) == 0;
    carlo_frame_free(&f);
    size_t n;
    uint8_t *b = ok ? read_file(path, &n) : NULL;
    if (b) {
        uint8_t *h = b + CTR_HEADER_BYTES, *e0 = h + CTR_HEAD_BYTES, *e1 = e0 + CTR_ENTRY_BYTES;
        memcpy(e1 + 64, e0 + 64, 48); /* type, codec, CRC, shape, offset, bytes, precision */
        ctr_put32(h + 36, (uint32_t)crc32(0, e0, 2 * CTR_ENTRY_BYTES));
        ctr_put32(h + 44, (uint32_t)crc32(0, h, 44));
        ctr_put32(h + ctr_get64(h + 24) - CTR_TAIL_BYTES + 4, ctr_get32(h + 44));
        write_file(path, b, n);
    }
    free(b);
    t = ok ? open_opts(path, 'r', 0, 0) : NULL;
    carlo_frame g;
    int rc = t ? traj_read_frame(t, 0, &g) : 0;
    if (rc == 0 && t)
        carlo_frame_free(&g);
    CHECK("unit/traj/shared-payload-refused", t && rc == -1 && strstr(carlo_errmsg(), "overlaps"),
          "rc %d: %s", rc, carlo_errmsg());
    traj_close(t);
}

/* 16 MiB of "CFRM" where a frame was, in a file without an index: the scan reads through a
 * buffer (it made one read per 4 bytes: 11 s) and finds the frame after it. */
static void test_scan_damaged_stretch(void)
{
    const char *path = tmp("stretch.ctr");
    size_t big = 16u << 20;
    uint8_t *junk = malloc(big);
    for (size_t i = 0; i < big; i += 8) {
        uint64_t v = rnd();
        memcpy(junk + i, &v, 8);
    }
    traj_file *t = open_opts(path, 'w', 0, 2);
    carlo_frame f;
    make_frame(&f, 0);
    int ok = t && traj_write(t, &f) == 0;
    carlo_frame_free(&f);
    carlo_frame_init(&f);
    carlo_frame_add_u64(&f, "configuration/step", 100);
    carlo_frame_add(&f, "log/junk", CARLO_U8, big, 1, junk);
    ok = ok && traj_write(t, &f) == 0;
    carlo_frame_free(&f);
    make_frame(&f, 2);
    ok = ok && traj_write(t, &f) == 0 && traj_close(t) == 0;
    carlo_frame_free(&f);
    size_t n;
    uint8_t *b = read_file(path, &n);
    uint64_t end[4];
    size_t nf = frame_ends(b, n, end, 4);
    ok = ok && nf == 3;
    for (uint64_t i = ok ? end[0] : n; i + 4 <= end[1]; i += 4)
        memcpy(b + i, "CFRM", 4);
    const char *cut = mem_file(b, ok ? end[2] : 0); /* the index gone: the reader scans */
    struct timespec t0, t1; /* CPU time (system calls included), not disturbed by a busy machine */
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    t = ok ? open_opts(cut, 'r', 0, 0) : NULL;
    uint64_t count = t ? traj_count(t) : 0;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    double sec = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    carlo_frame g, want;
    make_frame(&want, 2);
    char why[200] = "";
    int last = t && count == 3 && traj_read_frame(t, 2, &g) == 0;
    if (last) {
        last = frames_equal(&want, &g, why, sizeof why);
        carlo_frame_free(&g);
    }
    int damaged = t && count == 3 && traj_read_frame(t, 1, &g) == -1 &&
                  strstr(carlo_errmsg(), "frame 2 is damaged");
    carlo_frame_free(&want);
    traj_close(t);
    CHECK("unit/traj/scan-damaged-16MiB-buffered", ok && last && damaged && sec < 0.5,
          "%llu frames, frame 3 read %d, frame 2 damaged %d, %.2f s of CPU", (unsigned long long)count,
          last, damaged, sec);
    free(b);
    free(junk);
}

/* /proc reports 0 bytes and reads text: refused, not opened as an empty trajectory */
static void test_proc_file(void)
{
    traj_file *t = open_opts("/proc/version", 'r', 0, 0);
    CHECK("unit/traj/proc-file-refused", !t && strstr(carlo_errmsg(), "/proc/version") &&
          strstr(carlo_errmsg(), "not a regular file of data"), "%s",
          t ? "opened" : carlo_errmsg());
    traj_close(t);
}

static int dir_has(const char *prefix)
{
    char cmd[900];
    snprintf(cmd, sizeof cmd, "ls -a %s | grep -q '^%s'", dir, prefix);
    return system(cmd) == 0;
}

/* A failed open leaves nothing: no 0-byte trajectory, no checkpoint's PATH.tmpPID */
static void test_failed_open_leaves_nothing(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {10, 10}; /* the 64-byte file header cannot be written */
        setrlimit(RLIMIT_FSIZE, &rl);
        traj_file *t = open_opts(tmp("nofile.ctr"), 'w', 0, 0);
        carlo_frame f;
        make_frame(&f, 1);
        int rc = traj_checkpoint_save(tmp("nockpt.ctr"), &f);
        _exit(!t && rc == -1 ? 0 : 1);
    }
    int status;
    waitpid(pid, &status, 0);
    int traj_left = dir_has("nofile"), ckpt_left = dir_has("nockpt");
    CHECK("unit/traj/failed-open-leaves-no-file", WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
          !traj_left && !ckpt_left, "status %d, trajectory left %d, checkpoint files left %d", status,
          traj_left, ckpt_left);
}

/* A checkpoint saved over a trajectory open for writing would replace it: every frame,
 * those written before and those after, would be lost. */
static void test_checkpoint_onto_writer(void)
{
    const char *path = tmp("live.ctr");
    traj_file *t = open_opts(path, 'w', 0, 2);
    int ok = t != NULL, saved = 0;
    for (int k = 0; ok && k < 4; k++) {
        carlo_frame f;
        make_frame(&f, k);
        ok = traj_write(t, &f) == 0;
        if (k == 1)
            saved = traj_checkpoint_save(path, &f);
        carlo_frame_free(&f);
    }
    char msg[700];
    snprintf(msg, sizeof msg, "%s", carlo_errmsg());
    ok = ok && traj_close(t) == 0;
    char why[300] = "";
    int rc = ok ? read_all_match(path, 4, why, sizeof why) : -9;
    CHECK("unit/traj/checkpoint-onto-open-writer-refused", saved == -1 &&
          strstr(msg, "open for writing") && rc == 0, "save %d (%s), the trajectory: %s", saved, msg,
          why);
}

/* Saving through a symbolic link writes the file the link names (beside it, its temporary
 * file); the link stays a link. A dangling link's target is created. */
static void test_checkpoint_symlink(void)
{
    char sub[700], target[800], cmd[1800];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    mkdir(sub, 0777);
    snprintf(target, sizeof target, "%s/real.ctr", sub);
    const char *link = tmp("link.ctr"), *dangling = tmp("dangling.ctr");
    carlo_frame f, g;
    make_frame(&f, 2);
    int ok = traj_checkpoint_save(target, &f) == 0 && symlink("sub/real.ctr", link) == 0 &&
             symlink("sub/later.ctr", dangling) == 0;
    carlo_frame_free(&f);
    make_frame(&f, 5);
    ok = ok && traj_checkpoint_save(link, &f) == 0 && traj_checkpoint_save(dangling, &f) == 0;
    struct stat st1, st2;
    int links = lstat(link, &st1) == 0 && S_ISLNK(st1.st_mode) && lstat(dangling, &st2) == 0 &&
                S_ISLNK(st2.st_mode);
    char why[200] = "";
    int same = traj_checkpoint_load(target, &g) == 0 && frames_equal(&f, &g, why, sizeof why);
    carlo_frame_free(&g);
    snprintf(cmd, sizeof cmd, "%s/later.ctr", sub);
    same = same && traj_checkpoint_load(cmd, &g) == 0 && frames_equal(&f, &g, why, sizeof why);
    carlo_frame_free(&g);
    carlo_frame_free(&f);
    snprintf(cmd, sizeof cmd, "ls -a %s %s | grep -q '[.]tmp[0-9]'", dir, sub);
    int temps = system(cmd) == 0;
    CHECK("unit/traj/checkpoint-through-symlink", ok && links && same && !temps,
          "saved %d, links kept %d, target written %d (%s), temporary files left %d", ok, links, same,
          why, temps);
}

/* A run killed (SIGKILL) while saving leaves PATH.tmpPID; the next save of that path removes
 * it, and keeps those of processes that are alive. */
static void test_stale_temps(void)
{
    const char *path = tmp("killed-save.ctr");
    size_t nbig = 1 << 23;
    float *x = malloc(nbig * sizeof *x);
    carlo_frame big;
    big_frame(&big, x, nbig);
    int seen = 0;
    pid_t pid = -1;
    char stale[800];
    for (int attempt = 0; attempt < 5 && !seen; attempt++) {
        pid = fork();
        if (pid == 0) {
            for (;;)
                traj_checkpoint_save(path, &big);
        }
        snprintf(stale, sizeof stale, "%s.tmp%ld", path, (long)pid);
        for (int i = 0; i < 20000 && access(stale, F_OK); i++)
            usleep(500);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        seen = access(stale, F_OK) == 0; /* else it was renamed in between: again */
    }
    char alive[800], other[800];
    snprintf(alive, sizeof alive, "%s.tmp%ld", path, (long)getppid());
    snprintf(other, sizeof other, "%s.tmpfoo", path);
    write_file(alive, (const uint8_t *)CTR_MAGIC, 8);
    write_file(other, (const uint8_t *)CTR_MAGIC, 8);
    carlo_frame f;
    make_frame(&f, 1);
    int ok = traj_checkpoint_save(path, &f) == 0;
    carlo_frame_free(&f);
    int gone = access(stale, F_OK) != 0, kept = access(alive, F_OK) == 0 && access(other, F_OK) == 0;
    CHECK("unit/traj/stale-temp-of-killed-save-removed", seen && ok && gone && kept,
          "temporary file seen %d, saved %d, stale removed %d, others kept %d", seen, ok, gone, kept);
    unlink(alive);
    unlink(other);
    carlo_frame_free(&big);
    free(x);
}

int main(void)
{
    const char *base = getenv("CARLO_TEST_TMP");
    snprintf(dir, sizeof dir, "%s/unit-traj-XXXXXX", base ? base : "/tmp");
    if (!mkdtemp(dir)) {
        printf("FAIL unit/traj/setup: mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, NULL);
    test_roundtrip();
    test_large_blocks();
    test_quantized();
    test_truncation();
    test_flips();
    test_forged_size();
    test_killed_and_append();
    test_failing_writes();
    test_checkpoint();
    test_damaged_header();
    test_shared_payload();
    test_scan_damaged_stretch();
    test_proc_file();
    test_failed_open_leaves_nothing();
    test_checkpoint_onto_writer();
    test_checkpoint_symlink();
    test_stale_temps();
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) {
    }
    return check_failed;
}
