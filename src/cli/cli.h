/* cli.h -- the ropelab program's subcommands, one file each (cmd_<name>.c); main.c
 * dispatches to them.  Each returns the process exit status (opts.h). */
#ifndef RL_CLI_H
#define RL_CLI_H

#include <stdio.h>
#include "opts.h"

int rl_cmd_run(int argc, char **argv);
int rl_cmd_attn(int argc, char **argv);
int rl_cmd_bench(int argc, char **argv);
int rl_cmd_report(int argc, char **argv);
int rl_cmd_eval(int argc, char **argv);
int rl_cmd_generate(int argc, char **argv);

/* `ropelab bench` has three modes, each chosen by its word: the kernels (cmd_bench.c),
 * --train (bench_train.c) and --decode (bench_decode.c).  A mode's file has its table of
 * options and its run function, which parses argv (as rl_cmd_bench's) with the command it
 * is given; cmd_bench.c joins them with their help texts. */
extern const struct rl_opt rl_bench_train_opts[], rl_bench_decode_opts[];
int                        rl_bench_train(const struct rl_command *c, int argc, char **argv);
int                        rl_bench_decode(const struct rl_command *c, int argc, char **argv);
/* DIR/name (DIR made if missing) opened for writing, with its header line, or NULL after
 * printing why. */
FILE *rl_bench_csv(const char *dir, const char *name, const char *header);
/* The median of x[0 .. n) (sorts x). */
double rl_bench_median(double *x, int n);

#endif
