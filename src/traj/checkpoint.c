/* checkpoint.c — see checkpoint.h. Checkpoints are exact (never quantized). */
#include "traj/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
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

int traj_checkpoint_save(const char *path, const carlo_frame *f)
{
    size_t plen = strlen(path);
    char *tmp = carlo_malloc(plen + 32, "a file name");
    if (!tmp)
        return -1;
    snprintf(tmp, plen + 32, "%s.tmp%ld", path, (long)getpid());
    traj_options o;
    traj_options_init(&o);
    o.quiet = 1;
    char why[1024];
    traj_file *t = traj_open(tmp, 'w', &o);
    if (!t) {
        snprintf(why, sizeof why, "%s", carlo_errmsg());
        carlo_seterr("cannot write checkpoint %s: %s", path, why);
        free(tmp);
        return -1;
    }
    int bad = traj_write(t, f);
    bad = traj_close(t) || bad; /* close flushes, writes the index and fsyncs */
    if (!bad && rename(tmp, path)) {
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
        sync_dir(path);
    free(tmp);
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
