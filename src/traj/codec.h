/* codec.h — how one chunk becomes bytes in a .ctr file and back: a filter that helps
 * deflate (byte planes of floats, deltas of integers, fixed-point positions), then zlib,
 * in independent blocks of rows so that threads can compress a large chunk together. */
#ifndef CARLO_TRAJ_CODEC_H
#define CARLO_TRAJ_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "core/frame.h"

enum {
    TRAJ_CODEC_ZLIB = 0,    /* bytes as they are (u8, i8) */
    TRAJ_CODEC_SHUFFLE = 1, /* floats: per stream, byte planes (all first bytes, then all second
                               bytes...) */
    TRAJ_CODEC_DELTA = 2,   /* integers: per stream, offset from the minimum or delta from the
                               previous element (whichever is smaller), zigzag, byte planes */
    TRAJ_CODEC_QUANT = 3,   /* floats: round(x / precision) as integers, then as DELTA */
    TRAJ_CODEC_NIBBLE = 4,  /* u8 values below 16 (Potts states): two per byte, first in the
                               low half */
    TRAJ_NCODECS = 5
};

#define TRAJ_PAYLOAD_WRAP 1u /* QUANT: decoded positions are wrapped into the stored box */

/* Streams: a chunk of at most this many columns is filtered column by column. */
#define TRAJ_MAX_STREAMS 16
/* Raw bytes per block (a block holds whole rows): blocks are compressed in parallel, and a
 * frame of a few MB must still give several writer threads work (smaller blocks compress
 * a little worse: 256 KiB cost 2-5% in size on dense particle frames, 512 KiB about 1%). */
#define TRAJ_BLOCK_BYTES ((size_t)1 << 19)
/* Deflate expands at most 1032:1; a filter adds at most 8:1 (byte planes of width 1). */
#define TRAJ_INFLATE_RATIO 1032u

typedef struct traj_plan {
    int codec;
    int candidate;      /* planning: a codec that needs the data's statistics */
    uint64_t sample_stride;
    int streams;        /* 1, or cols when cols <= TRAJ_MAX_STREAMS (not for ZLIB) */
    uint32_t flags;     /* TRAJ_PAYLOAD_WRAP */
    double precision;   /* QUANT */
    double box[6];      /* WRAP: Lx Ly Lz xy xz yz */
    uint64_t rows_per_block;
    uint64_t nblocks;
} traj_plan;

int traj_codec_streams(int codec, uint64_t cols);

/* Choose the codec of chunk c of frame f (precision > 0: quantize particles/position when
 * every value is finite and fits the grid; with a box in f and every position inside it,
 * decoded positions are wrapped back into the box; u8 values below 16 are packed two per
 * byte unless neighbours mostly repeat). In three steps so that threads share the pass over
 * the data: begin (returns 1 when statistics of each block are needed), the statistics of
 * each block, finish; traj_plan_chunk does all three. */
typedef struct traj_block_stats {
    double lo[TRAJ_MAX_STREAMS], hi[TRAJ_MAX_STREAMS];
    int finite;
    uint64_t outside;
    uint8_t bits;
    uint64_t same, tried;
} traj_block_stats;

int traj_plan_begin(const carlo_chunk *c, const carlo_frame *f, double precision, traj_plan *p);
void traj_block_stats_get(const carlo_chunk *c, const traj_plan *p, uint64_t r0, uint64_t r1,
                          traj_block_stats *s);
void traj_plan_finish(const carlo_chunk *c, traj_plan *p, const traj_block_stats *s, uint64_t nblocks);
void traj_plan_chunk(const carlo_chunk *c, const carlo_frame *f, double precision, traj_plan *p);

/* Encode rows [r0, r1) of c as one zlib stream in *out (malloc'd, *outlen bytes). */
int traj_encode_block(const carlo_chunk *c, const traj_plan *p, uint64_t r0, uint64_t r1, int level,
                      uint8_t **out, size_t *outlen);

/* Decode one zlib stream (the block of rows [r0, r1)) into dst, the whole chunk's buffer.
 * Returns 0, or -1 with a reason in why. */
int traj_decode_block(carlo_dtype type, uint64_t cols, const traj_plan *p, const uint8_t *z,
                      size_t zlen, uint64_t r0, uint64_t r1, void *dst, char *why, size_t whylen);

/* Bytes a decoded chunk may claim for a payload of `stored` bytes (past it: corrupt). */
uint64_t traj_max_raw(int codec, carlo_dtype type, uint64_t stored);

/* Wrap a position into the box (Lx Ly Lz xy xz yz, centred on the origin); the test
 * used when planning. Returns 1 when r is inside [-1/2, 1/2) in box coordinates. */
int traj_box_inside(const double box[6], const double r[3]);
void traj_box_wrap(const double box[6], double r[3]);

#endif
