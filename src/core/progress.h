/* progress.h — what long runs share: a progress line (rate, ETA) on a terminal, a plain line
 * every minute in batch jobs, the quiet switch, and the Ctrl-C flag polled at sweep boundaries. */
#ifndef CARLO_PROGRESS_H
#define CARLO_PROGRESS_H

#include <signal.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

extern int carlo_quiet;                           /* --quiet, carlo.quiet = true */
extern volatile sig_atomic_t carlo_interrupted;   /* set by SIGINT, cleared by the runtime */

typedef struct carlo_progress {
    const char *label;  /* "potts", "anneal", ... */
    const char *unit;   /* "sweeps", "events" */
    double total;
    double start;       /* seconds, monotonic */
    double last_print;
    double done;        /* the last count reported */
    int active;         /* printing at all: not quiet, and a terminal or a batch interval */
    int tty;            /* stderr is a terminal: one line rewritten in place */
    int printed;
} carlo_progress;

double carlo_now(void); /* monotonic seconds */

/* When stderr is not a terminal (a batch job, a redirect), a run prints one plain line
 * ("potts: 1200/5000 sweeps (24 %), 20.1 sweeps/s, elapsed 0:01:00, ETA 0:03:09") every
 * interval seconds and one at its end if it printed any, never a carriage return. The
 * interval is 60 s, or CARLO_PROGRESS_INTERVAL (seconds, read at the first run) unless
 * set here; 0 = never. carlo_progress_interval() returns the interval in force. */
void carlo_progress_set_interval(double seconds);
double carlo_progress_interval(void);

/* quiet: the call's own quiet = true. On a terminal nothing is printed before the run is
 * 2 s old; in batch, nothing before the first interval has passed. */
void carlo_progress_start(carlo_progress *p, const char *label, const char *unit,
                          double total, int quiet);
void carlo_progress_update(carlo_progress *p, double done);
void carlo_progress_end(carlo_progress *p);

/* A compression's line on a terminal ("compressing: phi = 0.512345 -> 0.600000, 900 sweeps,
 * 3 s"), from its second second on, at most four a second; _end clears it. active: not quiet
 * and stderr a terminal (carlo_compress_active); start and *last: carlo_now() at its start. */
int carlo_compress_active(int quiet);
void carlo_compress_line(int active, double phi, double target, double start, uint64_t sweeps, double *last);
void carlo_compress_line_end(int active, double start);

#ifdef __cplusplus
}
#endif

#endif
