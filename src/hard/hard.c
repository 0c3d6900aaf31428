/* hard.c — the hard-particle system: creation (random start compressed to the target, lattices,
 * given positions), sweeps (MPMC Algorithm 1), NPT volume moves, the ensemble and compression
 * (move-size tuning: hard_tune.c); runs go through the system layer (hard_sys.c). The backends
 * do the per-cell work; everything decided here is decided on the host from the same numbers
 * for every backend. */
#include "hard/hard.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/progress.h"
#include "hard/hard_mpi.h"
#include "hard/hard_plain.h"

#define PI 3.14159265358979323846

double hard_close_packing(int dim)
{
    return dim == 2 ? PI / (2.0 * sqrt(3.0)) : PI / (3.0 * sqrt(2.0));
}

double hard_particle_volume(int dim) { return dim == 2 ? PI / 4.0 : PI / 6.0; }

double hard_phi_of(int dim, int64_t N, const carlo_box *b)
{
    return (double)N * hard_particle_volume(dim) / carlo_box_volume(b);
}

double hard_phi(const hard_system *s) { return hard_phi_of(s->dim, s->N, &s->box); }

static double wmax(int dim) { return dim == 2 ? HARD_WMAX_2D : HARD_WMAX_3D; }

/* The default cell width: the widest in 2D (MPMC's choice); in 3D 1.12, where the window
 * reaches 1.279 only so that every box side from 8 up has a grid: the neighbours of narrower
 * cells are fewer per move and hold fewer empty slots (H100, 2^20 spheres at phi = 0.5:
 * 3.9e9 moves/s at w = 1.258, 4.3e9 at 1.12, 4.2e9 at 1.01). */
#define HARD_WPREF_3D 1.12

/* The longest diagonal of the parts a cell of grid g in box b splits into (2 x 2 in 2D; 2 x 2 x 3
 * in 3D, the 3 along axis `three`): two centres in one part would overlap while it is below 1,
 * so a cell holds at most HARD_NMAX_2D (_3D) centres. */
static double part_diagonal(const carlo_cell_grid *g, const carlo_box *b, int three)
{
    double best = 0;
    for (int k = 0; k < 4; k++) { /* the diagonals (+-, +-, +) of a part, in skew coordinates */
        double d[3] = {0, 0, 0}, v[3];
        for (int a = 0; a < b->dim; a++) {
            const double part = g->width[a] / (b->dim == 3 && a == three ? 3.0 : 2.0);
            d[a] = (a == 0 ? 1.0 : a == 1 ? ((k & 1) ? -1.0 : 1.0) : ((k & 2) ? -1.0 : 1.0)) * part;
        }
        carlo_box_skew_to_pos(b, d, v);
        best = fmax(best, sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]));
    }
    return best;
}

/* The deepest overlap a compression lets a pair reach on its way (a fraction of sigma): it
 * plans its cells narrower by as much (plan_narrow), so that a cell of centres at least
 * 1 - COMPRESS_DEPTH apart still holds at most HARD_NMAX_2D (_3D) of them. */
#define COMPRESS_DEPTH 0.01

/* A grid of cells for box b: at least 1 wide, at most wmax(dim) * narrow (narrow < 1 for
 * orthorhombic boxes only). */
static int plan_narrow(carlo_cell_grid *g, const carlo_box *b, double w_pref, double narrow)
{
    const int nmax = b->dim == 2 ? HARD_NMAX_2D : HARD_NMAX_3D;
    double wp = w_pref > 0 ? w_pref : (b->dim == 2 ? wmax(2) : HARD_WPREF_3D);
    if (carlo_box_orthorhombic(b))
        return carlo_cells_plan(g, b, 1.0, wmax(b->dim) * narrow, fmin(wp, wmax(b->dim) * narrow), nmax, 1);
    if (narrow < 1.0)
        return -1;
    if (hard_tilt_check(b))
        return -1;
    /* parallelepipeds at least 1 thick between faces whose parts (part_diagonal) are shorter
     * than 1: the widest such cells, narrowed step by step until the parts fit */
    double w = wmax(b->dim);
    for (int tries = 0; tries < 64 && w > 1.0; tries++, w = 1.0 + (w - 1.0) * 0.9) {
        if (carlo_cells_plan_skew(g, b, 1.0, w, fmin(wp, w), nmax, 1))
            continue;
        double diag = part_diagonal(g, b, 0);
        for (int a = 1; b->dim == 3 && a < 3; a++)
            diag = fmin(diag, part_diagonal(g, b, a));
        if (diag < 1.0 - 1e-6)
            return 0;
    }
    double h[3];
    carlo_box_heights(b, h);
    return carlo_seterr("the tilted box (Lx, Ly, Lz = %.9g, %.9g, %.9g, xy, xz, yz = %.9g, %.9g, %.9g; widths "
                        "between faces %.9g, %.9g, %.9g) has no grid of cells, an even number along each "
                        "lattice vector, at least 1 thick between faces and small enough to hold at most %d "
                        "centres each: a wider box or smaller tilts are needed", b->L[0], b->L[1],
                        b->dim == 3 ? b->L[2] : 0.0, b->xy, b->dim == 3 ? b->xz : 0.0, b->dim == 3 ? b->yz : 0.0,
                        h[0], h[1], b->dim == 3 ? h[2] : 0.0, nmax);
}

