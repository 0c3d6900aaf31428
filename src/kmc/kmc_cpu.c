/* kmc_cpu.c — the tiled CPU backend of lattice KMC: Algorithm 2 of kmc_kernel.h, tiles shared
 * among OpenMP threads, the 32 lanes of a domain visited in a loop, and among MPI ranks as slabs
 * of tile rows when the system is split (carlo-mpi(7)); and the tile layout (domain geometry,
 * tile-major arrays, tile minima) it shares with the GPU backend. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/progress.h"
#include "kmc/kmc.h"
#include "mpi/mpi.h"

/* ---------- geometry and layouts ---------- */

/* Whether the nine cells of an event (offsets a P + b, |a|, |b| <= 1) fall on distinct lanes:
 * no difference of two offsets may be a multiple of 32. */
static int stride_ok(int P)
{
    for (int a = -2; a <= 2; a++)
        for (int b = -2; b <= 2; b++)
            if ((a || b) && (((a * P + b) % KMC_LANES) + KMC_LANES) % KMC_LANES == 0)
                return 0;
    return 1;
}

void kmc_geom_init(kmc_geom *g, int m, int n, int halo, int nbh)
{
    memset(g, 0, sizeof *g);
    g->m = m;
    g->n = n;
    g->ntr = m / KMC_TILE;
    g->ntc = n / KMC_TILE;
    g->halo = halo;
    g->nbh = nbh;
    g->D = KMC_TILE + 2 * halo + 2;
    g->P = g->D;
    while (!stride_ok(g->P))
        g->P++;
    g->cells = g->D * g->P;
    for (int k = 0; k < 9; k++)
        g->off[k] = kmc_slot_dr(k) * g->P + kmc_slot_dc(k);
}

void kmc_to_tiles(const kmc_geom *g, const void *rowmajor, void *tiles, size_t elem)
{
    const int m = g->m, n = g->n;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            uint64_t src = (uint64_t)i * (uint64_t)n + (uint64_t)j, dst = kmc_tm_index(g, i, j);
            if (elem == 8)
                ((uint64_t *)tiles)[dst] = ((const uint64_t *)rowmajor)[src];
            else
                ((uint32_t *)tiles)[dst] = ((const uint32_t *)rowmajor)[src];
        }
}

void kmc_from_tiles(const kmc_geom *g, const void *tiles, void *rowmajor, size_t elem)
{
    const int m = g->m, n = g->n;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            uint64_t dst = (uint64_t)i * (uint64_t)n + (uint64_t)j, src = kmc_tm_index(g, i, j);
            if (elem == 8)
                ((uint64_t *)rowmajor)[dst] = ((const uint64_t *)tiles)[src];
            else
                ((uint32_t *)rowmajor)[dst] = ((const uint32_t *)tiles)[src];
        }
}

void kmc_tile_minima(const kmc_geom *g, const double *tau_tiles, double *tmin)
{
    const int ntiles = g->ntr * g->ntc;
#pragma omp parallel for schedule(static)
    for (int T = 0; T < ntiles; T++) {
        double m = INFINITY;
        for (int q = 0; q < 64; q++) {
            double t = tau_tiles[((size_t)T << 6) + (size_t)q];
            m = t < m ? t : m;
        }
        tmin[T] = m;
    }
}

/* ---------- the tiled CPU backend ---------- */

/* The tiles a rank stores, tile-major (kmc_tm_index with local rows): all ntr tile rows, or on
 * a split system its own tile rows with one halo tile row above and one below (local tile
 * rows 0 and tile_rows + 1), which hold the whole domain of every own tile (halo + 1 <= 8). */
typedef struct cpu_impl {
    int32_t *x[2];      /* front/back buffers, tile-major */
    double *tau[2];
    uint32_t *cnt[2];
    double *tmin[2];    /* the earliest clock of each tile, per buffer */
    kmc_tile_out *out;  /* per tile */
    int rows;           /* tile rows stored */
    int first;          /* local tile row of the first own one (1 split, 0 whole) */
    int above, below;   /* split: the ranks holding the tile rows above and below this slab */
    void *slab;         /* split: this rank's own rows row-major (gathers) */
    uint32_t *stamp;    /* per tile: the step that listed it for repair (kmc_repair_stamp) */
    int *list;          /* the tiles listed for repair in this step */
} cpu_impl;

