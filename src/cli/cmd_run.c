/* cmd_run.c -- `ropelab run EXPERIMENT.ini`: read the configuration, check every sweep
 * point, train and evaluate them in OUT/<name>/, write the experiment's tables and plots
 * (docs/experiments.md; experiment.h).  Under mpirun every rank runs this; a rank that fails ends
 * the job (MPI_Abort) after printing its message.
 * Exit status: 0 success, 1 runtime failure (data, I/O, numerics), 2 usage or
 * configuration error (found before anything runs). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity */
#endif
#include "config.h"
#include "../config/cfg.h"
#include "cli.h"
#include "datadir.h"
#include "interrupt.h"
#include "opts.h"
#include "../experiment/experiment.h"
#include "../core/threads.h"
#include "../core/mpi.h"
#include "../core/util.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct run_args {
    char         ini_path[4096]; /* the experiment file found (a shipped one by its name) */
    const char  *ini, *out;
    int          threads, resume, quiet, n_set, stop_after, list;
    const char **set;  /* the --set assignments in order (argc entries) */
    int          argc; /* the command line, for the command that resumes a stopped run */
    char       **argv;
};

static int add_set(void *args, const struct rl_opt *row, const char *value)
{
    struct run_args *a = args;
    a->set[a->n_set++] = value;
    (void)row;
    return RL_EXIT_OK;
}

#define A struct run_args
static const struct rl_opt run_opts[] = {
    RL_OPT_OPERAND_OPTIONAL("EXPERIMENT.ini|NAME", A, ini),
    RL_OPT_STRING("out", A, out, "DIR",
                  "parent of the run directory (default: [experiment] out, 'runs')"),
    RL_OPT_INT("threads", A, threads, 1, 4096, "N",
               "threads (default: [experiment] threads, all cores; at most the cores); results "
               "are bit-identical for every N, so training lowers N while another process takes "
               "a core (not with OMP_DYNAMIC=false)"),
    RL_OPT_CALL("set", add_set, "section.key=V",
                "override one key of the file (repeatable), e.g. --set model.pe=alibi --set "
                "train.steps=200; --set sweep.model.pe=none,rope adds a swept key"),
    RL_OPT_FLAG("resume", 0, A, resume, 1,
                "continue a stopped run: finished sweep points (those with results.csv) are "
                "skipped, an interrupted one continues from its latest checkpoint, bit for bit "
                "(the configuration must match, except out, threads and checkpoint_minutes)"),
    RL_OPT_INT("stop-after", A, stop_after, 1, 2147483647, "N",
               "stop after N updates in all, as an interrupt does (for tests and time-boxed "
               "runs; continue with --resume)"),
    RL_OPT_FLAG("list", 0, A, list, 1, "list the shipped experiments and where they are"),
    RL_OPT_FLAG("quiet", 'q', A, quiet, 1,
                "no progress lines (the headline table is still printed)"),
    RL_OPT_HELP,
    RL_OPT_END};
#undef A

static const struct rl_command run_command = {
    "run", run_opts,
    "Usage: ropelab run EXPERIMENT.ini|NAME [--out DIR] [--threads N] [--set "
    "section.key=value]...\n"
    "                   [--resume] [--stop-after N] [-q]\n"
    "       ropelab run --list\n"
    "(every option with a value takes it as --opt VALUE or --opt=VALUE)\n"
    "\n"
    "Train and evaluate the models the experiment describes; the run lives in OUT/<name>/\n"
    "(name: [experiment] name, default the INI file's stem).  With a [sweep] section every\n"
    "point of the cross product is a sub-run OUT/<name>/<key=value,...>/ (config.ini,\n"
    "metrics.jsonl, checkpoints/, results.csv), and OUT/<name>/ gets the combined\n"
    "results.csv, summary.md and plots/ (SVG, when gnuplot is installed); the headline\n"
    "table (accuracy, or perplexity for charlm and tokens) is printed at the end.  Every\n"
    "point is checked before anything trains.  NAME without a '/' that is not a file names\n"
    "a shipped experiment (ropelab run --list; e.g. ropelab run quickstart).\n"
    "\n"
    "Relative paths inside the file (data, init_from, out) are read against the file's\n"
    "directory; those of --set and --out against the working directory.\n"
    "\n"
    "Options:\n",
    "\n"
    "Stopping: Ctrl-C (SIGINT) or SIGTERM finishes the current update, saves a checkpoint\n"
    "of it and prints where it is and the command that continues (exit 130 or 143); a\n"
    "second signal stops at once.  A killed run (SIGKILL, a crash) loses at most\n"
    "train.checkpoint_minutes of training (default 10).\n"
    "\n"
    "Under MPI (mpirun -np K ropelab run ..., when built with Open MPI) the sweep's points\n"
    "are shared out over the ranks, or with train.data_parallel = true every point is\n"
    "trained by all ranks; without --threads each rank takes its share of the node's\n"
    "cores (docs/scale-out.md).\n"
    "\n"
    "Every key, its default and meaning: docs/config.md; outputs: docs/experiments.md.\n"
    "Exit status: 0 success (also after --stop-after), 1 runtime failure, 2 usage or\n"
    "configuration error, 130 / 143 stopped by SIGINT / SIGTERM.\n",
    0};

