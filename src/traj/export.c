/* export.c — see export.h. GSD: the version 2.0 file layer written here (256-byte header,
 * chunk data, index of 32-byte entries sorted by frame, namelist of NUL-separated names in
 * 64-byte units) with HOOMD's "hoomd" schema 1.4 names; frames without particles are
 * skipped. XYZ: extended XYZ with the box as Lattice= and Origin= (boxes are centred on the
 * origin). PNG: lattice/... chunks, spins by state, other fields by a colour ramp. */
#include "traj/export.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/error.h"
#include "core/png.h"
#include "core/progress.h"
#include "traj/traj.h"

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static const traj_chunk_info *find_info(const traj_frame_info *fi, const char *name)
{
    for (int i = 0; i < fi->nchunks; i++)
        if (strcmp(fi->chunk[i].name, name) == 0)
            return &fi->chunk[i];
    return NULL;
}

static void *read_raw(traj_file *t, uint64_t k, const traj_chunk_info *c)
{
    size_t bytes = (size_t)(c->rows * c->cols) * carlo_dtype_size(c->type);
    void *buf = carlo_malloc(bytes, "an exported chunk");
    if (buf && traj_read_chunk(t, k, c->name, c->type, c->rows, c->cols, buf, bytes)) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* A float chunk as f32 rows x out_cols (columns past the chunk's are 0). */
static float *read_f32(traj_file *t, uint64_t k, const traj_chunk_info *c, uint64_t out_cols)
{
    if (c->type != CARLO_F32 && c->type != CARLO_F64) {
        carlo_seterr("chunk %s is %s, not floating point", c->name, carlo_dtype_name(c->type));
        return NULL;
    }
    void *raw = read_raw(t, k, c);
    float *out = raw ? carlo_calloc((size_t)(c->rows * out_cols) + 1, sizeof *out, "an exported chunk") : NULL;
    if (!out) {
        free(raw);
        return NULL;
    }
    for (uint64_t i = 0; i < c->rows; i++)
        for (uint64_t d = 0; d < c->cols && d < out_cols; d++) {
            size_t s = (size_t)(i * c->cols + d);
            out[i * out_cols + d] = c->type == CARLO_F32 ? ((float *)raw)[s] : (float)((double *)raw)[s];
        }
    free(raw);
    return out;
}

typedef struct particle_frame {
    uint64_t step, N;
    int dims;
    float box[6];
    float *pos; /* N x 3 */
} particle_frame;

/* The particle configuration of frame k; 1 when the frame has no particles/position. */
static int read_particles(traj_file *t, uint64_t k, const traj_frame_info *fi, particle_frame *p)
{
    memset(p, 0, sizeof *p);
    const traj_chunk_info *pc = find_info(fi, "particles/position");
    if (!pc)
        return 1;
    if (pc->cols != 2 && pc->cols != 3)
        return carlo_seterr("frame %llu: particles/position has %llu columns (2 or 3 expected)",
                            (unsigned long long)k + 1, (unsigned long long)pc->cols);
    const traj_chunk_info *bc = find_info(fi, "configuration/box");
    if (!bc || bc->rows * bc->cols != 6)
        return carlo_seterr("frame %llu has particles but no configuration/box (6 numbers)",
                            (unsigned long long)k + 1);
    float *box = read_f32(t, k, bc, bc->cols);
    if (!box)
        return -1;
    memcpy(p->box, box, sizeof p->box);
    free(box);
    p->N = pc->rows;
    p->step = fi->has_step ? fi->step : k;
    p->dims = pc->cols == 2 || !(p->box[2] > 0) ? 2 : 3;
    const traj_chunk_info *dc = find_info(fi, "configuration/dimensions");
    if (dc && dc->type == CARLO_U8 && dc->rows * dc->cols == 1) {
        uint8_t d;
        if (traj_read_chunk(t, k, dc->name, CARLO_U8, 1, 1, &d, 1))
            return -1;
        if (d == 2 || d == 3)
            p->dims = d;
    }
    p->pos = read_f32(t, k, pc, 3);
    return p->pos ? 0 : -1;
}

/* ---------- GSD ---------- */

typedef struct gsd_entry {
    uint64_t frame, N;
    int64_t location;
    uint32_t M;
    uint16_t id;
    uint8_t type;
} gsd_entry;

typedef struct gsd_out {
    FILE *f;
    const char *path;
    uint64_t pos;
    gsd_entry *idx;
    size_t n, cap;
    char names[512][64];
    size_t nnames;
} gsd_out;

static int gsd_type(carlo_dtype t)
{
    static const int map[CARLO_NTYPES] = {
        [CARLO_U8] = 1, [CARLO_U16] = 2, [CARLO_U32] = 3, [CARLO_U64] = 4, [CARLO_I8] = 5,
        [CARLO_I16] = 6, [CARLO_I32] = 7, [CARLO_I64] = 8, [CARLO_F32] = 9, [CARLO_F64] = 10};
    return map[t];
}

static int gsd_write(gsd_out *g, const void *p, size_t n)
{
    if (n && fwrite(p, 1, n, g->f) != n)
        return carlo_seterr("writing %s failed: %s", g->path, strerror(errno));
    g->pos += n;
    return 0;
}

static int gsd_chunk(gsd_out *g, uint64_t frame, const char *name, int type, uint64_t N, uint32_t M,
                     const void *data, size_t elem)
{
    if (N == 0 || M == 0)
        return 0;
    size_t id = 0;
    while (id < g->nnames && strcmp(g->names[id], name))
        id++;
    if (id == g->nnames) {
        if (g->nnames == sizeof g->names / sizeof g->names[0])
            return carlo_seterr("%s: more than %zu chunk names", g->path, g->nnames);
        snprintf(g->names[g->nnames++], 64, "%s", name);
    }
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 256;
        gsd_entry *ne = realloc(g->idx, cap * sizeof *ne);
        if (!ne)
            return carlo_seterr("out of host memory for the GSD index");
        g->idx = ne;
        g->cap = cap;
    }
    gsd_entry *e = &g->idx[g->n++];
    e->frame = frame;
    e->N = N;
    e->M = M;
    e->location = (int64_t)g->pos;
    e->id = (uint16_t)id;
    e->type = (uint8_t)type;
    return gsd_write(g, data, (size_t)(N * M) * elem);
}

static void put_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static int gsd_finish(gsd_out *g)
{
    uint64_t index_at = g->pos, nidx = g->n ? g->n : 1;
    for (size_t i = 0; i < nidx; i++) {
        uint8_t e[32];
        memset(e, 0, sizeof e);
        if (i < g->n) {
            put_le(e, g->idx[i].frame, 8);
            put_le(e + 8, g->idx[i].N, 8);
            put_le(e + 16, (uint64_t)g->idx[i].location, 8);
            put_le(e + 24, g->idx[i].M, 4);
            put_le(e + 28, g->idx[i].id, 2);
            e[30] = g->idx[i].type;
        }
        if (gsd_write(g, e, sizeof e))
            return -1;
    }
    uint64_t names_at = g->pos, bytes = 0;
    for (size_t i = 0; i < g->nnames; i++) {
        size_t len = strlen(g->names[i]) + 1;
        if (gsd_write(g, g->names[i], len))
            return -1;
        bytes += len;
    }
    uint64_t units = (bytes + 63) / 64;
    if (units == 0)
        units = 1;
    static const uint8_t zeros[64];
    if (gsd_write(g, zeros, (size_t)(units * 64 - bytes)))
        return -1;
    uint8_t h[256];
    memset(h, 0, sizeof h);
    put_le(h, 0x65DF65DF65DF65DFull, 8);
    put_le(h + 8, index_at, 8);
    put_le(h + 16, nidx, 8);
    put_le(h + 24, names_at, 8);
    put_le(h + 32, units, 8);
    put_le(h + 40, (1u << 16) | 4u, 4); /* schema hoomd 1.4 */
    put_le(h + 44, 2u << 16, 4);        /* file layer 2.0 */
    memcpy(h + 48, "carlo", 5);
    memcpy(h + 112, "hoomd", 5);
    if (fseek(g->f, 0, SEEK_SET) || fwrite(h, 1, sizeof h, g->f) != sizeof h)
        return carlo_seterr("writing %s failed: %s", g->path, strerror(errno));
    return 0;
}

/* HOOMD's per-particle chunks, stored as GSD expects them. */
static const struct {
    const char *name;
    carlo_dtype type;
    uint32_t cols;
} GSD_PARTICLES[] = {
    {"particles/velocity", CARLO_F32, 3}, {"particles/orientation", CARLO_F32, 4},
    {"particles/angmom", CARLO_F32, 4}, {"particles/moment_inertia", CARLO_F32, 3},
    {"particles/mass", CARLO_F32, 1}, {"particles/charge", CARLO_F32, 1},
    {"particles/diameter", CARLO_F32, 1}, {"particles/typeid", CARLO_U32, 1},
    {"particles/image", CARLO_I32, 3}, {"particles/body", CARLO_I32, 1}};

static int gsd_frame(gsd_out *g, traj_file *t, uint64_t k, const traj_frame_info *fi,
                     const particle_frame *p, uint64_t out)
{
    uint8_t dims = (uint8_t)p->dims;
    uint32_t N = (uint32_t)p->N;
    if (gsd_chunk(g, out, "configuration/step", 4, 1, 1, &p->step, 8) ||
        gsd_chunk(g, out, "configuration/dimensions", 1, 1, 1, &dims, 1) ||
        gsd_chunk(g, out, "configuration/box", 9, 6, 1, p->box, 4) ||
        gsd_chunk(g, out, "particles/N", 3, 1, 1, &N, 4) ||
        gsd_chunk(g, out, "particles/position", 9, p->N, 3, p->pos, 4))
        return -1;
    for (size_t j = 0; j < sizeof GSD_PARTICLES / sizeof GSD_PARTICLES[0]; j++) {
        const traj_chunk_info *c = find_info(fi, GSD_PARTICLES[j].name);
        if (!c || c->rows != p->N || c->cols != GSD_PARTICLES[j].cols)
            continue;
        void *data = NULL;
        if (GSD_PARTICLES[j].type == CARLO_F32)
            data = read_f32(t, k, c, c->cols);
        else if (c->type == GSD_PARTICLES[j].type)
            data = read_raw(t, k, c);
        else
            continue;
        if (!data)
            return -1;
        int rc = gsd_chunk(g, out, c->name, gsd_type(GSD_PARTICLES[j].type), c->rows, (uint32_t)c->cols,
                           data, 4);
        free(data);
        if (rc)
            return -1;
    }
    for (int i = 0; i < fi->nchunks; i++) {
        const traj_chunk_info *c = &fi->chunk[i];
        int types = strcmp(c->name, "particles/types") == 0;
        if (!types && strncmp(c->name, "log/", 4))
            continue;
        if (c->cols > UINT32_MAX || (types && c->type != CARLO_U8 && c->type != CARLO_I8))
            continue;
        void *data = read_raw(t, k, c);
        if (!data)
            return -1;
        int rc = gsd_chunk(g, out, c->name, types ? 5 : gsd_type(c->type), c->rows, (uint32_t)c->cols,
                           data, carlo_dtype_size(c->type));
        free(data);
        if (rc)
            return -1;
    }
    return 0;
}

/* ---------- XYZ ---------- */

typedef struct text_out {
    FILE *f;
    gzFile z;
    const char *path;
    char buf[1 << 16];
    size_t n;
} text_out;

static int text_flush(text_out *o)
{
    if (!o->n)
        return 0;
    int bad = o->z ? gzwrite(o->z, o->buf, (unsigned)o->n) != (int)o->n
                   : fwrite(o->buf, 1, o->n, o->f) != o->n;
    o->n = 0;
    return bad ? carlo_seterr("writing %s failed: %s", o->path, strerror(errno)) : 0;
}

static int text_printf(text_out *o, const char *fmt, ...) CARLO_PRINTF(2, 3);
static int text_printf(text_out *o, const char *fmt, ...)
{
    if (sizeof o->buf - o->n < 512 && text_flush(o))
        return -1;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(o->buf + o->n, sizeof o->buf - o->n, fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t)w >= sizeof o->buf - o->n)
        return carlo_seterr("xyz: a line too long");
    o->n += (size_t)w;
    return 0;
}

