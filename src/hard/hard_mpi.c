/* hard_mpi.c — the slab decomposition of hard particles over the MPI ranks (hard_mpi.h): layer
 * ranges, packing cell layers, the halo exchanges after each checkerboard set and each cell
 * shift, and the gather that makes the whole grid current. */
#include "hard/hard_mpi.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "mpi/mpi.h"

enum { TAG_HALO = 0x4848 }; /* and TAG_HALO + 1 */

static const char AXES[] = "xyz";

/* Cells in one layer along the split axis, and the bytes of one layer packed: its counts, then
 * every position and word plane slot by slot (4 bytes each). */
static int64_t layer_cells(const carlo_cell_grid *g, int axis)
{
    return g->ncells / g->m[axis];
}

static size_t layer_bytes(const carlo_cell_grid *g, int axis)
{
    return (size_t)layer_cells(g, axis) * (1 + (size_t)g->nmax * (size_t)(g->dim + g->naux)) * 4;
}

static void pack(const carlo_cell_grid *g, int axis, const carlo_cell_data *d, int k, uint8_t *out)
{
    const int64_t lc = layer_cells(g, axis), at = (int64_t)k * lc;
    const size_t n = (size_t)lc * 4;
    memcpy(out, d->count + at, n);
    out += n;
    for (int p = 0; p < g->dim; p++)
        for (int i = 0; i < g->nmax; i++, out += n)
            memcpy(out, d->pos + carlo_cell_slot(g, at, i, p), n);
    for (int b = 0; b < g->naux; b++)
        for (int i = 0; i < g->nmax; i++, out += n)
            memcpy(out, d->aux + carlo_cell_slot(g, at, i, b), n);
}

static void unpack(const carlo_cell_grid *g, int axis, const carlo_cell_data *d, int k,
                   const uint8_t *in)
{
    const int64_t lc = layer_cells(g, axis), at = (int64_t)k * lc;
    const size_t n = (size_t)lc * 4;
    memcpy(d->count + at, in, n);
    in += n;
    for (int p = 0; p < g->dim; p++)
        for (int i = 0; i < g->nmax; i++, in += n)
            memcpy(d->pos + carlo_cell_slot(g, at, i, p), in, n);
    for (int b = 0; b < g->naux; b++)
        for (int i = 0; i < g->nmax; i++, in += n)
            memcpy(d->aux + carlo_cell_slot(g, at, i, b), in, n);
}

static uint8_t *buffer(hard_split *p, size_t bytes)
{
    if (bytes <= p->cap)
        return p->buf;
    uint8_t *b = carlo_malloc(bytes, "the halo buffers");
    if (!b)
        return NULL;
    free(p->buf);
    p->buf = b;
    p->cap = bytes;
    return b;
}

int hard_split_fits(const hard_system *s, const carlo_cell_grid *g)
{
    const hard_split *p = s->split;
    const int m = g->m[p->axis];
    if (m < p->ranks)
        return carlo_seterr("decompose = true: the grid has %d cell layers along %c, fewer than the "
                            "%d MPI ranks (one layer each at least): use fewer ranks or more "
                            "particles", m, AXES[p->axis], p->ranks);
    if (layer_bytes(g, p->axis) > (size_t)INT_MAX / 2)
        return carlo_seterr("decompose = true: one layer of %lld cells is too large to send in one "
                            "message", (long long)layer_cells(g, p->axis));
    return 0;
}

int hard_split_layout(hard_system *s, const carlo_cell_grid *g)
{
    hard_split *p = s->split;
    const int m = g->m[p->axis];
    if (hard_split_fits(s, g))
        return -1;
    for (int r = 0; r < p->ranks; r++)
        p->layers[r] = (int)((int64_t)(r + 1) * m / p->ranks - (int64_t)r * m / p->ranks);
    p->lo = (int)((int64_t)p->rank * m / p->ranks);
    p->hi = (int)((int64_t)(p->rank + 1) * m / p->ranks);
    return 0;
}