/* File, overrides, command-line options (the combination checks run per sweep point). */
static rl_status load_config(struct rl_cfg *c, const struct run_args *a)
{
    rl_cfg_defaults(c);
    rl_status st = rl_cfg_load(c, a->ini);
    for (int i = 0; st == RL_OK && i < a->n_set; i++)
        st = rl_cfg_set(c, a->set[i]);
    if (st == RL_OK && a->out) st = rl_cfg_set_key(c, "experiment", "out", a->out, "--out");
    return st;
}

/* ---- MPI: ranks, threads per rank, one voice for configuration errors ---- */

static int affinity_cores(void)
{
    cpu_set_t set;
    return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
}

/* Threads when neither --threads nor [experiment] threads says: with several ranks on a
 * node, the cores the launcher bound this rank to, or (unbound) the node's cores shared
 * out over its ranks; 0 (all cores, or OMP_NUM_THREADS) otherwise. */
static int default_threads(void)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int  local = rl_mpi_local_size(), mine = affinity_cores();
    if (local == 1 || getenv("OMP_NUM_THREADS")) return 0;
    if (mine < cores) return mine;
    return cores / local > 1 ? (int)(cores / local) : 1;
}

static void warn_threads(int threads, int dp, long points)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int  local = rl_mpi_local_size(), mine = affinity_cores();
    if (rl_mpi_size() == 1 || rl_mpi_rank() != 0) return;
    if ((long)local * threads > cores)
        fprintf(stderr,
                "ropelab: warning: %d ranks x %d threads on this node exceed its %ld cores: "
                "the ranks slow each other down (use --threads N with ranks x N <= cores)\n",
                local, threads, cores);
    else if (threads > mine)
        fprintf(stderr,
                "ropelab: warning: %d threads per rank, but the launcher bound rank 0 to %d "
                "core%s: start mpirun with --bind-to none (or --map-by slot:PE=%d)\n",
                threads, mine, mine == 1 ? "" : "s", threads);
    if (!dp && points == 1)
        fprintf(stderr,
                "ropelab: warning: one point and train.data_parallel = false: rank 0 trains "
                "it, the other %d ranks have nothing to do\n",
                rl_mpi_size() - 1);
}

/* Every rank reads the configuration and checks every point.  A failure is printed once
 * (by rank 0, or by the ranks that failed when rank 0 did not) and every rank then leaves
 * with an error status, so no rank waits for another. */
static int agree(int rc, const char *msg)
{
    double v[2] = {rc != RL_EXIT_OK, rl_mpi_rank() == 0 && rc != RL_EXIT_OK};
    if (rl_mpi_sum_doubles(v, 2) != RL_OK) rl_mpi_abort(RL_EXIT_FAIL);
    if (rc != RL_EXIT_OK && (rl_mpi_rank() == 0 || v[1] == 0)) {
        if (rl_mpi_size() > 1 && rl_mpi_rank() > 0)
            fprintf(stderr, "ropelab: rank %d: %s\n", rl_mpi_rank(), msg);
        else
            fprintf(stderr, "ropelab: %s\n", msg);
    }
    return rc != RL_EXIT_OK ? rc : v[0] > 0 ? RL_EXIT_USAGE : RL_EXIT_OK;
}

/* A copy of ropelab without MPI started N times by a launcher would run the experiment N
 * times into the same directory. */
static int check_launch(void)
{
    const char *n = getenv("OMPI_COMM_WORLD_SIZE");
    if (!n) n = getenv("PMI_SIZE");
    if (!n) n = getenv("SLURM_STEP_NUM_TASKS"); /* set by srun for its tasks */
    if (!n || atoi(n) <= rl_mpi_size()) return RL_EXIT_OK;
    fprintf(stderr,
            rl_mpi_built_in()
                ? "ropelab: started as %s tasks, but MPI sees %d: under Slurm launch with srun "
                  "--mpi=pmix (or mpirun)\n"
                : "ropelab: started as %s tasks, but this ropelab was built without MPI "
                  "(%d rank): configure --with-mpi (docs/scale-out.md)\n",
            n, rl_mpi_size());
    return RL_EXIT_USAGE;
}

