/* lj.c — what both Lennard-Jones algorithms share: parameters, initial configurations, tail
 * corrections, from-scratch energies, g(r) counts and the common chunks of a checkpoint. It
 * calls nothing above it (lj_sys.c, the algorithms): they call it. */
#include "lj/lj.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static const double PI = 3.14159265358979323846;

const char *lj_mode_name(lj_mode m) { return m == LJ_CHECKERBOARD ? "checkerboard" : "decomposition"; }

double lj_volume(const lj_system *s)
{
    return s->dim == 3 ? s->g.L[0] * s->g.L[1] * s->g.L[2] : s->g.L[0] * s->g.L[1];
}

double lj_density(const lj_system *s) { return (double)s->N / lj_volume(s); }

/* ---------- tail corrections (g(r) = 1 beyond rc) ---------- */

/* U_tail / N = (rho / 2) int_rc^inf u(r) dS(r):
 *   3D: (8/3) pi rho (rc^-9 / 3 - rc^-3)      2D: pi rho (0.4 rc^-10 - rc^-4)
 * P_tail = -(rho^2 / 2d) int_rc^inf r u'(r) dS(r):
 *   3D: (16/3) pi rho^2 ((2/3) rc^-9 - rc^-3)  2D: pi rho^2 (2.4 rc^-10 - 3 rc^-4) */
static double tail_u_coef(const lj_system *s)
{
    double rc = s->rc;
    if (s->dim == 3)
        return 8.0 / 3.0 * PI * (pow(rc, -9) / 3.0 - pow(rc, -3));
    return PI * (0.4 * pow(rc, -10) - pow(rc, -4));
}

static double tail_p_coef(const lj_system *s)
{
    double rc = s->rc;
    if (s->dim == 3)
        return 16.0 / 3.0 * PI * (2.0 / 3.0 * pow(rc, -9) - pow(rc, -3));
    return PI * (2.4 * pow(rc, -10) - 3.0 * pow(rc, -4));
}

double lj_tail_energy(const lj_system *s)
{
    return s->tail ? tail_u_coef(s) * lj_density(s) : 0.0;
}

double lj_tail_pressure(const lj_system *s)
{
    double rho = lj_density(s);
    return s->tail ? tail_p_coef(s) * rho * rho : 0.0;
}

/* The tail energy a test particle adds: U_tail(N + 1) - U_tail(N) = coef (2N + 1) / V. */
double lj_widom_tail(const lj_system *s)
{
    return s->tail ? tail_u_coef(s) * (2.0 * (double)s->N + 1.0) / lj_volume(s) : 0.0;
}

/* ---------- a host-side cell grid (energies, g(r), overlaps) ---------- */

typedef struct hgrid {
    lj_geom g;        /* L, half, dim from the system; n, w of this grid */
    int ncell;
    int32_t *start;   /* ncell + 1 */
    int32_t *member;  /* N, by cell, increasing particle index within a cell */
} hgrid;

/* Cells at least `width` wide; returns 1 (and builds nothing) when some axis would have
 * fewer than 3, so that the 27 neighbours are distinct. */