int hard_split_on(hard_system *s)
{
    if (s->mv.skew)
        return carlo_seterr("decompose = true needs an orthorhombic box (this one has tilts xy, xz, yz = "
                            "%.9g, %.9g, %.9g)", s->box.xy, s->box.xz, s->box.yz);
    if (s->split)
        return 0;
    hard_split *p = carlo_calloc(1, sizeof *p, "the decomposition");
    if (!p)
        return -1;
    p->rank = carlo_mpi_rank();
    p->ranks = carlo_mpi_size();
    p->axis = s->dim - 1;
    p->full = 1;
    p->layers = carlo_calloc((size_t)p->ranks, sizeof *p->layers, "the ranks' layers");
    s->split = p;
    if (!p->layers || hard_split_layout(s, &s->grid)) {
        hard_split_free(s);
        return -1;
    }
    /* halo exchanges and sums: never from a worker thread (the GPU backend exchanges on one
     * rank too, with itself) */
    s->collective = p->ranks > 1 || s->device == CARLO_GPU;
    return 0;
}

void hard_split_free(hard_system *s)
{
    hard_split *p = s->split;
    if (!p)
        return;
    free(p->layers);
    free(p->buf);
    free(p);
    s->split = NULL;
    s->collective = 0;
}

void hard_split_cells(const hard_system *s, const carlo_cell_grid *g, int64_t *c0, int64_t *c1)
{
    const hard_split *p = s->split;
    const int64_t lc = layer_cells(g, p->axis);
    *c0 = (int64_t)p->lo * lc;
    *c1 = (int64_t)p->hi * lc;
}

int hard_split_halo_cells(const hard_system *s, const carlo_cell_grid *g, int64_t c0[2])
{
    const hard_split *p = s->split;
    if (p->ranks == 1)
        return 0;
    const int m = g->m[p->axis];
    const int64_t lc = layer_cells(g, p->axis);
    c0[0] = (int64_t)((p->lo - 1 + m) % m) * lc;
    c0[1] = (int64_t)(p->hi % m) * lc;
    return (int)lc;
}

int hard_split_keeps_cut(const hard_system *s, const carlo_cell_grid *ng, const double lam[3])
{
    /* the test of carlo_cell_regrid_gather under which a new cell takes the particles of the
     * old cell of the same coordinate along that axis only */
    const carlo_cell_grid *og = &s->grid;
    const int a = s->split->axis;
    const double Lo = (double)og->m[a] * og->width[a], Ln = (double)ng->m[a] * ng->width[a];
    return og->m[a] == ng->m[a] && lam[a] >= 0.75 && fabs(lam[a] * Lo - Ln) <= 0.25 * ng->q;
}

void hard_split_active(const hard_system *s, int set, int64_t *t0, int64_t *t1)
{
    const hard_split *p = s->split;
    const carlo_cell_grid *g = &s->grid;
    /* carlo_cell_active: the split axis is the slowest; its coordinate is 2 j + bit */
    const int bit = set >> p->axis & 1;
    const int64_t per = carlo_cell_set_size(g) / g->half[p->axis];
    *t0 = (int64_t)((p->lo - bit + 1) / 2) * per;
    *t1 = (int64_t)((p->hi - bit + 1) / 2) * per;
}

void hard_split_edge_layers(const hard_system *s, int bit, int out[2], int in[2])
{
    const hard_split *p = s->split;
    const int m = s->grid.m[p->axis];
    const int o[2] = {p->hi - 1, p->lo}, i[2] = {(p->lo - 1 + m) % m, p->hi % m};
    for (int k = 0; k < 2; k++) {
        out[k] = bit < 0 || (o[k] & 1) == bit ? o[k] : -1;
        in[k] = bit < 0 || (i[k] & 1) == bit ? i[k] : -1;
    }
}

void hard_split_neighbours(const hard_system *s, int dest[2], int src[2])
{
    const hard_split *p = s->split;
    const int up = (p->rank + 1) % p->ranks, down = (p->rank + p->ranks - 1) % p->ranks;
    dest[0] = src[1] = up;
    dest[1] = src[0] = down;
}

