/* traj.c — see traj.h. A writer queues frames to its own thread, which plans each chunk,
 * compresses the blocks on a small pool, assembles the frame record (head, chunk table,
 * payloads, tail; every part under a CRC32) and appends it with one write. The index goes
 * at the end on close; a reader that finds none (or a damaged one) scans the frames.
 * Messages number frames from 1, as the Lua binding does. */
#include "traj/traj.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#include "core/error.h"
#include "core/progress.h"
#include "traj/codec.h"
#include "traj/format.h"
#include "traj/pool.h"

#define QUEUE_MAX 2
#define ENTRY_DAMAGED 0x100u /* in memory only: a frame the scan could not read */

typedef struct entry {
    uint64_t offset, length, step;
    uint32_t flags;
} entry;

typedef struct job {
    carlo_frame f;
    uint64_t frame, step;
    uint32_t flags;
} job;

struct traj_file {
    char *path;
    char mode;
    int fd;
    int regular;
    traj_options opt;
    /* the frames in the file; appended by the writer thread under mu */
    entry *ent;
    size_t n, cap;
    uint64_t end;        /* where the next frame goes (the end of the frame data) */
    /* producer side */
    uint64_t next_frame, last_step;
    int recovered, append_pending, finished;
    /* the first write failure, kept: later writes report it */
    int failed;
    char err[640];
    /* the writer thread */
    int async;
    pthread_t writer;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    job *q[QUEUE_MAX];
    int qhead, qlen, busy, stop;
    traj_pool *pool;
    uint64_t raw, stored;
    traj_file *next_open;
};

/* ---------- open writers, flushed at process exit ---------- */

static pthread_mutex_t open_mu = PTHREAD_MUTEX_INITIALIZER;
static traj_file *open_list;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
static int finish(traj_file *t);

static void at_exit(void)
{
    pthread_mutex_lock(&open_mu);
    for (traj_file *t = open_list; t; t = t->next_open)
        if (finish(t) && !carlo_quiet && !t->opt.quiet)
            fprintf(stderr, "carlo: %s\n", t->err);
    pthread_mutex_unlock(&open_mu);
}

static void register_atexit(void) { atexit(at_exit); }

static void track(traj_file *t)
{
    pthread_once(&exit_once, register_atexit);
    pthread_mutex_lock(&open_mu);
    t->next_open = open_list;
    open_list = t;
    pthread_mutex_unlock(&open_mu);
}

static void untrack(traj_file *t)
{
    pthread_mutex_lock(&open_mu);
    for (traj_file **p = &open_list; *p; p = &(*p)->next_open)
        if (*p == t) {
            *p = t->next_open;
            break;
        }
    pthread_mutex_unlock(&open_mu);
}

/* ---------- small helpers ---------- */

void traj_options_init(traj_options *o)
{
    memset(o, 0, sizeof *o);
    o->threads = -1;
    o->restart = -1;
}

static int default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 8 ? 8 : (int)n;
}

static int io_fail(traj_file *t, const char *what)
{
    return carlo_seterr("trajectory %s: %s: %s", t->path, what, strerror(errno));
}

static int pread_all(int fd, void *buf, size_t n, uint64_t off)
{
    uint8_t *p = buf;
    while (n) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = EIO;
            return -1;
        }
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

static int pwrite_all(int fd, const void *buf, size_t n, uint64_t off, int regular)
{
    const uint8_t *p = buf;
    while (n) {
        ssize_t r = regular ? pwrite(fd, p, n, (off_t)off) : write(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = ENOSPC;
            return -1;
        }
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

static int push_entry(traj_file *t, const entry *e)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        entry *ne = realloc(t->ent, cap * sizeof *ne);
        if (!ne)
            return carlo_seterr("out of host memory: %zu bytes asked for a trajectory index",
                                cap * sizeof *ne);
        t->ent = ne;
        t->cap = cap;
    }
    t->ent[t->n++] = *e;
    return 0;
}

static int name_ok(const char *name, size_t room)
{
    size_t len = strnlen(name, room);
    if (len == 0 || len >= room)
        return 0;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)name[i] < 0x21 || (unsigned char)name[i] > 0x7e)
            return 0;
    return 1;
}

/* ---------- reading the layout ---------- */