/* Type names: particles/types indexed by particles/typeid, else "A" for every particle. */
static int type_names(traj_file *t, uint64_t k, const traj_frame_info *fi, uint64_t N, char (**names)[64],
                      uint32_t **tid, uint64_t *ntypes)
{
    *names = NULL;
    *tid = NULL;
    *ntypes = 0;
    const traj_chunk_info *tc = find_info(fi, "particles/types");
    const traj_chunk_info *ic = find_info(fi, "particles/typeid");
    if (!tc || !ic || (tc->type != CARLO_U8 && tc->type != CARLO_I8) || ic->type != CARLO_U32 ||
        ic->rows != N || ic->cols != 1 || tc->rows == 0 || tc->rows > 65536)
        return 0;
    uint8_t *raw = read_raw(t, k, tc);
    *tid = read_raw(t, k, ic);
    *names = calloc((size_t)tc->rows, 64);
    if (!raw || !*tid || !*names) {
        free(raw);
        free(*tid);
        free(*names);
        *tid = NULL;
        *names = NULL;
        return -1;
    }
    for (uint64_t i = 0; i < tc->rows; i++) {
        size_t w = (size_t)(tc->cols < 63 ? tc->cols : 63);
        memcpy((*names)[i], raw + i * tc->cols, w);
        for (size_t c = 0; c < 64; c++)
            if ((*names)[i][c] == ' ' || (*names)[i][c] == '"')
                (*names)[i][c] = '_';
        if (!(*names)[i][0])
            snprintf((*names)[i], 64, "T%llu", (unsigned long long)i);
    }
    free(raw);
    *ntypes = tc->rows;
    return 0;
}

