/* format.h — the byte layout of a .ctr file (little-endian throughout; man/carlo-traj.5
 * is the reference), shared by the container code and its tests. Private to src/traj. */
#ifndef CARLO_TRAJ_FORMAT_H
#define CARLO_TRAJ_FORMAT_H

#include <stdint.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the .ctr code assumes a little-endian host"
#endif

/* file header: magic, u32 version, u32 header bytes, char writer[32], u32 flags,
 * 8 reserved bytes, u32 CRC32 of the bytes before it */
#define CTR_MAGIC "\x89" "CTR\r\n\x1a\n"
#define CTR_VERSION 1u
#define CTR_HEADER_BYTES 64

/* frame record: head, chunk table, payloads, tail */
#define CTR_FRAME_MAGIC 0x4d524643u /* "CFRM" */
#define CTR_TAIL_MAGIC 0x444e4543u  /* "CEND" */
#define CTR_HEAD_BYTES 48
#define CTR_ENTRY_BYTES 128
#define CTR_TAIL_BYTES 24
#define CTR_FRAME_HAS_STEP 1u

/* index record and footer, written at close */
#define CTR_INDEX_MAGIC 0x58444943u  /* "CIDX" */
#define CTR_FOOTER_MAGIC 0x58525443u /* "CTRX" */
#define CTR_INDEX_HEAD 16
#define CTR_INDEX_ENTRY 32
#define CTR_FOOTER_BYTES 32

/* payload head: u32 nblocks, u32 flags, f64 precision, [f64 box[6]], then per block
 * u64 rows and u64 zlib bytes, then the zlib streams */
#define CTR_PAYLOAD_HEAD 16
#define CTR_BLOCK_ENTRY 16

static inline void ctr_put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static inline void ctr_put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void ctr_put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static inline void ctr_putf64(uint8_t *p, double v) { memcpy(p, &v, 8); }
static inline uint16_t ctr_get16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t ctr_get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t ctr_get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline double ctr_getf64(const uint8_t *p) { double v; memcpy(&v, p, 8); return v; }

#endif