/* The global tile row of local tile row lt. */
static int cpu_global_row(const kmc_system *s, int lt)
{
    return s->split ? kmc_wrap(s->tile_row0 - 1 + lt, s->geom.ntr) : lt;
}

static int cpu_create(kmc_system *s)
{
    cpu_impl *im = carlo_calloc(1, sizeof *im, "the KMC CPU backend");
    if (!im)
        return -1;
    s->impl = im;
    im->rows = s->split ? s->tile_rows + 2 : s->geom.ntr;
    im->first = s->split ? 1 : 0;
    if (s->split) {
        const int n = carlo_mpi_size(), p = carlo_mpi_rank();
        im->above = (p + n - 1) % n;
        im->below = (p + 1) % n;
    }
    size_t ntiles = (size_t)im->rows * (size_t)s->geom.ntc, N = ntiles * 64;
    for (int b = 0; b < 2; b++) {
        im->x[b] = carlo_malloc(carlo_mulsize(N, sizeof(int32_t)), "the KMC states");
        im->tau[b] = im->x[b] ? carlo_malloc(carlo_mulsize(N, sizeof(double)), "the KMC clocks") : NULL;
        im->cnt[b] = im->tau[b] ? carlo_malloc(carlo_mulsize(N, sizeof(uint32_t)), "the KMC draw counters") : NULL;
        im->tmin[b] = im->cnt[b] ? carlo_malloc(carlo_mulsize(ntiles, sizeof(double)), "the KMC tile minima") : NULL;
        if (!im->tmin[b])
            return -1;
    }
    im->out = carlo_calloc(ntiles, sizeof *im->out, "the KMC tile results");
    im->stamp = im->out ? carlo_calloc(ntiles, sizeof *im->stamp, "the KMC repair stamps") : NULL;
    im->list = im->stamp ? carlo_malloc(carlo_mulsize(ntiles, sizeof *im->list), "the KMC repair list")
                         : NULL;
    if (!im->list)
        return -1;
    if (im->out && s->split)
        im->slab = carlo_malloc(carlo_mulsize((size_t)s->tile_rows * KMC_TILE * (size_t)s->n,
                                              sizeof(double)), "a KMC lattice slab");
    return im->out && (im->slab || !s->split) ? 0 : -1;
}

static void cpu_destroy(kmc_system *s)
{
    cpu_impl *im = s->impl;
    if (!im)
        return;
    for (int b = 0; b < 2; b++) {
        free(im->x[b]);
        free(im->tau[b]);
        free(im->cnt[b]);
        free(im->tmin[b]);
    }
    free(im->out);
    free(im->stamp);
    free(im->list);
    free(im->slab);
    free(im);
    s->impl = NULL;
}

/* The earliest clock of local tile rows lt0 .. lt1 - 1 of buffer b. */
static void cpu_minima(const kmc_system *s, cpu_impl *im, int b, int lt0, int lt1)
{
    const int ntc = s->geom.ntc, T0 = lt0 * ntc, T1 = lt1 * ntc;
#pragma omp parallel for schedule(static) if (T1 - T0 > 1024)
    for (int T = T0; T < T1; T++) {
        double m = INFINITY;
        for (int q = 0; q < 64; q++) {
            double t = im->tau[b][((size_t)T << 6) + (size_t)q];
            m = t < m ? t : m;
        }
        im->tmin[b][T] = m;
    }
}

