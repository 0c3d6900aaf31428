/* kmc_serial.c — the two serial KMC algorithms, CPU only, one thread:
 *   serial: the plain waiting-time method on the whole lattice, with the random numbers and
 *           the event rules of kmc_kernel.h, so its trajectory is the tiled one bit for bit
 *           (the reference of the tests; the earliest clock is found from per-row minima);
 *   bkl:    Bortz-Kalos-Lebowitz (rejection-free, one event list) with the site rates in a
 *           binary tree: the statistically equivalent baseline the paper times on one core. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kmc/kmc.h"

/* ---------- serial waiting-time method ---------- */

typedef struct serial_impl {
    int32_t *x;       /* row-major m x n */
    double *tau;
    uint32_t *cnt;
    double *rowmin;   /* earliest clock of each row ... */
    int32_t *rowarg;  /* ... and its column (the first one on ties: the smaller site) */
} serial_impl;

static int serial_create(kmc_system *s)
{
    serial_impl *im = carlo_calloc(1, sizeof *im, "the serial KMC backend");
    if (!im)
        return -1;
    s->impl = im;
    size_t N = (size_t)s->m * (size_t)s->n;
    im->x = carlo_malloc(carlo_mulsize(N, sizeof *im->x), "the KMC states");
    im->tau = carlo_malloc(carlo_mulsize(N, sizeof *im->tau), "the KMC clocks");
    im->cnt = carlo_malloc(carlo_mulsize(N, sizeof *im->cnt), "the KMC draw counters");
    im->rowmin = carlo_malloc(sizeof *im->rowmin * (size_t)s->m, "the KMC row minima");
    im->rowarg = carlo_malloc(sizeof *im->rowarg * (size_t)s->m, "the KMC row minima");
    return im->x && im->tau && im->cnt && im->rowmin && im->rowarg ? 0 : -1;
}

static void serial_destroy(kmc_system *s)
{
    serial_impl *im = s->impl;
    if (!im)
        return;
    free(im->x);
    free(im->tau);
    free(im->cnt);
    free(im->rowmin);
    free(im->rowarg);
    free(im);
    s->impl = NULL;
}

static void row_scan(serial_impl *im, int n, int i)
{
    const double *t = im->tau + (size_t)i * n;
    double best = INFINITY;
    int arg = 0;
    for (int j = 0; j < n; j++)
        if (t[j] < best) {
            best = t[j];
            arg = j;
        }
    im->rowmin[i] = best;
    im->rowarg[i] = arg;
}

static int serial_set_state(kmc_system *s, const int32_t *x, const double *tau, const uint32_t *cnt)
{
    serial_impl *im = s->impl;
    size_t N = (size_t)s->m * (size_t)s->n;
    if (x)
        memcpy(im->x, x, N * sizeof *x);
    if (tau)
        memcpy(im->tau, tau, N * sizeof *tau);
    if (cnt)
        memcpy(im->cnt, cnt, N * sizeof *cnt);
    for (int i = 0; i < s->m; i++)
        row_scan(im, s->n, i);
    return 0;
}

static int serial_get_state(kmc_system *s, int32_t *x, double *tau, uint32_t *cnt)
{
    serial_impl *im = s->impl;
    size_t N = (size_t)s->m * (size_t)s->n;
    if (x)
        memcpy(x, im->x, N * sizeof *x);
    if (tau)
        memcpy(tau, im->tau, N * sizeof *tau);
    if (cnt)
        memcpy(cnt, im->cnt, N * sizeof *cnt);
    return 0;
}

static int serial_min_row(const serial_impl *im, int m)
{
    int r = 0;
    for (int i = 1; i < m; i++)
        if (im->rowmin[i] < im->rowmin[r])
            r = i;
    return r;
}

static int serial_min_tau(kmc_system *s, double *out)
{
    serial_impl *im = s->impl;
    *out = im->rowmin[serial_min_row(im, s->m)];
    return 0;
}

