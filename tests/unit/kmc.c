/* unit/kmc — the pieces of kmc_kernel.h that both backends share: the portable logarithm
 * behind every waiting time, the domain geometry (an event's cells on distinct lanes), the
 * sos_growth rates, the event order, and the adaptive step of Algorithm 1; and the system in
 * the system layer's run driver from C (frames at model times, controls, absorbing states). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "core/error.h"
#include "kmc/kmc.h"

static double ulps(double a, double b)
{
    return fabs(a - b) / (nextafter(fabs(b), INFINITY) - fabs(b));
}

static void test_neglog(void)
{
    /* against libm over the whole range the draws produce: 2^-53 .. 1 - 2^-53 */
    double worst = 0, at = 0;
    uint64_t z = 88172645463325252ull;
    for (int i = 0; i < 2000000; i++) {
        z ^= z << 13;
        z ^= z >> 7;
        z ^= z << 17;
        double u;
        if (i % 2) /* uniform in [0, 1) */
            u = ((double)(z >> 12) + 0.5) * 0x1p-52;
        else /* log-uniform: every binade */
            u = ldexp(1.0 + (double)(z >> 12) * 0x1p-52, -1 - (int)(z % 53));
        if (!(u > 0 && u < 1))
            continue;
        double e = ulps(kmc_neglog(u), -log(u));
        if (e > worst) {
            worst = e;
            at = u;
        }
    }
    CHECK("unit/kmc/neglog-accuracy", worst <= 4, "worst error %.2f ulp at u = %.17g", worst, at);
    CHECK("unit/kmc/neglog-ends", kmc_neglog(0x1p-53) > 36.7 && kmc_neglog(1 - 0x1p-53) > 0 &&
                                      kmc_neglog(0.5) == 0x1.62e42fefa39efp-1,
          "ends %.17g %.17g", kmc_neglog(0x1p-53), kmc_neglog(1 - 0x1p-53));
    double lo = INFINITY, hi = 0;
    uint32_t words[][2] = {{0, 0}, {0xffffffffu, 0xffffffffu}, {0x80000000u, 0}};
    for (int i = 0; i < 3; i++) {
        double e = kmc_exp1(words[i][0], words[i][1]);
        lo = e < lo ? e : lo;
        hi = e > hi ? e : hi;
    }
    CHECK("unit/kmc/exp1-range", lo > 0 && hi < 37 && isfinite(hi), "range %g .. %g", lo, hi);
    /* the mean of E over many draws is 1 (within 4 standard errors of 1/sqrt(n)) */
    double sum = 0;
    const int n = 1000000;
    for (int i = 0; i < n; i++) {
        carlo_u32x4 d = kmc_clock_draw(7, (uint32_t)i, 0);
        sum += kmc_exp1(d.v[0], d.v[1]);
    }
    CHECK("unit/kmc/exp1-mean", fabs(sum / n - 1) < 4 / sqrt((double)n), "mean %.6f", sum / n);
}

static void test_geometry(void)
{
    int bad = 0, big = 0;
    for (int halo = 1; halo <= KMC_HALO_MAX; halo++) {
        kmc_geom g;
        kmc_geom_init(&g, 64, 64, halo, 8);
        if (g.cells > KMC_CELLS_MAX || g.P < g.D)
            big++;
        /* every dynamic cell: its nine cells land on nine different lanes, and each lane
         * finds the one it owns */
        for (int r = 1; r <= g.D - 2; r++)
            for (int c = 1; c <= g.D - 2; c++) {
                int d = r * g.P + c, seen = 0;
                for (int lane = 0; lane < KMC_LANES; lane++) {
                    int slot = -1, a = kmc_lane_affected(&g, d, lane, &slot);
                    if (a >= 0) {
                        seen++;
                        if (a != d + g.off[slot] || (a & 31) != lane)
                            bad++;
                    }
                }
                if (seen != 9)
                    bad++;
            }
    }
    CHECK("unit/kmc/lanes-distinct", bad == 0 && big == 0, "%d bad cells, %d oversized domains", bad, big);
    kmc_geom g;
    kmc_geom_init(&g, 16, 24, 7, 4);
    /* the site of a domain cell wraps around the lattice */
    int ok = kmc_site_rc(&g, 0, 0, 0, 0) == (uint32_t)((16 - 8) * 24 + 24 - 8) &&
             kmc_site_rc(&g, 1, 2, g.D - 1, g.D - 1) == (uint32_t)(7 * 24 + 7) &&
             kmc_tm_index(&g, 9, 17) == (uint64_t)((1 * 3 + 2) * 64 + 1 * 8 + 1);
    CHECK("unit/kmc/wrap", ok, "site or tile-major index wrong");
    int opp = 1;
    for (int k = 0; k < 9; k++)
        opp &= kmc_slot_dr(kmc_opposite(k)) == -kmc_slot_dr(k) &&
               kmc_slot_dc(kmc_opposite(k)) == -kmc_slot_dc(k);
    CHECK("unit/kmc/opposite-slots", opp, "kmc_opposite does not mirror the slots");
}