/* A split system's stored rows from the whole lattice (row-major m x n, elem bytes a site). */
static void cpu_slab_in(const kmc_system *s, const cpu_impl *im, const void *rowmajor, void *tiles,
                        size_t elem)
{
    const kmc_geom *g = &s->geom;
    const int rows = im->rows * KMC_TILE, n = s->n;
#pragma omp parallel for schedule(static)
    for (int lr = 0; lr < rows; lr++) {
        const int gr = cpu_global_row(s, lr / KMC_TILE) * KMC_TILE + lr % KMC_TILE;
        for (int j = 0; j < n; j++) {
            uint64_t src = (uint64_t)gr * (uint64_t)n + (uint64_t)j, dst = kmc_tm_index(g, lr, j);
            if (elem == 8)
                ((uint64_t *)tiles)[dst] = ((const uint64_t *)rowmajor)[src];
            else
                ((uint32_t *)tiles)[dst] = ((const uint32_t *)rowmajor)[src];
        }
    }
}

/* The whole lattice from every rank's own rows: every rank calls this. */
static int cpu_slab_out(const kmc_system *s, cpu_impl *im, const void *tiles, void *rowmajor,
                        size_t elem)
{
    const kmc_geom *g = &s->geom;
    const int rows = s->tile_rows * KMC_TILE, n = s->n, lr0 = im->first * KMC_TILE;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < n; j++) {
            uint64_t dst = (uint64_t)r * (uint64_t)n + (uint64_t)j, src = kmc_tm_index(g, lr0 + r, j);
            if (elem == 8)
                ((uint64_t *)im->slab)[dst] = ((const uint64_t *)tiles)[src];
            else
                ((uint32_t *)im->slab)[dst] = ((const uint32_t *)tiles)[src];
        }
    return carlo_mpi_allgather_rows(im->slab, rows, rowmajor, s->slab_rows, (int)((size_t)n * elem));
}

static int cpu_slab_states(kmc_system *s, int32_t *x)
{
    const cpu_impl *im = s->impl;
    const kmc_geom *g = &s->geom;
    const int rows = s->tile_rows * KMC_TILE + 2, n = s->n, lr0 = im->first * KMC_TILE - 1;
    const int32_t *X = im->x[s->ctrl.front];
#pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < n; j++)
            x[(size_t)r * (size_t)n + (size_t)j] = X[kmc_tm_index(g, lr0 + r, j)];
    return 0;
}

static int cpu_set_state(kmc_system *s, const int32_t *x, const double *tau, const uint32_t *cnt)
{
    cpu_impl *im = s->impl;
    int f = (int)s->ctrl.front;
    if (s->split) {
        if (x)
            cpu_slab_in(s, im, x, im->x[f], 4);
        if (tau) {
            cpu_slab_in(s, im, tau, im->tau[f], 8);
            cpu_minima(s, im, f, 0, im->rows);
        }
        if (cnt)
            cpu_slab_in(s, im, cnt, im->cnt[f], 4);
        return 0;
    }
    if (x)
        kmc_to_tiles(&s->geom, x, im->x[f], 4);
    if (tau) {
        kmc_to_tiles(&s->geom, tau, im->tau[f], 8);
        kmc_tile_minima(&s->geom, im->tau[f], im->tmin[f]);
    }
    if (cnt)
        kmc_to_tiles(&s->geom, cnt, im->cnt[f], 4);
    return 0;
}

static int cpu_get_state(kmc_system *s, int32_t *x, double *tau, uint32_t *cnt)
{
    cpu_impl *im = s->impl;
    int f = (int)s->ctrl.front;
    if (s->split)
        return (x && cpu_slab_out(s, im, im->x[f], x, 4)) ||
                       (tau && cpu_slab_out(s, im, im->tau[f], tau, 8)) ||
                       (cnt && cpu_slab_out(s, im, im->cnt[f], cnt, 4))
                   ? -1
                   : 0;
    if (x)
        kmc_from_tiles(&s->geom, im->x[f], x, 4);
    if (tau)
        kmc_from_tiles(&s->geom, im->tau[f], tau, 8);
    if (cnt)
        kmc_from_tiles(&s->geom, im->cnt[f], cnt, 4);
    return 0;
}

