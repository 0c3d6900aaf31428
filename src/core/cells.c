/* cells.c — see cells.h. */
#include "core/cells.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static const char AXES[3] = {'x', 'y', 'z'};

/* Whether m cells of width L / m fit the window [w_min, w_max). */
static int fits(double L, int64_t m, double w_min, double w_max)
{
    double w = L / (double)m;
    return w >= w_min && w < w_max;
}

/* The plan along each axis a of the box's sides L (tilts ignored) with cell widths in
 * [wmin[a], wmax[a]) closest to wpref[a]. */
static int plan_axes(carlo_cell_grid *g, const carlo_box *b, const double *wmin, const double *wmax,
                     const double *wpref, int nmax, int naux)
{
    g->dim = b->dim;
    g->nmax = nmax;
    g->naux = naux;
    g->ncells = 1;
    for (int a = 0; a < 3; a++) {
        if (a >= b->dim) {
            g->m[a] = 1;
            g->half[a] = 1;
            g->width[a] = 1.0;
            g->w[a] = 1.0f;
            g->w_in[a] = 1.0f;
            continue;
        }
        const double L = b->L[a], w_min = wmin[a], w_max = wmax[a], w_pref = wpref[a];
        if (L / w_min > 1e9)
            return carlo_seterr("box L%c = %g is too long for cells of width %g", AXES[a], L, w_min);
        int64_t hi = (int64_t)floor(L / w_min);
        int64_t lo = isinf(w_max) ? 2 : (int64_t)floor(L / w_max) + 1;
        hi -= hi & 1;
        lo += lo & 1;
        if (lo < 2)
            lo = 2;
        while (hi >= 2 && !fits(L, hi, w_min, w_max))
            hi -= 2;
        while (lo <= hi && !fits(L, lo, w_min, w_max))
            lo += 2;
        if (hi < 2 || lo > hi) {
            if (isinf(w_max))
                return carlo_seterr("box L%c = %.17g is shorter than two cells of width %g", AXES[a],
                                    L, w_min);
            return carlo_seterr("box L%c = %.17g cannot be cut into an even number (>= 2) of cells of "
                                "width in [%g, %g)", AXES[a], L, w_min, w_max);
        }
        int64_t m = lo;
        if (w_pref > 0 && isfinite(w_pref)) {
            int64_t guess = (int64_t)floor(L / w_pref);
            guess -= guess & 1;
            int64_t best = -1;
            double dist = INFINITY;
            for (int64_t c = guess - 2; c <= guess + 4; c += 2) {
                int64_t cm = c < lo ? lo : (c > hi ? hi : c);
                double d = fabs(L / (double)cm - w_pref);
                if (d < dist) {
                    dist = d;
                    best = cm;
                }
            }
            m = best;
        }
        g->m[a] = (int)m;
        g->half[a] = (int)(m / 2);
        g->width[a] = L / (double)m; /* rounded to a multiple of q below */
        g->ncells *= m;
    }
    /* the quantum: a power of two with every value within two cells exact, |x| < 2^24 q */
    double wide = 0;
    for (int a = 0; a < b->dim; a++)
        wide = fmax(wide, g->width[a]);
    g->q = ldexpf(1.0f, ilogb(2.0 * wide) + 1 - 24);
    for (int a = 0; a < b->dim; a++) {
        double wq = rint(g->width[a] / (double)g->q);
        g->wq[a] = (int32_t)wq;
        g->w[a] = (float)(wq * (double)g->q);
        g->width[a] = (double)g->w[a];
        g->w_in[a] = g->w[a] - g->q;
        if (!(g->width[a] >= wmin[a]) || !(g->width[a] < wmax[a]))
            return carlo_seterr("box L%c = %.17g: the cell width %.9g left [%g, %g) when rounded to "
                                "a multiple of %g", AXES[a], b->L[a], g->width[a], wmin[a], wmax[a],
                                (double)g->q);
    }
    for (int a = b->dim; a < 3; a++)
        g->wq[a] = 1;
    if (g->ncells > (int64_t)UINT32_MAX)
        return carlo_seterr("%lld cells are more than 2^32 - 1", (long long)g->ncells);
    return 0;
}

