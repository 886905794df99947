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

/* The modes of `ropelab bench [--train | --decode] [options]` (argv as rl_cmd_bench's): the
 * kernels (cmd_bench.c), training throughput (bench_train.c), generation (bench_decode.c);
 * the tables of the two others, for bench's help. */
struct rl_command;
int                            rl_bench_train(int argc, char **argv);
int                            rl_bench_decode(int argc, char **argv);
extern const struct rl_command rl_bench_train_command, rl_bench_decode_command;
/* DIR/name (DIR made if missing) opened for writing, with its header line, or NULL after
 * printing why. */
FILE *rl_bench_csv(const char *dir, const char *name, const char *header);

#endif