/* Local tile row `from` of one array (elem bytes a site) to rank dest's local row `to`, while
 * rank src's arrives here. */
static int cpu_send_row(const kmc_system *s, void *base, size_t elem, int from, int dest, int to,
                        int src, int tag)
{
    const size_t row = (size_t)s->geom.ntc * 64 * elem;
    uint8_t *b = base;
    return carlo_mpi_sendrecv_u8(b + (size_t)from * row, dest, b + (size_t)to * row, src, (int)row,
                                 tag);
}

/* A split system's halo tile rows of buffer b from the neighbouring ranks: the own first row
 * goes to the rank above (its bottom halo), the own last row to the rank below (its top halo). */
static int cpu_halo(kmc_system *s, cpu_impl *im, int b)
{
    const int last = s->tile_rows, bottom = s->tile_rows + 1;
    void *arr[3] = {im->x[b], im->tau[b], im->cnt[b]};
    const size_t elem[3] = {4, 8, 4};
    for (int k = 0; k < 3; k++)
        if (cpu_send_row(s, arr[k], elem[k], 1, im->above, bottom, im->below, 10 + k) ||
            cpu_send_row(s, arr[k], elem[k], last, im->below, 0, im->above, 20 + k))
            return -1;
    cpu_minima(s, im, b, 0, 1);
    cpu_minima(s, im, b, bottom, bottom + 1);
    return 0;
}

/* Algorithm 2 for tile T: copy its domain, run its events up to t_end under the frozen ring,
 * keep the tile. The 32 lanes of the GPU kernel are a loop here; the cells an event touches
 * belong to distinct lanes, so visiting them in slot order gives what the lanes compute
 * side by side. */