static int plan_check(carlo_cell_grid *g, const carlo_box *b, double w_min, double w_max, int nmax,
                      int naux)
{
    memset(g, 0, sizeof *g);
    if (carlo_box_check(b))
        return -1;
    if (!(w_min > 0) || !(w_max > w_min) || !isfinite(w_min))
        return carlo_seterr("cell widths need 0 < w_min < w_max (got %g, %g)", w_min, w_max);
    if (nmax < 1 || nmax > CARLO_CELL_NMAX_LIMIT)
        return carlo_seterr("cells hold 1 to %d particles (got %d)", CARLO_CELL_NMAX_LIMIT, nmax);
    if (naux < 0 || naux > 8)
        return carlo_seterr("a particle carries 0 to 8 words besides its position (got %d)", naux);
    return 0;
}

int carlo_cells_plan(carlo_cell_grid *g, const carlo_box *b, double w_min, double w_max,
                     double w_pref, int nmax, int naux)
{
    if (plan_check(g, b, w_min, w_max, nmax, naux))
        return -1;
    if (!carlo_box_orthorhombic(b))
        return carlo_seterr("the cell grid needs an orthorhombic box (xy = xz = yz = 0)");
    const double lo[3] = {w_min, w_min, w_min}, hi[3] = {w_max, w_max, w_max},
                 pref[3] = {w_pref, w_pref, w_pref};
    return plan_axes(g, b, lo, hi, pref, nmax, naux);
}

int carlo_cells_plan_skew(carlo_cell_grid *g, const carlo_box *b, double w_min, double w_max,
                          double w_pref, int nmax, int naux)
{
    if (plan_check(g, b, w_min, w_max, nmax, naux))
        return -1;
    double h[3], lo[3], hi[3], pref[3];
    carlo_box_heights(b, h);
    for (int a = 0; a < 3; a++) {
        const double r = a < b->dim ? b->L[a] / h[a] : 1.0; /* >= 1: skew width per face distance */
        lo[a] = w_min * r;
        hi[a] = w_max * r;
        pref[a] = w_pref * r;
    }
    if (plan_axes(g, b, lo, hi, pref, nmax, naux)) {
        int thin = 0;
        for (int a = 0; a < b->dim; a++)
            thin |= !(h[a] / 2.0 >= w_min);
        if (carlo_box_orthorhombic(b) || !thin)
            return -1;
        return carlo_seterr("the tilted box (Lx, Ly, Lz = %.9g, %.9g, %.9g, xy, xz, yz = %.9g, %.9g, %.9g) "
                            "is too thin between its faces (%.9g, %.9g, %.9g) for two cells %g wide "
                            "along each axis", b->L[0], b->L[1], b->L[2], b->xy, b->xz, b->yz, h[0], h[1],
                            b->dim == 3 ? h[2] : 0.0, w_min);
    }
    return 0;
}

carlo_box carlo_cells_box(const carlo_cell_grid *g)
{
    double L[3];
    for (int a = 0; a < 3; a++)
        L[a] = (double)g->m[a] * g->width[a];
    return carlo_box_make(g->dim, L);
}

size_t carlo_cells_pos_len(const carlo_cell_grid *g)
{
    return carlo_mulsize(carlo_mulsize((size_t)g->dim, (size_t)g->nmax), (size_t)g->ncells);
}

size_t carlo_cells_aux_len(const carlo_cell_grid *g)
{
    return carlo_mulsize(carlo_mulsize((size_t)g->naux, (size_t)g->nmax), (size_t)g->ncells);
}

void carlo_cell_data_clear(const carlo_cell_grid *g, const carlo_cell_data *d)
{
    size_t np = carlo_cells_pos_len(g), na = carlo_cells_aux_len(g);
    for (size_t i = 0; i < np; i++)
        d->pos[i] = CARLO_CELL_EMPTY;
    for (size_t i = 0; i < na; i++)
        d->aux[i] = CARLO_CELL_NO_WORD;
    memset(d->count, 0, (size_t)g->ncells * sizeof *d->count);
}

