/* export.h — `carlo export IN.ctr OUT`: frames of a .ctr file as HOOMD's GSD (OUT.gsd),
 * extended XYZ (OUT.xyz, OUT.xyz.gz) or PNG images of lattices (OUT.png). */
#ifndef CARLO_TRAJ_EXPORT_H
#define CARLO_TRAJ_EXPORT_H

#include <stdint.h>

typedef struct traj_export_opts {
    uint64_t first, last;  /* frames, from 1, inclusive; 0: the first / the last */
    const char *chunk;     /* PNG: the lattice chunk to draw (NULL: lattice/spins or the first) */
    int scale;             /* PNG: pixels per site (0: 1) */
    double lo, hi;         /* PNG ramps: the value range (lo == hi: each frame's min and max) */
    int quiet;
    int skip_damaged;      /* export every intact frame, naming the damaged ones on stderr
                              (0: a damaged frame is an error) */
} traj_export_opts;

#define TRAJ_EXPORT_INTERRUPTED 1

/* 0, or -1 with the message set (the partial output removed). The format follows OUT's
 * extension. Once carlo_interrupted is set, the export stops at the next frame, finishes OUT
 * with the frames exported so far (none: OUT is removed) and returns TRAJ_EXPORT_INTERRUPTED
 * with a message saying what OUT holds. */
int traj_export(const char *in, const char *out, const traj_export_opts *o);

/* The command: argv[0] is "export". Ctrl-C sets carlo_interrupted (exit status 130).
 * Returns the exit status. */
int traj_export_main(int argc, char **argv);

#endif
