/* opts.c -- option parsing helpers shared by main.c and the subcommands: usage errors
 * and checked number parsing. */
#include "config.h"
#include "opts.h"
#include "../core/gemm.h"
#include "../core/threads.h"
#include "../core/init.h"
#include "../core/mpi.h"
#include "../core/util.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rl_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "ropelab%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (try 'ropelab%s%s --help')\n", cmd ? " " : "", cmd ? cmd : "");
    return RL_EXIT_USAGE;
}

int rl_parse_int(const char *cmd, const char *opt, const char *s, int lo, int hi, int *out)
{
    char *e = NULL;
    errno   = 0;
    long v  = strtol(s, &e, 10);
    if (errno || e == s || *e || v < lo || v > hi) {
        rl_usage_error(cmd, "%s: expected an integer in [%d, %d], got '%s'", opt, lo, hi, s);
        return 1;
    }
    *out = (int)v;
    return 0;
}

int rl_parse_double(const char *cmd, const char *opt, const char *s, double *out)
{
    char *e  = NULL;
    errno    = 0;
    double v = strtod(s, &e);
    if (errno || e == s || *e) {
        rl_usage_error(cmd, "%s: expected a number, got '%s'", opt, s);
        return 1;
    }
    *out = v;
    return 0;
}

const char *rl_opt_value(const char *cmd, int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        rl_usage_error(cmd, "option '%s' needs an argument", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

int rl_getopt_error(const char *cmd, int c, char **argv, int optind_now)
{
    const char *arg = optind_now > 0 ? argv[optind_now - 1] : "?";
    if (c == ':') return rl_usage_error(cmd, "option '%s' needs an argument", arg);
    return rl_usage_error(cmd, "unknown option '%s'", arg);
}

int rl_next_opt(const char *cmd, struct rl_opt *o, int argc, char **argv, const char *shorts,
                const struct option *longs)
{
    if (!o->started) optind = 0, opterr = 0, o->started = 1; /* 0: glibc re-initialises */
    int li = 0, c = getopt_long(argc, argv, shorts, longs, &li);
    o->value   = optarg;
    o->name[0] = 0;
    if (c == ':' || c == '?') {
        rl_getopt_error(cmd, c, argv, optind);
        return RL_OPT_ERROR;
    }
    if (c == 0) snprintf(o->name, sizeof o->name, "--%s", longs[li].name);
    return c;
}

const char *rl_suggest(const char *word, const char *const *names)
{
    const char *best = NULL;
    int         bd   = 3; /* at most two edits (a swap of two letters is two) */
    for (int i = 0; names[i]; i++) {
        int d = rl_edit_distance(word, names[i]);
        if (d < bd) bd = d, best = names[i];
    }
    return best;
}

void rl_cli_threads(const char *cmd, int asked)
{
    rl_init(asked);
    const char *w = rl_blis_env_warning();
    if (w && rl_mpi_rank() == 0) fprintf(stderr, "ropelab %s: warning: %s\n", cmd, w);
    if (rl_mpi_size() > 1) return;
    int had = rl_threads_fit();
    if (had > rl_threads_get())
        fprintf(stderr,
                "ropelab %s: warning: %d threads asked for, but this process may use %d "
                "cores: running %d (threads that share a core wait for each other; the "
                "results do not depend on the thread count)\n",
                cmd, had, rl_threads_get(), rl_threads_get());
}
