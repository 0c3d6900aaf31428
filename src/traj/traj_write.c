/* traj_write.c — the writer: frames are checked, copied and queued; the writer thread plans
 * each chunk, compresses its blocks on the pool, and appends the frame record (head, chunk
 * table, payloads, tail; every part under a CRC32) with one gather write. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#include "core/error.h"
#include "core/progress.h"
#include "traj/codec.h"
#include "traj/format.h"
#include "traj/pool.h"
#include "traj/traj_private.h"

/* ---------- writing ---------- */

typedef struct enc_task {
    int chunk;
    uint64_t block, r0, r1;
    uint8_t *z;
    size_t zlen;
    uint32_t crc;
    int failed;
    char why[200];
} enc_task;

typedef struct enc_ctx {
    const carlo_frame *f;
    traj_plan *plan;
    enc_task *task;
    traj_block_stats *stats;
    int level;
} enc_ctx;

static void stats_task(void *arg, size_t i)
{
    enc_ctx *c = arg;
    enc_task *k = &c->task[i];
    traj_block_stats_get(&c->f->chunk[k->chunk], &c->plan[k->chunk], k->r0, k->r1, &c->stats[i]);
}

static void encode_task(void *arg, size_t i)
{
    enc_ctx *c = arg;
    enc_task *k = &c->task[i];
    const carlo_chunk *ch = &c->f->chunk[k->chunk];
    if (traj_encode_block(ch, &c->plan[k->chunk], k->r0, k->r1, c->level, &k->z, &k->zlen)) {
        k->failed = 1;
        snprintf(k->why, sizeof k->why, "%s", carlo_errmsg());
        return;
    }
    k->crc = (uint32_t)crc32(0, k->z, (uInt)k->zlen);
}

static size_t payload_head_bytes(const traj_plan *p)
{
    return CTR_PAYLOAD_HEAD + ((p->flags & TRAJ_PAYLOAD_WRAP) ? 48 : 0) +
           (size_t)p->nblocks * CTR_BLOCK_ENTRY;
}

static void set_failed(traj_file *t, const char *fmt, const char *detail, uint64_t frame)
{
    pthread_mutex_lock(&t->mu);
    if (!t->failed) {
        t->failed = 1;
        snprintf(t->err, sizeof t->err, fmt, t->path, (unsigned long long)frame + 1, detail,
                 (unsigned long long)frame);
    }
    pthread_mutex_unlock(&t->mu);
}

/* Write the pieces in order at off (a gather write, a batch of IOV_MAX at a time). */
static int pwritev_all(int fd, struct iovec *iov, size_t n, uint64_t off, int regular)
{
    size_t i = 0;
    while (i < n) {
        int cnt = (int)(n - i < IOV_MAX ? n - i : IOV_MAX);
        ssize_t r = regular ? pwritev(fd, iov + i, cnt, (off_t)off) : writev(fd, iov + i, cnt);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = ENOSPC;
            return -1;
        }
        off += (uint64_t)r;
        size_t left = (size_t)r;
        while (i < n && left >= iov[i].iov_len)
            left -= iov[i++].iov_len;
        if (left) {
            iov[i].iov_base = (uint8_t *)iov[i].iov_base + left;
            iov[i].iov_len -= left;
        }
    }
    return 0;
}

#define FAIL_FMT "trajectory %s: frame %llu not written: %s (%llu frames before it are complete)"

