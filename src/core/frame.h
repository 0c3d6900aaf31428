/* frame.h — a model's state as named, typed chunks (HOOMD GSD names where they exist:
 * configuration/step, particles/position, ...; lattice/... for fields). Trajectory
 * frames and checkpoints are both written from a carlo_frame. */
#ifndef CARLO_FRAME_H
#define CARLO_FRAME_H

#include <stdint.h>

#include "core/array.h"

#define CARLO_FRAME_MAX 32
#define CARLO_CHUNK_NAME 64

typedef struct carlo_chunk {
    char name[CARLO_CHUNK_NAME];
    carlo_dtype type;
    uint64_t rows, cols;  /* a scalar is 1 x 1; a string is u8 with rows = length, cols = 1 */
    const void *data;     /* row-major; borrowed, or == owned */
    void *owned;          /* freed by carlo_frame_free */
} carlo_chunk;

typedef struct carlo_frame {
    carlo_chunk chunk[CARLO_FRAME_MAX];
    int n;
} carlo_frame;

void carlo_frame_init(carlo_frame *f);
/* Borrow data (it must outlive the frame's use). Returns 0, or -1 with the message set. */
int carlo_frame_add(carlo_frame *f, const char *name, carlo_dtype type, uint64_t rows,
                    uint64_t cols, const void *data);
/* Take a copy of data. */
int carlo_frame_add_copy(carlo_frame *f, const char *name, carlo_dtype type, uint64_t rows,
                         uint64_t cols, const void *data);
/* Hand over a malloc'd buffer: the frame frees it. */
int carlo_frame_add_owned(carlo_frame *f, const char *name, carlo_dtype type, uint64_t rows,
                          uint64_t cols, void *data);
int carlo_frame_add_u64(carlo_frame *f, const char *name, uint64_t v);
int carlo_frame_add_f64(carlo_frame *f, const char *name, double v);
int carlo_frame_add_string(carlo_frame *f, const char *name, const char *s);
const carlo_chunk *carlo_frame_find(const carlo_frame *f, const char *name);
void carlo_frame_free(carlo_frame *f);

/* The data of chunk `name` when it has this type and shape (rows or cols 0: any), else NULL
 * with the message naming what is wrong. */
const void *carlo_frame_expect(const carlo_frame *f, const char *name, carlo_dtype type,
                               uint64_t rows, uint64_t cols);

/* A split system's mark (mpi/cell_split.h) in chunk `name`: 0 absent (not split), 1 split, 2
 * split with frozen edges; -1 with the message for anything else. */
int carlo_frame_split(const carlo_frame *f, const char *name);

#endif
