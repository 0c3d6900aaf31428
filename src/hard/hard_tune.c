/* hard_tune.c — the move counts of a hard-particle system and the tuning of its move sizes
 * (delta, and dlnV in NPT) towards target acceptances, for equilibration only (hard.h). */
#include <math.h>
#include <stdint.h>

#include "core/error.h"
#include "hard/hard.h"

int hard_counts_get(hard_system *s, carlo_counts *out)
{
    HARD_ALIVE(s);
    *out = s->counts; /* tried/accepted there: what a restored checkpoint had counted */
    uint64_t tried, accepted;
    if (s->be->translation_counts(s, &tried, &accepted))
        return hard_fail_dead(s);
    out->tried += tried;
    out->accepted += accepted;
    return 0;
}

/* Whether the acceptance acc of n trials is the target, within the larger of a tenth of the
 * target and three binomial standard errors. */
static int near_target(double acc, uint64_t n, double target)
{
    double tol = fmax(0.1 * target, 3.0 * sqrt(target * (1.0 - target) / (double)n));
    return fabs(acc - target) <= tol;
}

/* A move size times the factor that the acceptance acc asks for, within [lo, hi]; *capped
 * says which bound it hit (the acceptance then stays on the far side of the target). */
static double retune(double size, double acc, double target, double lo, double hi, int *capped)
{
    double f = acc / target;
    f = f < 0.5 ? 0.5 : (f > 1.5 ? 1.5 : f);
    double v = size * f;
    *capped = v > hi ? 1 : (v < lo ? -1 : 0);
    return v > hi ? hi : (v < lo ? lo : v);
}

int hard_tune(hard_system *s, double target, double vol_target, int rounds, uint64_t sweeps,
              hard_tune_result *res)
{
    HARD_ALIVE(s);
    if (!(target > 0 && target < 1) || !(vol_target > 0 && vol_target < 1) || rounds < 1 || sweeps < 1)
        return carlo_seterr("tuning needs targets in (0, 1), rounds >= 1 and sweeps >= 1 (got target "
                            "%.17g, volume target %.17g, %d rounds, %llu sweeps)", target, vol_target,
                            rounds, (unsigned long long)sweeps);
    res->acceptance = res->volume_acceptance = NAN;
    res->reached = 0;
    res->volume_reached = !s->npt;
    res->capped = res->volume_capped = 0;
    for (int r = 0; r < rounds; r++) {
        carlo_counts a, b;
        if (hard_counts_get(s, &a) || carlo_advance(&s->sys, sweeps) || hard_counts_get(s, &b))
            return -1;
        uint64_t tried = b.tried - a.tried, acc = b.accepted - a.accepted;
        if (tried) {
            res->acceptance = (double)acc / (double)tried;
            res->reached = near_target(res->acceptance, tried, target);
            s->mv.delta = (float)retune((double)s->mv.delta, res->acceptance, target, 1e-6,
                                        HARD_DELTA_TUNE_MAX, &res->capped);
        }
        uint64_t vt = b.volume_tried - a.volume_tried, va = b.volume_accepted - a.volume_accepted;
        if (s->npt && vt) {
            res->volume_acceptance = (double)va / (double)vt;
            res->volume_reached = near_target(res->volume_acceptance, vt, vol_target);
            s->dlnV = retune(s->dlnV, res->volume_acceptance, vol_target, 1e-12, 1.0,
                             &res->volume_capped);
        }
    }
    res->reached &= !res->capped;
    res->volume_reached &= !res->volume_capped;
    return 0;
}
