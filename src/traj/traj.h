/* traj.h — the carlo container (.ctr) for trajectories and checkpoints: a file of frames,
 * each a set of named, typed chunks compressed with zlib after a filter (man/carlo-traj.5).
 *
 * Frames are written in order and never rewritten: a killed run keeps every frame it
 * finished. An index written at close reaches frame k directly; without one the reader
 * rebuilds it by scanning. Writes are queued to a host thread that compresses (with
 * helper threads) while the caller goes on; traj_close or process exit flushes them.
 * Frame numbers are 0-based here (the Lua binding counts from 1). */
#ifndef CARLO_TRAJ_H
#define CARLO_TRAJ_H

#include <stddef.h>
#include <stdint.h>

#include "core/frame.h"

typedef struct traj_file traj_file;

typedef struct traj_options {
    double precision;  /* > 0: particles/position stored on a grid of this spacing; 0: exact */
    int threads;       /* compression threads: 0 compresses in the caller (synchronous),
                          < 0 picks the default (online CPUs, at most 8) */
    int level;         /* zlib level 1..9; 0 picks the default (1) */
    int quiet;         /* no notices on stderr (recovered index, dropped frames) */
    int64_t restart;   /* 'a' mode, >= 0: drop frames with step > restart at open */
} traj_options;

/* Defaults: exact, default threads and level, restart -1 (none). */
void traj_options_init(traj_options *o);

/* mode 'r' reads; 'w' creates or truncates; 'a' opens (or creates) and continues after the
 * last complete frame. NULL with the message set on failure; a file that this call created
 * or emptied is removed again then (no 0-byte file is left behind). A file whose header is
 * damaged is read by scanning for its frames (each carries its own CRCs), with a notice. */
traj_file *traj_open(const char *path, char mode, const traj_options *o);

/* Flush, write the index, fsync and close. Frees t in every case; -1 with the message set
 * when any write of this file failed (the frames before the failure are intact). */
int traj_close(traj_file *t);

/* Queue a copy of the frame (the caller may reuse its buffers on return). Blocks while
 * two frames are already waiting. A failure of an earlier queued write is reported here. */
int traj_write(traj_file *t, const carlo_frame *f);
/* The same, moving f's owned buffers into the queue instead of copying them (f keeps its
 * borrowed chunks; carlo_frame_free(f) is still needed). */
int traj_write_take(traj_file *t, carlo_frame *f);

/* Wait until every queued frame is in the file. */
int traj_flush(traj_file *t);

/* Append mode: drop the frames with step > step (inclusive: >= step) before the next write,
 * so that a restarted run writes no step twice. Returns the number of frames dropped or -1. */
int64_t traj_drop_after(traj_file *t, uint64_t step, int inclusive);

/* In 'a' mode before the first write: 1 while no decision about old frames was made. */
int traj_append_pending(const traj_file *t);

uint64_t traj_count(traj_file *t);          /* complete frames (flushes first) */
int traj_recovered(const traj_file *t);     /* 1 when the index was rebuilt by scanning */

/* 1 when a trajectory of this process has the file at path (links followed) open for
 * writing: saving a checkpoint over it would discard its frames. */
int traj_open_for_writing(const char *path);
const char *traj_path(const traj_file *t);
char traj_mode(const traj_file *t);
double traj_precision(const traj_file *t);

typedef struct traj_chunk_info {
    char name[CARLO_CHUNK_NAME];
    carlo_dtype type;
    uint64_t rows, cols;
    double precision;  /* > 0: stored on this grid (|error| <= precision / 2 plus one rounding
                          to the element type); 0: exact */
    int codec;
} traj_chunk_info;

typedef struct traj_frame_info {
    uint64_t index;
    uint64_t step;     /* configuration/step, else the step of the frame before */
    int has_step;
    int nchunks;
    traj_chunk_info chunk[CARLO_FRAME_MAX];
} traj_frame_info;

int traj_frame_info_get(traj_file *t, uint64_t k, traj_frame_info *out);

/* Read chunk `name` of frame k into buf (bufsize bytes). type must match; rows/cols must
 * match unless 0. Returns 0; 1 when the frame has no such chunk (message set); -1 on an
 * error (corrupt data: the message names the file, frame and chunk). */
int traj_read_chunk(traj_file *t, uint64_t k, const char *name, carlo_dtype type, uint64_t rows,
                    uint64_t cols, void *buf, size_t bufsize);

/* Every chunk of frame k, owned by out (carlo_frame_free releases them). */
int traj_read_frame(traj_file *t, uint64_t k, carlo_frame *out);

/* Compression statistics of what this handle wrote: raw bytes in, file bytes out. */
void traj_written(const traj_file *t, uint64_t *raw, uint64_t *stored);

#endif