static int hgrid_build(const lj_system *s, const double *pos, double width, hgrid *h)
{
    memset(h, 0, sizeof *h);
    h->g = s->g;
    int64_t ncell = 1;
    for (int a = 0; a < 3; a++) {
        if (a < s->dim) {
            double n = floor(s->g.L[a] / (width * (1.0 + 1e-10)));
            if (n < 3)
                return 1;
            if (n > 1024)
                n = 1024;
            h->g.n[a] = (int)n;
            h->g.w[a] = s->g.L[a] / n;
        } else {
            h->g.n[a] = 1;
            h->g.w[a] = s->g.L[a];
        }
        ncell *= h->g.n[a];
    }
    h->ncell = (int)ncell;
    h->start = carlo_calloc((size_t)ncell + 1, sizeof *h->start, "a cell grid");
    h->member = h->start ? carlo_malloc(sizeof *h->member * s->N, "a cell grid") : NULL;
    int32_t *cell = h->member ? carlo_malloc(sizeof *cell * s->N, "a cell grid") : NULL;
    if (!cell) {
        free(h->start);
        free(h->member);
        return -1;
    }
    for (uint32_t i = 0; i < s->N; i++) {
        cell[i] = lj_cell_of(&h->g, pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]);
        h->start[cell[i] + 1]++;
    }
    for (int c = 0; c < h->ncell; c++)
        h->start[c + 1] += h->start[c];
    int32_t *fill = carlo_malloc(sizeof *fill * (size_t)ncell, "a cell grid");
    if (!fill) {
        free(cell);
        free(h->start);
        free(h->member);
        return -1;
    }
    memcpy(fill, h->start, sizeof *fill * (size_t)ncell);
    for (uint32_t i = 0; i < s->N; i++)
        h->member[fill[cell[i]]++] = (int32_t)i;
    free(fill);
    free(cell);
    return 0;
}

static void hgrid_free(hgrid *h)
{
    free(h->start);
    free(h->member);
    memset(h, 0, sizeof *h);
}

/* Energy and virial of particle i with every other particle (each pair seen from both ends). */
static void particle_energy(const lj_system *s, const hgrid *h, const double *pos, uint32_t i,
                            double *eu, double *ew)
{
    const double *p = pos + 3 * (size_t)i;
    lj_uw acc = {0.0, 0.0};
    if (h) {
        int c = lj_cell_of(&h->g, p[0], p[1], p[2]);
        int nq = lj_neighbour_count(s->dim);
        for (int q = 0; q < nq; q++) {
            int cq = lj_cell_neighbour(&h->g, c, q);
            for (int32_t k = h->start[cq]; k < h->start[cq + 1]; k++) {
                uint32_t j = (uint32_t)h->member[k];
                if (j != i)
                    lj_accumulate(&s->g, p, pos[3 * j], pos[3 * j + 1], pos[3 * j + 2], &acc);
            }
        }
    } else {
        for (uint32_t j = 0; j < s->N; j++)
            if (j != i)
                lj_accumulate(&s->g, p, pos[3 * j], pos[3 * j + 1], pos[3 * j + 2], &acc);
    }
    *eu = acc.u;
    *ew = acc.w;
}

int lj_energy_fresh(const lj_system *s, const double *pos, double *U, double *W)
{
    hgrid h;
    int rc = hgrid_build(s, pos, s->rc, &h);
    if (rc < 0)
        return -1;
    double *e = carlo_malloc(sizeof *e * 2 * (size_t)s->N, "per-particle energies");
    if (!e) {
        hgrid_free(&h);
        return -1;
    }
    const hgrid *hp = rc == 0 ? &h : NULL;
#pragma omp parallel for schedule(dynamic, 256)
    for (int64_t i = 0; i < (int64_t)s->N; i++)
        particle_energy(s, hp, pos, (uint32_t)i, &e[2 * i], &e[2 * i + 1]);
    double u = 0.0, w = 0.0;
    for (uint32_t i = 0; i < s->N; i++) {
        u += e[2 * i];
        w += e[2 * i + 1];
    }
    *U = 0.5 * u;
    *W = 0.5 * w;
    /* name an offending pair when the sum is not finite */
    if (!isfinite(*U) || !isfinite(*W)) {
        for (uint32_t i = 0; i < s->N; i++) {
            if (isfinite(e[2 * i]) && isfinite(e[2 * i + 1]))
                continue;
            for (uint32_t j = 0; j < s->N; j++) {
                double uu, ww;
                const double *a = pos + 3 * (size_t)i, *b = pos + 3 * (size_t)j;
                double r2 = lj_r2(&s->g, a[0], a[1], a[2], b[0], b[1], b[2]);
                lj_pair(r2, s->g.rc2, s->g.ushift, &uu, &ww);
                if (j != i && (!isfinite(uu) || !isfinite(ww))) {
                    free(e);
                    hgrid_free(&h);
                    return carlo_seterr("particles %u and %u overlap (distance %g): the energy "
                                        "is not finite", i + 1, j + 1, sqrt(r2));
                }
            }
        }
        free(e);
        hgrid_free(&h);
        return carlo_seterr("the energy is not finite (%g)", *U);
    }
    free(e);
    hgrid_free(&h);
    return 0;
}