static int plan(carlo_cell_grid *g, const carlo_box *b, double w_pref)
{
    return plan_narrow(g, b, w_pref, 1.0);
}

int hard_tilt_check(const carlo_box *b)
{
    const double t[3] = {b->xy, b->xz, b->yz};
    static const char *name[3] = {"xy", "xz", "yz"};
    for (int k = 0; k < 3; k++) {
        if (!isfinite(t[k]) || fabs(t[k]) > 0.5)
            return carlo_seterr("box tilt %s must be a number in [-0.5, 0.5] (got %.9g): a larger tilt "
                                "is the same lattice with a lattice vector added (reduce it)", name[k], t[k]);
        if (b->dim == 2 && k > 0 && t[k] != 0)
            return carlo_seterr("a 2D box has the tilt xy only (got %s = %.9g)", name[k], t[k]);
    }
    return 0;
}

void hard_tilt_of(const carlo_box *b, hard_moves *mv)
{
    mv->skew = !carlo_box_orthorhombic(b);
    for (int k = 0; k < 4; k++)
        mv->tilt[k] = 0.0f;
    if (!mv->skew)
        return;
    mv->tilt[0] = (float)b->xy;
    mv->tilt[1] = (float)(b->dim == 3 ? b->xz : 0.0);
    mv->tilt[2] = (float)(b->dim == 3 ? b->yz : 0.0);
    /* skew s = A^-1 x with A = [[1, xy, xz], [0, 1, yz], [0, 0, 1]]: |s|^2 <= lambda_max |x|^2,
     * lambda_max of A^-1 A^-T bounded by Gershgorin's row sums; a point 1 away is at most
     * sqrt(lambda_max) away in skew coordinates (the cells' frame), with a margin for the
     * float tilts and the rounding of the squared distances */
    const double xy = mv->tilt[0], xz = mv->tilt[1], yz = mv->tilt[2];
    const double B[3][3] = {{1, -xy, xy * yz - xz}, {0, 1, -yz}, {0, 0, 1}}; /* A^-1 */
    double gmax = 0;
    for (int i = 0; i < 3; i++) {
        double row = 0;
        for (int j = 0; j < 3; j++) {
            double m = 0;
            for (int k = 0; k < 3; k++)
                m += B[i][k] * B[j][k];
            row += fabs(m);
        }
        gmax = fmax(gmax, row);
    }
    mv->tilt[3] = (float)(gmax * 1.01);
}

/* The box of record: the grid's sides (exact multiples of the cell widths) with the tilts of
 * b, and the kernels' copy of the tilts. */
static void box_of_grid(hard_system *s, const carlo_cell_grid *g, const carlo_box *b)
{
    s->box = carlo_cells_box(g);
    s->box.xy = b->xy;
    s->box.xz = b->xz;
    s->box.yz = b->yz;
    hard_tilt_of(&s->box, &s->mv);
}

/* Box sides without a grid: no even m has 1 <= L/m < w_max when m w_max < L < m + 2. Returns
 * the lowest such gap [*lo, *hi) meeting the scaling of side L from L_from down to L_to (the
 * compression's path), or 0 when the path has a grid all the way. */
static int grid_gap(int dim, double L_from, double L_to, double *lo, double *hi)
{
    const double w = wmax(dim);
    if (L_to < 2.0) {
        *lo = 0;
        *hi = 2;
        return 1;
    }
    for (double m = 2; m * w < L_from; m += 2) {
        double a = m * w, b = m + 2;
        if (a < b && b > L_to && a <= L_from) {
            *lo = a;
            *hi = b;
            return 1;
        }
    }
    return 0;
}

int hard_fail_dead(hard_system *s)
{
    s->dead = s->device == CARLO_GPU;
    return -1;
}

/* ---------- lattices and random starts ---------- */

int hard_lattice_box(int dim, int64_t N, double phi, carlo_box *out)
{
    double v0 = hard_particle_volume(dim);
    if (dim == 2) {
        /* hexagonal rows: nx per row, ny rows (even, for periodicity), spacing a */
        int64_t best = -1;
        double best_q = INFINITY;
        for (int64_t ny = 2; ny <= N; ny += 2) {
            if (N % ny)
                continue;
            int64_t nx = N / ny;
            double q = fabs(log((double)nx / ((double)ny * sqrt(3.0) / 2.0)));
            if (q < best_q) {
                best_q = q;
                best = ny;
            }
        }
        if (best < 0)
            return carlo_seterr("a hexagonal lattice needs N = nx * ny with ny even (got N = %lld)",
                                (long long)N);
        double a = sqrt(v0 / phi * 2.0 / sqrt(3.0));
        double L[2] = {(double)(N / best) * a, (double)best * a * sqrt(3.0) / 2.0};
        *out = carlo_box_make(2, L);
        return 0;
    }
    if (N % 4)
        return carlo_seterr("an fcc lattice needs N = 4 nx ny nz (got N = %lld)", (long long)N);
    int64_t M = N / 4, bx = -1, by = -1, bz = -1;
    double best_q = INFINITY;
    for (int64_t nx = 1; nx * nx * nx <= M * 8 && nx <= M; nx++) {
        if (M % nx)
            continue;
        for (int64_t ny = 1; ny <= M / nx; ny++) {
            if ((M / nx) % ny)
                continue;
            int64_t nz = M / nx / ny;
            double c = cbrt((double)M);
            double q = fabs(log(nx / c)) + fabs(log(ny / c)) + fabs(log(nz / c));
            if (q < best_q) {
                best_q = q;
                bx = nx;
                by = ny;
                bz = nz;
            }
        }
    }
    double a = cbrt(4.0 * v0 / phi);
    double L[3] = {(double)bx * a, (double)by * a, (double)bz * a};
    *out = carlo_box_make(3, L);
    return 0;
}

