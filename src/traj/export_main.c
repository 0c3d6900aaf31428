/* export_main.c — the `carlo export` command: its options, Ctrl-C (a frame boundary, then the
 * output finished with the frames exported so far) and traj_export (export.c). */
#include "traj/export.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/progress.h"

static void export_usage(FILE *f)
{
    fprintf(f, "usage: carlo export [options] IN.ctr OUT.gsd|OUT.xyz|OUT.xyz.gz|OUT.png\n"
               "  --frames A:B     frames A to B (from 1; A: or :B leave an end open; one number: one frame)\n"
               "  --skip-damaged   export every intact frame, leaving out (and naming) the damaged ones\n"
               "  --chunk NAME     PNG: the lattice chunk to draw (default lattice/spins)\n"
               "  --scale N        PNG: pixels per site (default 1)\n"
               "  --range LO:HI    PNG: the values at the ends of the colour ramp (default: each frame's)\n"
               "  --quiet          no notices\n"
               "Several frames to PNG write OUT-000001.png, OUT-000002.png, ... (numbered by frame).\n"
               "Ctrl-C stops at a frame boundary and finishes OUT with the frames exported so far.\n");
}

static void on_sigint(int sig)
{
    signal(sig, SIG_DFL); /* a second Ctrl-C kills at once */
    carlo_interrupted = 1;
}

static int parse_u64(const char *s, uint64_t *v)
{
    if (!*s)
        return 0;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || *end || x == 0 || s[0] == '-')
        return -1;
    *v = x;
    return 0;
}

int traj_export_main(int argc, char **argv)
{
    traj_export_opts o;
    memset(&o, 0, sizeof o);
    const char *files[2];
    int nfiles = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            export_usage(stdout);
            return 0;
        } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
            o.quiet = 1;
        } else if (strcmp(a, "--skip-damaged") == 0) {
            o.skip_damaged = 1;
        } else if (strcmp(a, "--frames") == 0 && v) {
            const char *colon = strchr(v, ':');
            char lo[32] = "", hi[32] = "";
            if (colon) {
                snprintf(lo, sizeof lo, "%.*s", (int)(colon - v < 31 ? colon - v : 31), v);
                snprintf(hi, sizeof hi, "%s", colon + 1);
            } else {
                snprintf(lo, sizeof lo, "%s", v);
                snprintf(hi, sizeof hi, "%s", v);
            }
            if (parse_u64(lo, &o.first) || parse_u64(hi, &o.last) ||
                (o.first && o.last && o.first > o.last)) {
                fprintf(stderr, "carlo export: --frames takes A:B with 1 <= A <= B (got %s)\n", v);
                return 1;
            }
            i++;
        } else if (strcmp(a, "--chunk") == 0 && v) {
            o.chunk = v;
            i++;
        } else if (strcmp(a, "--scale") == 0 && v) {
            char *end;
            long s = strtol(v, &end, 10);
            if (*end || s < 1 || s > 64) {
                fprintf(stderr, "carlo export: --scale takes 1 to 64 (got %s)\n", v);
                return 1;
            }
            o.scale = (int)s;
            i++;
        } else if (strcmp(a, "--range") == 0 && v) {
            char *end;
            o.lo = strtod(v, &end);
            if (*end != ':' || (o.hi = strtod(end + 1, &end), *end) || !(o.hi > o.lo)) {
                fprintf(stderr, "carlo export: --range takes LO:HI with LO < HI (got %s)\n", v);
                return 1;
            }
            i++;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "carlo export: unknown option %s\n", a);
            export_usage(stderr);
            return 1;
        } else if (nfiles < 2) {
            files[nfiles++] = a;
        } else {
            export_usage(stderr);
            return 1;
        }
    }
    if (nfiles != 2) {
        export_usage(stderr);
        return 1;
    }
    /* Ctrl-C: the export stops at the next frame and finishes its output, as a run does */
    carlo_interrupted = 0;
    void (*old)(int) = signal(SIGINT, on_sigint);
    int rc = traj_export(files[0], files[1], &o);
    signal(SIGINT, old);
    if (rc) {
        fprintf(stderr, "carlo export: %s\n", carlo_errmsg());
        return rc == TRAJ_EXPORT_INTERRUPTED ? 130 : 1;
    }
    return 0;
}