/* A complete frame record at off (head and tail agree, both within limit). */
static int frame_at(traj_file *t, uint64_t off, uint64_t limit, entry *e, uint64_t *frame_no)
{
    uint8_t h[CTR_HEAD_BYTES], tl[CTR_TAIL_BYTES];
    if (off + CTR_HEAD_BYTES + CTR_TAIL_BYTES > limit || pread_all(t->fd, h, sizeof h, off))
        return 0;
    if (ctr_get32(h) != CTR_FRAME_MAGIC || ctr_get32(h + 44) != (uint32_t)crc32(0, h, 44))
        return 0;
    uint64_t len = ctr_get64(h + 24);
    uint32_t nch = ctr_get32(h + 4);
    if (nch > CARLO_FRAME_MAX || len < CTR_HEAD_BYTES + (uint64_t)nch * CTR_ENTRY_BYTES + CTR_TAIL_BYTES ||
        len > limit - off)
        return 0;
    if (pread_all(t->fd, tl, sizeof tl, off + len - CTR_TAIL_BYTES))
        return 0;
    if (ctr_get32(tl) != CTR_TAIL_MAGIC || ctr_get32(tl + 4) != ctr_get32(h + 44) ||
        ctr_get64(tl + 8) != ctr_get64(h + 8) || ctr_get64(tl + 16) != len)
        return 0;
    e->offset = off;
    e->length = len;
    e->step = ctr_get64(h + 16);
    e->flags = ctr_get32(h + 32) & CTR_FRAME_HAS_STEP;
    *frame_no = ctr_get64(h + 8);
    return 1;
}

/* The next complete frame after a damaged stretch that starts at `from`. */
static int resync(traj_file *t, uint64_t from, uint64_t limit, uint64_t expect, entry *e,
                  uint64_t *frame_no)
{
    enum { WIN = 1 << 20 };
    uint8_t *buf = malloc(WIN);
    if (!buf)
        return 0;
    for (uint64_t base = from; base + 4 <= limit; base += WIN - 3) {
        size_t n = (size_t)(limit - base < WIN ? limit - base : WIN);
        if (pread_all(t->fd, buf, n, base))
            break;
        for (size_t i = 0; i + 4 <= n; i++) {
            if (memcmp(buf + i, "CFRM", 4))
                continue;
            uint64_t off = base + i;
            if (!frame_at(t, off, limit, e, frame_no))
                continue;
            /* frames lost in between: at least one, and no more than fit */
            uint64_t most = (off - from) / (CTR_HEAD_BYTES + CTR_TAIL_BYTES) + 1;
            if (*frame_no > expect && *frame_no - expect <= most) {
                free(buf);
                return 1;
            }
        }
        if (n < WIN)
            break;
    }
    free(buf);
    return 0;
}

static int scan(traj_file *t, uint64_t size)
{
    uint64_t off = CTR_HEADER_BYTES;
    t->n = 0;
    uint64_t last_step = 0;
    size_t damaged = 0;
    while (off < size) {
        entry e;
        uint64_t no;
        if (frame_at(t, off, size, &e, &no) && no == t->n) {
            if (!(e.flags & CTR_FRAME_HAS_STEP))
                e.step = last_step;
            last_step = e.step;
            if (push_entry(t, &e))
                return -1;
            off += e.length;
            continue;
        }
        if (!resync(t, off + 1, size, t->n, &e, &no))
            break;
        uint64_t lost = no - t->n;
        for (uint64_t i = 0; i < lost; i++) {
            entry d = {.offset = off, .length = e.offset - off, .step = last_step,
                       .flags = ENTRY_DAMAGED};
            if (push_entry(t, &d))
                return -1;
            damaged++;
        }
        if (!(e.flags & CTR_FRAME_HAS_STEP))
            e.step = last_step;
        last_step = e.step;
        if (push_entry(t, &e))
            return -1;
        off = e.offset + e.length;
    }
    t->end = off;
    t->recovered = 1;
    if (!carlo_quiet && !t->opt.quiet) {
        fprintf(stderr, "carlo: trajectory %s has no valid index (its writer did not close it); "
                        "rebuilt by scanning: %zu complete frames", t->path, t->n - damaged);
        if (damaged)
            fprintf(stderr, ", %zu damaged", damaged);
        if (size > off)
            fprintf(stderr, ", %llu bytes after the last complete frame ignored",
                    (unsigned long long)(size - off));
        fputc('\n', stderr);
    }
    return 0;
}

