/* opts.h -- the command line of every subcommand: one table of options per command,
 * parsed by rl_opts_parse (getopt_long underneath) and printed by rl_opts_usage, and the
 * exit statuses.
 *
 * A table lists each option once: its long name, a short letter if it has one, the kind
 * of its argument, where the value goes (an offset into the command's argument struct),
 * the range of a number, the choice table of a named value, and its help line.  So
 * --opt=VALUE and --opt VALUE, the checks and their messages ("--rope-dims: expected an
 * integer in [1, 1048576], got 'x'", "--pe: expected one of none, rope, t5, alibi, got
 * 'rpoe' (did you mean 'rope'?)"), the hint for a misspelt option and the --help text are
 * the same for every command, and adding a flag is adding a row:
 *
 *   #define A struct attn_args
 *   static const struct rl_opt attn_opts[] = {
 *       RL_OPT_STRING("in", A, in, "DIR", "directory of the input arrays"),
 *       RL_OPT_CHOICE("pe", A, o.pe, rl_attn_pes, "attention-level position encoding"),
 *       RL_OPT_FLAG("causal", 0, A, o.causal, 1, "causal (n <= m)"),
 *       RL_OPT_HELP,
 *       RL_OPT_END};
 *
 * Exit status: 0 success, 1 runtime failure, 2 usage error (bad option, missing argument). */
#ifndef RL_OPTS_H
#define RL_OPTS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "../core/choice.h"

#define RL_EXIT_OK 0
#define RL_EXIT_FAIL 1
#define RL_EXIT_USAGE 2

/* The argument an option takes, and what is stored at its offset. */
enum rl_opt_arg {
    RL_ARG_NONE,       /* none: the int gets the row's value (lo) */
    RL_ARG_INT,        /* an integer in [lo, hi]: int */
    RL_ARG_U64,        /* an integer >= 0: uint64_t */
    RL_ARG_DOUBLE,     /* a finite number in [lo, hi] ((lo, hi] with gt): double */
    RL_ARG_FLOAT,      /* the same, rounded to float */
    RL_ARG_STRING,     /* the text itself: const char * */
    RL_ARG_CHOICE,     /* a name of the choice table: its value (an int or an enum) */
    RL_ARG_CHOICE_ALL, /* the same, or "all": -1 */
    RL_ARG_INTS,       /* comma-separated integers in [lo, hi]: an int array, count at count_off */
    RL_ARG_DOUBLES,    /* comma-separated numbers in the range of RL_ARG_DOUBLE: a double array */
    RL_ARG_CALL,       /* call(args, row, value) takes it (repeatable options, overrides) */
    RL_ARG_HELP,       /* none: print the usage, the command exits 0 */
    RL_ARG_OPERAND,    /* not an option: the one argument that is not, its name in messages
                          ("missing RUN_DIR"): const char *; required when min is 1 */
};

struct rl_opt {
    const char     *name;   /* long name without "--"; NULL ends the table */
    int             letter; /* short option (-q), or 0 */
    enum rl_opt_arg arg;
    size_t          off;       /* of the value in the command's argument struct */
    double          lo, hi;    /* numbers and list items: the range */
    int             gt;        /* doubles: lo itself excluded */
    size_t          count_off; /* lists: the int that gets the number of items */
    int             min, max;  /* lists: at least min items, at most max (the array's length) */
    const struct rl_choice *choices;                                      /* choices: the table */
    int (*call)(void *args, const struct rl_opt *row, const char *value); /* 0 or an exit status */
    const char *metavar; /* the argument in the help ("DIR"); after the names of a choice */
    const char *help;    /* wrapped to the terminal's width in --help */
};

/* A command: its table and the usage text around the options.  In head and tail, "{NAME}"
 * stands for the argument of option NAME as its help line shows it (so a synopsis
 * "[--mode {mode}]" reads "[--mode recurrent|full]"). */
struct rl_command {
    const char          *name; /* "attn" in messages ("ropelab attn: ..."); NULL: ropelab */
    const struct rl_opt *opts;
    const char          *head, *tail; /* either may be NULL */
    int in_order; /* stop at the first argument that is not an option, and leave it and the
                     rest to the caller (*next) */
};

/* Parses argv[1 ..] (argv[0] is the command's name) into args: the options, then the
 * operand (exactly one where the table has an RL_ARG_OPERAND row, else none).  Returns
 * RL_OPTS_GO_ON, or an exit status: RL_EXIT_OK after --help printed the usage,
 * RL_EXIT_USAGE after a usage error was printed.  With in_order, *next is the index of the
 * first argument that is not an option. */
#define RL_OPTS_GO_ON (-1)
int rl_opts_parse(const struct rl_command *c, void *args, int argc, char **argv, int *next);
/* The usage text: head, a line per option (with its choices' help lines), tail. */
void rl_opts_usage(FILE *f, const struct rl_command *c);
/* text (the cursor at column col) wrapped at the usage's width onto lines that start at
 * indent; a '\n' in text starts a new line. */
void rl_opts_wrap(FILE *f, const char *text, int col, int indent);
/* Whether -h or --help is among the arguments (for commands whose first words choose
 * between tables: the help covers them all). */
int rl_opts_wants_help(int argc, char **argv);

/* The field f of the argument struct T, checked to have the type a row stores there (a
 * mismatch does not compile); enums and ints are checked by size. */