int carlo_cell_data_alloc(const carlo_cell_grid *g, carlo_cell_data *d)
{
    memset(d, 0, sizeof *d);
    size_t np = carlo_cells_pos_len(g), na = carlo_cells_aux_len(g);
    d->pos = carlo_malloc(carlo_mulsize(np, sizeof(float)), "cell positions");
    d->aux = d->pos && na ? carlo_malloc(carlo_mulsize(na, sizeof(uint32_t)), "cell words") : NULL;
    d->count = d->pos && (d->aux || !na)
                   ? carlo_malloc(carlo_mulsize((size_t)g->ncells, sizeof(uint32_t)), "cell counts")
                   : NULL;
    if (!d->count) {
        carlo_cell_data_free(d);
        return -1;
    }
    carlo_cell_data_clear(g, d);
    return 0;
}

void carlo_cell_data_free(carlo_cell_data *d)
{
    free(d->pos);
    free(d->aux);
    free(d->count);
    memset(d, 0, sizeof *d);
}

int carlo_cell_data_fit_with(carlo_cell_data *d, carlo_cell_grid *have, const carlo_cell_grid *g,
                             int (*alloc)(const carlo_cell_grid *, carlo_cell_data *),
                             void (*release)(carlo_cell_data *))
{
    if (d->pos && have->dim == g->dim && have->ncells == g->ncells && have->nmax == g->nmax &&
        have->naux == g->naux)
        return 0;
    release(d);
    if (alloc(g, d))
        return -1;
    *have = *g;
    return 0;
}

int carlo_cell_data_fit(carlo_cell_data *d, carlo_cell_grid *have, const carlo_cell_grid *g)
{
    return carlo_cell_data_fit_with(d, have, g, carlo_cell_data_alloc, carlo_cell_data_free);
}

/* The names of the three chunks of the cells. */
static int chunk_names(const char *prefix, char name[3][CARLO_CHUNK_NAME])
{
    static const char *const part[3] = {"pos", "aux", "count"};
    for (int k = 0; k < 3; k++)
        if (snprintf(name[k], CARLO_CHUNK_NAME, "%s/cells/%s", prefix, part[k]) >= CARLO_CHUNK_NAME)
            return carlo_seterr("chunk name '%s/cells/%s' is longer than %d bytes", prefix, part[k],
                                CARLO_CHUNK_NAME - 1);
    return 0;
}

int carlo_cells_to_frame(carlo_frame *f, const char *prefix, const carlo_cell_grid *g, carlo_cell_data *d,
                         int owned)
{
    char name[3][CARLO_CHUNK_NAME];
    if (chunk_names(prefix, name))
        return -1;
    const uint64_t planes = (uint64_t)g->dim * (uint64_t)g->nmax, wplanes = (uint64_t)g->naux * (uint64_t)g->nmax;
    const uint64_t nc = (uint64_t)g->ncells;
    if (!owned)
        return carlo_frame_add_copy(f, name[0], CARLO_F32, planes, nc, d->pos) ||
                       carlo_frame_add_copy(f, name[1], CARLO_U32, wplanes, nc, d->aux) ||
                       carlo_frame_add_copy(f, name[2], CARLO_U32, nc, 1, d->count)
                   ? -1
                   : 0;
    int rc = carlo_frame_add_owned(f, name[0], CARLO_F32, planes, nc, d->pos);
    d->pos = NULL;
    if (!rc) {
        rc = carlo_frame_add_owned(f, name[1], CARLO_U32, wplanes, nc, d->aux);
        d->aux = NULL;
    }
    if (!rc) {
        rc = carlo_frame_add_owned(f, name[2], CARLO_U32, nc, 1, d->count);
        d->count = NULL;
    }
    return rc ? -1 : 0;
}

