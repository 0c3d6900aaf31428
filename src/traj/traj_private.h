/* traj_private.h — what the three parts of the container share: traj.c (opening, the
 * layout, recovery, closing), traj_write.c (the writer thread) and traj_read.c (reading
 * frames). Private to src/traj. */
#ifndef CARLO_TRAJ_PRIVATE_H
#define CARLO_TRAJ_PRIVATE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "traj/pool.h"
#include "traj/traj.h"

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
    dev_t dev;           /* the file itself (the registry of open writers compares these) */
    ino_t ino;
    int header_damaged;  /* the file header failed its CRC: frames were found by scanning */
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

int traj_io_fail(traj_file *t, const char *what);
int traj_pread_all(int fd, void *buf, size_t n, uint64_t off);
int traj_pwrite_all(int fd, const void *buf, size_t n, uint64_t off, int regular);
int traj_push_entry(traj_file *t, const entry *e);
int traj_name_ok(const char *name, size_t room);

/* traj_write.c */
void *traj_writer_main(void *arg);
int traj_write_index(traj_file *t);
void traj_free_job(job *j);
int traj_report_failure(traj_file *t);

#endif
