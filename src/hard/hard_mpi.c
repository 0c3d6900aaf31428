/* hard_mpi.c — a hard-particle system split over the MPI ranks (hard_mpi.h; the slabs, halo
 * exchanges and gathers are mpi/cell_split.c's). */
#include "hard/hard_mpi.h"

#include "core/error.h"

int hard_split_on(hard_system *s, int frozen)
{
    if (s->mv.skew)
        return carlo_seterr("decompose = true needs an orthorhombic box (this one has tilts xy, xz, yz = "
                            "%.9g, %.9g, %.9g)", s->box.xy, s->box.xz, s->box.yz);
    if (s->split)
        return 0;
    s->split = carlo_split_new(&s->grid, frozen);
    if (!s->split)
        return -1;
    /* halo exchanges and sums: never from a worker thread (the GPU backend exchanges on one
     * rank too, with itself) */
    s->collective = s->split->ranks > 1 || s->device == CARLO_GPU;
    return 0;
}

void hard_split_free(hard_system *s)
{
    carlo_split_free(s->split);
    s->split = NULL;
    s->collective = 0;
}
