/* potts_wl.c — Wang-Landau for the Potts model: the windows and the walkers' start (host), the
 * CPU backend (one OpenMP thread per window, a window's walkers in lockstep), the run in chunks
 * (Ctrl-C and progress between them) and the join of the windows' ln g. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/progress.h"
#include "potts/potts_kernel.h"
#include "potts/potts_wl.h"

const potts_wl_backend *potts_wl_gpu_backend;

/* ---------- the CPU backend ---------- */

/* Window k, up to `steps` lockstep steps (fewer when it ends or Ctrl-C comes). */
static void cpu_window(potts_wl *r, int k, uint64_t steps)
{
    const potts_wl_par *p = &r->par;
    potts_wl_window w = r->win[k];
    double *lng = potts_wl_lng(r, k);
    uint64_t *h = potts_wl_hist(r, k);
    int32_t *b = r->b + (int64_t)k * p->walkers;
    uint8_t *spins = r->spins + (int64_t)k * p->walkers * p->N;
    potts_wl_move mv[POTTS_WL_WALKERS_MAX];
    for (uint64_t s = 0; s < steps && w.phase != POTTS_WL_DONE; s++) {
        if ((s & 0xffff) == 0xffff && carlo_interrupted)
            break;
        double lnf = potts_wl_step_lnf(&w, p);
        for (uint32_t a = 0; a < p->walkers; a++) /* every walker decides on the same ln g */
            mv[a] = potts_wl_decide(spins + (int64_t)a * p->N, b[a], lng, &w, p, (uint32_t)k, a);
        for (uint32_t a = 0; a < p->walkers; a++) {
            if (mv[a].accept) {
                spins[(int64_t)a * p->N + mv[a].site] = (uint8_t)mv[a].state;
                b[a] = mv[a].b;
            }
            lng[b[a] - w.lo] += lnf;
            h[b[a] - w.lo]++;
        }
        if (potts_wl_step_end(&w, p)) {
            uint64_t hmin = UINT64_MAX, hsum = 0;
            int32_t nv = 0;
            for (int32_t i = 0; i <= w.hi - w.lo; i++)
                potts_wl_tally(lng[i], h[i], &hmin, &hsum, &nv);
            if (potts_wl_check(&w, p, hmin, hsum, nv))
                memset(h, 0, sizeof *h * (size_t)(w.hi - w.lo + 1));
        }
    }
    r->win[k] = w;
}

static int cpu_create(potts_wl *r) { (void)r; return 0; }
static int cpu_fetch(potts_wl *r) { (void)r; return 0; }
static void cpu_destroy(potts_wl *r) { (void)r; }

static int cpu_advance(potts_wl *r, uint64_t steps)
{
    int threads = omp_get_max_threads();
    if (threads > r->W)
        threads = r->W;
    /* one thread per window, no barrier before the chunk ends */
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (int k = 0; k < r->W; k++)
        if (r->win[k].phase != POTTS_WL_DONE)
            cpu_window(r, k, steps);
    return 0;
}

const potts_wl_backend potts_wl_cpu_backend = {
    .name = "cpu",
    .create = cpu_create,
    .advance = cpu_advance,
    .fetch = cpu_fetch,
    .destroy = cpu_destroy,
};

/* ---------- preparation ---------- */

static int64_t distance(int64_t b, const potts_wl_window *w)
{
    return b < w->lo ? w->lo - b : b > w->hi ? b - w->hi : 0;
}

/* Walker a of window k (0, or 1: not reached, 2: Ctrl-C): from the ordered lattice (b = 2N) or the checkerboard of states 0 and
 * 1 (b = 0), whichever lies on the same side of the entropy maximum b = 2N/q as the window,
 * single-spin moves that never take it farther from the window, until it is inside. */