/* ASE reads species as chemical symbols only: other type names go as X (its dummy atom)
 * there, and every name goes in the type_name column. */
static int is_element(const char *s)
{
    static const char *const el =
        " H He Li Be B C N O F Ne Na Mg Al Si P S Cl Ar K Ca Sc Ti V Cr Mn Fe Co Ni Cu Zn Ga Ge As"
        " Se Br Kr Rb Sr Y Zr Nb Mo Tc Ru Rh Pd Ag Cd In Sn Sb Te I Xe Cs Ba La Ce Pr Nd Pm Sm Eu Gd"
        " Tb Dy Ho Er Tm Yb Lu Hf Ta W Re Os Ir Pt Au Hg Tl Pb Bi Po At Rn Fr Ra Ac Th Pa U Np Pu Am"
        " Cm Bk Cf Es Fm Md No Lr Rf Db Sg Bh Hs Mt Ds Rg Cn Nh Fl Mc Lv Ts Og X ";
    size_t n = strlen(s);
    if (n == 0 || n > 2)
        return 0;
    char key[6] = {' ', s[0], n > 1 ? s[1] : ' ', n > 1 ? ' ' : 0, 0, 0};
    return strstr(el, key) != NULL;
}

static int xyz_frame(text_out *o, traj_file *t, uint64_t k, const traj_frame_info *fi,
                     const particle_frame *p)
{
    const float *b = p->box;
    double a1[3] = {b[0], 0, 0}, a2[3] = {(double)b[3] * b[1], b[1], 0},
           a3[3] = {(double)b[4] * b[2], (double)b[5] * b[2], b[2]};
    double origin[3];
    for (int d = 0; d < 3; d++)
        origin[d] = -0.5 * (a1[d] + a2[d] + a3[d]) + 0.0; /* no -0 */
    char (*names)[64];
    uint32_t *tid;
    uint64_t nt;
    if (type_names(t, k, fi, p->N, &names, &tid, &nt))
        return -1;
    int rc = text_printf(o, "%llu\n", (unsigned long long)p->N) ||
             text_printf(o, "Lattice=\"%.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g\" "
                            "Origin=\"%.9g %.9g %.9g\" Properties=species:S:1:pos:R:3:type_name:S:1 "
                            "pbc=\"T T %c\" step=%llu frame=%llu\n",
                         a1[0], a1[1], a1[2], a2[0], a2[1], a2[2], a3[0], a3[1], a3[2], origin[0],
                         origin[1], origin[2], p->dims == 3 ? 'T' : 'F', (unsigned long long)p->step,
                         (unsigned long long)k + 1);
    for (uint64_t i = 0; !rc && i < p->N; i++) {
        const char *name = names && tid[i] < nt ? names[tid[i]] : "A";
        const float *r = p->pos + 3 * i;
        rc = text_printf(o, "%s %.9g %.9g %.9g %s\n", is_element(name) ? name : "X", r[0], r[1], r[2],
                         name);
    }
    free(names);
    free(tid);
    return rc;
}

