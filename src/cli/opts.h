/* opts.h -- what the subcommands share for their options: exit statuses, usage errors
 * and checked number parsing.
 * Exit status: 0 success, 1 runtime failure, 2 usage error (bad option, missing argument). */
#ifndef RL_OPTS_H
#define RL_OPTS_H

#define RL_EXIT_OK 0
#define RL_EXIT_FAIL 1
#define RL_EXIT_USAGE 2

/* Print "ropelab CMD: msg" to stderr and return RL_EXIT_USAGE. */
int rl_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Parse helpers: return 0 on success, nonzero (after printing a usage error) otherwise. */
int rl_parse_int(const char *cmd, const char *opt, const char *s, int lo, int hi, int *out);
int rl_parse_double(const char *cmd, const char *opt, const char *s, double *out);
/* getopt_long's error return (optstring starting with ':'): c is ':' for a missing
 * argument, '?' for an unknown option; prints the usage error, returns RL_EXIT_USAGE. */
int rl_getopt_error(const char *cmd, int c, char **argv, int optind_now);
/* One step of getopt_long over a table whose long options all have val 0, for CMD:
 * returns 0 for a long option (its "--name" in name, its argument or NULL in value), the
 * letter of a short option of `shorts` (which starts with ':'), -1 at the end, and
 * RL_OPT_ERROR after printing the usage error of an unknown option or a missing argument.
 * Start with a zeroed struct rl_opt (the first call restarts getopt). */
#define RL_OPT_ERROR (-2)
struct option;
struct rl_opt {
    char        name[40];
    const char *value;
    int         started;
};
int rl_next_opt(const char *cmd, struct rl_opt *o, int argc, char **argv, const char *shorts,
                const struct option *longs);
/* rl_init with the thread count asked for (0: OMP_NUM_THREADS or all cores), lowered to
 * the cores this process may use, with a warning, when it asks for more (one process;
 * under MPI the launcher's binding decides). */
void rl_cli_threads(const char *cmd, int asked);
/* The name in the NULL-terminated list nearest to word (at most two edits), or NULL. */
const char *rl_suggest(const char *word, const char *const *names);
/* The value of option argv[*i] (advancing *i), or NULL after printing "missing argument". */
const char *rl_opt_value(const char *cmd, int argc, char **argv, int *i);

#endif
