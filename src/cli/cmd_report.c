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

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: ropelab report RUN_DIR\n"
    "       ropelab report --rope-decay --out DIR [--dims D] [--base B[,B2...]]\n"
    "                      [--max-distance N]\n"
    "\n"
    "RUN_DIR (OUT/<name>/ of `ropelab run`): read its config.ini and every point's\n"
    "results.csv and metrics.jsonl back, write the combined results.csv (with a sweep),\n"
    "summary.md and plots/*.svg (with gnuplot), and print the accuracy table.  Points\n"
    "without results.csv are listed as not finished.\n"
    "\n"
    "--rope-decay: RoFormer 3.4.3's relative upper bound (1/(d/2)) sum_j |S_j|,\n"
    "S_j = sum_{i<j} exp(i r theta_i), theta_i = base^(-2i/d), for r = 0 .. N, into\n"
    "DIR/rope_decay.csv and DIR/rope_decay.svg (with gnuplot).\n"
    "\n"
    "Options:\n"
    "  --dims D           head dimension d, even (default 128)\n"
    "  --base B[,B2...]   RoPE bases, one curve each (default 10000)\n"
    "  --max-distance N   largest relative distance (default 1024)\n"
    "  --out DIR          output directory of --rope-decay\n"
    "  -h, --help         show this help\n"
    "\n"
    "gnuplot: the one configure found, or $ROPELAB_GNUPLOT (none = no plots).\n"
    "Exit status: 0 success, 1 runtime failure, 2 usage error.\n";

#define MAX_BASES 8

static int parse_bases(const char *s, double *b, int *n)
{
    char buf[256];
    if (strlen(s) >= sizeof buf) return rl_usage_error("report", "--base: value too long");
    snprintf(buf, sizeof buf, "%s", s);
    *n = 0;
    for (char *rest = buf, *t; rest;) { /* every item, empty ones too (unlike strtok) */
        t = rl_list_item(&rest);
        if (*n == MAX_BASES)
            return rl_usage_error("report", "--base: at most %d values", MAX_BASES);
        if (rl_parse_double("report", "--base", t, &b[*n])) return RL_EXIT_USAGE;
        if (!(b[*n] > 1))
            return rl_usage_error("report", "--base: expected values > 1, got '%s'", t);
        (*n)++;
    }
    return *n ? RL_EXIT_OK : rl_usage_error("report", "--base: expected a list of numbers");
}

static int rope_decay(int argc, char **argv)
{
    int                        d = 128, max = 1024, nb = 1, rc;
    double                     bases[MAX_BASES] = {10000};
    const char                *out              = NULL, *v;
    static const struct option longs[]          = {
                 {"rope-decay", no_argument, NULL, 0}, {"dims", required_argument, NULL, 0},
                 {"base", required_argument, NULL, 0}, {"max-distance", required_argument, NULL, 0},
                 {"out", required_argument, NULL, 0},  {NULL, 0, NULL, 0}};
    struct rl_opt opt = {0};
    for (int c; (c = rl_next_opt("report", &opt, argc, argv, ":", longs)) != -1;) {
        const char *o = opt.name;
        if (c == RL_OPT_ERROR) return RL_EXIT_USAGE;
        v = opt.value;
        if (!strcmp(o, "--rope-decay")) continue;
        if (!strcmp(o, "--dims") && rl_parse_int("report", o, v, 2, 65536, &d))
            return RL_EXIT_USAGE;
        if (!strcmp(o, "--max-distance") && rl_parse_int("report", o, v, 1, 1 << 20, &max))
            return RL_EXIT_USAGE;
        if (!strcmp(o, "--base") && (rc = parse_bases(v, bases, &nb))) return rc;
        if (!strcmp(o, "--out")) out = v;
    }
    if (optind < argc) return rl_usage_error("report", "unexpected argument '%s'", argv[optind]);
    if (d % 2) return rl_usage_error("report", "--dims: expected an even number, got %d", d);
    if (!out) return rl_usage_error("report", "--rope-decay needs --out DIR");
    if (rl_rope_decay_write(out, d, bases, nb, max, stdout) != RL_OK) {
        fprintf(stderr, "ropelab: %s\n", rl_last_error());
        return RL_EXIT_FAIL;
    }
    return RL_EXIT_OK;
}

int rl_cmd_report(int argc, char **argv)
{
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(usage, stdout);
            return RL_EXIT_OK;
        }
        if (!strcmp(argv[i], "--rope-decay")) return rope_decay(argc, argv);
    }
    static const struct option longs[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    optind = 0, opterr = 0;
    for (int c; (c = getopt_long(argc, argv, ":h", longs, NULL)) != -1;)
        return rl_getopt_error("report", c, argv, optind);
    for (int i = optind; i < argc; i++) {
        if (dir)
            return rl_usage_error("report", "one RUN_DIR expected, got '%s' and '%s'", dir,
                                  argv[i]);
        dir = argv[i];
    }
    if (!dir) return rl_usage_error("report", "missing RUN_DIR");
    if (rl_report_write(dir, stdout, stdout) != RL_OK) {
        fprintf(stderr, "ropelab: %s\n", rl_last_error());
        return RL_EXIT_FAIL;
    }
    return RL_EXIT_OK;
}