static int drive(potts_wl *r, int k, uint32_t a)
{
    const potts_wl_par *p = &r->par;
    const potts_wl_window *w = &r->win[k];
    uint8_t *spins = r->spins + ((int64_t)k * p->walkers + a) * p->N;
    int64_t b;
    if ((int64_t)w->hi * p->q < 2 * (int64_t)p->N) {
        for (uint32_t i = 0; i < p->L; i++)
            for (uint32_t j = 0; j < p->L; j++)
                spins[i * p->L + j] = (uint8_t)((i + j) & 1);
        b = 0;
    } else {
        memset(spins, 0, p->N);
        b = 2 * (int64_t)p->N;
    }
    uint64_t cap = 1000 * (uint64_t)p->N + 1000000;
    for (uint64_t m = 0; distance(b, w) > 0; m++) {
        if (m == cap)
            return 1;
        if ((m & 0xfffff) == 0xfffff && carlo_interrupted)
            return 2;
        carlo_u32x4 rnd = carlo_rng(p->seed, POTTS_WL_PURPOSE_DRIVE, m, (uint32_t)k, a);
        uint32_t site, state;
        potts_wl_propose(spins, rnd, p, m, (uint32_t)k, a, &site, &state);
        int64_t nb = b + potts_wl_delta(spins, p->L, site, state);
        if (distance(nb, w) <= distance(b, w)) {
            spins[site] = (uint8_t)state;
            b = nb;
        }
    }
    r->b[(int64_t)k * p->walkers + a] = (int32_t)b;
    return 0;
}

/* Windows of equal width over b in [0, 2N], neighbours sharing about `overlap` of it. */
static int split(potts_wl *r, double overlap)
{
    int W = r->W;
    int64_t span = 2 * (int64_t)r->par.N;
    int64_t width = span;
    if (W > 1)
        width = (int64_t)ceil((double)span / (1.0 + (double)(W - 1) * (1.0 - overlap)));
    int64_t shared = W > 1 ? width - (span - width + W - 2) / (W - 1) : span + 1;
    if (width + 1 < POTTS_WL_MIN_WIDTH || shared < POTTS_WL_MIN_OVERLAP)
        return carlo_seterr("carlo.wang_landau: windows = %d with overlap = %g leaves windows of "
                            "%lld levels sharing %lld (at least %d and %d needed: use fewer "
                            "windows or more overlap)", W, overlap, (long long)width + 1,
                            (long long)shared, POTTS_WL_MIN_WIDTH, POTTS_WL_MIN_OVERLAP);
    for (int k = 0; k < W; k++) {
        potts_wl_window *w = &r->win[k];
        memset(w, 0, sizeof *w);
        w->lo = W > 1 ? (int32_t)((int64_t)k * (span - width) / (W - 1)) : 0;
        w->hi = (int32_t)(w->lo + width);
        w->lnf = 1.0;
        w->phase = POTTS_WL_HALVING;
    }
    r->par.stride = (int32_t)(width + 1);
    return 0;
}

/* Every walker into its window, in parallel; the first failure (by window) is reported. */
static int drive_all(potts_wl *r, size_t walkers, const char *where)
{
    const potts_wl_par *par = &r->par;
    int64_t failed = -1; /* the first window whose walker failed, times 4, plus the reason */
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t i = 0; i < (int64_t)walkers; i++) {
        int why = drive(r, (int)(i / par->walkers), (uint32_t)(i % par->walkers));
        if (why) {
#pragma omp critical(potts_wl_drive)
            if (failed < 0 || i / par->walkers * 4 + why < failed)
                failed = i / par->walkers * 4 + why;
        }
    }
    if (failed >= 0) {
        const potts_wl_window *w = &r->win[failed / 4];
        if (failed % 4 == 2)
            carlo_seterr("interrupted");
        else
            carlo_seterr("%s: window %d (E from %d to %d) could not be reached by its walkers; "
                         "use fewer windows", where, (int)(failed / 4) + 1, -w->hi, -w->lo);
        return -1;
    }
    return 0;
}

