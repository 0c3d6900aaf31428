/* export.c — see export.h. GSD: the version 2.0 file layer written here (256-byte header,
 * chunk data, index of 32-byte entries sorted by frame, namelist of NUL-separated names in
 * 64-byte units) with HOOMD's "hoomd" schema 1.4 names; frames without particles are
 * skipped. XYZ: extended XYZ with the box as Lattice= and Origin= (boxes are centred on the
 * origin). PNG: lattice/... chunks, spins by state, other fields by a colour ramp.
 *
 * Every frame is read whole before any of it is written, so that a damaged frame is either
 * refused or (--skip-damaged) left out, never half written. Ctrl-C stops at a frame boundary
 * and finishes the output (a valid file of the frames exported so far). */
#include "traj/export.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
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
    void *buf = carlo_malloc(bytes ? bytes : 1, "an exported chunk");
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

/* A file this export created: removed when the export fails, and only a regular file (never
 * a device such as /dev/full), through a symbolic link the file it names. */
static void remove_output(const char *path)
{
    char *real = realpath(path, NULL);
    struct stat st;
    if (real && stat(real, &st) == 0 && S_ISREG(st.st_mode))
        unlink(real);
    free(real);
}

/* ---------- GSD ---------- */

typedef struct gsd_entry {
    uint64_t frame, N;
    int64_t location;
    uint32_t M;
    uint16_t id;
    uint8_t type;
} gsd_entry;

/* One chunk of a frame: read first, written when the whole frame has been read. */
typedef struct gsd_item {
    char name[CARLO_CHUNK_NAME];
    int type;      /* GSD's type id */
    uint64_t N;
    uint32_t M;
    size_t elem;
    void *data;    /* owned */
} gsd_item;

/* A log/... quantity: GSD readers take a chunk missing from a frame from the first frame
 * (gsd.hoomd fails when the first frame lacks it), so every frame gets the last value. */
typedef struct gsd_log {
    char name[CARLO_CHUNK_NAME];
    uint64_t first;   /* the first frame (from 0) that holds it */
    gsd_item last;    /* the value written last (data NULL before the first) */
} gsd_log;

