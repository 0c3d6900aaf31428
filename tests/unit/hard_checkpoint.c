/* unit/hard/checkpoint — a run of 2n sweeps and a run of n sweeps, checkpointed, restored and
 * run n more, end in bit-identical states (NVT and NPT, disks and spheres), all through the
 * system layer's operations table (carlo_run, ops->checkpoint, the registered model's restore);
 * a checkpoint whose cells were tampered with is refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/error.h"
#include "core/sys.h"
#include "hard/hard.h"
#include "traj/checkpoint.h"

static hard_system *make(int dim, int64_t N, double phi, int npt)
{
    double side = pow((double)N * hard_particle_volume(dim) / phi, 1.0 / dim);
    double L[3] = {side, side, side};
    hard_params p = {.dim = dim, .N = N, .box = carlo_box_make(dim, L), .device = CARLO_CPU,
                     .seed = 31, .init = HARD_INIT_RANDOM, .delta = 0.16, .moves_per_cell = 4,
                     .shuffle = 1, .quiet = 1, .pressure = npt ? (dim == 2 ? 6.0 : 4.0) : 0,
                     .dlnV = npt ? 2.0 / (double)N : 0};
    return hard_create(&p);
}

static int same_state(hard_system *a, hard_system *b)
{
    if (a->N != b->N || a->step != b->step || a->sweeps != b->sweeps || a->substeps != b->substeps ||
        a->npt != b->npt || a->pressure != b->pressure || a->dlnV != b->dlnV || a->sys.ops != b->sys.ops ||
        a->vsteps != b->vsteps || memcmp(a->box.L, b->box.L, sizeof a->box.L) ||
        memcmp(a->origin, b->origin, sizeof a->origin))
        return 0;
    double *xa = malloc(sizeof(double) * 3 * (size_t)a->N), *xb = malloc(sizeof(double) * 3 * (size_t)a->N);
    int same = hard_positions(a, xa) == 0 && hard_positions(b, xb) == 0 &&
               memcmp(xa, xb, sizeof(double) * 3 * (size_t)a->N) == 0;
    carlo_counts ca, cb;
    hard_counts_get(a, &ca);
    hard_counts_get(b, &cb);
    free(xa);
    free(xb);
    return same && memcmp(&ca, &cb, sizeof ca) == 0;
}

static void one(const char *name, int dim, int64_t N, double phi, int npt)
{
    char full[96], path[256];
    const char *tmp = getenv("CARLO_TEST_TMP");
    snprintf(path, sizeof path, "%s/hard-%s.ckpt", tmp ? tmp : "/tmp", name);
    hard_system *a = make(dim, N, phi, npt), *b = make(dim, N, phi, npt);
    snprintf(full, sizeof full, "unit/hard/checkpoint-%s", name);
    if (!a || !b) {
        CHECK(full, 0, "%s", carlo_errmsg());
        return;
    }
    char ops_name[96];
    snprintf(ops_name, sizeof ops_name, "unit/hard/ops-%s", name);
    CHECK(ops_name, a->sys.ops == (npt ? &hard_ops_npt : &hard_ops_nvt) && a->sys.ops->ncontrols == 1 + npt,
          "an %s system must have %s", npt ? "NPT" : "NVT",
          npt ? "the pressure and lambda controls" : "the lambda control only");
    carlo_advance(&a->sys, 400);
    carlo_advance(&b->sys, 200);
    carlo_frame f, g;
    carlo_frame_init(&f);
    int rc = b->sys.ops->checkpoint(&b->sys, &f) || traj_checkpoint_save(path, &f);
    carlo_frame_free(&f);
    hard_system *c = NULL;
    carlo_ops_register(&hard_ops_nvt);
    const carlo_ops *model = carlo_ops_find("hard");
    if (rc == 0 && model && traj_checkpoint_load(path, &g) == 0) {
        carlo_sys *r = model->restore(&g, CARLO_CPU);
        c = r ? (hard_system *)r : NULL;
        carlo_frame_free(&g);
    }
    if (!c) {
        CHECK(full, 0, "%s", carlo_errmsg());
    } else {
        carlo_advance(&c->sys, 200);
        CHECK(full, same_state(a, c), "the restored run differs from the straight one");
    }
    hard_destroy(a);
    hard_destroy(b);
    hard_destroy(c);
}

static void tampered(void)
{
    hard_system *s = make(2, 100, 0.5, 0);
    carlo_frame f;
    carlo_frame_init(&f);
    hard_checkpoint(s, &f);
    /* move one particle out of its cell */
    for (int i = 0; i < f.n; i++)
        if (strcmp(f.chunk[i].name, "hard/cells/count") == 0) {
            uint32_t *count = f.chunk[i].owned;
            for (uint64_t k = 0; k < f.chunk[i].rows; k++)
                if (count[k]) {
                    count[k]--;
                    break;
                }
        }
    hard_system *r = hard_restore(&f, CARLO_CPU);
    CHECK("unit/hard/checkpoint-tampered-refused", r == NULL && strstr(carlo_errmsg(), "slot"),
          "restored: %s", r ? "yes" : carlo_errmsg());
    hard_destroy(r);
    carlo_frame_free(&f);
    hard_destroy(s);
}

int main(void)
{
    one("disks-nvt", 2, 200, 0.60, 0);
    one("disks-npt", 2, 200, 0.60, 1);
    one("spheres-npt", 3, 500, 0.40, 1);
    tampered();
    return check_failed;
}