/* Lattice positions filling box b (from hard_lattice_box), box coordinates. */
static int lattice_positions(int dim, int64_t N, const carlo_box *b, double *x)
{
    if (dim == 2) {
        /* find the row count again from the box's aspect */
        int64_t ny = -1;
        for (int64_t cand = 2; cand <= N; cand += 2)
            if (N % cand == 0) {
                double a = b->L[0] / (double)(N / cand);
                if (fabs(b->L[1] - (double)cand * a * sqrt(3.0) / 2.0) < 1e-9 * b->L[1]) {
                    ny = cand;
                    break;
                }
            }
        if (ny < 0)
            return carlo_seterr("%lld disks in hexagonal rows (N = nx ny, ny even, spacing a) need "
                                "a box nx a by ny a sqrt(3)/2, which this box is not: give phi "
                                "instead of box", (long long)N);
        int64_t nx = N / ny;
        double a = b->L[0] / (double)nx, h = b->L[1] / (double)ny;
        for (int64_t j = 0, k = 0; j < ny; j++)
            for (int64_t i = 0; i < nx; i++, k++) {
                x[3 * k] = ((double)i + 0.25 + 0.5 * (double)(j & 1)) * a - 0.5 * b->L[0];
                x[3 * k + 1] = ((double)j + 0.25) * h - 0.5 * b->L[1];
                x[3 * k + 2] = 0;
            }
        return 0;
    }
    static const double basis[4][3] = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
    double acub = cbrt(4.0 * carlo_box_volume(b) / (double)N);
    int64_t n[3];
    for (int a = 0; a < 3; a++)
        n[a] = (int64_t)floor(b->L[a] / acub + 0.5);
    if (4 * n[0] * n[1] * n[2] != N)
        return carlo_seterr("%lld spheres on an fcc lattice (N = 4 nx ny nz) need a box of nx, ny, nz "
                            "cubic cells, which this box is not: give phi instead of box", (long long)N);
    int64_t k = 0;
    for (int64_t i = 0; i < n[0]; i++)
        for (int64_t j = 0; j < n[1]; j++)
            for (int64_t l = 0; l < n[2]; l++)
                for (int q = 0; q < 4; q++, k++) {
                    double c[3] = {(double)i, (double)j, (double)l};
                    for (int a = 0; a < 3; a++)
                        x[3 * k + a] = (c[a] + basis[q][a] + 0.25) * (b->L[a] / (double)n[a]) -
                                       0.5 * b->L[a];
                }
    return 0;
}

typedef struct rsa_ctx {
    int hit;
} rsa_ctx;

static void rsa_pair(void *ctx, int64_t j, const double d[3], double r2)
{
    (void)j;
    (void)d;
    (void)r2;
    ((rsa_ctx *)ctx)->hit = 1;
}

/* Random sequential addition: each particle drawn uniformly until it overlaps nothing placed
 * before it (with a 1e-6 margin so that no float rounding makes a contact an overlap). */
static int random_positions(int dim, int64_t N, const carlo_box *b, uint64_t seed, double *x)
{
    hard_plain p;
    if (hard_plain_init(&p, dim, b, N, x, 1.0, 0))
        return -1;
    const double cut2 = (1.0 + 1e-6) * (1.0 + 1e-6);
    for (int64_t k = 0; k < N; k++) {
        uint32_t attempt = 0;
        for (;; attempt++) {
            if (attempt >= 1000000) {
                hard_plain_free(&p);
                return carlo_seterr("the random start found no room for particle %lld of %lld",
                                    (long long)k + 1, (long long)N);
            }
            carlo_u32x4 r = carlo_rng(seed, HARD_PURPOSE_INIT, (uint64_t)k, attempt, 0);
            carlo_u32x4 q = carlo_rng(seed, HARD_PURPOSE_INIT, (uint64_t)k, attempt, 1);
            double f[3] = {carlo_u01(r.v[0], r.v[1]), carlo_u01(r.v[2], r.v[3]),
                           carlo_u01(q.v[0], q.v[1])};
            for (int a = 0; a < 3; a++)
                x[3 * k + a] = a < dim ? (f[a] - 0.5) * b->L[a] : 0.0;
            rsa_ctx c = {0};
            hard_plain_around(&p, x + 3 * k, -1, cut2, rsa_pair, &c);
            if (!c.hit)
                break;
        }
        hard_plain_insert(&p, k);
    }
    hard_plain_free(&p);
    return 0;
}

