/* traj_fuzz — libFuzzer target for the .ctr reader: any bytes are opened as a trajectory and
 * as a checkpoint, every frame's chunks are read; the reader may refuse the input but must
 * not crash, leak, read out of bounds or allocate beyond what the bytes can decode to.
 * Built by `make build/fuzz/traj_fuzz` with clang; run by tests/validation/traj_fuzz.sh. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/error.h"
#include "traj/checkpoint.h"
#include "traj/traj.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("ctr", 0);
        if (fd < 0)
            abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
        abort();
    traj_options o;
    traj_options_init(&o);
    o.quiet = 1;
    traj_file *t = traj_open(path, 'r', &o);
    if (t) {
        uint64_t n = traj_count(t);
        for (uint64_t k = 0; k < n && k < 16; k++) {
            traj_frame_info info;
            if (traj_frame_info_get(t, k, &info))
                continue;
            carlo_frame f;
            if (traj_read_frame(t, k, &f) == 0)
                carlo_frame_free(&f);
            if (info.nchunks > 0) { /* the caller's-buffer path, with a buffer too small */
                char small[16];
                traj_read_chunk(t, k, info.chunk[0].name, info.chunk[0].type, 0, 0, small, sizeof small);
            }
        }
        traj_close(t);
    }
    carlo_frame f;
    if (traj_checkpoint_load(path, &f) == 0)
        carlo_frame_free(&f);
    return 0;
}
