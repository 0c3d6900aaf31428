/* traj_read.c — reading frames: the head and chunk table are checked against their CRCs
 * and the file, every payload against its CRC and every size before allocation, then the
 * blocks are decoded. Messages name the file, the frame (from 1) and the chunk. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "core/error.h"
#include "traj/codec.h"
#include "traj/format.h"
#include "traj/traj_private.h"

/* ---------- reading ---------- */

typedef struct chunk_loc {
    traj_chunk_info info;
    uint64_t offset, stored;
    uint32_t crc;
} chunk_loc;

typedef struct frame_loc {
    uint64_t k, step;
    int has_step, n;
    chunk_loc c[CARLO_FRAME_MAX];
} frame_loc;

static void wait_idle(traj_file *t)
{
    if (!t->async)
        return;
    pthread_mutex_lock(&t->mu);
    while (t->qlen > 0 || t->busy)
        pthread_cond_wait(&t->cv, &t->mu);
    pthread_mutex_unlock(&t->mu);
}

#define FRAME_ERR(...) carlo_seterr(__VA_ARGS__)

static int check_entry(traj_file *t, uint64_t k, int i, const uint8_t *e, uint64_t len, int nch,
                       chunk_loc *c)
{
    unsigned long long fk = (unsigned long long)k + 1;
    memset(c, 0, sizeof *c);
    if (!traj_name_ok((const char *)e, 64))
        return FRAME_ERR("trajectory %s: frame %llu: chunk %d has a corrupt name", t->path, fk, i + 1);
    memcpy(c->info.name, e, 64);
    c->info.name[63] = 0;
    unsigned type = e[64], codec = e[65];
    c->crc = ctr_get32(e + 68);
    c->info.rows = ctr_get64(e + 72);
    c->info.cols = ctr_get64(e + 80);
    c->offset = ctr_get64(e + 88);
    c->stored = ctr_get64(e + 96);
    c->info.precision = ctr_getf64(e + 104);
    const char *why = NULL;
    int is_float = type == CARLO_F32 || type == CARLO_F64;
    uint64_t body = CTR_HEAD_BYTES + (uint64_t)nch * CTR_ENTRY_BYTES;
    uint64_t n, bytes;
    if (type >= CARLO_NTYPES)
        why = "unknown element type";
    else if (codec >= TRAJ_NCODECS || (codec == TRAJ_CODEC_DELTA && is_float) ||
             (codec == TRAJ_CODEC_QUANT && !is_float) || (codec == TRAJ_CODEC_NIBBLE && type != CARLO_U8))
        why = "unknown codec for its type";
    else if (c->info.rows > ((uint64_t)1 << 48) || c->info.cols > ((uint64_t)1 << 48) ||
             __builtin_mul_overflow(c->info.rows, c->info.cols, &n) ||
             __builtin_mul_overflow(n, (uint64_t)carlo_dtype_size((carlo_dtype)type), &bytes) ||
             bytes > SIZE_MAX / 2)
        why = "impossible shape";
    else if (c->offset < body || c->stored < CTR_PAYLOAD_HEAD || c->offset > len - CTR_TAIL_BYTES ||
             c->stored > len - CTR_TAIL_BYTES - c->offset)
        why = "its data lies outside the frame";
    else if (bytes > traj_max_raw((int)codec, (carlo_dtype)type, c->stored))
        why = "its size is more than its stored bytes can hold";
    else if (!(c->info.precision >= 0 && c->info.precision < 1e300) ||
             (codec == TRAJ_CODEC_QUANT) != (c->info.precision > 0))
        why = "bad precision";
    if (why)
        return FRAME_ERR("trajectory %s: frame %llu, chunk '%s': %s (the file is corrupt)", t->path,
                         fk, c->info.name, why);
    c->info.type = (carlo_dtype)type;
    c->info.codec = (int)codec;
    return 0;
}

/* The chunks' payloads may not share bytes: 32 entries pointing at one payload would let a
 * small file decode to 32 times what its bytes can hold. With disjoint payloads, the frame
 * decodes to at most what its record's bytes can hold. */