/* The parameters' ranges: 0, or -1 with the message naming the key and the value. */
static int check_params(const potts_wl_params *p, const char *where)
{
    if (p->L < 2 || p->L > POTTS_WL_L_MAX || p->L % 2)
        return carlo_seterr("%s: L must be an even integer from 2 to %d (got %d)", where,
                            POTTS_WL_L_MAX, p->L);
    if (p->q < 2 || p->q > POTTS_Q_MAX)
        return carlo_seterr("%s: q must be an integer from 2 to %d (got %d)", where, POTTS_Q_MAX,
                            p->q);
    if (p->windows < 1 || p->windows > POTTS_WL_WINDOWS_MAX)
        return carlo_seterr("%s: windows must be an integer from 1 to %d (got %d)", where,
                            POTTS_WL_WINDOWS_MAX, p->windows);
    if (p->walkers < 1 || p->walkers > POTTS_WL_WALKERS_MAX)
        return carlo_seterr("%s: walkers must be an integer from 1 to %d (got %d)", where,
                            POTTS_WL_WALKERS_MAX, p->walkers);
    if (!(p->overlap > 0 && p->overlap < 1))
        return carlo_seterr("%s: overlap must be a number in (0, 1) (got %g)", where, p->overlap);
    if (!(p->flatness > 0 && p->flatness < 1))
        return carlo_seterr("%s: flatness must be a number in (0, 1) (got %g)", where,
                            p->flatness);
    if (!(p->final > 0 && p->final < 1))
        return carlo_seterr("%s: final must be a number in (0, 1) (got %g)", where, p->final);
    return 0;
}

potts_wl *potts_wl_create(const potts_wl_params *p)
{
    const char *where = "carlo.wang_landau";
    if (check_params(p, where))
        return NULL;
    const potts_wl_backend *be = &potts_wl_cpu_backend;
    if (p->device == CARLO_GPU) {
        if (!potts_wl_gpu_backend) {
            carlo_seterr("%s: this carlo was built without CUDA (device = \"gpu\")", where);
            return NULL;
        }
        be = potts_wl_gpu_backend;
    }
    potts_wl *r = carlo_calloc(1, sizeof *r, "Wang-Landau state");
    if (!r)
        return NULL;
    r->W = p->windows;
    r->device = p->device;
    r->be = be;
    potts_wl_par *par = &r->par;
    par->seed = p->seed;
    par->flatness = p->flatness;
    par->final = p->final;
    par->L = (uint32_t)p->L;
    par->N = (uint32_t)p->L * (uint32_t)p->L;
    par->q = (uint32_t)p->q;
    par->walkers = (uint32_t)p->walkers;
    r->win = carlo_calloc((size_t)r->W, sizeof *r->win, "Wang-Landau windows");
    if (!r->win || split(r, p->overlap))
        goto fail;
    uint64_t checks = (uint64_t)par->N + 16 * (uint64_t)par->stride;
    par->check_every = checks / par->walkers > 64 ? checks / par->walkers : 64;
    for (int k = 0; k < r->W; k++)
        r->win[k].next_check = par->check_every;
    size_t walkers = (size_t)r->W * par->walkers, levels = (size_t)r->W * (size_t)par->stride;
    r->b = carlo_calloc(walkers, sizeof *r->b, "Wang-Landau walkers");
    r->spins = carlo_calloc(walkers, par->N, "Wang-Landau lattices");
    r->lng = carlo_calloc(levels, sizeof *r->lng, "Wang-Landau ln g");
    r->hist = carlo_calloc(levels, sizeof *r->hist, "Wang-Landau histograms");
    if (!r->b || !r->spins || !r->lng || !r->hist)
        goto fail;
    if (drive_all(r, walkers, where))
        goto fail;
    if (be->create(r))
        goto fail;
    return r;
fail:
    potts_wl_destroy(r);
    return NULL;
}

void potts_wl_destroy(potts_wl *r)
{
    if (!r)
        return;
    if (r->impl && r->be)
        r->be->destroy(r);
    free(r->win);
    free(r->b);
    free(r->spins);
    free(r->lng);
    free(r->hist);
    free(r);
}

/* ---------- the run ---------- */