/* ---------- PNG ---------- */

static const traj_chunk_info *lattice_chunk(const traj_frame_info *fi, const char *want)
{
    if (want)
        return find_info(fi, want);
    const traj_chunk_info *c = find_info(fi, "lattice/spins");
    if (c)
        return c;
    for (int i = 0; i < fi->nchunks; i++)
        if (strncmp(fi->chunk[i].name, "lattice/", 8) == 0 && fi->chunk[i].cols > 1)
            return &fi->chunk[i];
    return NULL;
}

static char *numbered(const char *out, uint64_t k)
{
    size_t n = strlen(out);
    char *p = carlo_malloc(n + 32, "a file name");
    if (!p)
        return NULL;
    size_t stem = ends_with(out, ".png") ? n - 4 : n;
    snprintf(p, n + 32, "%.*s-%06llu.png", (int)stem, out, (unsigned long long)k + 1);
    return p;
}

static int png_frame(traj_file *t, uint64_t k, const traj_frame_info *fi, const traj_export_opts *o,
                     const char *path)
{
    const traj_chunk_info *c = lattice_chunk(fi, o->chunk);
    if (!c)
        return carlo_seterr("frame %llu has no %s to draw", (unsigned long long)k + 1,
                            o->chunk ? o->chunk : "lattice/... chunk of 2 or more columns");
    if (c->rows < 1 || c->cols < 1 || c->rows > (1 << 24) || c->cols > (1 << 22))
        return carlo_seterr("frame %llu: %s is %llu x %llu, which does not fit an image",
                            (unsigned long long)k + 1, c->name, (unsigned long long)c->rows,
                            (unsigned long long)c->cols);
    int scale = o->scale > 0 ? o->scale : 1;
    void *raw = read_raw(t, k, c);
    if (!raw)
        return -1;
    const traj_chunk_info *qc = find_info(fi, "lattice/q");
    uint32_t q = 0;
    if (qc && qc->type == CARLO_U32 && qc->rows * qc->cols == 1 &&
        traj_read_chunk(t, k, qc->name, CARLO_U32, 1, 1, &q, 4)) {
        free(raw);
        return -1;
    }
    int rc;
    if (c->type == CARLO_U8 && q >= 2 && o->lo == o->hi) {
        rc = carlo_png_states(path, raw, (int)c->rows, (int)c->cols, (int)q, scale);
    } else {
        size_t n = (size_t)(c->rows * c->cols);
        double lo = o->lo, hi = o->hi;
        if (lo == hi) {
            lo = INFINITY;
            hi = -INFINITY;
            for (size_t i = 0; i < n; i++) {
                carlo_array a = {.type = c->type, .n = n, .data = raw};
                double v = carlo_array_get(&a, i);
                if (v < lo) lo = v;
                if (v > hi) hi = v;
            }
        }
        size_t w = (size_t)c->cols * (size_t)scale, h = (size_t)c->rows * (size_t)scale;
        uint8_t *rgb = carlo_malloc(carlo_mulsize(w * 3, h), "a PNG image");
        if (!rgb) {
            free(raw);
            return -1;
        }
        carlo_array a = {.type = c->type, .n = n, .data = raw};
        for (size_t y = 0; y < h; y++)
            for (size_t x = 0; x < w; x++) {
                double v = carlo_array_get(&a, (y / (size_t)scale) * (size_t)c->cols + x / (size_t)scale);
                carlo_ramp_color(hi > lo ? (v - lo) / (hi - lo) : 0.5, rgb + (y * w + x) * 3);
            }
        rc = carlo_png_write(path, (int)w, (int)h, rgb);
        free(rgb);
    }
    free(raw);
    return rc;
}