/* ---------- creation ---------- */

hard_system *hard_alloc(int dim, int64_t N, const carlo_box *box, carlo_device_kind dev,
                        uint64_t seed, double w_pref)
{
    const hard_backend *be = &hard_cpu_backend;
    if (dev == CARLO_GPU) {
        if (!hard_gpu_backend) {
            carlo_seterr("this carlo was built without CUDA");
            return NULL;
        }
        be = hard_gpu_backend;
    }
    carlo_cell_grid g;
    if (plan(&g, box, w_pref))
        return NULL;
    hard_system *s = carlo_calloc(1, sizeof *s, "a hard-particle system");
    if (!s)
        return NULL;
    s->ops = &hard_ops_nvt;
    s->replicas = 1;
    s->dim = dim;
    s->N = N;
    s->grid = g;
    s->w_pref = w_pref;
    s->device = dev;
    s->seed = seed;
    s->be = be;
    s->mv.delta = 0.16f;
    s->mv.moves = 4;
    s->mv.shuffle = 1;
    box_of_grid(s, &g, box); /* the box of record: m w, within m q / 2 of *box */
    s->dlnV = 0.1 / (double)N;
    s->volume_moves = 1;
    /* MPMC's 32 x 4 was its fastest on the K20; on the H100 disks with neighbour lists of 16
     * run fastest in 64 x 2 blocks (scripts/bench/hard.lua tries the others) */
    s->launch.block[0] = dim == 2 ? 64 : 32;
    s->launch.block[1] = dim == 2 ? 2 : 4;
    s->launch.variant = dim == 2 ? 1 : 0; /* see cuda/hard.cu: registers for 4 slots, memory for 12 */
    s->launch.gather = dim == 2; /* measured: +20% for small disk systems, -25% for spheres (shared memory) */
    s->launch.team = dim == 3 ? 4 : 1; /* measured at 2^20 spheres: 5.19e9 moves/s, one thread 4.51e9 at
                                          best; disks are slower with any team (BENCHMARKS.md) */
    if (be->create(s)) {
        hard_destroy(s);
        return NULL;
    }
    return s;
}

/* Place positions (box coordinates) into the cells; the origin is the box's corner. */
static int place(hard_system *s, const double *x)
{
    int64_t N = s->N;
    double *r = carlo_malloc(carlo_mulsize((size_t)N, 3 * sizeof(double)), "positions");
    uint32_t *tag = r ? carlo_malloc(carlo_mulsize((size_t)N, sizeof(uint32_t)), "tags") : NULL;
    carlo_cell_data h = {0};
    int rc = -1;
    if (tag && carlo_cell_data_alloc(&s->grid, &h) == 0) {
        for (int64_t k = 0; k < N; k++) {
            double y[3] = {x[3 * k], x[3 * k + 1], s->dim == 3 ? x[3 * k + 2] : 0.0};
            if (s->mv.skew) /* the cells hold skew coordinates */
                carlo_box_pos_to_skew(&s->box, x + 3 * k, y);
            for (int a = 0; a < 3; a++)
                r[3 * k + a] = a < s->dim ? y[a] + 0.5 * s->box.L[a] : 0.0;
            tag[k] = (uint32_t)k;
        }
        rc = carlo_cells_fill(&s->grid, &h, N, r, tag);
        if (rc == 0 && s->be->upload(s, &h))
            rc = hard_fail_dead(s);
    }
    s->origin[0] = s->origin[1] = s->origin[2] = 0;
    carlo_cell_data_free(&h);
    free(r);
    free(tag);
    return rc;
}

/* Refuse overlapping positions, naming the first pairs (1-based, as Lua counts). */
static int refuse_overlaps(int64_t count, const int64_t *pairs, const char *how)
{
    char list[200];
    size_t len = 0;
    list[0] = 0;
    for (int64_t k = 0; k < count && k < 5; k++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s(%lld, %lld)", k ? ", " : "",
                                (long long)pairs[2 * k] + 1, (long long)pairs[2 * k + 1] + 1);
    return carlo_seterr("the initial configuration has %lld overlapping pair%s%s: %s%s", (long long)count,
                        count == 1 ? "" : "s", how, list, count > 5 ? ", ..." : "");
}

static int place_checked(hard_system *s, const double *x)
{
    int64_t count, pairs[10];
    if (hard_overlaps_positions(s->dim, &s->box, s->N, x, &count, pairs, 5))
        return -1;
    if (count)
        return refuse_overlaps(count, pairs, "");
    if (place(s, x))
        return -1;
    /* the float test of the kernels may see a pair closer than 1 where the doubles did not */
    if (hard_overlaps(s, &count, pairs, 5))
        return -1;
    if (count)
        return refuse_overlaps(count, pairs, " in single precision (closer than 1 by rounding)");
    return 0;
}

static int sweep_nvt(hard_system *s);