/* The index written at close, when it is whole and agrees with the frames' layout. */
static int load_index(traj_file *t, uint64_t size)
{
    uint8_t f[CTR_FOOTER_BYTES];
    if (size < CTR_HEADER_BYTES + CTR_INDEX_HEAD + 4 + CTR_FOOTER_BYTES ||
        pread_all(t->fd, f, sizeof f, size - CTR_FOOTER_BYTES))
        return 0;
    if (ctr_get32(f) != CTR_FOOTER_MAGIC || ctr_get32(f + 28) != (uint32_t)crc32(0, f, 28))
        return 0;
    uint64_t at = ctr_get64(f + 8), count = ctr_get64(f + 16);
    if (count > size / CTR_INDEX_ENTRY || at < CTR_HEADER_BYTES || at > size ||
        at + CTR_INDEX_HEAD + count * CTR_INDEX_ENTRY + 4 + CTR_FOOTER_BYTES != size)
        return 0;
    size_t bytes = CTR_INDEX_HEAD + (size_t)count * CTR_INDEX_ENTRY + 4;
    uint8_t *ix = malloc(bytes);
    if (!ix)
        return 0;
    int ok = pread_all(t->fd, ix, bytes, at) == 0 && ctr_get32(ix) == CTR_INDEX_MAGIC &&
             ctr_get64(ix + 8) == count &&
             ctr_get32(ix + bytes - 4) == (uint32_t)crc32(0, ix, (uInt)(bytes - 4));
    uint64_t expect = CTR_HEADER_BYTES;
    t->n = 0;
    for (uint64_t i = 0; ok && i < count; i++) {
        const uint8_t *p = ix + CTR_INDEX_HEAD + i * CTR_INDEX_ENTRY;
        entry e = {.offset = ctr_get64(p), .length = ctr_get64(p + 8), .step = ctr_get64(p + 16),
                   .flags = ctr_get32(p + 24)};
        ok = e.offset == expect && e.length >= CTR_HEAD_BYTES + CTR_TAIL_BYTES &&
             e.length <= at - e.offset && (e.flags & ~CTR_FRAME_HAS_STEP) == 0 &&
             push_entry(t, &e) == 0;
        expect = e.offset + e.length;
    }
    free(ix);
    if (!ok || expect != at) {
        t->n = 0;
        return 0;
    }
    t->end = at;
    return 1;
}

static int write_header(traj_file *t)
{
    uint8_t h[CTR_HEADER_BYTES];
    memset(h, 0, sizeof h);
    memcpy(h, CTR_MAGIC, 8);
    ctr_put32(h + 8, CTR_VERSION);
    ctr_put32(h + 12, CTR_HEADER_BYTES);
    memcpy(h + 16, "carlo", 5);
    ctr_put32(h + 60, (uint32_t)crc32(0, h, 60));
    if (pwrite_all(t->fd, h, sizeof h, 0, t->regular))
        return io_fail(t, "writing the header failed");
    t->end = CTR_HEADER_BYTES;
    return 0;
}

/* Read the header and the frame list of an existing file. */
static int load(traj_file *t, uint64_t size)
{
    uint8_t h[CTR_HEADER_BYTES];
    if (size < CTR_HEADER_BYTES) {
        uint8_t some[CTR_HEADER_BYTES];
        if (size && pread_all(t->fd, some, (size_t)size, 0))
            return io_fail(t, "read failed");
        if (memcmp(some, CTR_MAGIC, size < 8 ? (size_t)size : 8))
            return carlo_seterr("%s is not a carlo trajectory or checkpoint (.ctr) file", t->path);
        /* cut inside the header: nothing complete */
        t->end = CTR_HEADER_BYTES;
        t->recovered = 1;
        if (!carlo_quiet && !t->opt.quiet)
            fprintf(stderr, "carlo: trajectory %s is cut short inside its header: no complete "
                            "frame\n", t->path);
        return 1;
    }
    if (pread_all(t->fd, h, sizeof h, 0))
        return io_fail(t, "read failed");
    if (memcmp(h, CTR_MAGIC, 8))
        return carlo_seterr("%s is not a carlo trajectory or checkpoint (.ctr) file", t->path);
    if (ctr_get32(h + 60) != (uint32_t)crc32(0, h, 60))
        return carlo_seterr("trajectory %s: the file header is corrupt (CRC mismatch)", t->path);
    if (ctr_get32(h + 8) != CTR_VERSION || ctr_get32(h + 12) != CTR_HEADER_BYTES)
        return carlo_seterr("trajectory %s: format version %u is not one this carlo reads (%u)",
                            t->path, ctr_get32(h + 8), CTR_VERSION);
    if (load_index(t, size))
        return 0;
    return scan(t, size);
}

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
    entry e = {.offset = t->end, .length = len, .step = j->step, .flags = j->flags};
    pthread_mutex_lock(&t->mu);
    int nomem = push_entry(t, &e);
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

