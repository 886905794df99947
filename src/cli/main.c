/* main.c -- the ropelab program: subcommand dispatch. */
#include "config.h"
#include "cli.h"
#include "datadir.h"
#include "opts.h"
#include "../core/gemm.h"
#include "../core/threads.h"
#include "../core/init.h"
#include "../core/mpi.h"
#include "../core/tilemm.h"
#include "../core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The commands: name, what follows it in the usage, what it does. */
static const struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *args, *help;
} commands[] = {
    {"run", rl_cmd_run, "EXPERIMENT.ini",
     "train and evaluate the experiment (sweeps, evaluation lengths); run NAME: a shipped one "
     "(run --list)"},
    {"attn", rl_cmd_attn, "", "run one attention kernel on .npy arrays (forward, backward)"},
    {"bench", rl_cmd_bench, "", "kernel and training throughput benchmarks"},
    {"report", rl_cmd_report, "RUN_DIR", "tables and plots from a finished run"},
    {"eval", rl_cmd_eval, "RUN_DIR|CKPT",
     "evaluate a finished run or a checkpoint again (lengths, sliding windows, RoPE extension "
     "by PI / NTK / YaRN)"},
    {"generate", rl_cmd_generate, "CHECKPOINT|RUN_DIR",
     "continue a prompt with a trained language model"},
    {NULL, NULL, NULL, NULL}};

struct main_args {
    int help, version;
};

/* --help is a flag here: the usage has the commands too */
static const struct rl_opt main_opts[] = {
    RL_OPT_FLAG("help", 'h', struct main_args, help, 1,
                "show this help (ropelab COMMAND --help for a command)"),
    RL_OPT_FLAG("version", 'V', struct main_args, version, 1,
                "show version, BLIS kernel set and build options"),
    RL_OPT_END};

static const struct rl_command main_command = {
    NULL, main_opts,
    "\n"
    "Options:\n",
    "\n"
    "Exit status: 0 success, 1 failure, 2 usage error.\n",
    1};

static void usage(FILE *f)
{
    fputs("Usage: ropelab COMMAND [OPTIONS]\n"
          "\n"
          "Position encodings in softmax and linear attention (RoPE in linear attention:\n"
          "RoFormer eq. 19), with a small transformer trainer and experiment runner.\n"
          "\n"
          "Commands:\n",
          f);
    for (const struct command *c = commands; c->name; c++) {
        int n = fprintf(f, "  %s %s", c->name, c->args);
        n += fprintf(f, "%*s", n < 23 ? 23 - n : 1, "");
        rl_opts_wrap(f, c->help, n, 23);
    }
    rl_opts_usage(f, &main_command);
}

static int version(void)
{
    rl_init(0);
    printf("ropelab %s\n", PACKAGE_VERSION);
    printf("BLIS kernels: %s (%s)\n", rl_blis_arch(), rl_blis_arch_reason());
    if (rl_blis_env_warning()) printf("BLIS settings: %s\n", rl_blis_env_warning());
    printf("BLIS paths: %s\n", rl_blis_sup_policy());
    printf("attention tile products: %s\n", rl_tile_kernel());
    printf("threads: %d\n", rl_threads_get());
    printf("shipped experiments: %s/experiments (ropelab run --list)\n", rl_cli_datadir());
#ifdef RL_GNUPLOT
    printf("gnuplot: %s\n", RL_GNUPLOT);
#else
    printf("gnuplot: not found at configure time (plots skipped)\n");
#endif
    if (rl_mpi_built_in())
        printf("MPI: built in (%s): mpirun -np K ropelab run ...\n", rl_mpi_library());
    else
        printf("MPI: not built in (configure --with-mpi and Open MPI's libopenmpi-dev)\n");
    return RL_EXIT_OK;
}

/* Threads that hold up when the machine is busy.  The OpenMP runtime (libgomp, which BLIS
 * uses too) reads its settings when it is loaded, before main: unless the user chose,
 * ropelab sets OMP_PROC_BIND=true (one thread per core, not two on one core while the
 * other idles) and GOMP_SPINCOUNT=10000 (a thread waiting at a barrier spins for some
 * microseconds, then sleeps, instead of spinning for a long time on a core another thread
 * or process needs), and runs itself again so that they take effect.  ROPELAB_THREAD_ENV
 * marks the second start; set it yourself to keep the runtime's defaults. */
static void thread_env(char **argv)
{
    const char *pre = getenv("LD_PRELOAD");
    if (getenv("ROPELAB_THREAD_ENV") || (pre && strstr(pre, "vgpreload"))) return; /* valgrind */
    int changed = 0;
    if (!getenv("OMP_PROC_BIND") && !getenv("OMP_PLACES"))
        changed |= setenv("OMP_PROC_BIND", "true", 1) == 0;
    if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT"))
        changed |= setenv("GOMP_SPINCOUNT", "10000", 1) == 0;
    if (!changed) return;
    setenv("ROPELAB_THREAD_ENV", "1", 1);
    rl_affinity_widen_to_places(); /* else the new process inherits a one-core binding */
    fflush(NULL);
    execv("/proc/self/exe", argv); /* on failure: go on with the runtime's defaults */
}

int main(int argc, char **argv)
{
    struct main_args a    = {0};
    int              next = 0, rc;
    thread_env(argv);
    if ((rc = rl_opts_parse(&main_command, &a, argc, argv, &next)) != RL_OPTS_GO_ON) return rc;
    if (a.help || (next < argc && !strcmp(argv[next], "help"))) {
        usage(stdout);
        return RL_EXIT_OK;
    }
    if (a.version) return version();
    if (next >= argc) {
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    struct rl_near near;
    rl_near_init(&near, argv[next]);
    for (const struct command *c = commands; c->name; c++) {
        if (!strcmp(argv[next], c->name)) return c->run(argc - next, argv + next);
        rl_near_offer(&near, c->name);
    }
    rl_near_offer(&near, "help");
    if (near.best)
        return rl_usage_error(NULL, "unknown command '%s' (did you mean '%s'?)", argv[next],
                              near.best);
    return rl_usage_error(NULL, "unknown command '%s'", argv[next]);
}