static void cpu_tile(const kmc_system *s, const cpu_impl *im, const kmc_geom *g, int T, int front,
                     double t_end)
{
    const kmc_model *md = &s->model;
    const uint64_t seed = s->seed;
    /* lt: the local tile row (storage), ti: the global one (sites and random numbers) */
    const int lt = T / g->ntc, tj = T - lt * g->ntc, h1 = g->halo + 1, P = g->P, D = g->D;
    const int ti = cpu_global_row(s, lt), split = s->split;
    const int back = 1 - front;
    kmc_tile_out *o = &im->out[T];
    /* a tile whose 3 x 3 tiles have no clock before t_end has no event at all */
    double quiet = INFINITY;
    for (int k = 0; k < 9; k++) {
        const int dr = k / 3 - 1, dc = k % 3 - 1;
        const int near = split ? (lt + dr) * g->ntc + kmc_wrap(tj + dc, g->ntc)
                               : kmc_tile_near(g, ti, tj, dr, dc);
        double t = im->tmin[front][near];
        quiet = t < quiet ? t : quiet;
    }
    if (!(quiet < t_end)) {
        size_t base = (size_t)T << 6;
        memcpy(im->x[back] + base, im->x[front] + base, 64 * sizeof(int32_t));
        memcpy(im->tau[back] + base, im->tau[front] + base, 64 * sizeof(double));
        memcpy(im->cnt[back] + base, im->cnt[front] + base, 64 * sizeof(uint32_t));
        im->tmin[back][T] = im->tmin[front][T];
        memset(o, 0, sizeof *o);
        return;
    }
    double tau[KMC_CELLS_MAX];
    int32_t x[KMC_CELLS_MAX];
    uint32_t cnt[KMC_CELLS_MAX];
    const int32_t *X = im->x[front];
    const double *TAU = im->tau[front];
    const uint32_t *CNT = im->cnt[front];
    for (int r = 0; r < D; r++) {
        /* the stored row: a slab holds its halo rows in order, the whole lattice wraps */
        const int gr = split ? lt * KMC_TILE - h1 + r : kmc_wrap(ti * KMC_TILE - h1 + r, g->m);
        const int dyn_row = r >= 1 && r <= D - 2;
        for (int c = 0; c < P; c++) {
            const int d = r * P + c;
            if (c >= D) {
                x[d] = 0;
                tau[d] = INFINITY;
                cnt[d] = 0;
                continue;
            }
            const uint64_t i = kmc_tm_index(g, gr, kmc_wrap(tj * KMC_TILE - h1 + c, g->n));
            x[d] = X[i];
            tau[d] = dyn_row && c >= 1 && c <= D - 2 ? TAU[i] : INFINITY;
            cnt[d] = CNT[i];
        }
    }
    double bt[KMC_LANES];
    int bd[KMC_LANES];
    for (int l = 0; l < KMC_LANES; l++) {
        bt[l] = INFINITY;
        bd[l] = -1;
    }
    for (int d = 0; d < g->cells; d++) { /* kmc_lane_scan for all lanes in one pass */
        const int l = d & (KMC_LANES - 1);
        if (tau[d] < bt[l] ||
            (tau[d] == bt[l] && tau[d] < INFINITY && kmc_tie_before(g, ti, tj, d, bd[l]))) {
            bt[l] = tau[d];
            bd[l] = d;
        }
    }
    uint64_t chk[4] = {0, 0, 0, 0}, central = 0, sim = 0;
    uint32_t overflow = 0;
    for (;;) {
        int w = 0;
        for (int l = 1; l < KMC_LANES; l++)
            if (kmc_before(g, ti, tj, bt[l], bd[l], bt[w], bd[w]))
                w = l;
        const double tmin = bt[w];
        if (!(tmin < t_end))
            break;
        if (carlo_interrupted) /* Ctrl-C: the step is left undecided (a long one could last hours) */
            return;
        const int dmin = bd[w];
        const int rmin = dmin / P, cmin = dmin - rmin * P;
        int32_t v[9];
        const int32_t xo = x[dmin];
        kmc_gather(g, x, dmin, v);
        const uint32_t cfg0 = kmc_config_index(md, v);
        const uint32_t site0 = kmc_site_rc(g, ti, tj, rmin, cmin);
        const uint32_t kf = cnt[dmin] + 1;
        overflow |= kf == 0;
        const carlo_u32x4 fd = kmc_clock_draw(seed, site0, kf);
        const int32_t xn = kmc_apply(md, cfg0, xo, kmc_choice_u(fd));
        x[dmin] = xn;
        cnt[dmin] = kf;
        for (int j = 0; j <= g->nbh; j++) {
            const int r = rmin + kmc_slot_dr(j), c = cmin + kmc_slot_dc(j);
            if (!kmc_dynamic(g, r, c))
                continue;
            const int a = dmin + g->off[j];
            kmc_gather(g, x, a, v);
            const uint32_t cn = kmc_config_index(md, v);
            const double An = kmc_total_rate(md, cn);
            carlo_u32x4 draw = fd;
            if (j > 0) {
                v[kmc_opposite(j)] = xo;
                if (kmc_total_rate(md, kmc_config_index(md, v)) == An)
                    continue; /* same total rate: the waiting time stands */
                const uint32_t k = cnt[a] + 1;
                overflow |= k == 0;
                cnt[a] = k;
                draw = kmc_clock_draw(seed, kmc_site_rc(g, ti, tj, r, c), k);
            }
            const double tn = kmc_clock(tmin, draw, An, kmc_inv_rate(md, cn));
            tau[a] = tn;
            const int l = a & (KMC_LANES - 1);
            kmc_lane_offer(g, ti, tj, tau, l, a, tn, &bt[l], &bd[l]);
        }
        kmc_account(g, rmin, cmin, tmin, site0, xn, chk, &central);
        sim++;
    }
    double tm = INFINITY;
    for (int q = 0; q < 64; q++) {
        int d = ((q >> 3) + h1) * P + (q & 7) + h1;
        uint64_t i = ((uint64_t)T << 6) + (uint64_t)q;
        im->x[back][i] = x[d];
        im->tau[back][i] = tau[d];
        im->cnt[back][i] = cnt[d];
        tm = tau[d] < tm ? tau[d] : tm;
    }
    im->tmin[back][T] = tm;
    memcpy(o->chk, chk, sizeof chk);
    o->events = central;
    o->sim = sim;
    o->overflow = overflow;
    o->pad = 0;
}

