/* progress.c — the progress line: at most four updates a second, on stderr,
 * only when stderr is a terminal; cleared when the run ends. */
#include "core/progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

int carlo_quiet;
volatile sig_atomic_t carlo_interrupted;

double carlo_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void carlo_progress_start(carlo_progress *p, const char *label, const char *unit,
                          double total, int quiet)
{
    p->label = label;
    p->unit = unit;
    p->total = total;
    p->start = carlo_now();
    p->last_print = p->start;
    p->active = !quiet && !carlo_quiet && isatty(2);
    p->printed = 0;
}

static void format_duration(double s, char *buf, size_t n)
{
    if (s < 0 || s > 1e8) {
        snprintf(buf, n, "?");
        return;
    }
    long t = (long)(s + 0.5);
    snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
}

void carlo_progress_update(carlo_progress *p, double done)
{
    if (!p->active)
        return;
    double now = carlo_now();
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
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
    }
    p->printed = 0;
}