int lj_rdf_count(const lj_system *s, const double *pos, double rmax, int bins, uint64_t *count)
{
    hgrid h;
    int rc = hgrid_build(s, pos, rmax, &h);
    if (rc < 0)
        return -1;
    const hgrid *hp = rc == 0 ? &h : NULL;
    double rmax2 = rmax * rmax, dr = rmax / bins;
    memset(count, 0, sizeof *count * (size_t)bins);
#pragma omp parallel
    {
        uint64_t *local = calloc((size_t)bins, sizeof *local);
        if (local) {
#pragma omp for schedule(dynamic, 256)
            for (int64_t ii = 0; ii < (int64_t)s->N; ii++) {
                uint32_t i = (uint32_t)ii;
                const double *p = pos + 3 * (size_t)i;
                if (hp) {
                    int c = lj_cell_of(&hp->g, p[0], p[1], p[2]);
                    int nq = lj_neighbour_count(s->dim);
                    for (int q = 0; q < nq; q++) {
                        int cq = lj_cell_neighbour(&hp->g, c, q);
                        for (int32_t k = hp->start[cq]; k < hp->start[cq + 1]; k++) {
                            uint32_t j = (uint32_t)hp->member[k];
                            if (j <= i)
                                continue;
                            double r2 = lj_r2(&s->g, p[0], p[1], p[2], pos[3 * j], pos[3 * j + 1],
                                              pos[3 * j + 2]);
                            if (r2 < rmax2) {
                                int b = (int)(sqrt(r2) / dr);
                                local[b < bins ? b : bins - 1]++;
                            }
                        }
                    }
                } else {
                    for (uint32_t j = i + 1; j < s->N; j++) {
                        double r2 = lj_r2(&s->g, p[0], p[1], p[2], pos[3 * j], pos[3 * j + 1],
                                          pos[3 * j + 2]);
                        if (r2 < rmax2) {
                            int b = (int)(sqrt(r2) / dr);
                            local[b < bins ? b : bins - 1]++;
                        }
                    }
                }
            }
#pragma omp critical
            for (int b = 0; b < bins; b++)
                count[b] += local[b];
            free(local);
        }
    }
    hgrid_free(&h);
    return 0;
}


/* ---------- initial configurations ---------- */

/* fcc in 3D (4 sites per cubic cell), the centred square lattice in 2D (2 per cell); m[a]
 * cells per axis in proportion to the box, the first N sites in order. */
static void init_fcc(const lj_system *s, double *pos)
{
    static const double basis3[4][3] = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
    static const double basis2[2][3] = {{0, 0, 0}, {0.5, 0.5, 0}};
    int nb = s->dim == 3 ? 4 : 2;
    double a = pow(lj_volume(s) * nb / s->N, 1.0 / s->dim);
    int64_t m[3] = {1, 1, 1};
    for (int d = 0; d < s->dim; d++) {
        m[d] = (int64_t)floor(s->g.L[d] / a + 0.5);
        if (m[d] < 1)
            m[d] = 1;
    }
    while (m[0] * m[1] * m[2] * nb < (int64_t)s->N) { /* grow the axis with the widest spacing */
        int best = 0;
        for (int d = 1; d < s->dim; d++)
            if (s->g.L[d] / m[d] > s->g.L[best] / m[best])
                best = d;
        m[best]++;
    }
    uint32_t i = 0;
    for (int64_t cz = 0; cz < m[2] && i < s->N; cz++)
        for (int64_t cy = 0; cy < m[1] && i < s->N; cy++)
            for (int64_t cx = 0; cx < m[0] && i < s->N; cx++)
                for (int b = 0; b < nb && i < s->N; b++, i++) {
                    const double *bb = s->dim == 3 ? basis3[b] : basis2[b];
                    double c[3] = {(double)cx, (double)cy, (double)cz};
                    for (int d = 0; d < 3; d++)
                        pos[3 * i + d] = d < s->dim
                            ? lj_wrap((c[d] + bb[d] + 0.25) * s->g.L[d] / (double)m[d], s->g.L[d])
                            : 0.0;
                }
}