/* Which strips own tile T (local) shares with its down (bit 1) and right (bit 2) neighbours
 * differ. A split system's last own tile row compares with the up strips the rank below sent
 * into the bottom halo row's results. */
static int cpu_mismatch(const kmc_system *s, const cpu_impl *im, int T, int *down, int *right)
{
    return s->split ? kmc_slab_mismatch(&s->geom, im->out, T, down, right)
                    : kmc_tile_mismatch(&s->geom, im->out, T, down, right);
}

/* Own tile T joins the step's repair list unless it is there already. */
static void cpu_list(cpu_impl *im, int T, uint32_t stamp, int *n)
{
    if (im->stamp[T] != stamp) {
        im->stamp[T] = stamp;
        im->list[(*n)++] = T;
    }
}

/* The step's strips compared: 1 when any own tile's differ from its down or right neighbour's.
 * With repair, the own tiles on either side of a differing strip join the list; a split
 * system's first own tile row also compares its up strips with the down strips the rank above
 * sent (the rank above counts that mismatch; this rank lists its own tile). */
static uint32_t cpu_check(const kmc_system *s, cpu_impl *im, uint32_t stamp, int *n)
{
    const int ntc = s->geom.ntc, T0 = im->first * ntc;
    const int T1 = T0 + (s->split ? s->tile_rows : s->geom.ntr) * ntc, repair = (int)s->ctrl.repair;
    uint32_t bad = 0;
    for (int T = T0; T < T1; T++) {
        int down, right;
        const int d = cpu_mismatch(s, im, T, &down, &right);
        bad |= d != 0;
        if (!repair)
            continue;
        if (d || (s->split && T < T0 + ntc &&
                  im->out[T].chk[KMC_EDGE_UP] != im->out[T - ntc].chk[KMC_EDGE_DOWN]))
            cpu_list(im, T, stamp, n);
        if ((d & 1) && down < T1)
            cpu_list(im, down, stamp, n);
        if (d & 2)
            cpu_list(im, right, stamp, n);
    }
    return bad;
}

/* A split system's up strips of its first tile row to the rank above, the rank below's into the
 * bottom halo row's results; with repair, also the down strips of its last row to the rank
 * below, the rank above's into the top halo row's. */
static int cpu_send_strips(const kmc_system *s, cpu_impl *im)
{
    const int ntc = s->geom.ntc, bottom = (s->tile_rows + 1) * ntc, last = s->tile_rows * ntc;
    uint64_t *buf = (uint64_t *)im->slab; /* free between gathers: 8 n rows >= 4 ntc words */
    for (int tj = 0; tj < ntc; tj++) {
        buf[tj] = im->out[ntc + tj].chk[KMC_EDGE_UP];
        buf[2 * ntc + tj] = im->out[last + tj].chk[KMC_EDGE_DOWN];
    }
    const int bytes = (int)(sizeof *buf * (size_t)ntc);
    if (carlo_mpi_sendrecv_u8((const uint8_t *)buf, im->above, (uint8_t *)(buf + ntc), im->below,
                              bytes, 30) ||
        (s->ctrl.repair && carlo_mpi_sendrecv_u8((const uint8_t *)(buf + 2 * ntc), im->below,
                                                 (uint8_t *)(buf + 3 * ntc), im->above, bytes, 31)))
        return -1;
    for (int tj = 0; tj < ntc; tj++) {
        im->out[bottom + tj].chk[KMC_EDGE_UP] = buf[ntc + tj];
        if (s->ctrl.repair)
            im->out[tj].chk[KMC_EDGE_DOWN] = buf[3 * ntc + tj];
    }
    return 0;
}