static void test_sos(void)
{
    double r[5];
    int rc = kmc_sos_rates(1.0, 2.0, r);
    CHECK("unit/kmc/sos-rates", rc == 0 && r[0] == 2 * exp(-4.0) && r[2] == 2.0 && r[4] == 2 * exp(4.0),
          "rates %g %g %g", r[0], r[2], r[4]);
    CHECK("unit/kmc/sos-rates-overflow", kmc_sos_rates(200, 1, r) != 0 && kmc_sos_rates(0, -1, r) != 0,
          "an overflowing or negative rate was accepted");
    kmc_model md;
    memset(&md, 0, sizeof md);
    md.kind = KMC_SOS;
    md.nbh = 4;
    int32_t v[9] = {3, 4, 3, 5, 2, 0, 0, 0, 0};
    CHECK("unit/kmc/sos-bonds", kmc_config_index(&md, v) == 2 && kmc_apply(&md, 2, 3, 0.5) == 4,
          "n_b = %u", kmc_config_index(&md, v));
}

static void test_order(void)
{
    kmc_geom g;
    kmc_geom_init(&g, 16, 16, 3, 4);
    /* equal times: the smaller site first, then the smaller domain cell; infinities never fire */
    int d1 = 2 * g.P + 5, d2 = 2 * g.P + 6;
    CHECK("unit/kmc/order", kmc_before(&g, 0, 0, 1.0, d2, 2.0, d1) &&
                                kmc_before(&g, 0, 0, 1.0, d1, 1.0, d2) &&
                                !kmc_before(&g, 0, 0, 1.0, d2, 1.0, d1) &&
                                !kmc_before(&g, 0, 0, INFINITY, d1, 5.0, d2),
          "kmc_before");
}

static void test_ctrl(void)
{
    kmc_ctrl c;
    memset(&c, 0, sizeof c);
    c.grow_initial = c.grow = 10;
    c.grow_after = 1.03;
    c.shrink = 0.5;
    c.dt = 0.25;
    c.t_stop = INFINITY;
    c.ev_stop = UINT64_MAX;
    kmc_ctrl_plan(&c);
    int ok = c.t_end == 0.25 && !c.done && !c.clamped;
    kmc_ctrl_decide(&c, 7, 50, 0, 0); /* accepted: t moves, dt grows tenfold */
    ok &= c.t == 0.25 && c.events == 7 && c.front == 1 && c.dt == 2.5 && c.t_end == 2.75;
    kmc_ctrl_decide(&c, 9, 40, 1, 0); /* rejected: halved, the growth factor drops to 1.03 */
    ok &= c.t == 0.25 && c.events == 7 && c.front == 1 && c.dt == 1.25 && c.grow == 1.03 &&
          c.rejected == 1 && c.simulated == 90;
    kmc_ctrl_decide(&c, 3, 3, 0, 0);
    ok &= c.dt == 1.03 * 1.25 && c.accepted == 2;
    CHECK("unit/kmc/ctrl-adapt", ok, "t %g dt %g grow %g", c.t, c.dt, c.grow);
    c.t_stop = c.t + 0.5; /* a stop shortens the step and does not grow dt */
    double dt = c.dt;
    kmc_ctrl_plan(&c);
    ok = c.clamped && c.t_end == c.t_stop;
    kmc_ctrl_decide(&c, 1, 1, 0, 0);
    ok &= c.dt == dt && c.done && c.t == c.t_stop;
    CHECK("unit/kmc/ctrl-stop", ok, "t %g t_stop %g dt %g", c.t, c.t_stop, c.dt);
    c.t_stop = INFINITY; /* an event stop: no step much longer than the events still wanted */
    c.ev_stop = c.events + 10;
    c.rate_est = 100;
    c.done = 0;
    kmc_ctrl_plan(&c);
    ok = c.clamped && fabs(c.t_end - c.t - 0.1) < 1e-12;
    kmc_ctrl_decide(&c, 10, 10, 0, 0);
    ok &= c.done;
    CHECK("unit/kmc/ctrl-events", ok, "t_end - t %g", c.t_end - c.t);
    c.mode = KMC_MODE_TRY; /* a forced step is accepted with the mismatch reported */
    c.force = 1;
    c.done = 0;
    c.t_end = c.t + 1;
    dt = c.dt;
    kmc_ctrl_decide(&c, 5, 5, 1, 0);
    ok = c.last_accepted && !c.last_matched && c.done && c.dt == dt;
    c.force = 0;
    c.done = 0;
    c.t_end = c.t + 1;
    double t = c.t;
    kmc_ctrl_decide(&c, 5, 5, 1, 0);
    ok &= !c.last_accepted && c.t == t && c.dt == dt;
    CHECK("unit/kmc/ctrl-try", ok, "try mode");
}

typedef struct every_log {
    int calls, off_grid;
    double every;
    carlo_sys *sys;
} every_log;

/* the run driver's frame writer: frames at model times (where trajectories are written) */
static int on_frame(void *ctx, carlo_frame *f)
{
    every_log *e = ctx;
    e->calls++;
    const double *t = carlo_frame_expect(f, "log/t", CARLO_F64, 1, 1);
    const uint64_t *step = carlo_frame_expect(f, "configuration/step", CARLO_U64, 1, 1);
    if (!t || !step || *t != e->every * (e->calls - 1) || *step != e->sys->step)
        e->off_grid++;
    return 0;
}

