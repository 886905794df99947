/* cmd_report.c -- `ropelab report RUN_DIR`: the experiment's results.csv, summary.md and
 * plots remade from the run directory's files (report.h); `ropelab report --rope-decay`:
 * the RoPE long-term-decay figure of RoFormer 3.4.3. */
#include "config.h"
#include "cli.h"
#include "opts.h"
#include "../report/report.h"
#include "../report/report_plot.h"
#include "../core/status.h"
#include "../core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct report_args {
    const char *dir, *out;
    int         rope_decay, d, max, nb;
    double      bases[8];
};

static const struct rl_opt report_opts[] = {RL_OPT_OPERAND("RUN_DIR", struct report_args, dir),
                                            RL_OPT_HELP, RL_OPT_END};

static const struct rl_command report_command = {
    "report", report_opts,
    "Usage: ropelab report RUN_DIR\n"
    "       ropelab report --rope-decay --out DIR [--dims D] [--base B[,B2...]]\n"
    "                      [--max-distance N]\n"
    "\n"
    "RUN_DIR (OUT/<name>/ of `ropelab run`): read its config.ini and every point's\n"
    "results.csv and metrics.jsonl back, write the combined results.csv (with a sweep),\n"
    "summary.md and plots/*.svg (with gnuplot), and print the accuracy table.  Points\n"
    "without results.csv are listed as not finished.\n"
    "\n",
    NULL, 0};

#define A struct report_args
static const struct rl_opt decay_opts[] = {
    RL_OPT_FLAG("rope-decay", 0, A, rope_decay, 1, "the figure instead of a run's report"),
    RL_OPT_INT("dims", A, d, 2, 65536, "D", "head dimension d, even (default 128)"),
    RL_OPT_DOUBLES("base", A, bases, nb, RL_GT(1), "B[,B2...]",
                   "RoPE bases, one curve each (default 10000)"),
    RL_OPT_INT("max-distance", A, max, 1, 1 << 20, "N", "largest relative distance (default 1024)"),
    RL_OPT_STRING("out", A, out, "DIR", "output directory"),
    RL_OPT_END};
#undef A

static const struct rl_command decay_command = {
    "report", decay_opts,
    "\n"
    "--rope-decay: RoFormer 3.4.3's relative upper bound (1/(d/2)) sum_j |S_j|,\n"
    "S_j = sum_{i<j} exp(i r theta_i), theta_i = base^(-2i/d), for r = 0 .. N, into\n"
    "DIR/rope_decay.csv and DIR/rope_decay.svg (with gnuplot).\n"
    "\n",
    "\n"
    "gnuplot: the one configure found, or $ROPELAB_GNUPLOT (none = no plots).\n"
    "Exit status: 0 success, 1 runtime failure, 2 usage error.\n",
    0};

static int rope_decay(int argc, char **argv)
{
    struct report_args a  = {.d = 128, .max = 1024, .nb = 1, .bases = {10000}};
    int                rc = rl_opts_parse(&decay_command, &a, argc, argv, NULL);
    if (rc != RL_OPTS_GO_ON) return rc;
    if (a.d % 2) return rl_usage_error("report", "--dims: expected an even number, got %d", a.d);
    if (!a.out) return rl_usage_error("report", "--rope-decay needs --out DIR");
    if (rl_rope_decay_write(a.out, a.d, a.bases, a.nb, a.max, stdout) != RL_OK) {
        fprintf(stderr, "ropelab: %s\n", rl_last_error());
        return RL_EXIT_FAIL;
    }
    return RL_EXIT_OK;
}

int rl_cmd_report(int argc, char **argv)
{
    struct report_args a = {0};
    if (rl_opts_wants_help(argc, argv)) {
        rl_opts_usage(stdout, &report_command);
        rl_opts_usage(stdout, &decay_command);
        return RL_EXIT_OK;
    }
    for (int i = 1; i < argc; i++) /* the word of the second mode chooses its table */
        if (!strcmp(argv[i], "--rope-decay")) return rope_decay(argc, argv);
    int rc = rl_opts_parse(&report_command, &a, argc, argv, NULL);
    if (rc != RL_OPTS_GO_ON) return rc;
    if (rl_report_write(a.dir, stdout, stdout) != RL_OK) {
        fprintf(stderr, "ropelab: %s\n", rl_last_error());
        return RL_EXIT_FAIL;
    }
    return RL_EXIT_OK;
}
