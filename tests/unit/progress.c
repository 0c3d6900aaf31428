/* unit/core/progress — the progress line when stderr is not a terminal (a batch job): a plain
 * line every CARLO_PROGRESS_INTERVAL seconds and one at the end, no carriage return, no escape;
 * nothing for a run shorter than the interval, with interval 0, or when quiet. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/progress.h"

/* Runs a fake job of `seconds` with stderr sent to a file; returns what it printed. */
static char *job(double seconds, int quiet, char *buf, size_t cap)
{
    char path[] = "/tmp/carlo-progress-XXXXXX";
    int fd = mkstemp(path);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    carlo_progress p;
    carlo_progress_start(&p, "job", "sweeps", 1000, quiet);
    double t0 = carlo_now();
    int done = 0;
    while (carlo_now() - t0 < seconds) {
        usleep(2000);
        done = (int)(1000 * (carlo_now() - t0) / seconds);
        carlo_progress_update(&p, done > 1000 ? 1000 : done);
    }
    carlo_progress_update(&p, 1000);
    carlo_progress_end(&p);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fd, buf, cap - 1, 0);
    buf[n > 0 ? n : 0] = 0;
    close(fd);
    unlink(path);
    return buf;
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *q = s; (q = strstr(q, what)); q += strlen(what))
        n++;
    return n;
}

int main(void)
{
    char out[8192];
    setenv("CARLO_PROGRESS_INTERVAL", "0.1", 1);
    CHECK("unit/core/progress/interval-from-environment", carlo_progress_interval() == 0.1,
          "interval %g", carlo_progress_interval());

    job(0.55, 0, out, sizeof out);
    int lines = count(out, "\n");
    /* 5 lines at 0.1, 0.2, ... (a loaded machine may print one fewer) and the final one */
    CHECK("unit/core/progress/batch-lines", lines >= 4 && lines <= 7 &&
                                                count(out, "job: ") == lines,
          "%d lines in 0.55 s at 0.1 s:\n%s", lines, out);
    CHECK("unit/core/progress/batch-no-carriage-return", !strchr(out, '\r') && !strchr(out, '\033'),
          "a carriage return or escape in %s", out);
    CHECK("unit/core/progress/batch-line-content",
          strstr(out, "sweeps (") && strstr(out, "sweeps/s, elapsed 0:00:00, ETA") &&
              strstr(out, "job: 1000/1000 sweeps (100 %)") && strstr(out, "done in 0:00:0"),
          "lines:\n%s", out);

    job(0.3, 1, out, sizeof out);
    CHECK("unit/core/progress/batch-quiet", out[0] == 0, "quiet printed %s", out);

    carlo_progress_set_interval(0);
    job(0.3, 0, out, sizeof out);
    CHECK("unit/core/progress/batch-interval-zero-never", out[0] == 0, "printed %s", out);

    carlo_progress_set_interval(60);
    job(0.2, 0, out, sizeof out);
    CHECK("unit/core/progress/batch-short-run-silent", out[0] == 0, "printed %s", out);
    return check_failed;
}
