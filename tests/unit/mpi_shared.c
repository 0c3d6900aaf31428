/* unit/mpi/shared — the MPI-3 shared staging and the notes of no bytes that the split GPU hard
 * particles use for their halo layers (carlo_mpi_shared_alloc, carlo_mpi_notify2), on the CPU.
 * Run alone (tests/run unit), or in a build without MPI, it is one process: no shared memory is
 * made and the notes are no-ops. Under mpirun (tests/mpi/mpi_shared.sh) every rank writes turn
 * after turn into its part, alternating two slots as the GPU staging does, notes both
 * neighbours on the ring, and reads both neighbours' slots of that turn; a value read before it
 * was written, or overwritten before it was read, fails. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mpi/mpi.h"

enum { TURNS = 2000, WORDS = 1024, TAG = 0x6d73 };

/* the word k of rank r's slot in turn t */
static uint32_t value(int r, int t, int k)
{
    return (uint32_t)r * 2654435761u ^ (uint32_t)t * 40503u ^ (uint32_t)k;
}

int main(int argc, char **argv)
{
    if (carlo_mpi_init(&argc, &argv)) {
        printf("FAIL unit/mpi/shared/init: MPI did not start\n");
        return 1;
    }
    const int rank = carlo_mpi_rank(), size = carlo_mpi_size();
    uint8_t *base[64] = {NULL};
    if (size > 64) {
        printf("SKIP unit/mpi/shared: %d ranks (64 at most here)\n", size);
        carlo_mpi_finalize();
        return 0;
    }
    const int made = carlo_mpi_shared_alloc(2 * WORDS * sizeof(uint32_t), base);
    /* without MPI, or not started by a launcher: one process, nothing shared, the notes no-ops */
    const int launched = getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
    if (!carlo_mpi_built() || !launched) {
        const int to[2] = {0, 0}, from[2] = {0, 0};
        const int rc = carlo_mpi_notify2(to, from, TAG);
        CHECK("unit/mpi/shared/alone", made == 0 && base[0] == NULL && rc == 0 && size == 1,
              "made %d, notes %d, %d ranks", made, rc, size);
        return check_failed;
    }
    CHECK("unit/mpi/shared/made", made == 1, "carlo_mpi_shared_alloc returned %d on rank %d", made, rank);
    if (made != 1) {
        carlo_mpi_finalize();
        return 1;
    }
    int ok = 1;
    for (int r = 0; r < size; r++)
        ok &= base[r] != NULL;
    CHECK("unit/mpi/shared/parts", ok, "a rank's part is missing on rank %d", rank);
    const int up = (rank + 1) % size, down = (rank + size - 1) % size;
    const int to[2] = {up, down}, from[2] = {down, up};
    int64_t bad = 0, first = -1;
    for (int t = 0; t < TURNS; t++) {
        uint32_t *mine = (uint32_t *)base[rank] + (t & 1) * WORDS;
        for (int k = 0; k < WORDS; k++)
            mine[k] = value(rank, t, k);
        if (carlo_mpi_notify2(to, from, TAG)) {
            bad++;
            break;
        }
        for (int j = 0; j < 2; j++) {
            const int r = from[j];
            const volatile uint32_t *theirs = (const uint32_t *)base[r] + (t & 1) * WORDS;
            for (int k = 0; k < WORDS; k++)
                if (theirs[k] != value(r, t, k)) {
                    if (first < 0)
                        first = t;
                    bad++;
                    break;
                }
        }
    }
    CHECK("unit/mpi/shared/turns", bad == 0, "%lld wrong reads on rank %d (the first in turn %lld)",
          (long long)bad, rank, (long long)first);
    carlo_mpi_finalize();
    return check_failed;
}