typedef struct gsd_out {
    FILE *f;
    const char *path;
    uint64_t pos;
    gsd_entry *idx;
    size_t n, cap;
    char names[512][64];
    size_t nnames;
    gsd_log *logs;
    size_t nlogs, caplogs;
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

/* Note log/... name of frame k (from 0) in the list of logs (the first pass). */
static int gsd_note_logs(gsd_out *g, const traj_frame_info *fi, uint64_t k)
{
    for (int i = 0; i < fi->nchunks; i++) {
        const char *name = fi->chunk[i].name;
        if (strncmp(name, "log/", 4))
            continue;
        size_t j = 0;
        while (j < g->nlogs && strcmp(g->logs[j].name, name))
            j++;
        if (j < g->nlogs)
            continue;
        if (g->nlogs == g->caplogs) {
            size_t cap = g->caplogs ? 2 * g->caplogs : 16;
            gsd_log *nl = realloc(g->logs, cap * sizeof *nl);
            if (!nl)
                return carlo_seterr("out of host memory for the list of log quantities");
            g->logs = nl;
            g->caplogs = cap;
        }
        gsd_log *l = &g->logs[g->nlogs++];
        memset(l, 0, sizeof *l);
        snprintf(l->name, sizeof l->name, "%s", name);
        l->first = k;
    }
    return 0;
}

/* Every log must be in the first exported frame: the later frames carry its last value. */
static int gsd_check_logs(const gsd_out *g, const char *in, uint64_t first)
{
    for (size_t j = 0; j < g->nlogs; j++)
        if (g->logs[j].first != first) {
            unsigned long long a = (unsigned long long)first + 1,
                               b = (unsigned long long)g->logs[j].first + 1;
            return carlo_seterr("%s: %s is in frame %llu but not in frame %llu, the first to export: "
                                "GSD readers take a missing value from the first frame (gsd.hoomd "
                                "fails on it); export from frame %llu on (--frames %llu:) or write "
                                "%s in every frame", in, g->logs[j].name, b, a, b, b, g->logs[j].name);
        }
    return 0;
}

static void gsd_free(gsd_out *g)
{
    for (size_t j = 0; j < g->nlogs; j++)
        free(g->logs[j].last.data);
    free(g->logs);
    free(g->idx);
    free(g);
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

#define GSD_ITEMS (sizeof GSD_PARTICLES / sizeof GSD_PARTICLES[0] + CARLO_FRAME_MAX)

typedef struct gsd_frame_data {
    gsd_item item[GSD_ITEMS];
    int n;
} gsd_frame_data;

static void gsd_frame_data_free(gsd_frame_data *d)
{
    for (int i = 0; i < d->n; i++)
        free(d->item[i].data);
    d->n = 0;
}

static void gsd_add(gsd_frame_data *d, const char *name, int type, uint64_t N, uint32_t M, size_t elem,
                    void *data)
{
    gsd_item *it = &d->item[d->n++];
    snprintf(it->name, sizeof it->name, "%s", name);
    it->type = type;
    it->N = N;
    it->M = M;
    it->elem = elem;
    it->data = data;
}

/* Read frame k's chunks beyond the configuration (0, or -1 with nothing kept). */
static int gsd_read(traj_file *t, uint64_t k, const traj_frame_info *fi, const particle_frame *p,
                    gsd_frame_data *d)
{
    d->n = 0;
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
            goto fail;
        gsd_add(d, c->name, gsd_type(GSD_PARTICLES[j].type), c->rows, (uint32_t)c->cols, 4, data);
    }
    for (int i = 0; i < fi->nchunks; i++) {
        const traj_chunk_info *c = &fi->chunk[i];
        int types = strcmp(c->name, "particles/types") == 0 || strcmp(c->name, "particles/type_shapes") == 0;
        if (!types && strncmp(c->name, "log/", 4))
            continue;
        if (c->cols > UINT32_MAX || (types && c->type != CARLO_U8 && c->type != CARLO_I8))
            continue;
        void *data = read_raw(t, k, c);
        if (!data)
            goto fail;
        gsd_add(d, c->name, types ? 5 : gsd_type(c->type), c->rows, (uint32_t)c->cols,
                carlo_dtype_size(c->type), data);
    }
    return 0;
fail:
    gsd_frame_data_free(d);
    return -1;
}

/* Write a frame read whole: the configuration, the particles, and every log (this frame's
 * value, else the last one). */
static int gsd_frame(gsd_out *g, const particle_frame *p, gsd_frame_data *d, uint64_t out,
                     uint64_t k)
{
    uint8_t dims = (uint8_t)p->dims;
    uint32_t N = (uint32_t)p->N;
    if (gsd_chunk(g, out, "configuration/step", 4, 1, 1, &p->step, 8) ||
        gsd_chunk(g, out, "configuration/dimensions", 1, 1, 1, &dims, 1) ||
        gsd_chunk(g, out, "configuration/box", 9, 6, 1, p->box, 4) ||
        gsd_chunk(g, out, "particles/N", 3, 1, 1, &N, 4) ||
        gsd_chunk(g, out, "particles/position", 9, p->N, 3, p->pos, 4))
        return -1;
    for (int i = 0; i < d->n; i++) {
        const gsd_item *it = &d->item[i];
        if (strncmp(it->name, "log/", 4) &&
            gsd_chunk(g, out, it->name, it->type, it->N, it->M, it->data, it->elem))
            return -1;
    }
    for (size_t j = 0; j < g->nlogs; j++) {
        gsd_log *l = &g->logs[j];
        for (int i = 0; i < d->n; i++)
            if (strcmp(d->item[i].name, l->name) == 0) { /* this frame's value becomes the last */
                free(l->last.data);
                l->last = d->item[i];
                d->item[i].data = NULL;
            }
        if (!l->last.data)
            return carlo_seterr("frame %llu has no %s, and no frame before it had one to carry "
                                "(GSD readers would take the first frame's value)",
                                (unsigned long long)k + 1, l->name);
        if (gsd_chunk(g, out, l->name, l->last.type, l->last.N, l->last.M, l->last.data, l->last.elem))
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

typedef struct type_table {
    char (*names)[64];
    uint32_t *tid;
    uint64_t ntypes;
} type_table;

static void type_table_free(type_table *tt)
{
    free(tt->names);
    free(tt->tid);
    memset(tt, 0, sizeof *tt);
}

/* Type names: particles/types indexed by particles/typeid, else "A" for every particle. */
static int type_names(traj_file *t, uint64_t k, const traj_frame_info *fi, uint64_t N, type_table *tt)
{
    memset(tt, 0, sizeof *tt);
    const traj_chunk_info *tc = find_info(fi, "particles/types");
    const traj_chunk_info *ic = find_info(fi, "particles/typeid");
    if (!tc || !ic || (tc->type != CARLO_U8 && tc->type != CARLO_I8) || ic->type != CARLO_U32 ||
        ic->rows != N || ic->cols != 1 || tc->rows == 0 || tc->rows > 65536)
        return 0;
    uint8_t *raw = read_raw(t, k, tc);
    tt->tid = read_raw(t, k, ic);
    tt->names = calloc((size_t)tc->rows, 64);
    if (!raw || !tt->tid || !tt->names) {
        free(raw);
        type_table_free(tt);
        return -1;
    }
    for (uint64_t i = 0; i < tc->rows; i++) {
        size_t w = (size_t)(tc->cols < 63 ? tc->cols : 63);
        memcpy(tt->names[i], raw + i * tc->cols, w);
        for (size_t c = 0; c < 64; c++)
            if (tt->names[i][c] == ' ' || tt->names[i][c] == '"')
                tt->names[i][c] = '_';
        if (!tt->names[i][0])
            snprintf(tt->names[i], 64, "T%llu", (unsigned long long)i);
    }
    free(raw);
    tt->ntypes = tc->rows;
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

static int xyz_frame(text_out *o, uint64_t k, const particle_frame *p, const type_table *tt)
{
    const float *b = p->box;
    /* in 2D (Lz = 0) the third lattice vector is the unit vector along z, so that the cell is
     * a valid one (readers invert it); pbc says the z direction is not periodic */
    double Lz = b[2] > 0 ? b[2] : 1.0, xz = b[2] > 0 ? b[4] : 0.0, yz = b[2] > 0 ? b[5] : 0.0;
    double a1[3] = {b[0], 0, 0}, a2[3] = {(double)b[3] * b[1], b[1], 0},
           a3[3] = {xz * Lz, yz * Lz, Lz};
    double origin[3];
    for (int d = 0; d < 3; d++)
        origin[d] = -0.5 * (a1[d] + a2[d] + a3[d]) + 0.0; /* no -0 */
    int rc = text_printf(o, "%llu\n", (unsigned long long)p->N) ||
             text_printf(o, "Lattice=\"%.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g\" "
                            "Origin=\"%.9g %.9g %.9g\" Properties=species:S:1:pos:R:3:type_name:S:1 "
                            "pbc=\"T T %c\" step=%llu frame=%llu\n",
                         a1[0], a1[1], a1[2], a2[0], a2[1], a2[2], a3[0], a3[1], a3[2], origin[0],
                         origin[1], origin[2], p->dims == 3 ? 'T' : 'F', (unsigned long long)p->step,
                         (unsigned long long)k + 1);
    for (uint64_t i = 0; !rc && i < p->N; i++) {
        const char *name = tt->names && tt->tid[i] < tt->ntypes ? tt->names[tt->tid[i]] : "A";
        const float *r = p->pos + 3 * i;
        rc = text_printf(o, "%s %.9g %.9g %.9g %s\n", is_element(name) ? name : "X", r[0], r[1], r[2],
                         name);
    }
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

typedef struct lattice_frame {
    traj_chunk_info c;
    void *raw;
    uint32_t q;
} lattice_frame;

/* The chunk to draw of frame k: 0; -1 when it cannot be read; -2 when there is none. */
static int png_read(traj_file *t, uint64_t k, const traj_frame_info *fi, const traj_export_opts *o,
                    lattice_frame *lf)
{
    memset(lf, 0, sizeof *lf);
    const traj_chunk_info *c = lattice_chunk(fi, o->chunk);
    if (!c) {
        carlo_seterr("frame %llu has no %s to draw", (unsigned long long)k + 1,
                     o->chunk ? o->chunk : "lattice/... chunk of 2 or more columns");
        return -2; /* not damaged: nothing to draw */
    }
    if (c->rows < 1 || c->cols < 1 || c->rows > (1 << 24) || c->cols > (1 << 22)) {
        carlo_seterr("frame %llu: %s is %llu x %llu, which does not fit an image",
                     (unsigned long long)k + 1, c->name, (unsigned long long)c->rows,
                     (unsigned long long)c->cols);
        return -2;
    }
    lf->c = *c;
    lf->raw = read_raw(t, k, c);
    if (!lf->raw)
        return -1;
    const traj_chunk_info *qc = find_info(fi, "lattice/q");
    if (qc && qc->type == CARLO_U32 && qc->rows * qc->cols == 1 &&
        traj_read_chunk(t, k, qc->name, CARLO_U32, 1, 1, &lf->q, 4)) {
        free(lf->raw);
        lf->raw = NULL;
        return -1;
    }
    return 0;
}

static int png_frame(const lattice_frame *lf, const traj_export_opts *o, const char *path)
{
    const traj_chunk_info *c = &lf->c;
    int scale = o->scale > 0 ? o->scale : 1;
    if (c->type == CARLO_U8 && lf->q >= 2 && o->lo == o->hi)
        return carlo_png_states(path, lf->raw, (int)c->rows, (int)c->cols, (int)lf->q, scale);
    size_t n = (size_t)(c->rows * c->cols);
    carlo_array a = {.type = c->type, .n = n, .data = lf->raw};
    double lo = o->lo, hi = o->hi;
    if (lo == hi) {
        lo = INFINITY;
        hi = -INFINITY;
        for (size_t i = 0; i < n; i++) {
            double v = carlo_array_get(&a, i);
            if (v < lo) lo = v;
            if (v > hi) hi = v;
        }
    }
    size_t w = (size_t)c->cols * (size_t)scale, h = (size_t)c->rows * (size_t)scale;
    uint8_t *rgb = carlo_malloc(carlo_mulsize(w * 3, h), "a PNG image");
    if (!rgb)
        return -1;
    for (size_t y = 0; y < h; y++)
        for (size_t x = 0; x < w; x++) {
            double v = carlo_array_get(&a, (y / (size_t)scale) * (size_t)c->cols + x / (size_t)scale);
            carlo_ramp_color(hi > lo ? (v - lo) / (hi - lo) : 0.5, rgb + (y * w + x) * 3);
        }
    int rc = carlo_png_write(path, (int)w, (int)h, rgb);
    free(rgb);
    return rc;
}

/* ---------- driver ---------- */

enum { GSD, XYZ, XYZGZ, PNG };

typedef struct export_run {
    const char *in, *out;
    const traj_export_opts *o;
    int kind;
    traj_file *t;
    traj_frame_info *fi;
    gsd_out *g;
    text_out *txt;
    int opened;                 /* the output file exists (this export created it) */
    uint64_t first, last;       /* frames [first, last), from 0 */
    uint64_t written, skipped, damaged;
    uint64_t first_written, last_written;
    uint8_t *what;              /* per frame: 0 export, 1 no particles, 2 damaged */
} export_run;

/* A damaged frame: an error, or (--skip-damaged) a frame left out with a notice. */
static int damaged_frame(export_run *r, uint64_t k)
{
    if (!r->o->skip_damaged) {
        char why[700];
        snprintf(why, sizeof why, "%s", carlo_errmsg());
        return carlo_seterr("%s (--skip-damaged exports the other frames)", why);
    }
    r->what[k - r->first] = 2;
    r->damaged++;
    if (!r->o->quiet && !carlo_quiet)
        fprintf(stderr, "carlo export: frame %llu skipped (damaged): %s\n", (unsigned long long)k + 1,
                carlo_errmsg());
    return 0;
}

/* The first pass: which frames export, which are damaged, and (GSD) the log quantities. */
static int survey(export_run *r)
{
    for (uint64_t k = r->first; k < r->last; k++) {
        if (carlo_interrupted)
            return TRAJ_EXPORT_INTERRUPTED;
        if (traj_frame_info_get(r->t, k, r->fi)) {
            if (damaged_frame(r, k))
                return -1;
            continue;
        }
        if (r->kind != PNG && !find_info(r->fi, "particles/position")) {
            r->what[k - r->first] = 1;
            r->skipped++;
            continue;
        }
        if (r->kind == GSD && gsd_note_logs(r->g, r->fi, k))
            return -1;
    }
    if (r->kind != PNG && r->skipped + r->damaged == r->last - r->first)
        return carlo_seterr("%s: no %sframe has particles/position (lattice frames export to .png)",
                            r->in, r->damaged ? "intact " : "");
    if (r->kind == GSD) {
        uint64_t k = r->first;
        while (r->what[k - r->first])
            k++;
        return gsd_check_logs(r->g, r->in, k);
    }
    return 0;
}

static int open_output(export_run *r)
{
    if (r->kind == GSD) {
        if (!(r->g->f = fopen(r->out, "wb")))
            return carlo_seterr("cannot open %s for writing: %s", r->out, strerror(errno));
        r->g->path = r->out;
        r->opened = 1;
        static const uint8_t zeros[256];
        return gsd_write(r->g, zeros, sizeof zeros);
    }
    if (r->kind == XYZ || r->kind == XYZGZ) {
        r->txt = carlo_calloc(1, sizeof *r->txt, "an XYZ writer");
        if (!r->txt)
            return -1;
        r->txt->path = r->out;
        if (r->kind == XYZ ? !(r->txt->f = fopen(r->out, "w")) : !(r->txt->z = gzopen(r->out, "wb6")))
            return carlo_seterr("cannot open %s for writing: %s", r->out, strerror(errno));
        r->opened = 1;
    }
    return 0;
}

/* Frame k: read whole, then written. */
static int export_frame(export_run *r, uint64_t k)
{
    if (traj_frame_info_get(r->t, k, r->fi))
        return damaged_frame(r, k);
    int rc = 0;
    if (r->kind == PNG) {
        lattice_frame lf;
        int got = png_read(r->t, k, r->fi, r->o, &lf);
        if (got)
            return got == -2 ? -1 : damaged_frame(r, k);
        char *path = r->last - r->first == 1 ? NULL : numbered(r->out, k);
        rc = png_frame(&lf, r->o, path ? path : r->out);
        free(path);
        free(lf.raw);
    } else {
        particle_frame p;
        gsd_frame_data *d = NULL;
        type_table tt;
        memset(&tt, 0, sizeof tt);
        int got = read_particles(r->t, k, r->fi, &p);
        if (got == 0 && r->kind == GSD) {
            if (!(d = carlo_malloc(sizeof *d, "a GSD frame"))) {
                free(p.pos);
                return -1;
            }
            got = gsd_read(r->t, k, r->fi, &p, d);
        } else if (got == 0) {
            got = type_names(r->t, k, r->fi, p.N, &tt);
        }
        if (got) {
            free(p.pos);
            free(d);
            return damaged_frame(r, k);
        }
        rc = r->kind == GSD ? gsd_frame(r->g, &p, d, r->written, k) : xyz_frame(r->txt, k, &p, &tt);
        if (d)
            gsd_frame_data_free(d);
        free(d);
        type_table_free(&tt);
        free(p.pos);
    }
    if (rc)
        return -1;
    if (!r->written++)
        r->first_written = k;
    r->last_written = k;
    return 0;
}

/* Close the output: finished (GSD index and header, XYZ flushed) unless the export failed. */
static int close_output(export_run *r, int rc)
{
    if (r->g) {
        if (rc >= 0 && r->g->f)
            rc = gsd_finish(r->g) ? -1 : rc;
        if (r->g->f && fclose(r->g->f) && rc >= 0)
            rc = carlo_seterr("writing %s failed: %s", r->out, strerror(errno));
        r->g->f = NULL;
    }
    if (r->txt) {
        if (rc >= 0)
            rc = text_flush(r->txt) ? -1 : rc;
        if (r->txt->f && fclose(r->txt->f) && rc >= 0)
            rc = carlo_seterr("writing %s failed: %s", r->out, strerror(errno));
        if (r->txt->z && gzclose(r->txt->z) != Z_OK && rc >= 0)
            rc = carlo_seterr("writing %s failed", r->out);
        free(r->txt);
        r->txt = NULL;
    }
    /* no partial file that looks like a result, and no empty one after an interruption */
    if (r->opened && (rc < 0 || r->written == 0))
        remove_output(r->out);
    return rc;
}

static int kind_of(const char *out)
{
    if (ends_with(out, ".gsd"))
        return GSD;
    if (ends_with(out, ".xyz"))
        return XYZ;
    if (ends_with(out, ".xyz.gz"))
        return XYZGZ;
    if (ends_with(out, ".png"))
        return PNG;
    return -1;
}

static int run_export(export_run *r)
{
    int rc = survey(r);
    if (rc)
        return rc;
    rc = open_output(r);
    for (uint64_t k = r->first; !rc && k < r->last; k++) {
        if (carlo_interrupted)
            rc = TRAJ_EXPORT_INTERRUPTED;
        else if (r->what[k - r->first] == 0)
            rc = export_frame(r, k);
    }
    if (!rc && r->written == 0)
        rc = carlo_seterr("%s: every frame to export is damaged", r->in);
    return close_output(r, rc);
}

int traj_export(const char *in, const char *out, const traj_export_opts *o)
{
    export_run r;
    memset(&r, 0, sizeof r);
    r.in = in;
    r.out = out;
    r.o = o;
    r.kind = kind_of(out);
    if (r.kind < 0)
        return carlo_seterr("%s: the output's extension picks the format: .gsd, .xyz, .xyz.gz or .png",
                            out);
    traj_options to;
    traj_options_init(&to);
    to.quiet = o->quiet;
    r.t = traj_open(in, 'r', &to);
    if (!r.t)
        return -1;
    uint64_t n = traj_count(r.t);
    r.first = o->first ? o->first - 1 : 0;
    r.last = o->last && o->last < n ? o->last : n;
    if (n == 0 || r.first >= r.last) {
        traj_close(r.t);
        return carlo_seterr("%s: no frames to export (%llu frames in the file, asked for %llu to %llu)",
                            in, (unsigned long long)n, (unsigned long long)r.first + 1,
                            (unsigned long long)(o->last ? o->last : n));
    }
    r.fi = carlo_malloc(sizeof *r.fi, "frame information");
    r.what = carlo_calloc((size_t)(r.last - r.first), 1, "the list of frames");
    if (r.kind == GSD)
        r.g = carlo_calloc(1, sizeof *r.g, "a GSD writer");
    int rc = !r.fi || !r.what || (r.kind == GSD && !r.g) ? -1 : run_export(&r);
    if (rc == TRAJ_EXPORT_INTERRUPTED && !r.written)
        carlo_seterr("interrupted: nothing written");
    else if (rc == TRAJ_EXPORT_INTERRUPTED)
        carlo_seterr("interrupted: %s holds frames %llu to %llu (%llu of the %llu asked for)%s", out,
                     (unsigned long long)r.first_written + 1, (unsigned long long)r.last_written + 1,
                     (unsigned long long)r.written, (unsigned long long)(r.last - r.first),
                     r.kind == PNG ? ", one image each" : "");
    if (rc >= 0 && !o->quiet && !carlo_quiet) {
        if (r.skipped)
            fprintf(stderr, "carlo export: %llu frames without particles/position skipped\n",
                    (unsigned long long)r.skipped);
        if (r.damaged)
            fprintf(stderr, "carlo export: %llu damaged frames skipped, %llu frames exported\n",
                    (unsigned long long)r.damaged, (unsigned long long)r.written);
    }
    if (r.g)
        gsd_free(r.g);
    free(r.what);
    free(r.fi);
    traj_close(r.t);
    return rc;
}
