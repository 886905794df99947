/* main.c -- the ropelab program: subcommand dispatch (SPEC 5). */
#include "config.h"
#include "cli.h"
#include "gemm.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: ropelab COMMAND [OPTIONS]\n"
    "\n"
    "Position encodings in softmax and linear attention (RoPE in linear attention:\n"
    "RoFormer eq. 19), with a small transformer trainer and experiment runner.\n"
    "\n"
    "Commands:\n"
    "  run EXPERIMENT.ini   train and evaluate the experiment (sweeps, evaluation lengths)\n"
    "  attn                 run one attention kernel on .npy arrays (forward, backward)\n"
    "  bench                kernel and training throughput benchmarks\n"
    "  report RUN_DIR       tables and plots from a finished run\n"
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
    printf("threads: %d\n", rl_threads_get());
#ifdef RL_GNUPLOT
    printf("gnuplot: %s\n", RL_GNUPLOT);
#else
    printf("gnuplot: not found at configure time (plots skipped)\n");
#endif
    return RL_EXIT_OK;
}

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
    char *e  = NULL;
    errno    = 0;
    long v   = strtol(s, &e, 10);
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

int main(int argc, char **argv)
{
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
    if (c[0] == '-') return rl_usage_error(NULL, "unknown option '%s'", c);
    return rl_usage_error(NULL, "unknown command '%s'", c);
}
