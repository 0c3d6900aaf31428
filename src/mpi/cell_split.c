/* cell_split.c — a cell grid split over the MPI ranks in slabs of layers (cell_split.h): layer
 * ranges, packing cell layers, the halo exchanges after each checkerboard set and each cell
 * shift, and the gather that makes the whole grid current. */
#include "mpi/cell_split.h"

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

static uint8_t *buffer(carlo_split *p, size_t bytes)
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

int carlo_split_fits(const carlo_split *p, const carlo_cell_grid *g)
{
    const int m = g->m[p->axis];
    if (m < p->ranks)
        return carlo_seterr("decompose = true: the grid has %d cell layers along %c, fewer than the "
                            "%d MPI ranks (one layer each at least): use fewer ranks or more "
                            "particles", m, AXES[p->axis], p->ranks);
    if (p->frozen && m < 3 * p->ranks)
        return carlo_seterr("decompose = \"frozen\": the grid has %d cell layers along %c, fewer than "
                            "3 for each of the %d MPI ranks (each slab's first and last layer sit out "
                            "the sweep): use fewer ranks, more particles or decompose = true", m,
                            AXES[p->axis], p->ranks);
    if (layer_bytes(g, p->axis) > (size_t)INT_MAX / 2)
        return carlo_seterr("decompose = true: one layer of %lld cells is too large to send in one "
                            "message", (long long)layer_cells(g, p->axis));
    return 0;
}

int carlo_split_layout(carlo_split *p, const carlo_cell_grid *g)
{
    const int m = g->m[p->axis];
    if (carlo_split_fits(p, g))
        return -1;
    for (int r = 0; r < p->ranks; r++)
        p->layers[r] = (int)((int64_t)(r + 1) * m / p->ranks - (int64_t)r * m / p->ranks);
    p->lo = (int)((int64_t)p->rank * m / p->ranks);
    p->hi = (int)((int64_t)(p->rank + 1) * m / p->ranks);
    return 0;
}

carlo_split *carlo_split_new(const carlo_cell_grid *g, int frozen)
{
    carlo_split *p = carlo_calloc(1, sizeof *p, "the decomposition");
    if (!p)
        return NULL;
    p->rank = carlo_mpi_rank();
    p->ranks = carlo_mpi_size();
    p->axis = g->dim - 1;
    p->full = 1;
    p->frozen = frozen != 0;
    p->layers = carlo_calloc((size_t)p->ranks, sizeof *p->layers, "the ranks' layers");
    if (!p->layers || carlo_split_layout(p, g)) {
        carlo_split_free(p);
        return NULL;
    }
    return p;
}

void carlo_split_free(carlo_split *p)
{
    if (!p)
        return;
    free(p->layers);
    free(p->buf);
    free(p);
}

void carlo_split_cells(const carlo_split *p, const carlo_cell_grid *g, int64_t *c0, int64_t *c1)
{
    const int64_t lc = layer_cells(g, p->axis);
    *c0 = (int64_t)p->lo * lc;
    *c1 = (int64_t)p->hi * lc;
}

int carlo_split_halo_cells(const carlo_split *p, const carlo_cell_grid *g, int64_t c0[2])
{
    if (p->ranks == 1)
        return 0;
    const int m = g->m[p->axis];
    const int64_t lc = layer_cells(g, p->axis);
    c0[0] = (int64_t)((p->lo - 1 + m) % m) * lc;
    c0[1] = (int64_t)(p->hi % m) * lc;
    return (int)lc;
}

int carlo_split_slab_trial(const carlo_split *p, const carlo_cell_grid *og, const carlo_cell_grid *ng,
                           const double lam[3])
{
    if (p->ranks == 1 || p->full)
        return 0;
    /* the test of carlo_cell_regrid_gather under which a new cell takes the particles of the
     * old cell of the same coordinate along that axis only */
    const int a = p->axis;
    const double Lo = (double)og->m[a] * og->width[a], Ln = (double)ng->m[a] * ng->width[a];
    return og->m[a] == ng->m[a] && lam[a] >= 0.75 && fabs(lam[a] * Lo - Ln) <= 0.25 * ng->q;
}

void carlo_split_active(const carlo_split *p, const carlo_cell_grid *g, int set, int64_t *t0, int64_t *t1)
{
    /* carlo_cell_active: the split axis is the slowest; its coordinate is 2 j + bit */
    const int bit = set >> p->axis & 1, lo = p->lo + p->frozen, hi = p->hi - p->frozen;
    const int64_t per = carlo_cell_set_size(g) / g->half[p->axis];
    *t0 = (int64_t)((lo - bit + 1) / 2) * per;
    *t1 = (int64_t)((hi - bit + 1) / 2) * per;
}

void carlo_split_edge_layers(const carlo_split *p, const carlo_cell_grid *g, int bit, int out[2], int in[2])
{
    const int m = g->m[p->axis];
    const int o[2] = {p->hi - 1, p->lo}, i[2] = {(p->lo - 1 + m) % m, p->hi % m};
    for (int k = 0; k < 2; k++) {
        out[k] = bit < 0 || (o[k] & 1) == bit ? o[k] : -1;
        in[k] = bit < 0 || (i[k] & 1) == bit ? i[k] : -1;
    }
}