/* Encode and append one frame (on the writer thread, or the caller's when synchronous). */
static void write_job(traj_file *t, job *j)
{
    if (t->failed)
        return;
    const carlo_frame *f = &j->f;
    int nc = f->n;
    traj_plan plan[CARLO_FRAME_MAX];
    int need[CARLO_FRAME_MAX];
    size_t ntask = 0, nstat = 0;
    for (int i = 0; i < nc; i++) {
        need[i] = traj_plan_begin(&f->chunk[i], f, t->opt.precision, &plan[i]);
        ntask += (size_t)plan[i].nblocks;
        nstat += need[i] ? (size_t)plan[i].nblocks : 0;
    }
    enc_task *task = calloc(ntask ? ntask : 1, sizeof *task);
    traj_block_stats *stats = calloc(nstat ? nstat : 1, sizeof *stats);
    size_t nio = 2 + (size_t)nc + ntask;
    struct iovec *iov = calloc(nio, sizeof *iov);
    size_t heads = 0;
    for (int i = 0; i < nc; i++)
        heads += payload_head_bytes(&plan[i]);
    uint8_t *head = malloc(CTR_HEAD_BYTES + (size_t)nc * CTR_ENTRY_BYTES + heads + CTR_TAIL_BYTES);
    if (!task || !stats || !iov || !head) {
        free(task);
        free(stats);
        free(iov);
        free(head);
        set_failed(t, FAIL_FMT, "out of host memory", j->frame);
        return;
    }
    enc_ctx ctx = {.f = f, .plan = plan, .task = task, .stats = stats, .level = t->opt.level};
    /* the data's statistics decide some codecs: one pass, shared by the threads */
    size_t k = 0;
    for (int i = 0; i < nc; i++)
        for (uint64_t b = 0; need[i] && b < plan[i].nblocks; b++, k++) {
            task[k].chunk = i;
            task[k].r0 = b * plan[i].rows_per_block;
            task[k].r1 = task[k].r0 + plan[i].rows_per_block;
            if (task[k].r1 > f->chunk[i].rows)
                task[k].r1 = f->chunk[i].rows;
        }
    traj_pool_run(t->pool, nstat, stats_task, &ctx);
    k = 0;
    for (int i = 0; i < nc; i++)
        if (need[i]) {
            traj_plan_finish(&f->chunk[i], &plan[i], stats + k, plan[i].nblocks);
            k += (size_t)plan[i].nblocks;
        }
    free(stats);
    k = 0;
    for (int i = 0; i < nc; i++)
        for (uint64_t b = 0; b < plan[i].nblocks; b++, k++) {
            task[k].chunk = i;
            task[k].block = b;
            task[k].r0 = b * plan[i].rows_per_block;
            task[k].r1 = task[k].r0 + plan[i].rows_per_block;
            if (task[k].r1 > f->chunk[i].rows)
                task[k].r1 = f->chunk[i].rows;
        }
    traj_pool_run(t->pool, ntask, encode_task, &ctx);
    const char *why = NULL;
    for (size_t i = 0; i < ntask && !why; i++)
        if (task[i].failed)
            why = task[i].why;
    if (why) {
        for (size_t i = 0; i < ntask; i++)
            free(task[i].z);
        free(task);
        free(iov);
        free(head);
        set_failed(t, FAIL_FMT, why, j->frame);
        return;
    }
    /* the record: head and table, then per chunk its payload head and blocks, then the tail */
    uint8_t *table = head + CTR_HEAD_BYTES, *ph = table + (size_t)nc * CTR_ENTRY_BYTES;
    uint8_t *tl = ph + heads;
    memset(head, 0, CTR_HEAD_BYTES + (size_t)nc * CTR_ENTRY_BYTES);
    uint64_t off = CTR_HEAD_BYTES + (uint64_t)nc * CTR_ENTRY_BYTES, raw = 0;
    size_t io = 1;
    k = 0;
    for (int i = 0; i < nc; i++) {
        const carlo_chunk *c = &f->chunk[i];
        const traj_plan *p = &plan[i];
        size_t hb = payload_head_bytes(p);
        uint8_t *q = ph;
        ctr_put32(q, (uint32_t)p->nblocks);
        ctr_put32(q + 4, p->flags);
        ctr_putf64(q + 8, p->precision);
        q += CTR_PAYLOAD_HEAD;
        if (p->flags & TRAJ_PAYLOAD_WRAP) {
            for (int d = 0; d < 6; d++)
                ctr_putf64(q + 8 * d, p->box[d]);
            q += 48;
        }
        uLong crc = crc32(0, NULL, 0);
        uint64_t stored = hb;
        for (uint64_t b = 0; b < p->nblocks; b++) {
            ctr_put64(q, task[k + b].r1 - task[k + b].r0);
            ctr_put64(q + 8, task[k + b].zlen);
            q += CTR_BLOCK_ENTRY;
        }
        crc = crc32(crc, ph, (uInt)hb);
        iov[io].iov_base = ph;
        iov[io++].iov_len = hb;
        for (uint64_t b = 0; b < p->nblocks; b++, k++) {
            crc = crc32_combine(crc, task[k].crc, (z_off_t)task[k].zlen);
            stored += task[k].zlen;
            iov[io].iov_base = task[k].z;
            iov[io++].iov_len = task[k].zlen;
        }
        uint8_t *e = table + (size_t)i * CTR_ENTRY_BYTES;
        memcpy(e, c->name, strlen(c->name));
        e[64] = (uint8_t)c->type;
        e[65] = (uint8_t)p->codec;
        ctr_put32(e + 68, (uint32_t)crc);
        ctr_put64(e + 72, c->rows);
        ctr_put64(e + 80, c->cols);
        ctr_put64(e + 88, off);
        ctr_put64(e + 96, stored);
        ctr_putf64(e + 104, p->precision);
        off += stored;
        ph += hb;
        raw += c->rows * c->cols * carlo_dtype_size(c->type);
    }
    uint64_t len = off + CTR_TAIL_BYTES;
    ctr_put32(head, CTR_FRAME_MAGIC);
    ctr_put32(head + 4, (uint32_t)nc);
    ctr_put64(head + 8, j->frame);
    ctr_put64(head + 16, j->step);
    ctr_put64(head + 24, len);
    ctr_put32(head + 32, j->flags);
    ctr_put32(head + 36, (uint32_t)crc32(0, table, (uInt)nc * CTR_ENTRY_BYTES));
    ctr_put32(head + 44, (uint32_t)crc32(0, head, 44));
    ctr_put32(tl, CTR_TAIL_MAGIC);
    ctr_put32(tl + 4, ctr_get32(head + 44));
    ctr_put64(tl + 8, j->frame);
    ctr_put64(tl + 16, len);
    iov[0].iov_base = head;
    iov[0].iov_len = CTR_HEAD_BYTES + (size_t)nc * CTR_ENTRY_BYTES;
    iov[io].iov_base = tl;
    iov[io++].iov_len = CTR_TAIL_BYTES;
    int bad = pwritev_all(t->fd, iov, io, t->end, t->regular);
    int saved = errno;
    for (size_t i = 0; i < ntask; i++)
        free(task[i].z);
    free(task);
    free(iov);
    free(head);
    if (bad) {
        if (t->regular && ftruncate(t->fd, (off_t)t->end)) {
            /* the partial record has no tail, so readers drop it anyway */
        }
        set_failed(t, "trajectory %s: writing frame %llu failed: %s (%llu frames before it are complete)",
                   strerror(saved), j->frame);
        return;
    }
#ifdef SYNC_FILE_RANGE_WRITE
    /* start this frame's write-back now (without waiting for it), so that the fsync of close
     * finds little left to do after a long run */
    if (t->regular && sync_file_range(t->fd, (off_t)t->end, (off_t)len, SYNC_FILE_RANGE_WRITE)) {
        /* only a hint: file systems that cannot do it lose nothing */
    }
#endif
    entry e = {.offset = t->end, .length = len, .step = j->step, .flags = j->flags};
    pthread_mutex_lock(&t->mu);
    int nomem = traj_push_entry(t, &e);
    if (!nomem) {
        t->end += len;
        t->raw += raw;
        t->stored += len;
    }
    pthread_mutex_unlock(&t->mu);
    if (nomem)
        set_failed(t, "trajectory %s: frame %llu: %s (%llu frames before it are complete)",
                   "out of host memory for the index", j->frame);
}