static void free_job(job *j)
{
    if (!j)
        return;
    carlo_frame_free(&j->f);
    free(j);
}

static void *writer_main(void *arg)
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
        free_job(j);
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

static int report_failure(traj_file *t)
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
    return t->failed ? report_failure(t) : 0;
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
        return io_fail(t, "dropping frames failed");
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
        if (!name_ok(c->name, CARLO_CHUNK_NAME))
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
        return report_failure(t);
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
            free_job(j);
            return -1;
        }
    }
    j->frame = t->next_frame++;
    j->step = has_step ? step : t->last_step;
    j->flags = has_step ? CTR_FRAME_HAS_STEP : 0;
    t->last_step = j->step;
    if (!t->async) {
        write_job(t, j);
        free_job(j);
        return t->failed ? report_failure(t) : 0;
    }
    pthread_mutex_lock(&t->mu);
    while (t->qlen == QUEUE_MAX && !t->failed)
        pthread_cond_wait(&t->cv, &t->mu);
    if (t->failed) {
        pthread_mutex_unlock(&t->mu);
        free_job(j);
        return report_failure(t);
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

static int write_index(traj_file *t)
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
    int rc = pwrite_all(t->fd, ix, bytes + CTR_FOOTER_BYTES, t->end, t->regular);
    free(ix);
    if (rc)
        return io_fail(t, "writing the index failed");
    if (t->regular && ftruncate(t->fd, (off_t)(t->end + bytes + CTR_FOOTER_BYTES)))
        return io_fail(t, "truncating after the index failed");
    return 0;
}

/* Flush, write the index, sync, close the descriptor; idempotent. */
static int finish(traj_file *t)
{
    if (t->finished)
        return t->failed ? -1 : 0;
    t->finished = 1;
    if (t->async) {
        pthread_mutex_lock(&t->mu);
        t->stop = 1;
        pthread_cond_broadcast(&t->cv);
        pthread_mutex_unlock(&t->mu);
        pthread_join(t->writer, NULL);
    }
    traj_pool_free(t->pool);
    t->pool = NULL;
    int rc = 0;
    if ((t->mode == 'w' || t->mode == 'a') && !t->failed) {
        if (write_index(t) || (t->regular && fsync(t->fd) && errno != EINVAL)) {
            if (!t->failed) {
                t->failed = 1;
                snprintf(t->err, sizeof t->err, "%s (every frame before it is complete)",
                         carlo_errmsg());
            }
        }
    }
    if (t->fd >= 0 && close(t->fd) && !t->failed && t->mode != 'r') {
        t->failed = 1;
        snprintf(t->err, sizeof t->err, "trajectory %s: close failed: %s", t->path, strerror(errno));
    }
    t->fd = -1;
    if (t->failed)
        rc = -1;
    return rc;
}

int traj_close(traj_file *t)
{
    if (!t)
        return 0;
    if (t->mode != 'r')
        untrack(t);
    int rc = finish(t);
    if (rc)
        report_failure(t);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    for (int i = 0; i < QUEUE_MAX; i++)
        free_job(t->q[i]);
    free(t->ent);
    free(t->path);
    free(t);
    return rc;
}