/* ---------- driver ---------- */

int traj_export(const char *in, const char *out, const traj_export_opts *o)
{
    enum { GSD, XYZ, XYZGZ, PNG } kind;
    if (ends_with(out, ".gsd"))
        kind = GSD;
    else if (ends_with(out, ".xyz"))
        kind = XYZ;
    else if (ends_with(out, ".xyz.gz"))
        kind = XYZGZ;
    else if (ends_with(out, ".png"))
        kind = PNG;
    else
        return carlo_seterr("%s: the output's extension picks the format: .gsd, .xyz, .xyz.gz or .png",
                            out);
    traj_options to;
    traj_options_init(&to);
    to.quiet = o->quiet;
    traj_file *t = traj_open(in, 'r', &to);
    if (!t)
        return -1;
    uint64_t n = traj_count(t);
    uint64_t first = o->first ? o->first - 1 : 0, last = o->last ? o->last : n;
    if (last > n)
        last = n;
    if (n == 0 || first >= last) {
        traj_close(t);
        return carlo_seterr("%s: no frames to export (%llu frames in the file, asked for %llu to %llu)",
                            in, (unsigned long long)n, (unsigned long long)first + 1,
                            (unsigned long long)last);
    }
    traj_frame_info *fi = carlo_malloc(sizeof *fi, "frame information");
    gsd_out *g = NULL;
    text_out *txt = NULL;
    int rc = fi ? 0 : -1;
    if (!rc && kind == GSD) {
        g = carlo_calloc(1, sizeof *g, "a GSD writer");
        rc = g ? 0 : -1;
        if (g && !(g->f = fopen(out, "wb")))
            rc = carlo_seterr("cannot open %s for writing: %s", out, strerror(errno));
        if (!rc) {
            g->path = out;
            static const uint8_t zeros[256];
            rc = gsd_write(g, zeros, sizeof zeros);
        }
    } else if (!rc && (kind == XYZ || kind == XYZGZ)) {
        txt = carlo_calloc(1, sizeof *txt, "an XYZ writer");
        rc = txt ? 0 : -1;
        if (txt) {
            txt->path = out;
            if (kind == XYZ ? !(txt->f = fopen(out, "w")) : !(txt->z = gzopen(out, "wb6")))
                rc = carlo_seterr("cannot open %s for writing: %s", out, strerror(errno));
        }
    }
    uint64_t written = 0, skipped = 0;
    for (uint64_t k = first; !rc && k < last; k++) {
        if (traj_frame_info_get(t, k, fi)) {
            rc = -1;
            break;
        }
        if (kind == PNG) {
            char *path = last - first == 1 ? NULL : numbered(out, k);
            rc = png_frame(t, k, fi, o, path ? path : out);
            free(path);
            written++;
            continue;
        }
        particle_frame p;
        int got = read_particles(t, k, fi, &p);
        if (got == 1) {
            skipped++;
            continue;
        }
        if (got == 0)
            rc = kind == GSD ? gsd_frame(g, t, k, fi, &p, written) : xyz_frame(txt, t, k, fi, &p);
        else
            rc = -1;
        free(p.pos);
        written++;
    }
    if (!rc && written == 0)
        rc = carlo_seterr("%s: no frame has particles/position (lattice frames export to .png)", in);
    if (g) {
        if (!rc)
            rc = gsd_finish(g);
        if (g->f && fclose(g->f) && !rc)
            rc = carlo_seterr("writing %s failed: %s", out, strerror(errno));
        free(g->idx);
        free(g);
    }
    if (txt) {
        if (!rc)
            rc = text_flush(txt);
        if (txt->f && fclose(txt->f) && !rc)
            rc = carlo_seterr("writing %s failed: %s", out, strerror(errno));
        if (txt->z && gzclose(txt->z) != Z_OK && !rc)
            rc = carlo_seterr("writing %s failed", out);
        free(txt);
    }
    if (rc && (kind == GSD || kind == XYZ || kind == XYZGZ))
        remove(out); /* no partial file that looks like a result */
    if (!rc && skipped && !o->quiet && !carlo_quiet)
        fprintf(stderr, "carlo export: %llu frames without particles/position skipped\n",
                (unsigned long long)skipped);
    free(fi);
    traj_close(t);
    return rc;
}

