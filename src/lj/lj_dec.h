/* lj_dec.h — the decomposition algorithm of the Lennard-Jones model (Hailat et al. 2013): one
 * trial move at a time, the energy of the moved particle at its old and its trial position
 * summed in parallel in the canonical order of lj_kernel.h, over every particle or over the
 * 27 (9) cells around each position. Its system, its backend table (the CPU one in
 * lj_dec_cpu.c, the CUDA one in cuda/lj_dec.cu) and the algorithm (lj_dec.c). */
#ifndef CARLO_LJ_DEC_H
#define CARLO_LJ_DEC_H

#include <stdint.h>
#include <stdlib.h>

#include "core/error.h"
#include "lj/lj.h"

/* Where a move sums: over every particle, or over the 27 (9) cells around the old and the
 * trial position (cells at least rc wide, at least 4 per axis when carlo chooses). */
typedef enum lj_sum { LJ_SUM_ALL = 0, LJ_SUM_CELLS = 1 } lj_sum;
/* GPU kernel variants (a launch detail: benchmarks compare them; the chain is the same with
 * every one). */
typedef enum lj_kernel_variant {
    LJ_KERNEL_PERSISTENT = 0, /* one launch runs many moves (one block, or a cooperative grid) */
    LJ_KERNEL_LAUNCH = 1,     /* one launch per move, the last block decides (the paper) */
    LJ_KERNEL_GRAPH = 2,      /* per-move launches replayed from a CUDA graph */
} lj_kernel_variant;

/* Cell lists of the "cells" sum, in their canonical exchange form: the members of cell 0 in
 * list order, then of cell 1, ... (order[N]) and count[ncell]. The list order is part of the
 * state: moves remove a particle by moving the last member into its slot and append arrivals
 * at the end, identically on both backends. */
typedef struct lj_cell_lists {
    int32_t *order, *count;
} lj_cell_lists;

struct lj_dec_backend;

typedef struct lj_dec_system {
    LJ_SYSTEM_HEADER;
    lj_sum sum;
    int ncell;                 /* cells of the grid s->g (sum = cells), else 0 */
    int cell_cap;              /* room per cell list now (grows when a list fills) */
    lj_kernel_variant kernel;  /* the GPU's (sys:launch) */
    uint64_t moves;            /* trial moves done: the RNG step of the next */
    const struct lj_dec_backend *be;
} lj_dec_system;

#define LJ_DEC(s) ((lj_dec_system *)(s))

/* A backend. All return 0 or -1 with the message set. Positions cross as N x 3 doubles
 * (x, y, z) in [0, L). */
typedef struct lj_dec_backend {
    const char *name;
    int (*create)(lj_dec_system *s);
    void (*destroy)(lj_dec_system *s);
    /* Replace the configuration; cells are the lists in canonical form when sum = cells. */
    int (*upload)(lj_dec_system *s, const double *pos, const lj_cell_lists *cells);
    /* Read it back (cells may be NULL). */
    int (*download)(lj_dec_system *s, double *pos, lj_cell_lists *cells);
    /* n trial moves numbered s->moves, s->moves + 1, ...: updates s->moves, s->U, s->W,
     * s->tried and s->accepted before returning. */
    int (*moves)(lj_dec_system *s, uint64_t n);
    /* n test-particle insertions with RNG step `sample`: the Boltzmann factor of each
     * (exp(-beta dU), tail included) in out[n]. */
    int (*widom)(lj_dec_system *s, uint32_t n, uint64_t sample, double *out);
    int (*sync)(lj_dec_system *s);
} lj_dec_backend;

extern const lj_dec_backend lj_dec_cpu_backend;
extern const lj_dec_backend *lj_dec_gpu_backend; /* set by cuda/register.cu, else NULL */

/* The algorithm (lj_dec.c), for the system file. */
lj_system *lj_dec_create(const lj_params *p);
lj_system *lj_dec_restore(const carlo_frame *f, carlo_device_kind device);
int lj_dec_moves(lj_dec_system *s, uint64_t n);

/* Fresh lists of the configuration pos: every particle appended to its cell in index order. */
int lj_cells_canonical(const lj_dec_system *s, const double *pos, lj_cell_lists *out);

const char *lj_sum_name(lj_sum s);
const char *lj_kernel_name(lj_kernel_variant k);

/* Room for the lists of s (both backends grow theirs through these). */
static inline int lj_cell_lists_alloc(const lj_dec_system *s, lj_cell_lists *c)
{
    c->order = (int32_t *)carlo_malloc(sizeof *c->order * s->N, "cell lists");
    c->count = c->order ? (int32_t *)carlo_calloc((size_t)s->ncell, sizeof *c->count, "cell lists")
                        : NULL;
    if (!c->count) {
        free(c->order);
        c->order = NULL;
        return -1;
    }
    return 0;
}

static inline void lj_cell_lists_free(lj_cell_lists *c)
{
    free(c->order);
    free(c->count);
    c->order = c->count = NULL;
}

#endif