size_t hard_split_layer_bytes(const hard_system *s)
{
    return layer_bytes(&s->grid, s->split->axis);
}

/* The halo layers, both ways at once: the last layer up (the upper neighbour's lower halo), the
 * first layer down (the lower neighbour's upper halo), periodic. bit >= 0: only layers of that
 * parity, which are those the set just updated changed (m is even, so parity survives the
 * wrap; the two ranks of a message agree on whether it is sent). */
int hard_split_exchange_packed(hard_system *s, int bit, uint8_t *const send[2], uint8_t *const recv[2])
{
    hard_split *p = s->split;
    const int n = (int)layer_bytes(&s->grid, p->axis);
    int out[2], in[2], dest[2], src[2];
    hard_split_edge_layers(s, bit, out, in);
    hard_split_neighbours(s, dest, src);
    int ns[2], nr[2];
    for (int k = 0; k < 2; k++) {
        ns[k] = out[k] >= 0 ? n : 0;
        nr[k] = in[k] >= 0 ? n : 0;
    }
    if (p->ranks > 1)
        p->full = 0;
    return carlo_mpi_exchange2(send, ns, dest, recv, nr, src, TAG_HALO);
}

/* hard_split_exchange_packed from and to the cells of d. */
static int exchange(hard_system *s, const carlo_cell_data *d, int bit)
{
    hard_split *p = s->split;
    const carlo_cell_grid *g = &s->grid;
    const size_t n = layer_bytes(g, p->axis);
    uint8_t *b = buffer(p, 4 * n);
    if (!b)
        return -1;
    int out[2], in[2];
    hard_split_edge_layers(s, bit, out, in);
    uint8_t *const sb[2] = {b, b + n}, *const rb[2] = {b + 2 * n, b + 3 * n};
    for (int k = 0; k < 2; k++)
        if (out[k] >= 0)
            pack(g, p->axis, d, out[k], sb[k]);
    if (hard_split_exchange_packed(s, bit, sb, rb))
        return -1;
    for (int k = 0; k < 2; k++)
        if (in[k] >= 0)
            unpack(g, p->axis, d, in[k], rb[k]);
    return 0;
}

int hard_split_after_set(hard_system *s, const carlo_cell_data *d, int set)
{
    hard_split *p = s->split;
    if (p->ranks == 1)
        return 0;
    p->full = 0;
    return exchange(s, d, set >> p->axis & 1);
}

int hard_split_after_shift(hard_system *s, const carlo_cell_data *d, int axis)
{
    hard_split *p = s->split;
    if (p->ranks == 1)
        return 0;
    p->full = 0;
    return axis == p->axis ? exchange(s, d, -1) : 0;
}

int hard_split_gather(hard_system *s, const carlo_cell_data *d)
{
    hard_split *p = s->split;
    if (p->full || p->ranks == 1)
        return 0;
    const carlo_cell_grid *g = &s->grid;
    const size_t n = layer_bytes(g, p->axis);
    const int m = g->m[p->axis], mine = p->hi - p->lo;
    uint8_t *own = buffer(p, carlo_mulsize((size_t)mine, n));
    uint8_t *all = own ? carlo_malloc(carlo_mulsize((size_t)m, n), "the gathered cells") : NULL;
    if (!all)
        return -1;
    for (int k = 0; k < mine; k++)
        pack(g, p->axis, d, p->lo + k, own + (size_t)k * n);
    int rc = carlo_mpi_allgather_rows(own, mine, all, p->layers, (int)n);
    for (int k = 0; rc == 0 && k < m; k++) /* the ranks' slabs follow each other in rank order */
        unpack(g, p->axis, d, k, all + (size_t)k * n);
    free(all);
    if (rc == 0)
        p->full = 1;
    return rc;
}

int hard_split_sum(hard_system *s, int64_t *v, int n)
{
    return s->split->ranks > 1 ? carlo_mpi_sum_i64(v, n) : 0;
}

int hard_split_min(hard_system *s, double *v)
{
    return s->split->ranks > 1 ? carlo_mpi_min_f64(v, 1) : 0;
}