traj_file *traj_open(const char *path, char mode, const traj_options *o)
{
    if (mode != 'r' && mode != 'w' && mode != 'a') {
        carlo_seterr("trajectory %s: mode must be \"r\", \"w\" or \"a\"", path);
        return NULL;
    }
    traj_file *t = carlo_calloc(1, sizeof *t, "a trajectory");
    if (!t)
        return NULL;
    if (o)
        t->opt = *o;
    else
        traj_options_init(&t->opt);
    if (t->opt.threads < 0)
        t->opt.threads = default_threads();
    if (t->opt.level <= 0 || t->opt.level > 9)
        t->opt.level = 1;
    if (!(t->opt.precision > 0))
        t->opt.precision = 0;
    t->mode = mode;
    t->fd = -1;
    t->path = strdup(path);
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    if (!t->path) {
        carlo_seterr("out of host memory");
        goto fail;
    }
    int flags = (mode == 'r' ? O_RDONLY : O_RDWR | O_CREAT) | O_CLOEXEC;
    t->fd = open(path, flags, 0666);
    if (t->fd < 0) {
        carlo_seterr("trajectory %s: cannot open it for %s: %s", path,
                     mode == 'r' ? "reading" : mode == 'w' ? "writing" : "appending", strerror(errno));
        goto fail;
    }
    struct stat st;
    if (fstat(t->fd, &st)) {
        io_fail(t, "stat failed");
        goto fail;
    }
    t->regular = S_ISREG(st.st_mode);
    if (!t->regular && mode != 'w') {
        carlo_seterr("trajectory %s: not a regular file", path);
        goto fail;
    }
    /* one writer at a time; a file system without locks (ENOLCK, ...) goes unlocked */
    if (mode != 'r' && t->regular && flock(t->fd, LOCK_EX | LOCK_NB) && errno == EWOULDBLOCK) {
        carlo_seterr("trajectory %s: another process has it open for writing", path);
        goto fail;
    }
    if (mode == 'w' || (mode == 'a' && st.st_size == 0)) {
        if (t->regular && ftruncate(t->fd, 0)) {
            io_fail(t, "truncate failed");
            goto fail;
        }
        if (write_header(t))
            goto fail;
    } else {
        int cut = load(t, (uint64_t)st.st_size);
        if (cut < 0)
            goto fail;
        if (mode == 'a') {
            if (cut == 1 && write_header(t)) /* nothing complete: start afresh */
                goto fail;
            if (ftruncate(t->fd, (off_t)t->end)) { /* the index goes; close writes a new one */
                io_fail(t, "truncate failed");
                goto fail;
            }
        }
    }
    t->next_frame = t->n;
    t->last_step = t->n ? t->ent[t->n - 1].step : 0;
    if (mode == 'a') {
        t->append_pending = 1;
        if (t->opt.restart >= 0 && traj_drop_after(t, (uint64_t)t->opt.restart, 0) < 0)
            goto fail;
    }
    if (mode != 'r' && t->opt.threads > 0) {
        t->pool = traj_pool_new(t->opt.threads);
        if (!t->pool)
            goto fail;
        if (pthread_create(&t->writer, NULL, writer_main, t)) {
            carlo_seterr("trajectory %s: cannot start the writer thread", path);
            goto fail;
        }
    }
    t->async = mode != 'r' && t->opt.threads > 0;
    if (mode != 'r')
        track(t);
    return t;
fail:
    traj_pool_free(t->pool);
    if (t->fd >= 0)
        close(t->fd);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t->ent);
    free(t->path);
    free(t);
    return NULL;
}

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
    if (!name_ok((const char *)e, 64))
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
    if (pread_all(t->fd, h, sizeof h, e->offset))
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
    if (nch && pread_all(t->fd, table, (size_t)nch * CTR_ENTRY_BYTES, e->offset + CTR_HEAD_BYTES))
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
    return 0;
}

static int decode_chunk(traj_file *t, const frame_loc *fl, const chunk_loc *c, void *dst)
{
    unsigned long long fk = (unsigned long long)fl->k + 1;
    const char *name = c->info.name;
    uint8_t *pay = carlo_malloc((size_t)c->stored, "a stored chunk");
    if (!pay)
        return -1;
    const entry *e = &t->ent[fl->k];
    if (pread_all(t->fd, pay, (size_t)c->stored, e->offset + c->offset)) {
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

int traj_recovered(const traj_file *t) { return t->recovered; }
const char *traj_path(const traj_file *t) { return t->path; }
char traj_mode(const traj_file *t) { return t->mode; }
double traj_precision(const traj_file *t) { return t->opt.precision; }

void traj_written(const traj_file *t, uint64_t *raw, uint64_t *stored)
{
    pthread_mutex_t *mu = (pthread_mutex_t *)&t->mu;
    pthread_mutex_lock(mu);
    *raw = t->raw;
    *stored = t->stored;
    pthread_mutex_unlock(mu);
}
