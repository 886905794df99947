/* cmd_run.c -- `ropelab run EXPERIMENT.ini`: read the configuration, check every sweep
 * point, train and evaluate them in OUT/<name>/, write the experiment's tables and plots
 * (SPEC 5, 6; experiment.h).
 * Exit status: 0 success, 1 runtime failure (data, I/O, numerics), 2 usage or
 * configuration error (found before anything runs). */
#include "config.h"
#include "../experiment/cfg.h"
#include "cli.h"
#include "opts.h"
#include "../experiment/experiment.h"
#include "../core/gemm.h"
#include "../core/util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: ropelab run EXPERIMENT.ini [--out DIR] [--threads N] [--set section.key=value]... "
    "[--resume]\n"
    "(every option with a value takes it as --opt VALUE or --opt=VALUE)\n"
    "\n"
    "Train and evaluate the models the experiment describes; the run lives in OUT/<name>/\n"
    "(name: [experiment] name, default the INI file's stem).  With a [sweep] section every\n"
    "point of the cross product is a sub-run OUT/<name>/<key=value,...>/ (config.ini,\n"
    "metrics.jsonl, checkpoints/, results.csv), and OUT/<name>/ gets the combined\n"
    "results.csv, summary.md and plots/ (SVG, when gnuplot is installed); the accuracy\n"
    "table is printed at the end.  Every point is checked before anything trains.\n"
    "\n"
    "Options:\n"
    "  --out DIR              parent of the run directory (default: [experiment] out, 'runs')\n"
    "  --threads N            threads (default: [experiment] threads, all cores); results are\n"
    "                         bit-reproducible for a fixed N\n"
    "  --set section.key=V    override one key of the file (repeatable), e.g.\n"
    "                         --set model.pe=alibi --set train.steps=200;\n"
    "                         --set sweep.model.pe=none,rope adds a swept key\n"
    "  --resume               continue an interrupted run: finished sweep points (those with\n"
    "                         results.csv) are skipped, an interrupted one continues from its\n"
    "                         latest checkpoint (the configuration must match, except out\n"
    "                         and threads)\n"
    "  --stop-after N         stop after N updates in all, as if interrupted (for tests and\n"
    "                         time-boxed runs; continue with --resume)\n"
    "  -q, --quiet            no progress lines (the accuracy table is still printed)\n"
    "  -h, --help             show this help\n"
    "\n"
    "Every key, its default and meaning: docs/config.md; outputs: docs/experiments.md.\n"
    "Exit status: 0 success, 1 runtime failure, 2 usage or configuration error.\n";

struct run_args {
    const char  *ini, *out;
    int          threads, resume, quiet, n_set;
    long long    stop_after;
    const char **set;
};

static int parse_args(struct run_args *a, int argc, char **argv)
{
    enum { OPT_OUT = 256, OPT_THREADS, OPT_SET, OPT_STOP_AFTER, OPT_RESUME };
    static const struct option longs[] = {{"out", required_argument, NULL, OPT_OUT},
                                          {"threads", required_argument, NULL, OPT_THREADS},
                                          {"set", required_argument, NULL, OPT_SET},
                                          {"stop-after", required_argument, NULL, OPT_STOP_AFTER},
                                          {"resume", no_argument, NULL, OPT_RESUME},
                                          {"quiet", no_argument, NULL, 'q'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    optind = 0, opterr = 0; /* 0: glibc starts afresh; messages are ours */
    for (int c, n; (c = getopt_long(argc, argv, ":qh", longs, NULL)) != -1;) {
        switch (c) {
        case OPT_OUT:
            a->out = optarg;
            break;
        case OPT_THREADS:
            if (rl_parse_int("run", "--threads", optarg, 1, 4096, &a->threads))
                return RL_EXIT_USAGE;
            break;
        case OPT_SET:
            a->set[a->n_set++] = optarg;
            break;
        case OPT_STOP_AFTER:
            if (rl_parse_int("run", "--stop-after", optarg, 1, 2147483647, &n))
                return RL_EXIT_USAGE;
            a->stop_after = n;
            break;
        case OPT_RESUME:
            a->resume = 1;
            break;
        case 'q':
            a->quiet = 1;
            break;
        case 'h':
            fputs(usage, stdout);
            return -1;
        default:
            return rl_getopt_error("run", c, argv, optind);
        }
    }
    if (optind < argc) a->ini = argv[optind++];
    if (optind < argc)
        return rl_usage_error("run", "one experiment file expected, got '%s' and '%s'", a->ini,
                              argv[optind]);
    if (!a->ini) return rl_usage_error("run", "missing EXPERIMENT.ini");
    return RL_EXIT_OK;
}

/* File, overrides, command-line options (the combination checks run per sweep point). */
static int load_config(struct rl_cfg *c, const struct run_args *a)
{
    rl_cfg_defaults(c);
    rl_status st = rl_cfg_load(c, a->ini);
    for (int i = 0; st == RL_OK && i < a->n_set; i++)
        st = rl_cfg_set(c, a->set[i]);
    if (st == RL_OK && a->out) st = rl_cfg_set_key(c, "experiment", "out", a->out, "--out");
    if (st == RL_OK) return RL_EXIT_OK;
    fprintf(stderr, "ropelab: %s\n", rl_last_error());
    return RL_EXIT_USAGE;
}

static int run(struct rl_cfg *c, const struct run_args *a)
{
    rl_experiment *e = NULL;
    rl_init(a->threads ? a->threads : c->experiment.threads);
    c->experiment.threads = rl_threads_get(); /* the effective count, in config.ini */
    if (rl_threads_get() > rl_cores_available())
        fprintf(stderr,
                "ropelab: warning: %d threads on the %d cores this process may use: threads "
                "that share a core wait for each other (faster: --threads %d)\n",
                rl_threads_get(), rl_cores_available(), rl_cores_available());
    rl_status st = rl_experiment_prepare(&e, c);
    if (st != RL_OK) {
        fprintf(stderr, "ropelab: %s\n", rl_last_error());
        return st == RL_EINVAL ? RL_EXIT_USAGE : RL_EXIT_FAIL;
    }
    struct rl_experiment_opts o = {
        .resume = a->resume, .stop_after = a->stop_after, .out = stdout, .quiet = a->quiet};
    int stopped = 0;
    st          = rl_experiment_run(e, &o, &stopped);
    rl_experiment_free(e);
    if (st != RL_OK) {
        fprintf(stderr, "ropelab: %s\n", rl_last_error());
        return RL_EXIT_FAIL;
    }
    if (stopped)
        printf("stopped after %lld updates (--stop-after); continue with --resume\n",
               a->stop_after);
    return RL_EXIT_OK;
}

int rl_cmd_run(int argc, char **argv)
{
    struct run_args a = {0};
    a.set             = calloc((size_t)argc + 1, sizeof *a.set);
    struct rl_cfg *c  = malloc(sizeof *c);
    int            rc = a.set && c ? parse_args(&a, argc, argv) : RL_EXIT_FAIL;
    if (rc == RL_EXIT_OK) rc = load_config(c, &a);
    if (rc == RL_EXIT_OK) rc = run(c, &a);
    if (rc < 0) rc = RL_EXIT_OK; /* --help */
    free(c);
    free(a.set);
    return rc;
}