static void export_usage(FILE *f)
{
    fprintf(f, "usage: carlo export [options] IN.ctr OUT.gsd|OUT.xyz|OUT.xyz.gz|OUT.png\n"
               "  --frames A:B     frames A to B (from 1; A: or :B leave an end open; one number: one frame)\n"
               "  --chunk NAME     PNG: the lattice chunk to draw (default lattice/spins)\n"
               "  --scale N        PNG: pixels per site (default 1)\n"
               "  --range LO:HI    PNG: the values at the ends of the colour ramp (default: each frame's)\n"
               "  --quiet          no notices\n"
               "Several frames to PNG write OUT-000001.png, OUT-000002.png, ... (numbered by frame).\n");
}

static int parse_u64(const char *s, uint64_t *v)
{
    if (!*s)
        return 0;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || *end || x == 0 || s[0] == '-')
        return -1;
    *v = x;
    return 0;
}

int traj_export_main(int argc, char **argv)
{
    traj_export_opts o;
    memset(&o, 0, sizeof o);
    const char *files[2];
    int nfiles = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            export_usage(stdout);
            return 0;
        } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
            o.quiet = 1;
        } else if (strcmp(a, "--frames") == 0 && v) {
            const char *colon = strchr(v, ':');
            char lo[32] = "", hi[32] = "";
            if (colon) {
                snprintf(lo, sizeof lo, "%.*s", (int)(colon - v < 31 ? colon - v : 31), v);
                snprintf(hi, sizeof hi, "%s", colon + 1);
            } else {
                snprintf(lo, sizeof lo, "%s", v);
                snprintf(hi, sizeof hi, "%s", v);
            }
            if (parse_u64(lo, &o.first) || parse_u64(hi, &o.last) ||
                (o.first && o.last && o.first > o.last)) {
                fprintf(stderr, "carlo export: --frames takes A:B with 1 <= A <= B (got %s)\n", v);
                return 1;
            }
            i++;
        } else if (strcmp(a, "--chunk") == 0 && v) {
            o.chunk = v;
            i++;
        } else if (strcmp(a, "--scale") == 0 && v) {
            char *end;
            long s = strtol(v, &end, 10);
            if (*end || s < 1 || s > 64) {
                fprintf(stderr, "carlo export: --scale takes 1 to 64 (got %s)\n", v);
                return 1;
            }
            o.scale = (int)s;
            i++;
        } else if (strcmp(a, "--range") == 0 && v) {
            char *end;
            o.lo = strtod(v, &end);
            if (*end != ':' || (o.hi = strtod(end + 1, &end), *end) || !(o.hi > o.lo)) {
                fprintf(stderr, "carlo export: --range takes LO:HI with LO < HI (got %s)\n", v);
                return 1;
            }
            i++;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "carlo export: unknown option %s\n", a);
            export_usage(stderr);
            return 1;
        } else if (nfiles < 2) {
            files[nfiles++] = a;
        } else {
            export_usage(stderr);
            return 1;
        }
    }
    if (nfiles != 2) {
        export_usage(stderr);
        return 1;
    }
    if (traj_export(files[0], files[1], &o)) {
        fprintf(stderr, "carlo export: %s\n", carlo_errmsg());
        return 1;
    }
    return 0;
}