/* How far the slowest window is, as log2(1 / ln f) (the halvings so far), for the progress
 * line. */
static double progress_of(const potts_wl *r)
{
    double least = INFINITY;
    for (int k = 0; k < r->W; k++) {
        double x = -log2(r->win[k].phase == POTTS_WL_DONE ? r->par.final : r->win[k].lnf);
        if (x < least)
            least = x;
    }
    return least > 0 ? least : 0;
}

int potts_wl_run(potts_wl *r, int quiet)
{
    /* chunks of tenths of a second between looks at Ctrl-C: about 2^21 moves a window on the
     * CPU; 2^16 steps on the GPU, where a window's walkers move at once */
    uint64_t chunk = r->device == CARLO_GPU ? (uint64_t)1 << 16
                                            : ((uint64_t)1 << 21) / r->par.walkers;
    carlo_progress pr;
    carlo_progress_start(&pr, "wang_landau", "log2(1/ln f)", -log2(r->par.final), quiet);
    double t0 = carlo_now();
    int rc = 0;
    for (;;) {
        int open = 0;
        for (int k = 0; k < r->W; k++) {
            open += r->win[k].phase != POTTS_WL_DONE;
            if (r->win[k].step > ((uint64_t)1 << 47)) {
                rc = carlo_seterr("carlo.wang_landau: window %d made 2^47 steps without reaching "
                                  "final = %g (raise final)", k + 1, r->par.final);
                break;
            }
        }
        if (rc || !open)
            break;
        if ((rc = r->be->advance(r, chunk)))
            break;
        if (carlo_interrupted) {
            rc = carlo_seterr("interrupted");
            break;
        }
        carlo_progress_update(&pr, progress_of(r));
    }
    carlo_progress_end(&pr);
    r->seconds += carlo_now() - t0;
    if (!rc)
        rc = r->be->fetch(r);
    return rc;
}

/* ---------- the join ---------- */

int potts_wl_join(potts_wl *r, double *out)
{
    int64_t nlev = 2 * (int64_t)r->par.N + 1;
    for (int64_t b = 0; b < nlev; b++)
        out[b] = -INFINITY;
    const potts_wl_window *w0 = &r->win[0];
    const double *g0 = potts_wl_lng(r, 0);
    for (int32_t b = w0->lo; b <= w0->hi; b++)
        if (g0[b - w0->lo] > 0)
            out[b] = g0[b - w0->lo];
    for (int k = 1; k < r->W; k++) {
        const potts_wl_window *w = &r->win[k], *prev = &r->win[k - 1];
        const double *g = potts_wl_lng(r, k);
        /* the shift that matches the window to what is joined so far, on average over the
         * levels both visited in the overlap; above the overlap's middle the new window wins,
         * since a window is least accurate near its own edges */
        double sum = 0;
        int n = 0;
        for (int32_t b = w->lo; b <= prev->hi; b++)
            if (g[b - w->lo] > 0 && out[b] > -INFINITY) {
                sum += out[b] - g[b - w->lo];
                n++;
            }
        if (n == 0)
            return carlo_seterr("carlo.wang_landau: windows %d and %d share no visited level "
                                "(raise overlap)", k, k + 1);
        double shift = sum / n;
        int32_t middle = (w->lo + prev->hi + 1) / 2;
        for (int32_t b = w->lo; b <= w->hi; b++)
            if (g[b - w->lo] > 0 && (b >= middle || out[b] == -INFINITY))
                out[b] = g[b - w->lo] + shift;
    }
    /* normalise: sum over levels of g = q^N */
    double top = -INFINITY, s = 0;
    for (int64_t b = 0; b < nlev; b++)
        if (out[b] > top)
            top = out[b];
    for (int64_t b = 0; b < nlev; b++)
        if (out[b] > -INFINITY)
            s += exp(out[b] - top);
    double shift = (double)r->par.N * log((double)r->par.q) - top - log(s);
    for (int64_t b = 0; b < nlev; b++)
        if (out[b] > -INFINITY)
            out[b] += shift;
    return 0;
}
