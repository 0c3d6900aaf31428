/* main.c — the carlo command: runs a Lua script, a -e chunk, or an interactive prompt,
 * with the carlo module loaded. Errors exit 1 with a traceback; Ctrl-C stops a run at the
 * next sweep boundary, closes every log and trajectory, and exits 130. */
#include <lauxlib.h>
#include <lualib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "carlo.h"
#include "core/device.h"
#include "core/error.h"
#include "core/progress.h"
#include "mpi/mpi.h"
#include "runtime.h"
#include "traj/export.h"

static lua_State *global_L;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: carlo [options] [script.lua [args...]]\n"
            "       carlo -e 'chunk'            run a chunk of Lua\n"
            "       carlo                       interactive prompt (on a terminal)\n"
            "       carlo export IN.ctr OUT     a trajectory as OUT.gsd, OUT.xyz[.gz] or OUT.png\n"
            "options:\n"
            "  --device auto|cpu|gpu   default device for systems (auto: the GPU when present)\n"
            "  --quiet                 no progress lines or notices on stderr\n"
            "  --devices               list the CPU threads and GPUs, then exit\n"
            "  --version               print the version, then exit\n"
            "  -i                      enter the prompt after running the script or chunk\n"
            "  -                       read the script from standard input\n"
            "The module is in the global 'carlo' (and require \"carlo\"); see carlo(1), carlo-lua(7),\n"
            "carlo-traj(5).\n");
}

/* Ctrl-C: C loops poll carlo_interrupted at sweep boundaries; a hook stops pure Lua code. */
static void stop_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    lua_sethook(L, NULL, 0, 0);
    luaL_error(L, "interrupted");
}

