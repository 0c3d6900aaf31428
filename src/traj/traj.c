/* traj.c — see traj.h. Opening and closing, the file's layout (header, frame records,
 * index), and the recovery of frames by scanning when the index is missing or damaged.
 * The writer is in traj_write.c, the reader in traj_read.c. Messages number frames from 1,
 * as the Lua binding does. */
#include "traj/traj.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/error.h"
#include "core/progress.h"
#include "traj/format.h"
#include "traj/pool.h"
#include "traj/traj_private.h"

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

int traj_open_for_writing(const char *path)
{
    struct stat st;
    if (stat(path, &st))
        return 0;
    int found = 0;
    pthread_mutex_lock(&open_mu);
    for (traj_file *t = open_list; t && !found; t = t->next_open)
        found = !t->finished && t->dev == st.st_dev && t->ino == st.st_ino;
    pthread_mutex_unlock(&open_mu);
    return found;
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

int traj_io_fail(traj_file *t, const char *what)
{
    return carlo_seterr("trajectory %s: %s: %s", t->path, what, strerror(errno));
}

int traj_pread_all(int fd, void *buf, size_t n, uint64_t off)
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

int traj_pwrite_all(int fd, const void *buf, size_t n, uint64_t off, int regular)
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

int traj_push_entry(traj_file *t, const entry *e)
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

int traj_name_ok(const char *name, size_t room)
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

/* Scanning reads the file through a window of 1 MiB, so that looking for frame heads costs
 * no system call per candidate (a damaged stretch full of "CFRM" would cost one per 4 bytes). */
enum { SCAN_WINDOW = 1 << 20 };

typedef struct scan_window {
    uint8_t *p;
    uint64_t base;
    size_t n, cap;
} scan_window;

/* The n bytes at off when the window holds them, else NULL. */
static const uint8_t *in_window(const scan_window *w, uint64_t off, size_t n)
{
    if (!w || off < w->base || off - w->base > w->n || n > w->n - (size_t)(off - w->base))
        return NULL;
    return w->p + (off - w->base);
}

/* Refill the window from off (up to limit); 0, or -1 when nothing could be read. */
static int fill_window(traj_file *t, scan_window *w, uint64_t off, uint64_t limit)
{
    size_t n = (size_t)(limit - off < w->cap ? limit - off : w->cap);
    w->base = off;
    w->n = 0;
    if (n == 0 || traj_pread_all(t->fd, w->p, n, off))
        return -1;
    w->n = n;
    return 0;
}

/* n bytes at off, from the window when it holds them, else read into buf. */
static const uint8_t *bytes_at(traj_file *t, const scan_window *w, uint64_t off, size_t n,
                               uint8_t *buf)
{
    const uint8_t *p = in_window(w, off, n);
    if (p)
        return p;
    return traj_pread_all(t->fd, buf, n, off) ? NULL : buf;
}

/* A complete frame record at off (head and tail agree, both within limit). */
static int frame_at(traj_file *t, const scan_window *w, uint64_t off, uint64_t limit, entry *e,
                    uint64_t *frame_no)
{
    uint8_t hb[CTR_HEAD_BYTES], tb[CTR_TAIL_BYTES];
    if (off > limit || limit - off < CTR_HEAD_BYTES + CTR_TAIL_BYTES)
        return 0;
    const uint8_t *h = bytes_at(t, w, off, sizeof hb, hb);
    if (!h || ctr_get32(h) != CTR_FRAME_MAGIC)
        return 0;
    uint64_t len = ctr_get64(h + 24); /* the cheap checks before the CRC */
    uint32_t nch = ctr_get32(h + 4);
    if (nch > CARLO_FRAME_MAX || len < CTR_HEAD_BYTES + (uint64_t)nch * CTR_ENTRY_BYTES + CTR_TAIL_BYTES ||
        len > limit - off || ctr_get32(h + 44) != (uint32_t)crc32(0, h, 44))
        return 0;
    const uint8_t *tl = bytes_at(t, w, off + len - CTR_TAIL_BYTES, sizeof tb, tb);
    if (!tl || ctr_get32(tl) != CTR_TAIL_MAGIC || ctr_get32(tl + 4) != ctr_get32(h + 44) ||
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
static int resync(traj_file *t, scan_window *w, uint64_t from, uint64_t limit, uint64_t expect,
                  entry *e, uint64_t *frame_no)
{
    uint64_t pos = from;
    while (pos < limit && limit - pos >= 4) {
        if (!in_window(w, pos, 4) && fill_window(t, w, pos, limit))
            return 0;
        /* a plain loop, not memmem: sanitizers check memmem's whole haystack at every call */
        const uint8_t *hit = NULL;
        for (size_t i = (size_t)(pos - w->base); !hit && i + 4 <= w->n; i++)
            if (ctr_get32(w->p + i) == CTR_FRAME_MAGIC)
                hit = w->p + i;
        if (!hit) {
            if (w->base + w->n >= limit)
                return 0;
            pos = w->base + w->n - 3; /* a magic across the window's end */
            if (fill_window(t, w, pos, limit))
                return 0;
            continue;
        }
        uint64_t off = w->base + (uint64_t)(hit - w->p);
        pos = off + 1;
        if (!frame_at(t, w, off, limit, e, frame_no))
            continue;
        /* frames lost in between: at least one, and no more than fit */
        uint64_t most = (off - from) / (CTR_HEAD_BYTES + CTR_TAIL_BYTES) + 1;
        if (*frame_no > expect && *frame_no - expect <= most)
            return 1;
    }
    return 0;
}

static int scan(traj_file *t, uint64_t size)
{
    uint64_t off = CTR_HEADER_BYTES;
    t->n = 0;
    uint64_t last_step = 0;
    size_t damaged = 0;
    scan_window w = {.p = NULL, .base = 0, .n = 0,
                     .cap = size < SCAN_WINDOW ? (size_t)size : (size_t)SCAN_WINDOW};
    while (off < size) {
        entry e;
        uint64_t no;
        if (frame_at(t, w.p ? &w : NULL, off, size, &e, &no) && no == t->n) {
            if (!(e.flags & CTR_FRAME_HAS_STEP))
                e.step = last_step;
            last_step = e.step;
            if (traj_push_entry(t, &e))
                goto fail;
            off += e.length;
            continue;
        }
        if (!w.p && !(w.p = malloc(w.cap))) {
            carlo_seterr("out of host memory: %zu bytes asked for scanning a trajectory", w.cap);
            goto fail;
        }
        if (!resync(t, &w, off + 1, size, t->n, &e, &no))
            break;
        uint64_t lost = no - t->n;
        for (uint64_t i = 0; i < lost; i++) {
            entry d = {.offset = off, .length = e.offset - off, .step = last_step,
                       .flags = ENTRY_DAMAGED};
            if (traj_push_entry(t, &d))
                goto fail;
            damaged++;
        }
        if (!(e.flags & CTR_FRAME_HAS_STEP))
            e.step = last_step;
        last_step = e.step;
        if (traj_push_entry(t, &e))
            goto fail;
        off = e.offset + e.length;
    }
    free(w.p);
    t->end = off;
    t->recovered = 1;
    if (!carlo_quiet && !t->opt.quiet) {
        if (t->header_damaged)
            fprintf(stderr, "carlo: trajectory %s: the file header is damaged (CRC mismatch); "
                            "frames recovered by scanning (each carries its own CRC): %zu complete",
                    t->path, t->n - damaged);
        else
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
fail:
    free(w.p);
    return -1;
}

/* The index written at close, when it is whole and agrees with the frames' layout. */
static int load_index(traj_file *t, uint64_t size)
{
    uint8_t f[CTR_FOOTER_BYTES];
    if (size < CTR_HEADER_BYTES + CTR_INDEX_HEAD + 4 + CTR_FOOTER_BYTES ||
        traj_pread_all(t->fd, f, sizeof f, size - CTR_FOOTER_BYTES))
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
    int ok = traj_pread_all(t->fd, ix, bytes, at) == 0 && ctr_get32(ix) == CTR_INDEX_MAGIC &&
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
             traj_push_entry(t, &e) == 0;
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

static void header_bytes(uint8_t h[CTR_HEADER_BYTES])
{
    memset(h, 0, CTR_HEADER_BYTES);
    memcpy(h, CTR_MAGIC, 8);
    ctr_put32(h + 8, CTR_VERSION);
    ctr_put32(h + 12, CTR_HEADER_BYTES);
    memcpy(h + 16, "carlo", 5);
    ctr_put32(h + 60, (uint32_t)crc32(0, h, 60));
}

static int write_header(traj_file *t)
{
    uint8_t h[CTR_HEADER_BYTES];
    header_bytes(h);
    if (traj_pwrite_all(t->fd, h, sizeof h, 0, t->regular))
        return traj_io_fail(t, "writing the header failed");
    t->end = CTR_HEADER_BYTES;
    return 0;
}

/* A file whose size says nothing about its contents (/proc reports 0 bytes and reads
 * text, /sys reports a page and reads less) is refused rather than read as empty. */
static int check_size(traj_file *t, uint64_t *size)
{
    uint8_t b;
    ssize_t r;
    do
        r = pread(t->fd, &b, 1, (off_t)*size);
    while (r < 0 && errno == EINTR);
    if (r > 0) {
        struct stat st; /* a file that grew since (a writer is at work) is fine */
        if (fstat(t->fd, &st) == 0 && (uint64_t)st.st_size > *size) {
            *size = (uint64_t)st.st_size;
            return 0;
        }
    } else if (r == 0 && *size > 0) {
        do
            r = pread(t->fd, &b, 1, (off_t)(*size - 1));
        while (r < 0 && errno == EINTR);
        if (r == 1)
            return 0;
    } else if (r == 0) {
        return 0;
    }
    if (r < 0)
        return traj_io_fail(t, "read failed");
    return carlo_seterr("trajectory %s: its size (%llu bytes) does not match what reading it gives: "
                        "not a regular file of data (a /proc or /sys file?)", t->path,
                        (unsigned long long)*size);
}

/* Bytes of the magic that are right (a damaged header keeps most of them). */
static int magic_bytes_right(const uint8_t *h)
{
    int n = 0;
    for (int i = 0; i < 8; i++)
        n += h[i] == (uint8_t)CTR_MAGIC[i];
    return n;
}

/* Read the header and the frame list of an existing file. */
static int load(traj_file *t, uint64_t size)
{
    uint8_t h[CTR_HEADER_BYTES];
    if (size < CTR_HEADER_BYTES) {
        uint8_t some[CTR_HEADER_BYTES];
        if (size && traj_pread_all(t->fd, some, (size_t)size, 0))
            return traj_io_fail(t, "read failed");
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
    if (traj_pread_all(t->fd, h, sizeof h, 0))
        return traj_io_fail(t, "read failed");
    if (memcmp(h, CTR_MAGIC, 8) == 0 && ctr_get32(h + 60) == (uint32_t)crc32(0, h, 60)) {
        if (ctr_get32(h + 8) != CTR_VERSION || ctr_get32(h + 12) != CTR_HEADER_BYTES)
            return carlo_seterr("trajectory %s: format version %u is not one this carlo reads (%u)",
                                t->path, ctr_get32(h + 8), CTR_VERSION);
        if (load_index(t, size))
            return 0;
        return scan(t, size);
    }
    /* A damaged header: every frame carries its own CRCs, so the frames are found by scanning
     * when the file still looks like one of ours (most of the magic, or an intact first frame). */
    entry e;
    uint64_t no;
    if (magic_bytes_right(h) < 6 && !(frame_at(t, NULL, CTR_HEADER_BYTES, size, &e, &no) && no == 0))
        return carlo_seterr("%s is not a carlo trajectory or checkpoint (.ctr) file", t->path);
    t->header_damaged = 1;
    return scan(t, size);
}

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
        if (traj_write_index(t) || (t->regular && fsync(t->fd) && errno != EINVAL)) {
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
        traj_report_failure(t);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    for (int i = 0; i < QUEUE_MAX; i++)
        traj_free_job(t->q[i]);
    free(t->ent);
    free(t->path);
    free(t);
    return rc;
}

/* Remove the file of t, which an open that failed created or emptied: through a symbolic
 * link, the file it names, and only while the path still leads to this very file. */
static void remove_own(traj_file *t)
{
    char *real = realpath(t->path, NULL);
    struct stat st;
    if (real && stat(real, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == t->dev &&
        st.st_ino == t->ino)
        unlink(real);
    free(real);
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
    /* a file this open creates, or empties, is removed again when the open fails */
    int created = 0, emptied = 0;
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
    if (mode != 'r') {
        t->fd = open(path, flags | O_EXCL, 0666);
        created = t->fd >= 0;
    }
    if (t->fd < 0)
        t->fd = open(path, flags, 0666);
    if (t->fd < 0) {
        carlo_seterr("trajectory %s: cannot open it for %s: %s", path,
                     mode == 'r' ? "reading" : mode == 'w' ? "writing" : "appending", strerror(errno));
        goto fail;
    }
    struct stat st;
    if (fstat(t->fd, &st)) {
        traj_io_fail(t, "stat failed");
        goto fail;
    }
    t->regular = S_ISREG(st.st_mode);
    t->dev = st.st_dev;
    t->ino = st.st_ino;
    if (!t->regular && mode != 'w') {
        carlo_seterr("trajectory %s: not a regular file", path);
        goto fail;
    }
    /* one writer at a time; a file system without locks (ENOLCK, ...) goes unlocked */
    if (mode != 'r' && t->regular && flock(t->fd, LOCK_EX | LOCK_NB) && errno == EWOULDBLOCK) {
        carlo_seterr(traj_open_for_writing(path)
                         ? "trajectory %s: already open for writing in this process (close it first)"
                         : "trajectory %s: another process has it open for writing", path);
        goto fail;
    }
    if (mode == 'w' || (mode == 'a' && st.st_size == 0)) {
        emptied = mode == 'w' || created;
        if (t->regular && ftruncate(t->fd, 0)) {
            traj_io_fail(t, "truncate failed");
            goto fail;
        }
        if (write_header(t))
            goto fail;
    } else {
        uint64_t size = (uint64_t)st.st_size;
        if (check_size(t, &size))
            goto fail;
        int cut = load(t, size);
        if (cut < 0)
            goto fail;
        if (mode == 'a') {
            if (cut == 1 && write_header(t)) /* nothing complete: start afresh */
                goto fail;
            if (t->header_damaged) { /* the frames stay; the header is written anew */
                uint8_t h[CTR_HEADER_BYTES];
                header_bytes(h);
                if (traj_pwrite_all(t->fd, h, sizeof h, 0, t->regular)) {
                    traj_io_fail(t, "rewriting the damaged header failed");
                    goto fail;
                }
            }
            if (ftruncate(t->fd, (off_t)t->end)) { /* the index goes; close writes a new one */
                traj_io_fail(t, "truncate failed");
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
        if (traj_thread_start(&t->writer, traj_writer_main, t)) {
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
    if (t->fd >= 0) {
        if (emptied && t->regular)
            remove_own(t);
        close(t->fd);
    }
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t->ent);
    free(t->path);
    free(t);
    return NULL;
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