hard_system *hard_create(const hard_params *p)
{
    if (p->dim != 2 && p->dim != 3) {
        carlo_seterr("dim must be 2 or 3 (got %d)", p->dim);
        return NULL;
    }
    if (p->N < 1 || p->N > HARD_N_MAX) {
        carlo_seterr("N must be an integer from 1 to %lld (got %lld)", (long long)HARD_N_MAX,
                     (long long)p->N);
        return NULL;
    }
    if (carlo_box_check(&p->box))
        return NULL;
    if (!carlo_box_orthorhombic(&p->box)) {
        if (hard_tilt_check(&p->box))
            return NULL;
        if (p->init != HARD_INIT_POSITIONS) {
            carlo_seterr("a tilted box (xy, xz, yz = %.9g, %.9g, %.9g) starts from given positions only "
                         "(init = { position = ... }): the random and lattice starts fill orthorhombic boxes",
                         p->box.xy, p->box.xz, p->box.yz);
            return NULL;
        }
    }
    double phi = hard_phi_of(p->dim, p->N, &p->box), cp = hard_close_packing(p->dim);
    if (!(phi < cp)) {
        carlo_seterr("packing fraction %.9g is at or above close packing %.9g", phi, cp);
        return NULL;
    }
    if (!(p->delta > 0) || p->delta > 2 || p->moves_per_cell < 1 || p->moves_per_cell > 4096) {
        carlo_seterr("delta must be in (0, 2] and moves_per_cell from 1 to 4096 (got %.17g and %d)",
                     p->delta, p->moves_per_cell);
        return NULL;
    }
    double *x = carlo_malloc(carlo_mulsize((size_t)p->N, 3 * sizeof(double)), "initial positions");
    if (!x)
        return NULL;
    hard_system *s = NULL;
    int rc = 0;
    if (p->init == HARD_INIT_RANDOM) {
        /* a random start at low density, compressed to the target (MPMC Sec. 4) */
        const double phi_rsa = p->dim == 2 ? 0.45 : 0.30, rsa_limit = p->dim == 2 ? 0.52 : 0.36;
        double phi0 = fmin(phi, phi_rsa);
        /* the compression scales every side from L * grow down to L; a side length without a
         * cell grid on that path would stop it: start below such a gap when RSA reaches */
        for (int a = 0; a < p->dim && phi0 < phi; a++) {
            double lo, hi, L = p->box.L[a], grow = pow(phi / phi0, 1.0 / p->dim);
            if (grid_gap(p->dim, L * grow, L, &lo, &hi)) {
                if (!(L < lo)) {
                    free(x);
                    carlo_seterr("box side %.6g cannot be cut into an even number of cells of width "
                                 "in [1, %.6g)", L, wmax(p->dim));
                    return NULL;
                }
                phi0 = phi * pow(L / (lo * (1 - 1e-3)), (double)p->dim);
                if (phi0 > rsa_limit) {
                    free(x);
                    carlo_seterr("a random start at N = %lld would be compressed through box sides "
                                 "in [%.4g, %.4g), which have no cell grid; use more particles or a "
                                 "lattice start", (long long)p->N, lo, hi);
                    return NULL;
                }
            }
        }
        carlo_box b0 = phi0 < phi ? carlo_box_scaled(&p->box, pow(phi / phi0, 1.0 / p->dim)) : p->box;
        s = hard_alloc(p->dim, p->N, &b0, p->device, p->seed, p->w_pref);
        rc = !s || random_positions(p->dim, p->N, &b0, p->seed, x) || place(s, x);
        if (!rc) {
            s->mv.delta = (float)p->delta;
            s->mv.moves = p->moves_per_cell;
            s->mv.shuffle = p->shuffle;
        }
        if (!rc && phi0 < phi) {
            hard_compress_opts co = {.phi = phi, .sweeps_between = 1, .quiet = p->quiet};
            rc = hard_compress(s, &co);
            /* then exactly the box asked for, a scaling by 1 + rounding, which a pair within a
             * rounding of contact refuses (among millions, some are): a sweep moves it on */
            int done = 0;
            for (int tries = 0; !rc && !done && tries < 100; tries++)
                if ((rc = hard_scale_to(s, &p->box, &done)) == 0 && !done)
                    rc = sweep_nvt(s);
            if (!rc && !done)
                rc = carlo_seterr("the last compression step to the requested box was refused");
        }
    } else {
        s = hard_alloc(p->dim, p->N, &p->box, p->device, p->seed, p->w_pref);
        if (!s)
            rc = 1;
        else if (p->init == HARD_INIT_LATTICE)
            rc = lattice_positions(p->dim, p->N, &p->box, x) || place_checked(s, x);
        else
            rc = place_checked(s, p->positions);
    }
    free(x);
    if (rc) {
        hard_destroy(s);
        return NULL;
    }
    s->mv.delta = (float)p->delta;
    s->mv.moves = p->moves_per_cell;
    s->mv.shuffle = p->shuffle;
    s->step = 0;
    if (p->dlnV > 0)
        s->dlnV = p->dlnV;
    if (p->pressure > 0 && hard_set_pressure(s, p->pressure)) {
        hard_destroy(s);
        return NULL;
    }
    return s;
}