void traj_free_job(job *j)
{
    if (!j)
        return;
    carlo_frame_free(&j->f);
    free(j);
}

void *traj_writer_main(void *arg)
{
    traj_file *t = arg;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        while (!t->stop && t->qlen == 0)
            pthread_cond_wait(&t->cv, &t->mu);
        if (t->qlen == 0)
            break;
        job *j = t->q[t->qhead];
        t->busy = 1;
        pthread_mutex_unlock(&t->mu);
        write_job(t, j);
        traj_free_job(j);
        pthread_mutex_lock(&t->mu);
        t->q[t->qhead] = NULL;
        t->qhead = (t->qhead + 1) % QUEUE_MAX;
        t->qlen--;
        t->busy = 0;
        pthread_cond_broadcast(&t->cv);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

int traj_report_failure(traj_file *t)
{
    return carlo_seterr("%s", t->err);
}

int traj_flush(traj_file *t)
{
    if (t->async) {
        pthread_mutex_lock(&t->mu);
        while (t->qlen > 0 || t->busy)
            pthread_cond_wait(&t->cv, &t->mu);
        pthread_mutex_unlock(&t->mu);
    }
    return t->failed ? traj_report_failure(t) : 0;
}

int64_t traj_drop_after(traj_file *t, uint64_t step, int inclusive)
{
    if (t->mode != 'a' && t->mode != 'w')
        return carlo_seterr("trajectory %s: opened for reading; frames can be dropped only when "
                            "appending", t->path);
    if (traj_flush(t))
        return -1;
    t->append_pending = 0;
    size_t k = 0;
    while (k < t->n && (inclusive ? t->ent[k].step < step : t->ent[k].step <= step))
        k++;
    if (k == t->n)
        return 0;
    int64_t dropped = (int64_t)(t->n - k);
    uint64_t cut = t->ent[k].offset;
    if (t->regular && ftruncate(t->fd, (off_t)cut))
        return traj_io_fail(t, "dropping frames failed");
    t->n = k;
    t->end = cut;
    t->next_frame = k;
    t->last_step = k ? t->ent[k - 1].step : 0;
    if (!carlo_quiet && !t->opt.quiet)
        fprintf(stderr, "carlo: trajectory %s: dropped %lld frames with step %s %llu (appending "
                        "from there)\n", t->path, (long long)dropped, inclusive ? ">=" : ">",
                (unsigned long long)step);
    return dropped;
}

int traj_append_pending(const traj_file *t) { return t->append_pending; }

/* The step a frame carries, when it does. */
static int frame_step(const carlo_frame *f, uint64_t *step)
{
    const carlo_chunk *c = carlo_frame_find(f, "configuration/step");
    if (!c || c->rows * c->cols != 1 || !c->data)
        return 0;
    if (c->type == CARLO_U64) {
        memcpy(step, c->data, 8);
        return 1;
    }
    if (c->type == CARLO_I64) {
        int64_t v;
        memcpy(&v, c->data, 8);
        if (v < 0)
            return 0;
        *step = (uint64_t)v;
        return 1;
    }
    return 0;
}

static int check_frame(traj_file *t, const carlo_frame *f)
{
    if (f->n < 0 || f->n > CARLO_FRAME_MAX)
        return carlo_seterr("trajectory %s: a frame holds 0 to %d chunks", t->path, CARLO_FRAME_MAX);
    for (int i = 0; i < f->n; i++) {
        const carlo_chunk *c = &f->chunk[i];
        if (!traj_name_ok(c->name, CARLO_CHUNK_NAME))
            return carlo_seterr("trajectory %s: chunk name '%.*s' is not 1 to %d printable "
                                "characters without spaces", t->path, CARLO_CHUNK_NAME - 1,
                                c->name, CARLO_CHUNK_NAME - 1);
        if ((unsigned)c->type >= CARLO_NTYPES)
            return carlo_seterr("trajectory %s: chunk '%s' has an unknown element type", t->path,
                                c->name);
        size_t bytes = carlo_mulsize(carlo_mulsize((size_t)c->rows, (size_t)c->cols),
                                     carlo_dtype_size(c->type));
        if (bytes == SIZE_MAX || c->rows > ((uint64_t)1 << 48) || c->cols > ((uint64_t)1 << 48))
            return carlo_seterr("trajectory %s: chunk '%s' is too large (%llu x %llu)", t->path,
                                c->name, (unsigned long long)c->rows, (unsigned long long)c->cols);
        if (bytes && !c->data)
            return carlo_seterr("trajectory %s: chunk '%s' has no data", t->path, c->name);
        if (c->cols * carlo_dtype_size(c->type) > ((uint64_t)1 << 30))
            return carlo_seterr("trajectory %s: chunk '%s' has rows of more than 1 GiB (%llu columns); "
                                "store long series as N x 1", t->path, c->name,
                                (unsigned long long)c->cols);
        for (int k = 0; k < i; k++)
            if (strcmp(f->chunk[k].name, c->name) == 0)
                return carlo_seterr("trajectory %s: chunk '%s' appears twice in one frame", t->path,
                                    c->name);
    }
    return 0;
}

/* Queue a frame; with take, owned buffers move into the queue instead of being copied. */
static int write_frame(traj_file *t, carlo_frame *f, int take)
{
    if (t->mode == 'r')
        return carlo_seterr("trajectory %s: opened for reading (\"r\"); open it with \"w\" or \"a\" "
                            "to write", t->path);
    if (t->finished)
        return carlo_seterr("trajectory %s: already closed", t->path);
    if (t->failed)
        return traj_report_failure(t);
    if (check_frame(t, f))
        return -1;
    uint64_t step = 0;
    int has_step = frame_step(f, &step);
    if (t->append_pending && has_step && traj_drop_after(t, step, 1) < 0)
        return -1;
    job *j = carlo_calloc(1, sizeof *j, "a trajectory frame");
    if (!j)
        return -1;
    carlo_frame_init(&j->f);
    for (int i = 0; i < f->n; i++) {
        carlo_chunk *c = &f->chunk[i];
        int rc;
        if (take && c->owned && c->owned == c->data) {
            rc = carlo_frame_add_owned(&j->f, c->name, c->type, c->rows, c->cols, c->owned);
            c->owned = NULL;
            c->data = NULL;
        } else {
            rc = carlo_frame_add_copy(&j->f, c->name, c->type, c->rows, c->cols, c->data);
        }
        if (rc) {
            traj_free_job(j);
            return -1;
        }
    }
    j->frame = t->next_frame++;
    j->step = has_step ? step : t->last_step;
    j->flags = has_step ? CTR_FRAME_HAS_STEP : 0;
    t->last_step = j->step;
    if (!t->async) {
        write_job(t, j);
        traj_free_job(j);
        return t->failed ? traj_report_failure(t) : 0;
    }
    pthread_mutex_lock(&t->mu);
    while (t->qlen == QUEUE_MAX && !t->failed)
        pthread_cond_wait(&t->cv, &t->mu);
    if (t->failed) {
        pthread_mutex_unlock(&t->mu);
        traj_free_job(j);
        return traj_report_failure(t);
    }
    t->q[(t->qhead + t->qlen) % QUEUE_MAX] = j;
    t->qlen++;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    return 0;
}

int traj_write(traj_file *t, const carlo_frame *f)
{
    return write_frame(t, (carlo_frame *)f, 0);
}

int traj_write_take(traj_file *t, carlo_frame *f)
{
    return write_frame(t, f, 1);
}

int traj_write_index(traj_file *t)
{
    size_t bytes = CTR_INDEX_HEAD + t->n * CTR_INDEX_ENTRY + 4;
    uint8_t *ix = calloc(1, bytes + CTR_FOOTER_BYTES);
    if (!ix)
        return carlo_seterr("trajectory %s: out of host memory for the index", t->path);
    ctr_put32(ix, CTR_INDEX_MAGIC);
    ctr_put64(ix + 8, t->n);
    for (size_t i = 0; i < t->n; i++) {
        uint8_t *p = ix + CTR_INDEX_HEAD + i * CTR_INDEX_ENTRY;
        ctr_put64(p, t->ent[i].offset);
        ctr_put64(p + 8, t->ent[i].length);
        ctr_put64(p + 16, t->ent[i].step);
        ctr_put32(p + 24, t->ent[i].flags & CTR_FRAME_HAS_STEP);
    }
    ctr_put32(ix + bytes - 4, (uint32_t)crc32(0, ix, (uInt)(bytes - 4)));
    uint8_t *f = ix + bytes;
    ctr_put32(f, CTR_FOOTER_MAGIC);
    ctr_put64(f + 8, t->end);
    ctr_put64(f + 16, t->n);
    ctr_put32(f + 28, (uint32_t)crc32(0, f, 28));
    int rc = traj_pwrite_all(t->fd, ix, bytes + CTR_FOOTER_BYTES, t->end, t->regular);
    free(ix);
    if (rc)
        return traj_io_fail(t, "writing the index failed");
    if (t->regular && ftruncate(t->fd, (off_t)(t->end + bytes + CTR_FOOTER_BYTES)))
        return traj_io_fail(t, "truncating after the index failed");
    return 0;
}

/* Flush, write the index, sync, close the descriptor; idempotent. */