static int cpu_advance(kmc_system *s, uint64_t budget)
{
    cpu_impl *im = s->impl;
    kmc_ctrl *c = &s->ctrl;
    const int ntc = s->geom.ntc;
    /* the own tiles: all, or the slab's between its halo rows */
    const int T0 = im->first * ntc, ntiles = (s->split ? s->tile_rows : s->geom.ntr) * ntc;
    for (uint64_t k = 0; k < budget && !c->done; k++) {
        const int front = (int)c->front;
        const double t_end = c->t_end;
        /* a step of a few tiles is shorter than waking the threads */
#pragma omp parallel for schedule(dynamic, 4) if (ntiles > 64)
        for (int T = T0; T < T0 + ntiles; T++)
            cpu_tile(s, im, &s->geom, T, front, t_end);
        if (carlo_interrupted)
            return 0; /* not decided: the accepted state stays, done stays 0 */
        /* compare, and step the tiles around differing strips again (kmc_kernel.h) */
        const uint32_t stamp = kmc_repair_stamp(c->accepted + c->rejected);
        int listed = 0, repaired = 0;
        uint64_t replaced = 0;
        /* events, simulated events, mismatch, overflow, tiles repaired: every rank decides the
         * same from the sums over all of them */
        int64_t sums[5];
        for (int round = 0;; round++) {
            if (s->split && cpu_send_strips(s, im))
                return -1;
            const uint32_t bad = cpu_check(s, im, stamp, &listed);
            uint64_t ev = 0, sim = 0;
            uint32_t ovf = 0;
#pragma omp parallel for schedule(static) reduction(+ : ev, sim) reduction(| : ovf) if (ntiles > 1024)
            for (int T = T0; T < T0 + ntiles; T++) {
                ev += im->out[T].events;
                sim += im->out[T].sim;
                ovf |= im->out[T].overflow;
            }
            sums[0] = (int64_t)ev;
            sums[1] = (int64_t)(sim + replaced);
            sums[2] = bad;
            sums[3] = ovf;
            sums[4] = repaired;
            if (s->split && carlo_mpi_sum_i64(sums, 5))
                return -1;
            if (!kmc_repair_due(c->repair, sums[2] != 0, round))
                break;
            const int from = repaired;
#pragma omp parallel for schedule(dynamic, 1) reduction(+ : replaced) if (listed - from > 1)
            for (int i = from; i < listed; i++) {
                replaced += im->out[im->list[i]].sim;
                cpu_tile(s, im, &s->geom_repair, im->list[i], front, t_end);
            }
            repaired = listed;
            if (carlo_interrupted)
                return 0;
        }
        c->repaired += (uint64_t)sums[4];
        kmc_ctrl_decide(c, (uint64_t)sums[0], (uint64_t)sums[1], sums[2] != 0, sums[3] != 0);
        /* an accepted step's new state needs its halo rows; a rejected one kept the old */
        if (s->split && c->last_accepted && cpu_halo(s, im, (int)c->front))
            return -1;
    }
    return 0;
}

static int cpu_min_tau(kmc_system *s, double *out)
{
    cpu_impl *im = s->impl;
    const int64_t own = (int64_t)(s->split ? s->tile_rows : s->geom.ntr) * s->geom.ntc * 64;
    const double *tau = im->tau[s->ctrl.front] + (int64_t)im->first * s->geom.ntc * 64;
    double mt = INFINITY;
#pragma omp parallel for schedule(static) reduction(min : mt)
    for (int64_t i = 0; i < own; i++)
        if (tau[i] < mt)
            mt = tau[i];
    *out = mt;
    return s->split ? carlo_mpi_min_f64(out, 1) : 0;
}

static int cpu_sync(kmc_system *s)
{
    (void)s;
    return 0;
}

const kmc_backend kmc_cpu_backend = {
    .name = "cpu",
    .create = cpu_create,
    .destroy = cpu_destroy,
    .set_state = cpu_set_state,
    .get_state = cpu_get_state,
    .advance = cpu_advance,
    .min_tau = cpu_min_tau,
    .sync = cpu_sync,
    .slab_states = cpu_slab_states,
};
