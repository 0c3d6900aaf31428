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
} traj_export_opts;

/* 0, or -1 with the message set. The format follows OUT's extension. */
int traj_export(const char *in, const char *out, const traj_export_opts *o);

/* The command: argv[0] is "export". Returns the exit status. */
int traj_export_main(int argc, char **argv);

#endif
