/* progress.c — the progress line: on a terminal at most four updates a second, rewritten in
 * place and cleared when the run ends; elsewhere a plain line every interval (see progress.h). */
#include "core/progress.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int carlo_quiet;
volatile sig_atomic_t carlo_interrupted;

#define DEFAULT_INTERVAL 60.0
static double batch_interval = -1; /* < 0: not yet read from the environment */

double carlo_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void carlo_progress_set_interval(double seconds)
{
    batch_interval = seconds > 0 && isfinite(seconds) ? seconds : 0;
}

double carlo_progress_interval(void)
{
    if (batch_interval >= 0)
        return batch_interval;
    batch_interval = DEFAULT_INTERVAL;
    const char *env = getenv("CARLO_PROGRESS_INTERVAL");
    if (env && *env) {
        char *end;
        double v = strtod(env, &end);
        if (*end == 0 && v >= 0 && isfinite(v))
            batch_interval = v;
        else if (!carlo_quiet)
            fprintf(stderr, "carlo: CARLO_PROGRESS_INTERVAL=%s is not a number of seconds >= 0 "
                            "(using %g)\n", env, DEFAULT_INTERVAL);
    }
    return batch_interval;
}

void carlo_progress_start(carlo_progress *p, const char *label, const char *unit,
                          double total, int quiet)
{
    p->label = label;
    p->unit = unit;
    p->total = total;
    p->start = carlo_now();
    p->last_print = p->start;
    p->done = 0;
    p->tty = isatty(2);
    p->active = !quiet && !carlo_quiet && (p->tty || carlo_progress_interval() > 0);
    p->printed = 0;
}

static void format_duration(double s, char *buf, size_t n)
{
    if (!(s >= 0) || s > 1e8) {
        snprintf(buf, n, "?");
        return;
    }
    long t = (long)(s + 0.5);
    snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
}

/* One plain line for a log: no carriage return, no escape sequence. */
static void batch_line(const carlo_progress *p, double now, int final)
{
    double elapsed = now - p->start, rate = elapsed > 0 ? p->done / elapsed : 0;
    char el[32], eta[32], pct[32] = "";
    format_duration(elapsed, el, sizeof el);
    format_duration(rate > 0 ? (p->total - p->done) / rate : -1, eta, sizeof eta);
    if (p->total > 0)
        snprintf(pct, sizeof pct, " (%.0f %%)", 100 * p->done / p->total);
    if (final)
        fprintf(stderr, "%s: %.6g/%.6g %s%s, %.4g %s/s, %s %s\n", p->label, p->done, p->total,
                p->unit, pct, rate, p->unit, p->done >= p->total ? "done in" : "stopped after", el);
    else
        fprintf(stderr, "%s: %.6g/%.6g %s%s, %.4g %s/s, elapsed %s, ETA %s\n", p->label, p->done,
                p->total, p->unit, pct, rate, p->unit, el, eta);
    fflush(stderr);
}

void carlo_progress_update(carlo_progress *p, double done)
{
    if (!p->active)
        return;
    p->done = done;
    double now = carlo_now();
    if (!p->tty) {
        double interval = carlo_progress_interval();
        if (interval > 0 && now - p->last_print >= interval) {
            p->last_print = now;
            batch_line(p, now, 0);
            p->printed = 1;
        }
        return;
    }
    if (now - p->start < 2.0 || now - p->last_print < 0.25)
        return;
    p->last_print = now;
    double rate = done / (now - p->start);
    char eta[32];
    format_duration(rate > 0 ? (p->total - done) / rate : -1, eta, sizeof eta);
    fprintf(stderr, "\r%s: %.0f/%.0f %s  %.4g %s/s  ETA %s \033[K", p->label, done, p->total,
            p->unit, rate, p->unit, eta);
    fflush(stderr);
    p->printed = 1;
}

void carlo_progress_end(carlo_progress *p)
{
    if (p->printed) {
        if (p->tty)
            fprintf(stderr, "\r\033[K");
        else
            batch_line(p, carlo_now(), 1);
        fflush(stderr);
    }
    p->printed = 0;
}

int carlo_compress_active(int quiet)
{
    return !quiet && !carlo_quiet && isatty(2);
}

void carlo_compress_line(int active, double phi, double target, double start, uint64_t sweeps, double *last)
{
    if (!active)
        return;
    double now = carlo_now();
    if (now - *last < 0.25 || now - start < 1.0)
        return;
    *last = now;
    fprintf(stderr, "\rcompressing: phi = %.6f -> %.6f, %llu sweeps, %.0f s \033[K", phi, target,
            (unsigned long long)sweeps, now - start);
    fflush(stderr);
}

void carlo_compress_line_end(int active, double start)
{
    if (active && carlo_now() - start >= 1.0) {
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
    }
}