/* Random sequential addition with a minimum distance that shrinks when a particle finds no
 * place in 2000 tries: a pure function of the seed, and free of overlaps. */
static int init_random(const lj_system *s, double *pos)
{
    double spacing = pow(lj_volume(s) / s->N, 1.0 / s->dim);
    double dmin = fmin(0.9, 0.85 * spacing);
    /* a fixed grid at least dmin wide holds the placed particles (linked per cell) */
    int n[3] = {1, 1, 1};
    double w[3];
    int64_t ncell = 1;
    for (int a = 0; a < 3; a++) {
        if (a < s->dim) {
            double k = floor(s->g.L[a] / dmin);
            n[a] = k < 3 ? 1 : (int)fmin(k, 512);
        }
        w[a] = s->g.L[a] / n[a];
        ncell *= n[a];
    }
    int32_t *head = carlo_malloc(sizeof *head * (size_t)ncell, "the random start");
    int32_t *next = head ? carlo_malloc(sizeof *next * s->N, "the random start") : NULL;
    if (!next) {
        free(head);
        return -1;
    }
    for (int64_t c = 0; c < ncell; c++)
        head[c] = -1;
    lj_geom g = s->g;
    for (int a = 0; a < 3; a++) {
        g.n[a] = n[a];
        g.w[a] = w[a];
    }
    int small = n[0] < 3 || n[1] < 3 || (s->dim == 3 && n[2] < 3);
    uint64_t attempt = 0;
    for (uint32_t i = 0; i < s->N; i++) {
        int tries = 0;
        for (;;) {
            carlo_u32x4 r = carlo_rng(s->seed, LJ_PURPOSE_INIT, attempt++, i, 0);
            double p[3];
            for (int a = 0; a < 3; a++)
                p[a] = a < s->dim ? s->g.L[a] * ((double)r.v[a] * (1.0 / 4294967296.0)) : 0.0;
            double d2 = dmin * dmin;
            int ok = 1;
            if (small) {
                for (uint32_t j = 0; j < i && ok; j++)
                    ok = lj_r2(&s->g, p[0], p[1], p[2], pos[3 * j], pos[3 * j + 1], pos[3 * j + 2]) >= d2;
            } else {
                int c = lj_cell_of(&g, p[0], p[1], p[2]);
                for (int q = 0; q < lj_neighbour_count(s->dim) && ok; q++)
                    for (int32_t j = head[lj_cell_neighbour(&g, c, q)]; j >= 0 && ok; j = next[j])
                        ok = lj_r2(&s->g, p[0], p[1], p[2], pos[3 * j], pos[3 * j + 1],
                                   pos[3 * j + 2]) >= d2;
            }
            if (ok) {
                memcpy(pos + 3 * (size_t)i, p, sizeof p);
                if (!small) {
                    int c = lj_cell_of(&g, p[0], p[1], p[2]);
                    next[i] = head[c];
                    head[c] = (int32_t)i;
                }
                break;
            }
            if (++tries == 2000) {
                dmin *= 0.9;
                tries = 0;
            }
        }
    }
    free(head);
    free(next);
    return 0;
}


/* ---------- creation ---------- */