static int serial_advance(kmc_system *s, uint64_t budget)
{
    serial_impl *im = s->impl;
    kmc_ctrl *c = &s->ctrl;
    const kmc_model *md = &s->model;
    const int m = s->m, n = s->n, nbh = md->nbh;
    for (uint64_t k = 0; k < budget && !c->done; k++) {
        if (c->events >= c->ev_stop) {
            c->done = 1;
            break;
        }
        int i = serial_min_row(im, m), j = im->rowarg[i];
        double tmin = im->rowmin[i];
        if (!(tmin < c->t_stop)) {
            if (c->t_stop < INFINITY)
                c->t = c->t_stop;
            c->done = 1;
            break;
        }
        const uint32_t site = (uint32_t)i * (uint32_t)n + (uint32_t)j;
        int32_t v[9];
        const int32_t xo = im->x[site];
        kmc_gather_periodic(m, n, nbh, im->x, i, j, v);
        const uint32_t cfg0 = kmc_config_index(md, v);
        const uint32_t kf = im->cnt[site] + 1;
        if (kf == 0) {
            c->overflow = 1;
            c->done = 1;
            break;
        }
        const carlo_u32x4 fd = kmc_clock_draw(s->seed, site, kf);
        const int32_t xn = kmc_apply(md, cfg0, xo, kmc_choice_u(fd));
        im->x[site] = xn;
        im->cnt[site] = kf;
        for (int q = 0; q <= nbh; q++) {
            int ai = kmc_wrap(i + kmc_slot_dr(q), m), aj = kmc_wrap(j + kmc_slot_dc(q), n);
            uint32_t a = (uint32_t)ai * (uint32_t)n + (uint32_t)aj;
            kmc_gather_periodic(m, n, nbh, im->x, ai, aj, v);
            const uint32_t cn = kmc_config_index(md, v);
            const double An = kmc_total_rate(md, cn);
            carlo_u32x4 draw = fd;
            if (q > 0) {
                v[kmc_opposite(q)] = xo;
                if (kmc_total_rate(md, kmc_config_index(md, v)) == An)
                    continue;
                const uint32_t ka = im->cnt[a] + 1;
                if (ka == 0)
                    c->overflow = 1;
                im->cnt[a] = ka;
                draw = kmc_clock_draw(s->seed, a, ka);
            }
            im->tau[a] = kmc_clock(tmin, draw, An, kmc_inv_rate(md, cn));
        }
        for (int di = -1; di <= 1; di++)
            row_scan(im, n, kmc_wrap(i + di, m));
        c->t = tmin;
        c->events++;
        if (c->overflow)
            c->done = 1;
    }
    if (c->events >= c->ev_stop)
        c->done = 1;
    return 0;
}

static int serial_sync(kmc_system *s)
{
    (void)s;
    return 0;
}

const kmc_backend kmc_serial_backend = {
    .name = "serial",
    .create = serial_create,
    .destroy = serial_destroy,
    .set_state = serial_set_state,
    .get_state = serial_get_state,
    .advance = serial_advance,
    .min_tau = serial_min_tau,
    .sync = serial_sync,
};

/* ---------- BKL with a binary tree of rates ---------- */

typedef struct bkl_impl {
    int32_t *x;      /* row-major m x n */
    double *tree;    /* tree[1] the total; tree[leaves + s] the rate of site s */
    size_t leaves;   /* a power of two >= m n */
} bkl_impl;

static int bkl_create(kmc_system *s)
{
    bkl_impl *im = carlo_calloc(1, sizeof *im, "the BKL backend");
    if (!im)
        return -1;
    s->impl = im;
    size_t N = (size_t)s->m * (size_t)s->n;
    im->leaves = 1;
    while (im->leaves < N)
        im->leaves <<= 1;
    im->x = carlo_malloc(carlo_mulsize(N, sizeof *im->x), "the KMC states");
    im->tree = carlo_calloc(2 * im->leaves, sizeof *im->tree, "the BKL rate tree");
    return im->x && im->tree ? 0 : -1;
}

static void bkl_destroy(kmc_system *s)
{
    bkl_impl *im = s->impl;
    if (!im)
        return;
    free(im->x);
    free(im->tree);
    free(im);
    s->impl = NULL;
}

static double site_rate(const kmc_system *s, const int32_t *x, int i, int j)
{
    int32_t v[9];
    kmc_gather_periodic(s->m, s->n, s->model.nbh, x, i, j, v);
    return kmc_total_rate(&s->model, kmc_config_index(&s->model, v));
}