int carlo_cells_from_frame(const carlo_frame *f, const char *prefix, const carlo_cell_grid *g,
                           carlo_cell_data *view)
{
    char name[3][CARLO_CHUNK_NAME];
    if (chunk_names(prefix, name))
        return -1;
    const uint64_t planes = (uint64_t)g->dim * (uint64_t)g->nmax, wplanes = (uint64_t)g->naux * (uint64_t)g->nmax;
    const uint64_t nc = (uint64_t)g->ncells;
    const float *pos = carlo_frame_expect(f, name[0], CARLO_F32, planes, nc);
    const uint32_t *aux = carlo_frame_expect(f, name[1], CARLO_U32, wplanes, nc);
    const uint32_t *count = carlo_frame_expect(f, name[2], CARLO_U32, nc, 1);
    if (!pos || !aux || !count)
        return -1;
    view->pos = (float *)pos;
    view->aux = (uint32_t *)aux;
    view->count = (uint32_t *)count;
    return 0;
}

/* The cell and local coordinate of an offset r along axis a (wrapped into [0, L)). */
static void locate(const carlo_cell_grid *g, int a, double r, int *c, float *u)
{
    double L = (double)g->m[a] * g->width[a];
    r -= floor(r / L) * L; /* keeps r / q far from int64 overflow */
    carlo_cell_cut(g, a, r, c, u);
}

int carlo_cells_fill(const carlo_cell_grid *g, const carlo_cell_data *d, int64_t n,
                     const double *r, const uint32_t *aux)
{
    for (int64_t k = 0; k < n; k++) {
        int c[3] = {0, 0, 0};
        float u[3] = {0, 0, 0};
        for (int a = 0; a < g->dim; a++)
            locate(g, a, r[3 * k + a], &c[a], &u[a]);
        int64_t ci = carlo_cell_index(g, c[0], c[1], c[2]);
        int j = (int)d->count[ci];
        if (j >= g->nmax) {
            char list[256];
            size_t len = 0;
            list[0] = 0;
            for (int64_t q = 0; q < k && len + 24 < sizeof list; q++) {
                int cq[3] = {0, 0, 0};
                float uq;
                for (int a = 0; a < g->dim; a++)
                    locate(g, a, r[3 * q + a], &cq[a], &uq);
                if (cq[0] == c[0] && cq[1] == c[1] && cq[2] == c[2])
                    len += (size_t)snprintf(list + len, sizeof list - len, "%lld, ", (long long)q + 1);
            }
            return carlo_seterr("cell (%d, %d, %d) would hold more than %d particles: %s%lld "
                                "(1-based indices)", c[0], c[1], c[2], g->nmax, list, (long long)k + 1);
        }
        for (int a = 0; a < g->dim; a++)
            d->pos[carlo_cell_slot(g, ci, j, a)] = u[a];
        for (int w = 0; w < g->naux; w++)
            d->aux[carlo_cell_slot(g, ci, j, w)] = aux[(size_t)k * (size_t)g->naux + (size_t)w];
        d->count[ci] = (uint32_t)(j + 1);
    }
    return 0;
}

int64_t carlo_cells_extract(const carlo_cell_grid *g, const carlo_cell_data *d, double *r,
                            uint32_t *aux)
{
    int64_t k = 0;
    for (int64_t c = 0; c < g->ncells; c++) {
        int xyz[3];
        carlo_cell_coords(g, c, xyz);
        int n = (int)d->count[c];
        for (int i = 0; i < n; i++, k++) {
            if (r) {
                for (int a = 0; a < 3; a++)
                    r[3 * k + a] = a < g->dim ? (double)xyz[a] * g->width[a] +
                                                    (double)d->pos[carlo_cell_slot(g, c, i, a)]
                                              : 0.0;
            }
            if (aux)
                for (int w = 0; w < g->naux; w++)
                    aux[(size_t)k * (size_t)g->naux + (size_t)w] = d->aux[carlo_cell_slot(g, c, i, w)];
        }
    }
    return k;
}