int lj_check_params(const lj_params *p)
{
    if (p->N < 2 || p->N > LJ_N_MAX)
        return carlo_seterr("N must be an integer from 2 to %d (got %u)", LJ_N_MAX, p->N);
    if (p->dim != 2 && p->dim != 3)
        return carlo_seterr("dim must be 2 or 3 (got %d)", p->dim);
    double Lmin = INFINITY;
    for (int a = 0; a < p->dim; a++) {
        if (!(p->box[a] > 0) || !isfinite(p->box[a]))
            return carlo_seterr("box[%d] must be a number > 0 (got %g)", a + 1, p->box[a]);
        Lmin = fmin(Lmin, p->box[a]);
    }
    if (!(p->T > 0) || !isfinite(p->T) || !isfinite(1.0 / p->T))
        return carlo_seterr("T must be a number > 0 (got %g)", p->T);
    if (!(p->rc > 0) || !isfinite(p->rc))
        return carlo_seterr("rc must be a number > 0 (got %g)", p->rc);
    if (p->rc > 0.5 * Lmin)
        return carlo_seterr("rc must be at most half the shortest box length, %.17g (got %g): "
                            "the minimum image would miss pairs", 0.5 * Lmin, p->rc);
    if (!(p->delta > 0) || !(p->delta <= 0.25 * Lmin))
        return carlo_seterr("delta must be a number in (0, %.17g], a quarter of the shortest box "
                            "length (got %g)", 0.25 * Lmin, p->delta);
    if (p->shift && p->tail)
        return carlo_seterr("tail must be false when shift = true: the analytic tail corrections "
                            "belong to the plain truncated potential");
    return 0;
}

double lj_min_box(const lj_system *s)
{
    double m = s->g.L[0];
    for (int a = 1; a < s->dim; a++)
        m = fmin(m, s->g.L[a]);
    return m;
}

/* The parameters, and the geometry without cells: box, cutoff, shift. */
void lj_setup(lj_system *s, const lj_params *p, const lj_algo *algo)
{
    s->replicas = 1;
    s->seed = p->seed;
    s->step = p->step;
    s->device = p->device;
    s->N = p->N;
    s->dim = p->dim;
    s->rc = p->rc;
    s->T = p->T;
    s->beta = 1.0 / p->T;
    s->shift = p->shift;
    s->tail = p->tail;
    s->quiet = p->quiet;
    s->mode = p->mode;
    s->algo = algo;
    s->delta = p->delta;
    lj_geom *g = &s->g;
    memset(g, 0, sizeof *g);
    g->dim = p->dim;
    for (int a = 0; a < 3; a++) {
        g->L[a] = a < p->dim ? p->box[a] : 1.0;
        g->half[a] = 0.5 * g->L[a];
        g->n[a] = 1;
        g->w[a] = g->L[a];
    }
    g->rc2 = p->rc * p->rc;
    if (p->shift) { /* u(rc), by the same operations as lj_pair */
        double ir2 = 1.0 / g->rc2, ir6 = ir2 * ir2 * ir2;
        g->ushift = 4.0 * ir6 * (ir6 - 1.0);
    }
}

/* Given positions in the snapshots' convention, [-L/2, L/2) (any periodic image will do),
 * into [0, L). A snapshot's own positions come back as they were: x - L/2 + L/2 is exact for
 * every x in [L/4, L), and every other x - L/2 computed for a snapshot comes back to itself. */
static void to_box(const lj_system *s, const double *in, double *out)
{
    for (uint32_t i = 0; i < s->N; i++)
        for (int a = 0; a < 3; a++) {
            double x = 0.0;
            if (a < s->dim) {
                x = fmod(in[3 * i + a] + s->g.half[a], s->g.L[a]);
                x = lj_wrap(x, s->g.L[a]);
            }
            out[3 * i + a] = x;
        }
}

int lj_initial_positions(const lj_system *s, const lj_params *p, double *pos)
{
    if (p->init == LJ_INIT_FCC)
        init_fcc(s, pos);
    else if (p->init == LJ_INIT_RANDOM)
        return init_random(s, pos);
    else
        to_box(s, p->positions, pos);
    return 0;
}

