/* cli.h -- the ropelab program's subcommands, one file each (cmd_<name>.c); main.c
 * dispatches to them.  Each returns the process exit status (opts.h). */
#ifndef RL_CLI_H
#define RL_CLI_H

#include <stdio.h>

int rl_cmd_run(int argc, char **argv);
int rl_cmd_attn(int argc, char **argv);
int rl_cmd_bench(int argc, char **argv);
int rl_cmd_report(int argc, char **argv);
int rl_cmd_eval(int argc, char **argv);
int rl_cmd_generate(int argc, char **argv);

/* bench_train.c: the training-throughput table of `ropelab bench --train` on out (and
 * csv_path when not NULL); returns the exit status. */
/* The training benchmark's cells: attention kinds (-1: both) x sequence lengths ns[0 .. nn)
 * (nn = 0: 256 and 4096), batch max(1, 4096 / N) rows. */
int rl_bench_train(FILE *out, int warmup, int steps, const char *csv_path, int kind, const int *ns,
                   int nn);
/* bench_decode.c: `ropelab bench --decode [options]` (argv as rl_cmd_bench's). */
int rl_bench_decode(int argc, char **argv);

#endif