int64_t carlo_cells_count(const carlo_cell_grid *g, const carlo_cell_data *d)
{
    int64_t n = 0;
    for (int64_t c = 0; c < g->ncells; c++)
        n += d->count[c];
    return n;
}

int64_t carlo_cells_shift_range(const carlo_cell_grid *g, const carlo_cell_data *src, const carlo_cell_data *dst,
                                carlo_cell_shift sh, int64_t c0, int64_t c1)
{
    int64_t over = -1;
#pragma omp parallel for schedule(static) reduction(max : over) if (c1 - c0 > 4096)
    for (int64_t c = c0; c < c1; c++) {
        int xyz[3];
        carlo_cell_coords(g, c, xyz);
        if (carlo_cell_shift_gather(g, src, dst, xyz, sh) > g->nmax && c > over)
            over = c;
    }
    return over;
}

int carlo_cells_shift_overflow(const carlo_cell_grid *g, int64_t c)
{
    int xyz[3];
    carlo_cell_coords(g, c, xyz);
    return carlo_seterr("cell (%d, %d, %d) overflowed its %d slots in the cell shift", xyz[0], xyz[1], xyz[2],
                        g->nmax);
}

int carlo_cells_shift_host(const carlo_cell_grid *g, const carlo_cell_data *src,
                           const carlo_cell_data *dst, carlo_cell_shift sh)
{
    const int64_t over = carlo_cells_shift_range(g, src, dst, sh, 0, g->ncells);
    return over >= 0 ? carlo_cells_shift_overflow(g, over) : 0;
}

int carlo_cells_regrid_range(const carlo_cell_grid *og, const carlo_cell_data *src, const carlo_cell_grid *ng,
                             const carlo_cell_data *dst, const double lam[3], int64_t c0, int64_t c1)
{
    int over = 0;
#pragma omp parallel for schedule(static) reduction(max : over) if (c1 - c0 > 4096)
    for (int64_t c = c0; c < c1; c++) {
        int xyz[3];
        carlo_cell_coords(ng, c, xyz);
        if (carlo_cell_regrid_gather(og, src, ng, dst, lam, xyz) > ng->nmax)
            over = 1;
    }
    return over;
}

int carlo_cells_regrid_host(const carlo_cell_grid *og, const carlo_cell_data *src,
                            const carlo_cell_grid *ng, const carlo_cell_data *dst,
                            const double lam[3])
{
    return carlo_cells_regrid_range(og, src, ng, dst, lam, 0, ng->ncells);
}

int carlo_cells_verify(const carlo_cell_grid *g, const carlo_cell_data *d, int64_t n)
{
    int64_t total = 0;
    for (int64_t c = 0; c < g->ncells; c++) {
        int xyz[3];
        carlo_cell_coords(g, c, xyz);
        uint32_t k = d->count[c];
        if (k > (uint32_t)g->nmax)
            return carlo_seterr("cell (%d, %d, %d) claims %u particles (at most %d)", xyz[0], xyz[1],
                                xyz[2], k, g->nmax);
        total += k;
        for (int i = 0; i < g->nmax; i++)
            for (int a = 0; a < g->dim; a++) {
                float u = d->pos[carlo_cell_slot(g, c, i, a)];
                if (i < (int)k && !(u >= 0.0f && u < g->w[a]))
                    return carlo_seterr("particle in slot %d of cell (%d, %d, %d) is outside its cell: "
                                        "%c = %.9g not in [0, %.9g)", i, xyz[0], xyz[1], xyz[2],
                                        AXES[a], (double)u, (double)g->w[a]);
                if (i >= (int)k && u != CARLO_CELL_EMPTY)
                    return carlo_seterr("empty slot %d of cell (%d, %d, %d) is not marked empty", i,
                                        xyz[0], xyz[1], xyz[2]);
            }
    }
    if (n >= 0 && total != n)
        return carlo_seterr("the cells hold %lld particles, not %lld", (long long)total, (long long)n);
    return 0;
}
