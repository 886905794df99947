/* cli.h -- the ropelab program's subcommands (SPEC 5) and shared option parsing.
 * Exit status: 0 success, 1 runtime failure, 2 usage error (bad option, missing argument). */
#ifndef RL_CLI_H
#define RL_CLI_H

#define RL_EXIT_OK    0
#define RL_EXIT_FAIL  1
#define RL_EXIT_USAGE 2

int rl_cmd_run(int argc, char **argv);
int rl_cmd_attn(int argc, char **argv);
int rl_cmd_bench(int argc, char **argv);
int rl_cmd_report(int argc, char **argv);

/* Print "ropelab CMD: msg" to stderr and return RL_EXIT_USAGE. */
int rl_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Parse helpers: return 0 on success, nonzero (after printing a usage error) otherwise. */
int rl_parse_int(const char *cmd, const char *opt, const char *s, int lo, int hi, int *out);
int rl_parse_double(const char *cmd, const char *opt, const char *s, double *out);
/* The value of option argv[*i] (advancing *i), or NULL after printing "missing argument". */
const char *rl_opt_value(const char *cmd, int argc, char **argv, int *i);

#endif