static kmc_params sos_params(double bond, uint64_t seed)
{
    kmc_params p;
    memset(&p, 0, sizeof p);
    p.m = 16;
    p.n = 24;
    p.kind = KMC_SOS;
    p.bond = bond;
    p.k2 = 1;
    p.seed = seed;
    p.halo = 3;
    p.grow_initial = 10;
    p.grow = 1.03;
    p.shrink = 0.5;
    return p;
}

static int run_time(kmc_system *s, double time, double every, every_log *log)
{
    carlo_run_opts o;
    memset(&o, 0, sizeof o);
    o.clock = CARLO_CLOCK_TIME;
    o.time = time;
    o.every_time = every;
    o.write = log ? on_frame : NULL;
    o.ctx = log;
    o.quiet = 1;
    carlo_run_result r;
    return carlo_run(&s->sys, &o, &r);
}

/* carlo_run on a KMC system from C: frames at every multiple of `every` in time from t = 0
 * (the initial configuration first), the frame itself, and the system layer's view of it */
static void test_run_every(void)
{
    kmc_params p = sos_params(1, 3);
    kmc_system *s = kmc_create(&p);
    every_log log = {0, 0, 0.25, s ? &s->sys : NULL};
    int rc = s ? run_time(s, 5, 0.25, &log) : -1;
    CHECK("unit/kmc/run-every", rc == 0 && log.calls == 21 && log.off_grid == 0 && s->ctrl.t == 5 &&
                                    s->step == s->ctrl.accepted + s->ctrl.rejected && s->step > 0,
          "rc %d, %d calls, %d off the grid", rc, log.calls, log.off_grid);
    carlo_frame f;
    carlo_frame_init(&f);
    rc = kmc_frame(s, &f);
    const uint64_t *step = carlo_frame_expect(&f, "configuration/step", CARLO_U64, 1, 1);
    const uint64_t *events = carlo_frame_expect(&f, "log/events", CARLO_U64, 1, 1);
    const double *t = carlo_frame_expect(&f, "log/t", CARLO_F64, 1, 1);
    const int32_t *h = carlo_frame_expect(&f, "lattice/height", CARLO_I32, 16, 24);
    int64_t sum = 0;
    for (int i = 0; h && i < 16 * 24; i++)
        sum += h[i];
    CHECK("unit/kmc/frame", rc == 0 && step && events && t && h && *step == s->step &&
                                *events == s->ctrl.events && *t == 5 && (uint64_t)sum == s->ctrl.events,
          "frame chunks missing or wrong");
    carlo_frame_free(&f);
    double t0;
    uint64_t ev0;
    s->ops->clock(&s->sys, &t0, &ev0);
    CHECK("unit/kmc/ops", s->ops == &kmc_ops && s->ops->continuous && t0 == 5 &&
                              ev0 == s->ctrl.events && s->replicas == 1,
          "the system layer's view");
    kmc_destroy(s);
}

/* controls from C: bond redraws the clocks whose rate changed, and the run goes on exactly as
 * the serial reference's does */
static void test_controls(void)
{
    kmc_params p = sos_params(1, 4);
    kmc_system *a = kmc_create(&p);
    p.algorithm = KMC_SERIAL;
    kmc_system *b = kmc_create(&p);
    int rc = !a || !b || run_time(a, 3, 0, NULL) || run_time(b, 3, 0, NULL);
    const carlo_control *c = rc ? NULL : carlo_control_find(&a->sys, "bond");
    rc = rc || !c || carlo_control_set(&a->sys, c, 2.5) || carlo_control_set(&b->sys, c, 2.5) ||
         run_time(a, 3, 0, NULL) || run_time(b, 3, 0, NULL);
    size_t N = 16 * 24;
    int32_t xa[16 * 24], xb[16 * 24];
    double ta[16 * 24], tb[16 * 24];
    long bad = 0;
    if (rc == 0 && a->be->get_state(a, xa, ta, NULL) == 0 && b->be->get_state(b, xb, tb, NULL) == 0)
        for (size_t i = 0; i < N; i++)
            bad += xa[i] != xb[i] || ta[i] != tb[i];
    CHECK("unit/kmc/control-bond", rc == 0 && bad == 0 && a->bond == 2.5 && a->ctrl.t == b->ctrl.t &&
                                       a->model.rate[4] == exp(4.0 * 2.5),
          "rc %d, %ld sites differ", rc, bad);
    int refused = c ? carlo_control_set(&a->sys, c, 1000) : 0;
    CHECK("unit/kmc/control-range", refused != 0 && a->bond == 2.5 &&
                                        strstr(carlo_errmsg(), "bond in [-177, 177]"),
          "%s", carlo_errmsg());
    kmc_destroy(a);
    kmc_destroy(b);
}

int main(void)
{
    test_neglog();
    test_geometry();
    test_sos();
    test_order();
    test_ctrl();
    test_run_every();
    test_controls();
    return check_failed;
}
