/* cmd_run.c -- `ropelab run EXPERIMENT.ini`: read and check the configuration, create the
 * task, train and evaluate one model in OUT/<name>/ (SPEC 5, 6).
 * Exit status: 0 success, 1 runtime failure (data, I/O, numerics), 2 usage or
 * configuration error (found before anything runs). */
#include "config.h"
#include "cfg.h"
#include "cli.h"
#include "gemm.h"
#include "train.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: ropelab run EXPERIMENT.ini [--out DIR] [--threads N] [--set section.key=value]... "
    "[--resume]\n"
    "\n"
    "Train and evaluate the model the experiment describes; the run lives in OUT/<name>/\n"
    "(name: [experiment] name, default the INI file's stem) with config.ini (the resolved\n"
    "configuration), metrics.jsonl, checkpoints/step-<k>.safetensors and results.csv.\n"
    "\n"
    "Options:\n"
    "  --out DIR              parent of the run directory (default: [experiment] out, 'runs')\n"
    "  --threads N            threads (default: [experiment] threads, all cores); results are\n"
    "                         bit-reproducible for a fixed N\n"
    "  --set section.key=V    override one key of the file (repeatable), e.g.\n"
    "                         --set model.pe=alibi --set train.steps=200\n"
    "  --resume               continue from the latest checkpoint of the run directory (the\n"
    "                         configuration must match it, except out and threads)\n"
    "  -q, --quiet            no progress lines (the evaluation table is still printed)\n"
    "  -h, --help             show this help\n"
    "\n"
    "Every key, its default and meaning: docs/config.md.\n"
    "Exit status: 0 success, 1 runtime failure, 2 usage or configuration error.\n";

struct run_args {
    const char  *ini, *out;
    int          threads, resume, quiet, n_set;
    const char **set;
};

static int parse_args(struct run_args *a, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v;
        if (!strcmp(o, "--out")) {
            if (!(v = rl_opt_value("run", argc, argv, &i))) return RL_EXIT_USAGE;
            a->out = v;
        } else if (!strcmp(o, "--threads")) {
            if (!(v = rl_opt_value("run", argc, argv, &i))) return RL_EXIT_USAGE;
            if (rl_parse_int("run", "--threads", v, 1, 4096, &a->threads)) return RL_EXIT_USAGE;
        } else if (!strcmp(o, "--set")) {
            if (!(v = rl_opt_value("run", argc, argv, &i))) return RL_EXIT_USAGE;
            a->set[a->n_set++] = v;
        } else if (!strncmp(o, "--set=", 6)) {
            a->set[a->n_set++] = o + 6;
        } else if (!strcmp(o, "--resume")) {
            a->resume = 1;
        } else if (!strcmp(o, "-q") || !strcmp(o, "--quiet")) {
            a->quiet = 1;
        } else if (o[0] == '-' && o[1]) {
            return rl_usage_error("run", "unknown option '%s'", o);
        } else if (a->ini) {
            return rl_usage_error("run", "one experiment file expected, got '%s' and '%s'", a->ini,
                                  o);
        } else {
            a->ini = o;
        }
    }
    if (!a->ini) return rl_usage_error("run", "missing EXPERIMENT.ini");
    return RL_EXIT_OK;
}

/* File, overrides, command-line options, combination checks. */
static int load_config(struct rl_cfg *c, const struct run_args *a)
{
    rl_cfg_defaults(c);
    rl_status st = rl_cfg_load(c, a->ini);
    for (int i = 0; st == RL_OK && i < a->n_set; i++)
        st = rl_cfg_set(c, a->set[i]);
    if (st == RL_OK && a->out) st = rl_cfg_set_key(c, "experiment", "out", a->out, "--out");
    if (st == RL_OK && c->sweep.n_keys)
        st = rl_error_report(RL_EINVAL, __FILE__, __LINE__,
                             "%s: [sweep] %s: sweeps are not supported by this build yet; run "
                             "one point at a time with --set",
                             c->sweep.keys[0].where, c->sweep.keys[0].key);
    if (st == RL_OK) st = rl_cfg_check(c);
    if (st == RL_OK) return RL_EXIT_OK;
    fprintf(stderr, "ropelab: %s\n", rl_last_error());
    return RL_EXIT_USAGE;
}

int rl_cmd_run(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        fputs(usage, stdout);
        return RL_EXIT_OK;
    }
    struct run_args a = {0};
    a.set             = calloc((size_t)argc + 1, sizeof *a.set);
    struct rl_cfg *c  = malloc(sizeof *c);
    int            rc = a.set && c ? parse_args(&a, argc, argv) : RL_EXIT_FAIL;
    if (rc == RL_EXIT_OK) rc = load_config(c, &a);
    rl_task *task = NULL;
    if (rc == RL_EXIT_OK) {
        rl_init(a.threads ? a.threads : c->experiment.threads);
        c->experiment.threads = rl_threads_get(); /* the effective count, in config.ini */
        rl_status st          = rl_train_prepare(c, &task);
        if (st != RL_OK) {
            fprintf(stderr, "ropelab: %s\n", rl_last_error());
            rc = st == RL_EINVAL ? RL_EXIT_USAGE : RL_EXIT_FAIL;
        }
    }
    if (rc == RL_EXIT_OK) {
        char dir[2 * RL_CFG_PATH];
        snprintf(dir, sizeof dir, "%s/%s", c->experiment.out, c->experiment.name);
        struct rl_train_opts o = {
            .resume = a.resume, .log = a.quiet ? NULL : stdout, .table = stdout};
        struct rl_train_result r;
        rl_status              st = rl_train_run(c, task, dir, &o, &r);
        if (st != RL_OK) {
            fprintf(stderr, "ropelab: %s\n", rl_last_error());
            rc = RL_EXIT_FAIL;
        }
    }
    rl_task_free(task);
    free(c);
    free(a.set);
    return rc;
}
