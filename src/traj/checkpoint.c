/* checkpoint.c — see checkpoint.h. Checkpoints are exact (never quantized). */
#include "traj/checkpoint.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "traj/format.h"
#include "traj/traj.h"

/* The rename is durable once the directory entry is on disk too. */
static void sync_dir(const char *path)
{
    char *copy = strdup(path);
    if (!copy)
        return;
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        if (fsync(fd)) { /* some file systems cannot sync directories; the data is synced */
        }
        close(fd);
    }
    free(copy);
}

/* The file that path names: symbolic links are followed (also a dangling one, whose target
 * the save creates), so that the rename replaces the target, not the link. NULL with the
 * message set on failure. */
static char *link_target(const char *path)
{
    char *cur = strdup(path);
    for (int hops = 0; cur && hops < 40; hops++) {
        struct stat st;
        if (lstat(cur, &st) || !S_ISLNK(st.st_mode))
            return cur;
        char to[PATH_MAX];
        ssize_t n = readlink(cur, to, sizeof to - 1);
        if (n < 0) {
            carlo_seterr("cannot write checkpoint %s: reading the link %s failed: %s", path, cur,
                         strerror(errno));
            free(cur);
            return NULL;
        }
        to[n] = 0;
        char *next;
        if (to[0] == '/') {
            next = strdup(to);
        } else { /* relative to the link's directory */
            char *copy = strdup(cur);
            const char *d = copy ? dirname(copy) : NULL;
            size_t len = d ? strlen(d) + (size_t)n + 2 : 0;
            next = d ? malloc(len) : NULL;
            if (next)
                snprintf(next, len, "%s/%s", d, to);
            free(copy);
        }
        free(cur);
        cur = next;
    }
    if (cur) {
        carlo_seterr("cannot write checkpoint %s: too many levels of symbolic links", path);
        free(cur);
    } else {
        carlo_seterr("cannot write checkpoint %s: out of host memory", path);
    }
    return NULL;
}

/* A temporary checkpoint left behind: a regular file that is empty or starts as a .ctr file. */
static int looks_like_temp(const char *path)
{
    struct stat st;
    if (lstat(path, &st) || !S_ISREG(st.st_mode))
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char head[8];
    ssize_t n = read(fd, head, sizeof head);
    close(fd);
    return n >= 0 && memcmp(head, CTR_MAGIC, (size_t)n) == 0;
}

/* A process that exists and is not a zombie (a killed process not yet reaped writes no more). */
static int process_alive(pid_t pid)
{
    if (kill(pid, 0) && errno == ESRCH)
        return 0;
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *paren = strrchr(buf, ')'); /* "pid (name) S ..." */
    return !(paren && paren[1] == ' ' && paren[2] == 'Z');
}

/* Temporary files PATH.tmpPID of processes that are gone (killed while saving) are removed
 * at the next save of the same path; those of live processes are theirs. */
static void clean_stale(const char *target)
{
    char *dcopy = strdup(target), *bcopy = strdup(target);
    const char *dname = dcopy ? dirname(dcopy) : NULL;
    DIR *dir = dname && bcopy ? opendir(dname) : NULL;
    if (dir) {
        const char *base = basename(bcopy);
        size_t blen = strlen(base);
        struct dirent *de;
        while ((de = readdir(dir))) {
            const char *n = de->d_name;
            if (strncmp(n, base, blen) || strncmp(n + blen, ".tmp", 4) ||
                !isdigit((unsigned char)n[blen + 4]))
                continue;
            char *end;
            errno = 0;
            long pid = strtol(n + blen + 4, &end, 10);
            if (*end || errno || pid <= 0 || pid > INT_MAX || pid == (long)getpid())
                continue;
            if (process_alive((pid_t)pid))
                continue; /* its save may be under way */
            size_t len = strlen(dname) + strlen(n) + 2;
            char *stale = malloc(len);
            if (stale) {
                snprintf(stale, len, "%s/%s", dname, n);
                if (looks_like_temp(stale))
                    unlink(stale);
                free(stale);
            }
        }
        closedir(dir);
    }
    free(dcopy);
    free(bcopy);
}

int traj_checkpoint_save(const char *path, const carlo_frame *f)
{
    char *target = link_target(path);
    if (!target)
        return -1;
    /* the rename would replace the file under an open writer and discard its frames */
    if (traj_open_for_writing(target)) {
        carlo_seterr("cannot write checkpoint %s: it is open for writing as a trajectory (by "
                     "carlo.trajectory); close it first, or save the checkpoint elsewhere", path);
        free(target);
        return -1;
    }
    clean_stale(target);
    size_t plen = strlen(target);
    char *tmp = carlo_malloc(plen + 32, "a file name");
    if (!tmp) {
        free(target);
        return -1;
    }
    snprintf(tmp, plen + 32, "%s.tmp%ld", target, (long)getpid());
    traj_options o;
    traj_options_init(&o);
    o.quiet = 1;
    char why[1024];
    traj_file *t = traj_open(tmp, 'w', &o);
    if (!t) {
        snprintf(why, sizeof why, "%s", carlo_errmsg());
        unlink(tmp); /* ours (the name holds our PID), should the open have left it */
        carlo_seterr("cannot write checkpoint %s: %s", path, why);
        free(tmp);
        free(target);
        return -1;
    }
    int bad = traj_write(t, f);
    bad = traj_close(t) || bad; /* close flushes, writes the index and fsyncs */
    if (!bad && rename(tmp, target)) {
        carlo_seterr("cannot write checkpoint %s: rename from %s failed: %s", path, tmp,
                     strerror(errno));
        bad = 2;
    } else if (bad) {
        snprintf(why, sizeof why, "%s", carlo_errmsg());
        carlo_seterr("cannot write checkpoint %s: %s; the previous checkpoint (if any) is intact",
                     path, why);
    }
    if (bad)
        unlink(tmp);
    else
        sync_dir(target);
    free(tmp);
    free(target);
    return bad ? -1 : 0;
}

int traj_checkpoint_load(const char *path, carlo_frame *out)
{
    carlo_frame_init(out);
    traj_options o;
    traj_options_init(&o);
    o.quiet = 1;
    traj_file *t = traj_open(path, 'r', &o);
    if (!t)
        return -1;
    uint64_t n = traj_count(t);
    int rc = n == 0 ? carlo_seterr("checkpoint %s holds no complete frame", path)
                    : traj_read_frame(t, n - 1, out);
    traj_close(t);
    return rc;
}