int lj_fail(lj_system *s)
{
    s->dead |= s->device == CARLO_GPU;
    return -1;
}

/* ---------- the common chunks of a checkpoint ----------
 * lj/shape (i32): N, dim, shift, tail, mode, sum, kernel
 * lj/params (f64): Lx, Ly, Lz, rc, T, delta, U, W, drift, drift_max
 * lj/counters (u64): moves, step, samples, tried, accepted */

int lj_checkpoint_head(lj_system *s, carlo_frame *f, int32_t sum, int32_t kernel, uint64_t moves,
                       double U, double W)
{
    int32_t shape[7] = {(int32_t)s->N, s->dim, s->shift, s->tail, (int32_t)s->mode, sum, kernel};
    double params[10] = {s->g.L[0], s->g.L[1], s->g.L[2], s->rc, s->T, s->delta, U, W, s->drift,
                         s->drift_max};
    uint64_t counters[5] = {moves, s->step, s->samples, s->tried, s->accepted};
    if (carlo_frame_add_string(f, "carlo/model", "lj") ||
        carlo_frame_add_u64(f, "configuration/step", s->step) ||
        carlo_frame_add_u64(f, "carlo/seed", s->seed) ||
        carlo_frame_add_copy(f, "lj/shape", CARLO_I32, 7, 1, shape) ||
        carlo_frame_add_copy(f, "lj/params", CARLO_F64, 10, 1, params) ||
        carlo_frame_add_copy(f, "lj/counters", CARLO_U64, 5, 1, counters))
        return -1;
    return 0;
}

int lj_restore_head(const carlo_frame *f, carlo_device_kind device, lj_head *h)
{
    const int32_t *shape = carlo_frame_expect(f, "lj/shape", CARLO_I32, 7, 1);
    const double *params = carlo_frame_expect(f, "lj/params", CARLO_F64, 10, 1);
    const uint64_t *counters = carlo_frame_expect(f, "lj/counters", CARLO_U64, 5, 1);
    const uint64_t *seed = carlo_frame_expect(f, "carlo/seed", CARLO_U64, 1, 1);
    if (!shape || !params || !counters || !seed)
        return -1;
    if (shape[0] < 2 || shape[0] > LJ_N_MAX || shape[4] < 0 || shape[4] > 1 || shape[5] < 0 ||
        shape[5] > 1 || shape[6] < 0 || shape[6] > 2)
        return carlo_seterr("bad lj/shape");
    memset(h, 0, sizeof *h);
    lj_params *p = &h->p;
    p->N = (uint32_t)shape[0];
    p->dim = shape[1];
    for (int a = 0; a < 3; a++)
        p->box[a] = params[a];
    p->rc = params[3];
    p->T = params[4];
    p->delta = params[5];
    p->shift = shape[2] != 0;
    p->tail = shape[3] != 0;
    p->mode = (lj_mode)shape[4];
    p->sum = shape[5];
    p->passes = 1;
    p->device = device;
    p->seed = *seed;
    p->step = counters[1];
    p->init = LJ_INIT_POSITIONS;
    h->sum = shape[5];
    h->kernel = shape[6];
    h->U = params[6];
    h->W = params[7];
    h->drift = params[8];
    h->drift_max = params[9];
    h->moves = counters[0];
    h->step = counters[1];
    h->samples = counters[2];
    h->tried = counters[3];
    h->accepted = counters[4];
    if (!isfinite(h->U) || !isfinite(h->W))
        return carlo_seterr("bad running energy");
    return 0;
}

void lj_restore_counters(lj_system *s, const lj_head *h)
{
    s->drift = h->drift;
    s->drift_max = h->drift_max;
    s->step = h->step;
    s->samples = h->samples;
    s->tried = h->tried;
    s->accepted = h->accepted;
}
