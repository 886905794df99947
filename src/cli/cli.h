/* cli.h -- the ropelab program's subcommands, one file each (cmd_<name>.c); main.c
 * dispatches to them.  Each returns the process exit status (opts.h). */
#ifndef RL_CLI_H
#define RL_CLI_H

int rl_cmd_run(int argc, char **argv);
int rl_cmd_attn(int argc, char **argv);
int rl_cmd_bench(int argc, char **argv);
int rl_cmd_report(int argc, char **argv);
int rl_cmd_eval(int argc, char **argv);

#endif