static int bkl_set_state(kmc_system *s, const int32_t *x, const double *tau, const uint32_t *cnt)
{
    (void)tau;
    (void)cnt;
    bkl_impl *im = s->impl;
    const int m = s->m, n = s->n;
    if (!x)
        return 0;
    memcpy(im->x, x, (size_t)m * (size_t)n * sizeof *x);
    double *leaf = im->tree + im->leaves;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            leaf[(size_t)i * n + j] = site_rate(s, im->x, i, j);
    for (size_t k = im->leaves - 1; k >= 1; k--)
        im->tree[k] = im->tree[2 * k] + im->tree[2 * k + 1];
    return 0;
}

static int bkl_get_state(kmc_system *s, int32_t *x, double *tau, uint32_t *cnt)
{
    (void)tau;
    (void)cnt;
    bkl_impl *im = s->impl;
    if (x)
        memcpy(x, im->x, (size_t)s->m * (size_t)s->n * sizeof *x);
    return 0;
}

static void tree_set(bkl_impl *im, size_t site, double rate)
{
    size_t k = im->leaves + site;
    im->tree[k] = rate;
    for (k >>= 1; k >= 1; k >>= 1)
        im->tree[k] = im->tree[2 * k] + im->tree[2 * k + 1];
}

static int bkl_advance(kmc_system *s, uint64_t budget)
{
    bkl_impl *im = s->impl;
    kmc_ctrl *c = &s->ctrl;
    const kmc_model *md = &s->model;
    const int m = s->m, n = s->n, nbh = md->nbh;
    double *tree = im->tree;
    const size_t leaves = im->leaves;
    for (uint64_t e = 0; e < budget && !c->done; e++) {
        if (c->events >= c->ev_stop) {
            c->done = 1;
            break;
        }
        const double total = tree[1];
        if (!(total > 0)) {
            if (c->t_stop < INFINITY)
                c->t = c->t_stop;
            c->done = 1;
            break;
        }
        const carlo_u32x4 d = carlo_rng(s->seed, KMC_PURPOSE_BKL, c->events, 0, 0);
        const double tn = c->t + kmc_exp1(d.v[2], d.v[3]) / total;
        if (!(tn < c->t_stop)) { /* memoryless: the time to the next event starts afresh */
            c->t = c->t_stop;
            c->done = 1;
            break;
        }
        double u = carlo_u01(d.v[0], d.v[1]) * total;
        size_t k = 1;
        while (k < leaves) {
            const double left = tree[2 * k];
            if (u < left || !(tree[2 * k + 1] > 0)) {
                k = 2 * k;
            } else {
                u -= left;
                k = 2 * k + 1;
            }
        }
        const size_t site = k - leaves;
        const int i = (int)(site / (size_t)n), j = (int)(site % (size_t)n);
        int32_t v[9];
        kmc_gather_periodic(m, n, nbh, im->x, i, j, v);
        const uint32_t cfg = kmc_config_index(md, v);
        double uc = 0;
        if (kmc_needs_choice(md, cfg)) {
            carlo_u32x4 d2 = carlo_rng(s->seed, KMC_PURPOSE_BKL, c->events, 0, 1);
            uc = carlo_u01(d2.v[0], d2.v[1]);
        }
        im->x[site] = kmc_apply(md, cfg, im->x[site], uc);
        for (int q = 0; q <= nbh; q++) {
            int ai = kmc_wrap(i + kmc_slot_dr(q), m), aj = kmc_wrap(j + kmc_slot_dc(q), n);
            size_t a = (size_t)ai * (size_t)n + (size_t)aj;
            double r = site_rate(s, im->x, ai, aj);
            if (r != tree[leaves + a])
                tree_set(im, a, r);
        }
        c->t = tn;
        c->events++;
    }
    if (c->events >= c->ev_stop)
        c->done = 1;
    return 0;
}

static int bkl_min_tau(kmc_system *s, double *out)
{
    bkl_impl *im = s->impl;
    *out = im->tree[1] > 0 ? s->ctrl.t : INFINITY;
    return 0;
}

const kmc_backend kmc_bkl_backend = {
    .name = "bkl",
    .create = bkl_create,
    .destroy = bkl_destroy,
    .set_state = bkl_set_state,
    .get_state = bkl_get_state,
    .advance = bkl_advance,
    .min_tau = bkl_min_tau,
    .sync = serial_sync,
};
