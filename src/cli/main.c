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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "Usage: ropelab COMMAND [OPTIONS]\n"
    "\n"
    "Position encodings in softmax and linear attention (RoPE in linear attention:\n"
    "RoFormer eq. 19), with a small transformer trainer and experiment runner.\n"
    "\n"
    "Commands:\n"
    "  run EXPERIMENT.ini   train and evaluate the experiment (sweeps, evaluation lengths);\n"
    "                       run NAME: a shipped one (run --list)\n"
    "  attn                 run one attention kernel on .npy arrays (forward, backward)\n"
    "  bench                kernel and training throughput benchmarks\n"
    "  report RUN_DIR       tables and plots from a finished run\n"
    "  eval RUN_DIR|CKPT    evaluate a finished run or a checkpoint again (lengths, sliding\n"
    "                       windows, RoPE extension by PI / NTK / YaRN)\n"
    "  generate CHECKPOINT  continue a prompt with a trained language model\n"
    "\n"
    "Options:\n"
    "  -h, --help           show this help (ropelab COMMAND --help for a command)\n"
    "  -V, --version        show version, BLIS kernel set and build options\n"
    "\n"
    "Exit status: 0 success, 1 failure, 2 usage error.\n";

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
    thread_env(argv);
    if (argc < 2) {
        fputs(usage, stderr);
        return RL_EXIT_USAGE;
    }
    const char *c = argv[1];
    if (!strcmp(c, "-h") || !strcmp(c, "--help") || !strcmp(c, "help")) {
        fputs(usage, stdout);
        return RL_EXIT_OK;
    }
    if (!strcmp(c, "-V") || !strcmp(c, "--version")) return version();
    if (!strcmp(c, "run")) return rl_cmd_run(argc - 1, argv + 1);
    if (!strcmp(c, "attn")) return rl_cmd_attn(argc - 1, argv + 1);
    if (!strcmp(c, "bench")) return rl_cmd_bench(argc - 1, argv + 1);
    if (!strcmp(c, "report")) return rl_cmd_report(argc - 1, argv + 1);
    if (!strcmp(c, "eval")) return rl_cmd_eval(argc - 1, argv + 1);
    if (!strcmp(c, "generate")) return rl_cmd_generate(argc - 1, argv + 1);
    if (c[0] == '-') return rl_usage_error(NULL, "unknown option '%s'", c);
    static const char *const commands[] = {"run",  "attn",     "bench", "report",
                                           "eval", "generate", "help",  NULL};
    const char              *near       = rl_suggest(c, commands);
    if (near) return rl_usage_error(NULL, "unknown command '%s' (did you mean '%s'?)", c, near);
    return rl_usage_error(NULL, "unknown command '%s'", c);
}