#define RL_OFF(T, f, type) _Generic(((T *)0)->f, type : offsetof(T, f))
#define RL_OFF_INTLIKE(T, f)                                                                       \
    (offsetof(T, f) + 0 * sizeof(char[sizeof(((T *)0)->f) == sizeof(int) ? 1 : -1]))
#define RL_OFF_ARRAY(T, f, type) _Generic(&((T *)0)->f[0], type * : offsetof(T, f))
#define RL_LEN(T, f) ((int)(sizeof(((T *)0)->f) / sizeof(((T *)0)->f[0])))

/* Ranges of doubles (lo, hi, gt): any finite number, >= x, > x. */
#define RL_ANY (-INFINITY, INFINITY, 0)
#define RL_GE(x) ((x), INFINITY, 0)
#define RL_GT(x) ((x), INFINITY, 1)
#define RL_RANGE_LO_(lo, hi, gt) (lo)
#define RL_RANGE_HI_(lo, hi, gt) (hi)
#define RL_RANGE_GT_(lo, hi, gt) (gt)

/* clang-format off */
#define RL_OPT_FLAG(n, l, T, f, v, h)                                                              \
    {.name = (n), .letter = (l), .arg = RL_ARG_NONE, .off = RL_OFF(T, f, int), .lo = (v), .help = (h)}
#define RL_OPT_INT(n, T, f, l, u, m, h)                                                            \
    {.name = (n), .arg = RL_ARG_INT, .off = RL_OFF(T, f, int), .lo = (l), .hi = (u), .metavar = (m), \
     .help = (h)}
#define RL_OPT_U64(n, T, f, m, h)                                                                  \
    {.name = (n), .arg = RL_ARG_U64, .off = RL_OFF(T, f, uint64_t), .metavar = (m), .help = (h)}
#define RL_OPT_RANGED_(n, k, T, f, type, range, m, h)                                              \
    {.name = (n), .arg = (k), .off = RL_OFF(T, f, type), .lo = RL_RANGE_LO_ range,                \
     .hi = RL_RANGE_HI_ range, .gt = RL_RANGE_GT_ range, .metavar = (m), .help = (h)}
#define RL_OPT_DOUBLE(n, T, f, range, m, h) RL_OPT_RANGED_(n, RL_ARG_DOUBLE, T, f, double, range, m, h)
#define RL_OPT_FLOAT(n, T, f, range, m, h) RL_OPT_RANGED_(n, RL_ARG_FLOAT, T, f, float, range, m, h)
#define RL_OPT_STRING(n, T, f, m, h)                                                               \
    {.name = (n), .arg = RL_ARG_STRING, .off = RL_OFF(T, f, const char *), .metavar = (m), .help = (h)}
#define RL_OPT_CHOICE(n, T, f, table, h)                                                           \
    {.name = (n), .arg = RL_ARG_CHOICE, .off = RL_OFF_INTLIKE(T, f), .choices = (table), .help = (h)}
#define RL_OPT_CHOICE_ALL(n, T, f, table, h)                                                       \
    {.name = (n), .arg = RL_ARG_CHOICE_ALL, .off = RL_OFF_INTLIKE(T, f), .choices = (table),       \
     .help = (h)}
#define RL_OPT_INTS(n, T, f, count, at_least, l, u, m, h)                                          \
    {.name = (n), .arg = RL_ARG_INTS, .off = RL_OFF_ARRAY(T, f, int), .lo = (l), .hi = (u),        \
     .count_off = RL_OFF(T, count, int), .min = (at_least), .max = RL_LEN(T, f), .metavar = (m),   \
     .help = (h)}
#define RL_OPT_DOUBLES(n, T, f, count, range, m, h)                                                \
    {.name = (n), .arg = RL_ARG_DOUBLES, .off = RL_OFF_ARRAY(T, f, double),                        \
     .lo = RL_RANGE_LO_ range, .hi = RL_RANGE_HI_ range, .gt = RL_RANGE_GT_ range,              \
     .count_off = RL_OFF(T, count, int), .min = 1, .max = RL_LEN(T, f), .metavar = (m), .help = (h)}
#define RL_OPT_CALL(n, fn, m, h) {.name = (n), .arg = RL_ARG_CALL, .call = (fn), .metavar = (m), .help = (h)}
#define RL_OPT_OPERAND(n, T, f) {.name = (n), .arg = RL_ARG_OPERAND, .off = RL_OFF(T, f, const char *), .min = 1}
#define RL_OPT_OPERAND_OPTIONAL(n, T, f) {.name = (n), .arg = RL_ARG_OPERAND, .off = RL_OFF(T, f, const char *)}
#define RL_OPT_HELP {.name = "help", .letter = 'h', .arg = RL_ARG_HELP, .help = "show this help"}
#define RL_OPT_END {.name = NULL}
/* clang-format on */

/* Print "ropelab CMD: msg (try 'ropelab CMD --help')" to stderr; returns RL_EXIT_USAGE. */
int rl_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* rl_init with the thread count asked for (0: OMP_NUM_THREADS or all cores), lowered to
 * the cores this process may use, with a warning, when it asks for more (one process;
 * under MPI the launcher's binding decides). */
void rl_cli_threads(const char *cmd, int asked);

#endif
