/* progress.h — what long runs share: a progress line on a terminal (rate, ETA),
 * the quiet switch, and the Ctrl-C flag they poll at sweep boundaries. */
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
    int active;         /* printing at all: a terminal, not quiet, run long enough */
    int printed;
} carlo_progress;

double carlo_now(void); /* monotonic seconds */

/* quiet: the call's own quiet = true. Nothing is printed before the run is 2 s old. */
void carlo_progress_start(carlo_progress *p, const char *label, const char *unit,
                          double total, int quiet);
void carlo_progress_update(carlo_progress *p, double done);
void carlo_progress_end(carlo_progress *p);

#ifdef __cplusplus
}
#endif

#endif