int hard_set_pressure(hard_system *s, double pressure)
{
    if (pressure != 0 && s->lambda > 0)
        return carlo_seterr("the tether (lambda = %.9g) runs in NVT only: set lambda = 0 before the "
                            "pressure", s->lambda);
    if (pressure == 0) {
        s->npt = 0;
        s->ops = &hard_ops_nvt;
        return 0;
    }
    if (!(pressure > 0) || !isfinite(pressure))
        return carlo_seterr("pressure must be a number > 0 (beta P sigma^%d), or 0 for NVT (got %.17g)",
                            s->dim, pressure);
    s->pressure = pressure;
    s->npt = 1;
    s->ops = &hard_ops_npt;
    return 0;
}

void hard_destroy(hard_system *s)
{
    if (!s)
        return;
    if (s->be && s->impl)
        s->be->destroy(s);
    hard_split_free(s);
    free(s->sites);
    free(s);
}

/* ---------- sweeps ---------- */

int hard_subsweep(hard_system *s, int set)
{
    HARD_ALIVE(s);
    if (set < 0 || set >= (1 << s->dim))
        return carlo_seterr("the set must be from 0 to %d (got %d)", (1 << s->dim) - 1, set);
    if (s->be->subsweep(s, set, s->substeps))
        return hard_fail_dead(s);
    s->substeps++;
    return 0;
}

static void move_origin(hard_system *s, carlo_cell_shift sh)
{
    double L = s->box.L[sh.axis], o = s->origin[sh.axis] + sh.dir * (double)sh.d;
    s->origin[sh.axis] = o - floor(o / L) * L;
}

int hard_shift_cells(hard_system *s)
{
    HARD_ALIVE(s);
    carlo_cell_shift sh = carlo_cells_shift_draw(&s->grid, s->seed, HARD_PURPOSE_SHIFT, s->sweeps);
    if (s->be->shift(s, sh))
        return hard_fail_dead(s);
    move_origin(s, sh);
    s->sweeps++;
    return 0;
}

/* MPMC Algorithm 1: the sets in shuffled order, then a random cell shift. */
static int sweep_nvt(hard_system *s)
{
    int order[8];
    carlo_cells_set_order(s->dim, s->seed, HARD_PURPOSE_SETS, s->sweeps, order);
    for (int k = 0; k < (1 << s->dim); k++) {
        if (s->be->subsweep(s, order[k], s->substeps))
            return hard_fail_dead(s);
        s->substeps++;
    }
    carlo_cell_shift sh = carlo_cells_shift_draw(&s->grid, s->seed, HARD_PURPOSE_SHIFT, s->sweeps);
    if (s->be->shift(s, sh))
        return hard_fail_dead(s);
    move_origin(s, sh);
    s->sweeps++;
    s->step++;
    return 0;
}

int hard_sweep(hard_system *s)
{
    HARD_ALIVE(s);
    if (sweep_nvt(s))
        return -1;
    for (int k = 0; s->npt && k < s->volume_moves; k++)
        if (hard_volume_move(s))
            return -1;
    return 0;
}

int hard_set_volume_moves(hard_system *s, int k)
{
    if (k < 1 || k > 1024)
        return carlo_seterr("volume_moves must be an integer from 1 to 1024 (got %d)", k);
    s->volume_moves = k;
    return 0;
}

/* Try the grid ng (every particle scaled along with the box): 1 accepted, 0 refused (an
 * overlap, unless overlaps_ok (compression only), or a cell overflowing), -1 error. */
static int try_grid(hard_system *s, const carlo_cell_grid *pg, int overlaps_ok)
{
    const carlo_cell_grid ng = *pg;
    carlo_box nb = carlo_cells_box(&ng);
    nb.xy = s->box.xy; /* the tilt factors stay: the skew coordinates scale along */
    nb.xz = s->box.xz;
    nb.yz = s->box.yz;
    double lam[3] = {1, 1, 1};
    for (int a = 0; a < s->dim; a++)
        lam[a] = nb.L[a] / s->box.L[a];
    int64_t overlaps = 0;
    if (s->be->scale_trial(s, &ng, lam, &overlaps))
        return hard_fail_dead(s);
    if (overlaps < 0 || (overlaps != 0 && !overlaps_ok))
        return 0;
    if (s->be->scale_commit(s, &ng))
        return hard_fail_dead(s);
    s->grid = ng;
    s->box = nb;
    for (int a = 0; a < s->dim; a++)
        s->origin[a] *= lam[a];
    if (s->sites) { /* the sites follow the box (compression, scale_to: never with lambda > 0) */
        for (int64_t k = 0; k < s->N; k++)
            for (int a = 0; a < s->dim; a++)
                s->sites[3 * k + a] *= lam[a];
        if (s->be->sites(s))
            return hard_fail_dead(s);
    }
    return 1;
}

/* Try the box nb as the grid planned for it realizes it; 0 also when no grid fits. */
static int try_scale(hard_system *s, const carlo_box *nb)
{
    carlo_cell_grid ng;
    if (plan(&ng, nb, s->w_pref))
        return 0;
    return try_grid(s, &ng, 0);
}