/* One line: why the run stopped, where its work is, and the command that continues it. */
static void print_stopped(const struct run_args *a, const struct rl_experiment_stop *w)
{
    char why[64], at[2900];
    int  sig = rl_cli_interrupt_signal();
    if (sig)
        snprintf(why, sizeof why, "interrupted (%s)", sig == SIGINT ? "SIGINT" : "SIGTERM");
    else
        snprintf(why, sizeof why, "stopped after %d updates (--stop-after%s)", a->stop_after,
                 rl_mpi_size() > 1 ? ", per rank" : "");
    const char *pt = w->point[0] ? w->point : "the run", *of = w->point[0] ? " of " : "";
    if (w->between)
        snprintf(at, sizeof at, "before %s started (the points before it are finished)", pt);
    else if (!w->checkpoint[0])
        snprintf(at, sizeof at, "before the first update of %s: nothing to save", pt);
    else if (w->step == w->steps)
        snprintf(at, sizeof at, "in the final evaluation of %s, whose training is complete (%s)",
                 pt, w->checkpoint);
    else
        snprintf(at, sizeof at, "at update %lld of %lld%s%s, saved in %s", (long long)w->step,
                 (long long)w->steps, of, w->point, w->checkpoint);
    printf("%s %s; continue with: ", why, at);
    rl_cli_print_resume(stdout, a->argc, a->argv);
    fflush(stdout);
}

static int run(struct rl_cfg *c, const struct run_args *a)
{
    /* from the start: a signal while the points are checked stops before the first */
    volatile sig_atomic_t *stop =
        rl_cli_interrupt_install("at the end of this update to save a checkpoint");
    rl_experiment *e  = NULL;
    rl_status      st = load_config(c, a);
    int            rc = st == RL_OK ? RL_EXIT_OK : RL_EXIT_USAGE;
    if (st == RL_OK) {
        int n = a->threads ? a->threads : c->experiment.threads;
        rl_cli_threads("run", n ? n : default_threads());
        c->experiment.threads = rl_threads_get(); /* the effective count, in config.ini */
        st                    = rl_experiment_prepare(&e, c);
        rc = st == RL_OK ? RL_EXIT_OK : st == RL_EINVAL ? RL_EXIT_USAGE : RL_EXIT_FAIL;
    }
    if ((rc = agree(rc, rl_last_error())) != RL_EXIT_OK) return rl_experiment_free(e), rc;
    warn_threads(c->experiment.threads, c->train.data_parallel, rl_experiment_points(e));
    struct rl_experiment_stop where;
    memset(&where, 0, sizeof where);
    struct rl_experiment_opts o       = {.resume     = a->resume,
                                         .stop_after = a->stop_after,
                                         .out        = stdout,
                                         .quiet      = a->quiet,
                                         .stop       = stop,
                                         .where      = &where};
    int                       stopped = 0;
    st                                = rl_experiment_run(e, &o, &stopped);
    rl_experiment_free(e);
    if (st != RL_OK) {
        /* one failing rank ends the job: the others may be waiting for it */
        if (rl_mpi_size() > 1)
            fprintf(stderr, "ropelab: rank %d of %d: %s\n", rl_mpi_rank(), rl_mpi_size(),
                    rl_last_error());
        else
            fprintf(stderr, "ropelab: %s\n", rl_last_error());
        fflush(stdout), fflush(stderr);
        rl_mpi_abort(RL_EXIT_FAIL);
        return RL_EXIT_FAIL;
    }
    if (stopped && rl_mpi_rank() == 0) print_stopped(a, &where);
    return stopped && rl_cli_interrupt_signal() ? rl_cli_interrupt_status() : RL_EXIT_OK;
}

/* After the options: --list lists, else the experiment file, or a shipped one by name. */
static int find_experiment(struct run_args *a, int argc, char **argv)
{
    a->argc = argc, a->argv = argv;
    if (a->list) return rl_cli_list_experiments(stdout) == RL_EXIT_OK ? RL_EXIT_OK : RL_EXIT_FAIL;
    if (!a->ini) return rl_usage_error("run", "missing EXPERIMENT.ini");
    if (!rl_cli_find_experiment(a->ini, a->ini_path, sizeof a->ini_path) && !strchr(a->ini, '/'))
        return rl_usage_error("run",
                              "%s: no such file, nor a shipped experiment in %s/experiments "
                              "(ropelab run --list shows them)",
                              a->ini, rl_cli_datadir());
    a->ini = a->ini_path;
    return RL_OPTS_GO_ON;
}

int rl_cmd_run(int argc, char **argv)
{
    struct run_args a = {0};
    a.set             = calloc((size_t)argc + 1, sizeof *a.set);
    struct rl_cfg *c  = malloc(sizeof *c);
    int rc = a.set && c ? rl_opts_parse(&run_command, &a, argc, argv, NULL) : RL_EXIT_FAIL;
    if (rc == RL_OPTS_GO_ON) rc = find_experiment(&a, argc, argv);
    if (rc != RL_OPTS_GO_ON) {
        free(c), free(a.set);
        return rc;
    }
    rc = RL_EXIT_OK;
    if (rl_mpi_init(NULL, NULL) != RL_OK) {
        fprintf(stderr, "ropelab: %s\n", rl_last_error());
        rc = RL_EXIT_FAIL;
    }
    if (rc == RL_EXIT_OK) rc = check_launch();
    if (rc == RL_EXIT_OK) rc = run(c, &a);
    rl_mpi_finalize();
    free(c);
    free(a.set);
    return rc;
}