void carlo_split_neighbours(const carlo_split *p, int dest[2], int src[2])
{
    const int up = (p->rank + 1) % p->ranks, down = (p->rank + p->ranks - 1) % p->ranks;
    dest[0] = src[1] = up;
    dest[1] = src[0] = down;
}

size_t carlo_split_layer_bytes(const carlo_split *p, const carlo_cell_grid *g)
{
    return layer_bytes(g, p->axis);
}

/* The halo layers, both ways at once: the last layer up (the upper neighbour's lower halo), the
 * first layer down (the lower neighbour's upper halo), periodic. bit >= 0: only layers of that
 * parity, which are those the set just updated changed (m is even, so parity survives the
 * wrap; the two ranks of a message agree on whether it is sent). */
int carlo_split_exchange_packed(carlo_split *p, const carlo_cell_grid *g, int bit, uint8_t *const send[2],
                                uint8_t *const recv[2])
{
    const int n = (int)layer_bytes(g, p->axis);
    int out[2], in[2], dest[2], src[2];
    carlo_split_edge_layers(p, g, bit, out, in);
    carlo_split_neighbours(p, dest, src);
    int ns[2], nr[2];
    for (int k = 0; k < 2; k++) {
        ns[k] = out[k] >= 0 ? n : 0;
        nr[k] = in[k] >= 0 ? n : 0;
    }
    if (p->ranks > 1)
        p->full = 0;
    return carlo_mpi_exchange2(send, ns, dest, recv, nr, src, TAG_HALO);
}

/* carlo_split_exchange_packed from and to the host cells d. */
static int exchange(carlo_split *p, const carlo_cell_grid *g, const carlo_cell_data *d, int bit)
{
    const size_t n = layer_bytes(g, p->axis);
    uint8_t *b = buffer(p, 4 * n);
    if (!b)
        return -1;
    int out[2], in[2];
    carlo_split_edge_layers(p, g, bit, out, in);
    uint8_t *const sb[2] = {b, b + n}, *const rb[2] = {b + 2 * n, b + 3 * n};
    for (int k = 0; k < 2; k++)
        if (out[k] >= 0)
            pack(g, p->axis, d, out[k], sb[k]);
    if (carlo_split_exchange_packed(p, g, bit, sb, rb))
        return -1;
    for (int k = 0; k < 2; k++)
        if (in[k] >= 0)
            unpack(g, p->axis, d, in[k], rb[k]);
    return 0;
}

int carlo_split_after_set(carlo_split *p, const carlo_cell_grid *g, const carlo_cell_data *d, int set)
{
    if (p->ranks == 1)
        return 0;
    p->full = 0;
    return p->frozen ? 0 : exchange(p, g, d, set >> p->axis & 1);
}

int carlo_split_after_shift(carlo_split *p, const carlo_cell_grid *g, const carlo_cell_data *d, int axis)
{
    if (p->ranks == 1)
        return 0;
    p->full = 0;
    return axis == p->axis ? exchange(p, g, d, -1) : 0;
}

int carlo_split_shift_host(const carlo_split *p, const carlo_cell_grid *g, const carlo_cell_data *src,
                           const carlo_cell_data *dst, carlo_cell_shift sh)
{
    int64_t c0, c1, h[2];
    carlo_split_cells(p, g, &c0, &c1);
    int64_t over = carlo_cells_shift_range(g, src, dst, sh, c0, c1);
    const int lc = carlo_split_halo_cells(p, g, h);
    for (int k = 0; lc && sh.axis != p->axis && k < 2; k++) {
        const int64_t o = carlo_cells_shift_range(g, src, dst, sh, h[k], h[k] + lc);
        over = o > over ? o : over;
    }
    return over >= 0 ? carlo_cells_shift_overflow(g, over) : 0;
}

int carlo_split_regrid_host(const carlo_split *p, const carlo_cell_grid *og, const carlo_cell_data *src,
                            const carlo_cell_grid *ng, const carlo_cell_data *dst, const double lam[3])
{
    int64_t c0, c1, h[2];
    carlo_split_cells(p, ng, &c0, &c1);
    int over = carlo_cells_regrid_range(og, src, ng, dst, lam, c0, c1);
    const int lc = carlo_split_halo_cells(p, ng, h);
    for (int k = 0; lc && k < 2; k++)
        over |= carlo_cells_regrid_range(og, src, ng, dst, lam, h[k], h[k] + lc);
    return over;
}

int carlo_split_gather(carlo_split *p, const carlo_cell_grid *g, const carlo_cell_data *d)
{
    if (p->full || p->ranks == 1)
        return 0;
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

int carlo_split_sum(const carlo_split *p, int64_t *v, int n)
{
    return p->ranks > 1 ? carlo_mpi_sum_i64(v, n) : 0;
}

int carlo_split_min(const carlo_split *p, double *v)
{
    return p->ranks > 1 ? carlo_mpi_min_f64(v, 1) : 0;
}