static void on_sigint(int sig)
{
    signal(sig, SIG_DFL); /* a second Ctrl-C kills at once */
    carlo_interrupted = 1;
    if (global_L)
        lua_sethook(global_L, stop_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

/* Under mpirun an error or Ctrl-C on one rank stops them all (carlo_mpi_abort, below), with
 * the message printed once: rank 0 prints at once; another rank waits a moment, so that when
 * rank 0 failed too (the same script line everywhere) its abort ends the wait unprinted. */
static int report(carlo_runtime *rt, int failed)
{
    if (!failed)
        return 0;
    char who[64] = "carlo";
    if (carlo_mpi_size() > 1 && carlo_mpi_rank() != 0) {
        struct timespec wait = {0, 500000000};
        nanosleep(&wait, NULL);
        snprintf(who, sizeof who, "carlo (rank %d of %d)", carlo_mpi_rank(), carlo_mpi_size());
    }
    if (carlo_interrupted) {
        fprintf(stderr, "%s: interrupted\n", who);
        return 130;
    }
    fprintf(stderr, "%s: %s\n", who, carlo_error(rt));
    return 1;
}

static int print_devices(void)
{
    if (carlo_mpi_init(NULL, NULL)) { /* under mpirun each rank prints its own list */
        fprintf(stderr, "carlo: %s\n", carlo_errmsg());
        return 1;
    }
    carlo_runtime *rt = carlo_open();
    if (!rt) {
        carlo_mpi_finalize();
        return 1;
    }
    printf("carlo %s\n", carlo_version());
    if (carlo_threads_fixed())
        printf("cpu: %d threads (OpenMP; fixed by OMP_NUM_THREADS)\n", carlo_threads_fixed());
    else
        printf("cpu: %d threads (OpenMP); each system runs on 1 or %d, whichever it measures "
               "faster (a busy machine gets 1); carlo.threads(n) or OMP_NUM_THREADS fixes the "
               "count\n", carlo_threads_all(), carlo_threads_all());
    printf("cuda: %s\n", carlo_gpu_runtime());
    int n = carlo_gpu_count();
    if (n == 0)
        printf("gpu: none\n");
    for (int i = 0; i < n; i++) {
        carlo_gpu_info g;
        if (carlo_gpu_info_get(i, &g) == 0)
            printf("gpu %d: %s, %.1f GiB, %d SMs, compute capability %d.%d%s\n", i, g.name,
                   (double)g.memory_bytes / 1073741824.0, g.sm_count, g.cc_major, g.cc_minor,
                   i == carlo_gpu_pick() && n > 1 ? " (this process's)" : "");
    }
    if (carlo_mpi_size() > 1) { /* under mpirun: this rank and its GPU (carlo_gpu_pick) */
        printf("mpi: rank %d of %d, rank %d on its node", carlo_mpi_rank(), carlo_mpi_size(),
               carlo_mpi_local_rank());
        if (n > 0)
            printf(", runs on gpu %d\n", carlo_gpu_pick());
        else
            printf(", no GPU\n");
    }
    fflush(stdout);
    carlo_close(rt);
    carlo_mpi_finalize();
    return 0;
}

/* A line that is an expression prints its values, as in lua's prompt. */
static void repl(carlo_runtime *rt)
{
    lua_State *L = carlo_lua(rt);
    char line[8192];
    printf("carlo %s (Lua 5.4) — the module is 'carlo'; Ctrl-D leaves\n", carlo_version());
    for (;;) {
        fputs("> ", stdout);
        fflush(stdout);
        if (!fgets(line, sizeof line, stdin))
            break;
        carlo_interrupted = 0;
        lua_settop(L, 0);
        lua_pushfstring(L, "return %s", line);
        int status = luaL_loadbuffer(L, lua_tostring(L, -1), lua_rawlen(L, -1), "=stdin");
        if (status != LUA_OK) {
            lua_settop(L, 0);
            status = luaL_loadbuffer(L, line, strlen(line), "=stdin");
        } else {
            lua_remove(L, 1);
        }
        if (status == LUA_OK)
            status = carlo_pcall(L, 0, LUA_MULTRET);
        int n = lua_gettop(L);
        if (status != LUA_OK) {
            fprintf(stderr, "%s\n", lua_tostring(L, -1));
        } else if (n > 0) {
            for (int i = 1; i <= n; i++) {
                fputs(luaL_tolstring(L, i, NULL), stdout);
                lua_pop(L, 1);
                fputs(i < n ? "\t" : "\n", stdout);
            }
        }
        lua_settop(L, 0);
    }
    fputs("\n", stdout);
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "export") == 0)
        return traj_export_main(argc - 1, argv + 1);
    const char *chunk = NULL;
    int interactive = 0, i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        } else if (strcmp(a, "-e") == 0) {
            if (++i >= argc) {
                usage(stderr);
                return 1;
            }
            chunk = argv[i];
        } else if (strcmp(a, "-i") == 0) {
            interactive = 1;
        } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
            carlo_quiet = 1;
        } else if (strcmp(a, "--device") == 0 || strncmp(a, "--device=", 9) == 0) {
            const char *d = a[8] == '=' ? a + 9 : (++i < argc ? argv[i] : NULL);
            if (!d || (strcmp(d, "auto") && strcmp(d, "cpu") && strcmp(d, "gpu"))) {
                fprintf(stderr, "carlo: --device takes auto, cpu or gpu\n");
                return 1;
            }
            carlo_device_set_default(d);
        } else if (strcmp(a, "--version") == 0 || strcmp(a, "-v") == 0) {
            printf("carlo %s (Lua 5.4)\n", carlo_version());
            return 0;
        } else if (strcmp(a, "--devices") == 0) {
            return print_devices();
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "carlo: unknown option %s\n", a);
            usage(stderr);
            return 1;
        }
    }
    if (carlo_mpi_init(NULL, NULL)) {
        fprintf(stderr, "carlo: %s\n", carlo_errmsg());
        return 1;
    }
    if (carlo_mpi_rank() != 0)
        carlo_quiet = 1; /* progress lines and notices from rank 0 only */
    /* ranks sharing a machine share its cores, unless OMP_NUM_THREADS says otherwise: threads
     * that spin-wait on more threads than cores stall every collective */
    if (carlo_mpi_size() > 1 && !getenv("OMP_NUM_THREADS")) {
        int local = carlo_mpi_local_size(), all = carlo_threads_all();
        carlo_threads_fix(all / local > 1 ? all / local : 1);
    }
    carlo_runtime *rt = carlo_open();
    if (!rt) {
        fprintf(stderr, "carlo: cannot create the Lua state\n");
        carlo_mpi_abort(1);
        return 1;
    }
    /* "--device gpu" without a GPU is an error now, not at the first system */
    carlo_device_kind kind;
    if (strcmp(carlo_device_default(), "auto") != 0 && carlo_device_resolve(NULL, &kind)) {
        fprintf(stderr, "carlo: --device %s: %s\n", carlo_device_default(), carlo_errmsg());
        carlo_close(rt);
        carlo_mpi_finalize();
        return 1;
    }
    global_L = carlo_lua(rt);
    signal(SIGINT, on_sigint);

    int rc = 0;
    if (chunk)
        rc = report(rt, carlo_dostring(rt, chunk, "=(command line)"));
    if (rc == 0 && i < argc) {
        const char *script = strcmp(argv[i], "-") == 0 ? NULL : argv[i];
        rc = report(rt, carlo_dofile(rt, script, argc - i - 1, argv + i + 1));
    } else if (rc == 0 && !chunk) {
        if (isatty(0))
            interactive = 1;
        else
            rc = report(rt, carlo_dofile(rt, NULL, 0, NULL));
    }
    if (rc == 0 && interactive)
        repl(rt);
    global_L = NULL;
    signal(SIGINT, SIG_DFL);
    /* a Ctrl-C hook that has not fired yet must not fire inside the finalizers below, which
     * would stop a trajectory's close half-way (its index unwritten) */
    lua_sethook(carlo_lua(rt), NULL, 0, 0);
    carlo_close(rt); /* finalizers flush logs and trajectories */
    if (rc != 0 && carlo_mpi_size() > 1) {
        fflush(NULL);
        carlo_mpi_abort(rc); /* the other ranks may wait in a collective for this one */
    }
    carlo_mpi_finalize();
    return rc;
}