int hard_scale_to(hard_system *s, const carlo_box *target, int *done)
{
    HARD_ALIVE(s);
    *done = 0;
    if (target->dim != s->dim || carlo_box_check(target) || target->xy != s->box.xy ||
        target->xz != s->box.xz || target->yz != s->box.yz)
        return carlo_seterr("the new box must be a box of dimension %d with the tilts of the system's, "
                            "%.9g, %.9g, %.9g (got dimension %d, tilts %.9g, %.9g, %.9g)", s->dim, s->box.xy,
                            s->box.xz, s->box.yz, target->dim, target->xy, target->xz, target->yz);
    int r = try_scale(s, target);
    if (r < 0)
        return -1;
    *done = r;
    return 0;
}

/* An NPT move of ln V by a uniform amount in [-dlnV, dlnV], realized on the cells' grid of
 * exact widths: with the (N + 1) ln(V'/V) of log-volume sampling the stationary measure is
 * exp(-beta P V) dV times the configurational weight (a scaled configuration with an overlap
 * weighs nothing). Rounding the proposed width to a multiple of q proposes a grid point with a
 * probability proportional to 1/w', which the grid's own density (V/w per point) cancels, so
 * the acceptance is the continuous one evaluated at the realized volume; what is left is the
 * cut at the ends of the proposal window, an effect of order q/w ~ 1e-7. */
int hard_volume_move(hard_system *s)
{
    HARD_ALIVE(s);
    if (s->lambda > 0)
        return carlo_seterr("no volume move with the tether on (lambda = %.9g): set lambda = 0",
                            s->lambda);
    carlo_u32x4 r = carlo_rng(s->seed, HARD_PURPOSE_VOLUME, s->vsteps++, 0, 0);
    double delta = (2.0 * carlo_u01(r.v[0], r.v[1]) - 1.0) * s->dlnV;
    s->counts.volume_tried++;
    carlo_box nb = carlo_box_scaled(&s->box, exp(delta / s->dim));
    carlo_cell_grid ng;
    if (plan(&ng, &nb, s->w_pref)) /* rejecting would truncate the volume distribution */
        return carlo_seterr("NPT: the box side reached %.6g, which has no cell grid (sides from 6 in "
                            "2D, from 8 in 3D always have one): simulate more particles", nb.L[0]);
    double V = carlo_box_volume(&s->box);
    carlo_box real = carlo_cells_box(&ng);
    double Vn = carlo_box_volume(&real);
    if (!hard_volume_accept(s->pressure, s->N, V, Vn, carlo_u01(r.v[2], r.v[3])))
        return 0;
    int ok = try_grid(s, &ng, 0);
    if (ok < 0)
        return -1;
    s->counts.volume_accepted += (uint64_t)ok;
    return 0;
}

/* ---------- compression ---------- */

/* A compression that ends short of its target with pairs still overlapping, or on a narrowed
 * grid: the box grows just enough that no pair overlaps, on its usual grid, so that the system
 * left is a valid one. */
static int compress_settle(hard_system *s)
{
    for (int tries = 0; tries < 8; tries++) {
        int64_t over;
        double r2min;
        if (s->be->pair_check(s, &over, &r2min))
            return hard_fail_dead(s);
        double lam = (over ? (1.0 + 1e-6) / sqrt(r2min) : 1.0) * (1.0 + 1e-6 * tries);
        carlo_box nb = carlo_box_scaled(&s->box, lam);
        int ok = try_scale(s, &nb);
        if (ok)
            return ok < 0 ? -1 : 0;
    }
    return carlo_seterr("compression could not leave a box without overlaps (a bug)");
}