static int check_disjoint(traj_file *t, const frame_loc *fl, uint64_t len)
{
    unsigned long long fk = (unsigned long long)fl->k + 1;
    int order[CARLO_FRAME_MAX];
    for (int i = 0; i < fl->n; i++) { /* by offset (insertion: at most 32) */
        int j = i;
        while (j > 0 && fl->c[order[j - 1]].offset > fl->c[i].offset) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    uint64_t total = 0;
    for (int i = 0; i < fl->n; i++) {
        const chunk_loc *c = &fl->c[order[i]];
        if (i > 0) {
            const chunk_loc *p = &fl->c[order[i - 1]];
            if (c->offset - p->offset < p->stored)
                return carlo_seterr("trajectory %s: frame %llu, chunk '%s': its data overlaps that of "
                                    "chunk '%s' (the file is corrupt)", t->path, fk, c->info.name,
                                    p->info.name);
        }
        total += c->info.rows * c->info.cols * carlo_dtype_size(c->info.type);
    }
    if (total > traj_max_raw(TRAJ_CODEC_QUANT, CARLO_F64, len))
        return carlo_seterr("trajectory %s: frame %llu: its chunks claim %llu bytes, more than its "
                            "%llu stored bytes can hold (the file is corrupt)", t->path, fk,
                            (unsigned long long)total, (unsigned long long)len);
    return 0;
}

static int locate(traj_file *t, uint64_t k, frame_loc *fl)
{
    wait_idle(t);
    unsigned long long fk = (unsigned long long)k + 1;
    if (k >= t->n)
        return carlo_seterr("trajectory %s: there is no frame %llu (the file holds %zu)", t->path, fk,
                            t->n);
    const entry *e = &t->ent[k];
    if (e->flags & ENTRY_DAMAGED)
        return carlo_seterr("trajectory %s: frame %llu is damaged: bytes %llu to %llu could not be "
                            "read as frames (the file is corrupt)", t->path, fk,
                            (unsigned long long)e->offset,
                            (unsigned long long)(e->offset + e->length));
    uint8_t h[CTR_HEAD_BYTES];
    if (traj_pread_all(t->fd, h, sizeof h, e->offset))
        return carlo_seterr("trajectory %s: frame %llu: read failed: %s", t->path, fk, strerror(errno));
    if (ctr_get32(h) != CTR_FRAME_MAGIC || ctr_get32(h + 44) != (uint32_t)crc32(0, h, 44))
        return carlo_seterr("trajectory %s: frame %llu: frame header corrupt (CRC mismatch)", t->path,
                            fk);
    uint32_t nch = ctr_get32(h + 4);
    uint64_t len = ctr_get64(h + 24);
    if (ctr_get64(h + 8) != k || len != e->length || nch > CARLO_FRAME_MAX ||
        len < CTR_HEAD_BYTES + (uint64_t)nch * CTR_ENTRY_BYTES + CTR_TAIL_BYTES)
        return carlo_seterr("trajectory %s: frame %llu: the frame header disagrees with the index "
                            "(the file is corrupt)", t->path, fk);
    uint8_t table[CARLO_FRAME_MAX * CTR_ENTRY_BYTES];
    if (nch && traj_pread_all(t->fd, table, (size_t)nch * CTR_ENTRY_BYTES, e->offset + CTR_HEAD_BYTES))
        return carlo_seterr("trajectory %s: frame %llu: read failed: %s", t->path, fk, strerror(errno));
    if (ctr_get32(h + 36) != (uint32_t)crc32(0, table, nch * CTR_ENTRY_BYTES))
        return carlo_seterr("trajectory %s: frame %llu: chunk table corrupt (CRC mismatch)", t->path,
                            fk);
    fl->k = k;
    fl->n = (int)nch;
    fl->has_step = (ctr_get32(h + 32) & CTR_FRAME_HAS_STEP) != 0;
    fl->step = e->step;
    for (int i = 0; i < (int)nch; i++) {
        if (check_entry(t, k, i, table + (size_t)i * CTR_ENTRY_BYTES, len, (int)nch, &fl->c[i]))
            return -1;
        for (int j = 0; j < i; j++)
            if (strcmp(fl->c[j].info.name, fl->c[i].info.name) == 0)
                return carlo_seterr("trajectory %s: frame %llu: chunk '%s' appears twice (the file "
                                    "is corrupt)", t->path, fk, fl->c[i].info.name);
    }
    return check_disjoint(t, fl, len);
}

static int decode_chunk(traj_file *t, const frame_loc *fl, const chunk_loc *c, void *dst)
{
    unsigned long long fk = (unsigned long long)fl->k + 1;
    const char *name = c->info.name;
    uint8_t *pay = carlo_malloc((size_t)c->stored, "a stored chunk");
    if (!pay)
        return -1;
    const entry *e = &t->ent[fl->k];
    if (traj_pread_all(t->fd, pay, (size_t)c->stored, e->offset + c->offset)) {
        free(pay);
        return carlo_seterr("trajectory %s: frame %llu, chunk '%s': read failed: %s", t->path, fk,
                            name, strerror(errno));
    }
    if ((uint32_t)crc32_z(0, pay, (size_t)c->stored) != c->crc) {
        free(pay);
        return carlo_seterr("trajectory %s: frame %llu, chunk '%s': CRC mismatch (the file is "
                            "corrupt)", t->path, fk, name);
    }
    traj_plan p;
    memset(&p, 0, sizeof p);
    p.codec = c->info.codec;
    p.streams = traj_codec_streams(p.codec, c->info.cols);
    uint64_t nblocks = ctr_get32(pay);
    p.flags = ctr_get32(pay + 4);
    p.precision = ctr_getf64(pay + 8);
    uint64_t head = CTR_PAYLOAD_HEAD, rows = c->info.rows, elems = rows * c->info.cols;
    const char *why = NULL;
    if ((p.flags & ~TRAJ_PAYLOAD_WRAP) || ((p.flags & TRAJ_PAYLOAD_WRAP) && p.codec != TRAJ_CODEC_QUANT))
        why = "unknown payload flags";
    else if (memcmp(&p.precision, &c->info.precision, sizeof p.precision))
        why = "payload and table disagree on the precision";
    else if (elems ? (nblocks == 0 || nblocks > rows) : nblocks != 0)
        why = "bad block count";
    if (!why && (p.flags & TRAJ_PAYLOAD_WRAP)) {
        if (c->stored < head + 48 || (c->info.cols != 2 && c->info.cols != 3))
            why = "bad box";
        else {
            for (int d = 0; d < 6; d++)
                p.box[d] = ctr_getf64(pay + head + 8 * d);
            for (int d = 0; d < 6; d++)
                if (!(p.box[d] > -1e300 && p.box[d] < 1e300))
                    why = "bad box";
            if (!(p.box[0] > 0 && p.box[1] > 0))
                why = "bad box";
            head += 48;
        }
    }
    if (!why && nblocks * CTR_BLOCK_ENTRY > c->stored - head)
        why = "block table outside the chunk";
    uint64_t zsum = 0, rsum = 0;
    if (!why) {
        const uint8_t *bt = pay + head;
        for (uint64_t b = 0; b < nblocks && !why; b++) {
            uint64_t br = ctr_get64(bt + b * CTR_BLOCK_ENTRY), bz = ctr_get64(bt + b * CTR_BLOCK_ENTRY + 8);
            if (br == 0 || br > rows - rsum || bz > c->stored - head - nblocks * CTR_BLOCK_ENTRY - zsum)
                why = "bad block table";
            rsum += br;
            zsum += bz;
        }
        head += nblocks * CTR_BLOCK_ENTRY;
        if (!why && (rsum != rows || zsum != c->stored - head))
            why = "block table does not add up";
    }
    if (why) {
        free(pay);
        return carlo_seterr("trajectory %s: frame %llu, chunk '%s': %s (the file is corrupt)", t->path,
                            fk, name, why);
    }
    uint64_t r0 = 0, zoff = head;
    const uint8_t *bt = pay + CTR_PAYLOAD_HEAD + ((p.flags & TRAJ_PAYLOAD_WRAP) ? 48 : 0);
    for (uint64_t b = 0; b < nblocks; b++) {
        uint64_t br = ctr_get64(bt + b * CTR_BLOCK_ENTRY), bz = ctr_get64(bt + b * CTR_BLOCK_ENTRY + 8);
        char reason[200];
        if (traj_decode_block(c->info.type, c->info.cols, &p, pay + zoff, (size_t)bz, r0, r0 + br, dst,
                              reason, sizeof reason)) {
            free(pay);
            return carlo_seterr("trajectory %s: frame %llu, chunk '%s': block %llu: %s (the file is "
                                "corrupt)", t->path, fk, name, (unsigned long long)b + 1, reason);
        }
        r0 += br;
        zoff += bz;
    }
    free(pay);
    return 0;
}

static const chunk_loc *find_loc(const frame_loc *fl, const char *name)
{
    for (int i = 0; i < fl->n; i++)
        if (strcmp(fl->c[i].info.name, name) == 0)
            return &fl->c[i];
    return NULL;
}

static size_t chunk_bytes(const traj_chunk_info *c)
{
    return (size_t)(c->rows * c->cols) * carlo_dtype_size(c->type);
}

int traj_frame_info_get(traj_file *t, uint64_t k, traj_frame_info *out)
{
    frame_loc fl;
    if (locate(t, k, &fl))
        return -1;
    memset(out, 0, sizeof *out);
    out->index = k;
    out->step = fl.step;
    out->has_step = fl.has_step;
    out->nchunks = fl.n;
    for (int i = 0; i < fl.n; i++)
        out->chunk[i] = fl.c[i].info;
    return 0;
}

int traj_read_chunk(traj_file *t, uint64_t k, const char *name, carlo_dtype type, uint64_t rows,
                    uint64_t cols, void *buf, size_t bufsize)
{
    frame_loc fl;
    if (locate(t, k, &fl))
        return -1;
    const chunk_loc *c = find_loc(&fl, name);
    if (!c) {
        carlo_seterr("trajectory %s: frame %llu has no chunk '%s'", t->path, (unsigned long long)k + 1,
                     name);
        return 1;
    }
    if (c->info.type != type || (rows && c->info.rows != rows) || (cols && c->info.cols != cols))
        return carlo_seterr("trajectory %s: frame %llu, chunk '%s' is %s %llu x %llu, not %s %llu x "
                            "%llu", t->path, (unsigned long long)k + 1, name,
                            carlo_dtype_name(c->info.type), (unsigned long long)c->info.rows,
                            (unsigned long long)c->info.cols, carlo_dtype_name(type),
                            (unsigned long long)rows, (unsigned long long)cols);
    size_t need = chunk_bytes(&c->info);
    if (bufsize < need)
        return carlo_seterr("trajectory %s: frame %llu, chunk '%s' needs %zu bytes, the buffer has %zu",
                            t->path, (unsigned long long)k + 1, name, need, bufsize);
    return decode_chunk(t, &fl, c, buf);
}

int traj_read_frame(traj_file *t, uint64_t k, carlo_frame *out)
{
    carlo_frame_init(out);
    frame_loc fl;
    if (locate(t, k, &fl))
        return -1;
    for (int i = 0; i < fl.n; i++) {
        const traj_chunk_info *ci = &fl.c[i].info;
        void *data = carlo_malloc(chunk_bytes(ci), "a trajectory chunk");
        if (!data || decode_chunk(t, &fl, &fl.c[i], data) ||
            carlo_frame_add_owned(out, ci->name, ci->type, ci->rows, ci->cols, data)) {
            if (data && out->n <= i)
                free(data);
            carlo_frame_free(out);
            return -1;
        }
    }
    return 0;
}

uint64_t traj_count(traj_file *t)
{
    wait_idle(t);
    return t->n;
}