int hard_compress(hard_system *s, const hard_compress_opts *o)
{
    HARD_ALIVE(s);
    double cp = hard_close_packing(s->dim);
    if (!(o->phi > 0) || !(o->phi < cp))
        return carlo_seterr("the target packing fraction must be in (0, %.9g) (got %g)", cp, o->phi);
    double phi = hard_phi(s);
    if (o->phi <= phi)
        return 0;
    for (int a = 0; a < s->dim; a++) {
        double lo, hi, L = s->box.L[a], Lt = L * pow(phi / o->phi, 1.0 / s->dim);
        if (!s->mv.skew && grid_gap(s->dim, L, Lt, &lo, &hi)) /* tilted: a shrink without a grid is refused */
            return carlo_seterr("compressing to phi = %.6g takes box sides through [%.4g, %.4g), which "
                                "have no cell grid (cells of width in [1, %.6g), an even number)",
                                o->phi, lo, hi, wmax(s->dim));
    }
    const int active = carlo_compress_active(o->quiet);
    /* past the closest pair only in an orthorhombic box (plan_narrow), and until it stalls */
    int deep_ok = carlo_box_orthorhombic(&s->box);
    /* stalled: no shrink over this many sweeps, with overlaps left (caged pairs near jamming:
     * a large system parts its last overlaps within some tens of sweeps) */
    const uint64_t stall = 200;
    uint64_t shrunk = 0; /* the sweep count at the last shrink */
    /* the shrink a step may take past the closest pair */
    const double eps = COMPRESS_DEPTH / 4;
    const double start = carlo_now();
    double last = start, mark_phi = phi;
    uint64_t sweeps = 0, mark = 0, between = o->sweeps_between ? o->sweeps_between : 1;
    /* jammed: less than 1e-6 relative gain over the last 5000 shrink attempts */
    const uint64_t window = 5000;
    enum { RUNNING, DONE, JAMMED, STOPPED, INTERRUPTED } why = RUNNING;
    int narrow = 0;  /* on a narrowed grid, pairs may overlap */
    int at_goal = 0; /* the target box reached on a narrowed grid */
    while (why == RUNNING) {
        for (uint64_t k = 0; k < between; k++) /* NVT sweeps, even in an NPT system */
            if (sweep_nvt(s))
                return -1;
        sweeps += between;
        int64_t over;
        double r2min;
        if (s->be->pair_check(s, &over, &r2min))
            return hard_fail_dead(s);
        if (over && !narrow)
            return carlo_seterr("compression found %lld overlapping pairs (a bug)", (long long)over);
        if (at_goal) { /* the usual grid once no pair overlaps */
            int ok = over ? 0 : try_scale(s, &s->box);
            if (ok < 0)
                return -1;
            why = ok ? DONE : RUNNING;
            narrow = !ok;
        } else {
            double lam_goal = pow(phi / o->phi, 1.0 / s->dim);
            /* without an overlap: shrink until the closest pair keeps a tenth of its gap (at
             * least 1e-6, several quanta): pushing it all the way to contact would leave it there
             * when the next sweep does not move it, and stall the next shrink (measured: 0.1
             * needs 30% fewer sweeps than 0.5 and about as few as 0.02) */
            double rmin = sqrt(r2min), gap = rmin - 1.0;
            double lam_safe = !over && gap > 2e-6 ? (1.0 + fmax(0.1 * gap, 1e-6)) / rmin : 1.0;
            /* Past it, by up to eps a step as long as no pair comes closer than 1 -
             * COMPRESS_DEPTH, on cells narrowed by twice that: the sweeps then part the
             * overlapping pairs (a move is taken only into a place where it overlaps nothing, so
             * no overlap forms or deepens in a sweep). The closest of N pairs shrinks as N grows,
             * so the safe shrink alone makes large systems crawl or jam. */
            double lam_deep = deep_ok ? fmax(1.0 - eps, (1.0 - COMPRESS_DEPTH) / rmin) : 1.0;
            lam_safe = fmax(lam_safe, lam_goal);
            lam_deep = fmax(lam_deep, lam_goal);
            int ok = 0;
            if (lam_deep < lam_safe) {
                carlo_box nb = carlo_box_scaled(&s->box, lam_deep);
                carlo_cell_grid ng;
                if (!plan_narrow(&ng, &nb, s->w_pref, 1.0 - 2.0 * COMPRESS_DEPTH))
                    ok = try_grid(s, &ng, 1);
                if (ok < 0)
                    return -1;
                if (ok) {
                    narrow = 1;
                    at_goal = lam_deep == lam_goal;
                    shrunk = sweeps;
                }
            }
            if (!ok && lam_safe < 1.0) {
                carlo_box nb = carlo_box_scaled(&s->box, lam_safe);
                ok = try_scale(s, &nb);
                if (ok < 0)
                    return -1;
                if (ok) {
                    narrow = 0;
                    shrunk = sweeps;
                    if (lam_safe == lam_goal) /* the target, as the exact cell widths realize it */
                        why = DONE;
                }
            }
        }
        if (narrow && over && sweeps - shrunk >= stall * between) {
            /* the overlaps stay: part them by growing the box, and go on without overlaps
             * (slower, but a dense packing then still orders its way on) */
            if (compress_settle(s))
                return -1;
            narrow = at_goal = deep_ok = 0;
        }
        phi = hard_phi(s);
        carlo_compress_line(active, phi, o->phi, start, sweeps, &last);
        if (why != RUNNING)
            break;
        if (sweeps - mark >= window * between) {
            if (phi < mark_phi * (1.0 + 1e-6))
                why = JAMMED;
            mark = sweeps;
            mark_phi = phi;
        }
        if (o->max_sweeps && sweeps >= o->max_sweeps)
            why = STOPPED;
        if (carlo_interrupted)
            why = INTERRUPTED;
    }
    carlo_compress_line_end(active, start);
    if (why == DONE)
        return 0;
    if (narrow && compress_settle(s))
        return -1;
    phi = hard_phi(s);
    if (why == JAMMED)
        return carlo_seterr("compression jammed at phi = %.6f below the target %.6f; start from a lattice "
                            "(init = \"hex\" or \"fcc\") or aim lower", phi, o->phi);
    if (why == STOPPED)
        return carlo_seterr("compression stopped after %llu sweeps at phi = %.6f (target %.6f)",
                            (unsigned long long)sweeps, phi, o->phi);
    return carlo_seterr("interrupted");
}
