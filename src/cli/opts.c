/* opts.c -- the option tables of opts.h: parsing with getopt_long, the checks and their
 * messages, the usage text; usage errors and the thread count shared by the commands. */
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

#define MAX_OPTS 48    /* rows of one table */
#define LONG_BASE 256  /* getopt_long returns LONG_BASE + i for row i */
#define HELP_WIDTH 92  /* columns of the usage text */
#define HELP_COLUMN 34 /* where the help lines start, unless the options are all shorter */

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

/* ---- values ---- */

static int takes_value(const struct rl_opt *o)
{
    return o->arg != RL_ARG_NONE && o->arg != RL_ARG_HELP;
}

static int is_option(const struct rl_opt *o) { return o->arg != RL_ARG_OPERAND; }

static void number_expectation(char *buf, size_t len, const struct rl_opt *o, int integer)
{
    if (integer)
        rl_int_expectation(buf, len, (long long)o->lo, (long long)o->hi);
    else if (o->lo == -INFINITY && o->hi == INFINITY)
        snprintf(buf, len, "a number");
    else if (o->hi == INFINITY)
        snprintf(buf, len, "a number %s %g", o->gt ? ">" : ">=", o->lo);
    else
        snprintf(buf, len, "a number in %c%g, %g]", o->gt ? '(' : '[', o->lo, o->hi);
}

/* One number of row o (an integer for the integer kinds) from s; why gets the reason. */
static int parse_number(const struct rl_opt *o, const char *s, double *out, char *why, size_t len)
{
    int    integer = o->arg == RL_ARG_INT || o->arg == RL_ARG_INTS;
    char  *e       = NULL, exp[64];
    double v;
    errno = 0;
    v     = integer ? (double)strtoll(s, &e, 10) : strtod(s, &e);
    int ok =
        !errno && e != s && !*e && isfinite(v) && v <= o->hi && (o->gt ? v > o->lo : v >= o->lo);
    if (ok) return *out = v, 0;
    number_expectation(exp, sizeof exp, o, integer);
    snprintf(why, len, "expected %s, got '%s'", exp, s);
    return 1;
}

static int parse_u64(const char *s, uint64_t *out, char *why, size_t len)
{
    char *e              = NULL;
    errno                = 0;
    unsigned long long v = strtoull(s, &e, 10);
    if (!errno && e != s && !*e && s[0] != '-') return *out = v, 0;
    snprintf(why, len, "expected a non-negative integer, got '%s'", s);
    return 1;
}

/* A comma-separated list (empty items are items, and wrong) into the row's array. */
static int parse_list(const struct rl_opt *o, char *p, int *count, const char *s, char *why,
                      size_t len)
{
    char buf[1024];
    int  n = 0;
    if (strlen(s) >= sizeof buf) return snprintf(why, len, "list too long"), 1;
    snprintf(buf, sizeof buf, "%s", s);
    for (char *rest = *buf || o->min > 0 ? buf : NULL, *item; rest; n++) {
        double v;
        item = rl_list_item(&rest);
        if (n == o->max) return snprintf(why, len, "at most %d values, got '%s'", o->max, s), 1;
        if (parse_number(o, item, &v, why, len)) {
            if (strcmp(item, s)) snprintf(why + strlen(why), len - strlen(why), " in '%s'", s);
            return 1;
        }
        if (o->arg == RL_ARG_INTS)
            ((int *)p)[n] = (int)v;
        else
            ((double *)p)[n] = v;
    }
    *count = n;
    return 0;
}

/* "expected one of a, b, c[, all], got 'x'" and the nearest name. */
static void choice_refusal(const struct rl_opt *o, const char *s, char *why, size_t len)
{
    char           names[512];
    struct rl_near near;
    rl_near_init(&near, s);
    for (int i = 0; o->choices[i].name; i++)
        rl_near_offer(&near, o->choices[i].name);
    if (o->arg == RL_ARG_CHOICE_ALL) rl_near_offer(&near, "all");
    int n = snprintf(why, len, "expected one of %s%s, got '%s'",
                     rl_choice_list(o->choices, ", ", names, sizeof names),
                     o->arg == RL_ARG_CHOICE_ALL ? ", all" : "", s);
    if (near.best && n >= 0 && (size_t)n < len)
        snprintf(why + n, len - (size_t)n, " (did you mean '%s'?)", near.best);
}

/* Stores the value s of row o into args; 0, or nonzero with the reason in why. */
static int store(const struct rl_opt *o, void *args, const char *s, char *why, size_t len)
{
    char  *p = (char *)args + o->off;
    double v;
    switch (o->arg) {
    case RL_ARG_NONE:
        return *(int *)p = (int)o->lo, 0;
    case RL_ARG_INT:
        return parse_number(o, s, &v, why, len) ? 1 : (*(int *)p = (int)v, 0);
    case RL_ARG_DOUBLE:
        return parse_number(o, s, &v, why, len) ? 1 : (*(double *)p = v, 0);
    case RL_ARG_FLOAT:
        return parse_number(o, s, &v, why, len) ? 1 : (*(float *)p = (float)v, 0);
    case RL_ARG_U64:
        return parse_u64(s, (uint64_t *)p, why, len);
    case RL_ARG_STRING:
        return *(const char **)p = s, 0;
    case RL_ARG_CHOICE_ALL:
        if (!strcmp(s, "all")) return *(int *)p = -1, 0;
        /* fall through */
    case RL_ARG_CHOICE:
        if (!rl_choice_parse(o->choices, s, (int *)p)) return 0;
        return choice_refusal(o, s, why, len), 1;
    case RL_ARG_INTS:
    case RL_ARG_DOUBLES:
        return parse_list(o, p, (int *)((char *)args + o->count_off), s, why, len);
    case RL_ARG_CALL:
    case RL_ARG_HELP:
    case RL_ARG_OPERAND:
        break;
    }
    return 0;
}

/* ---- getopt_long ---- */

/* getopt_long's tables from a command's: row i answers LONG_BASE + i, a letter itself. */
static void getopt_tables(const struct rl_command *c, struct option *longs, char *shorts)
{
    int n = 0, s = 0;
    if (c->in_order) shorts[s++] = '+';
    shorts[s++] = ':'; /* a missing argument answers ':', an unknown option '?' */
    for (const struct rl_opt *o = c->opts; o->name; o++) {
        RL_ASSERT(n < MAX_OPTS);
        if (!is_option(o)) continue;
        longs[n++] = (struct option){o->name, takes_value(o) ? required_argument : no_argument,
                                     NULL, LONG_BASE + (int)(o - c->opts)};
        if (o->letter) shorts[s++] = (char)o->letter;
        if (o->letter && takes_value(o)) shorts[s++] = ':';
    }
    longs[n]  = (struct option){NULL, 0, NULL, 0};
    shorts[s] = 0;
}

static const struct rl_opt *row_of(const struct rl_command *c, int k)
{
    int n = 0;
    while (c->opts[n].name)
        n++;
    if (k >= LONG_BASE && k < LONG_BASE + n) return &c->opts[k - LONG_BASE];
    for (const struct rl_opt *o = c->opts; o->name; o++)
        if (o->letter && o->letter == k) return o;
    return NULL;
}

/* The usage error of getopt_long's answer k (':' or '?') for the word argv[ind - 1]. */
static int bad_option(const struct rl_command *c, int k, char **argv, int ind)
{
    const char          *word = ind > 0 ? argv[ind - 1] : "?";
    const struct rl_opt *o    = row_of(c, optopt);
    if (k == ':' && o && optopt >= LONG_BASE)
        return rl_usage_error(c->name, "option '--%s' needs an argument", o->name);
    if (k == ':') return rl_usage_error(c->name, "option '-%c' needs an argument", optopt);
    if (o && optopt >= LONG_BASE) /* a value given to an option that takes none */
        return rl_usage_error(c->name, "option '--%s' takes no argument", o->name);
    if (optopt) return rl_usage_error(c->name, "unknown option '-%c'", optopt);
    char           name[64], starts[512] = "";
    struct rl_near near;
    int            n = 0;
    snprintf(name, sizeof name, "%.*s", (int)strcspn(word, "="), word + 2 * (word[1] == '-'));
    rl_near_init(&near, name);
    for (o = c->opts; o->name; o++) {
        if (!is_option(o)) continue;
        rl_near_offer(&near, o->name);
        if (!strncmp(o->name, name, strlen(name)) && strlen(starts) + strlen(o->name) < 500)
            n++, snprintf(starts + strlen(starts), 12 + strlen(o->name), ", --%s", o->name);
    }
    if (n > 1) /* getopt_long takes a prefix of one option only */
        return rl_usage_error(c->name, "option '%s' is ambiguous: %s", word, starts + 2);
    if (near.best)
        return rl_usage_error(c->name, "unknown option '%s' (did you mean '--%s'?)", word,
                              near.best);
    return rl_usage_error(c->name, "unknown option '%s'", word);
}

/* argv[i ..], what getopt_long left: the operand, or nothing. */
static int take_operand(const struct rl_command *c, void *args, int argc, char **argv, int i)
{
    const struct rl_opt *o = c->opts;
    while (o->name && o->arg != RL_ARG_OPERAND)
        o++;
    if (!o->name && i < argc) return rl_usage_error(c->name, "unexpected argument '%s'", argv[i]);
    if (!o->name) return RL_OPTS_GO_ON;
    if (i >= argc) return o->min ? rl_usage_error(c->name, "missing %s", o->name) : RL_OPTS_GO_ON;
    if (i + 1 < argc)
        return rl_usage_error(c->name, "one %s expected, got '%s' and '%s'", o->name, argv[i],
                              argv[i + 1]);
    *(const char **)((char *)args + o->off) = argv[i];
    return RL_OPTS_GO_ON;
}

int rl_opts_parse(const struct rl_command *c, void *args, int argc, char **argv, int *next)
{
    struct option longs[MAX_OPTS + 1];
    char          shorts[3 * MAX_OPTS + 3], why[640];
    getopt_tables(c, longs, shorts);
    optind = 0, opterr = 0; /* 0: glibc starts afresh; the messages are ours */
    for (int k; (k = getopt_long(argc, argv, shorts, longs, NULL)) != -1;) {
        const struct rl_opt *o = row_of(c, k);
        if (!o) return bad_option(c, k, argv, optind);
        if (o->arg == RL_ARG_HELP) return rl_opts_usage(stdout, c), RL_EXIT_OK;
        if (o->arg == RL_ARG_CALL) {
            int rc = o->call(args, o, optarg);
            if (rc != RL_EXIT_OK) return rc;
        } else if (store(o, args, optarg, why, sizeof why)) {
            return rl_usage_error(c->name, "--%s: %s", o->name, why);
        }
    }
    if (c->in_order) return *next = optind, RL_OPTS_GO_ON;
    return take_operand(c, args, argc, argv, optind);
}

int rl_opts_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return 1;
    return 0;
}

/* ---- the usage text ---- */

/* The argument as the help shows it: a choice's names ("a|b|c", "|all"), then metavar. */
static const char *metavar(const struct rl_opt *o, char *buf, size_t len)
{
    size_t n = 0;
    buf[0]   = 0;
    if (o->choices) {
        rl_choice_list(o->choices, "|", buf, len);
        n = strlen(buf);
        if (o->arg == RL_ARG_CHOICE_ALL) n += (size_t)snprintf(buf + n, len - n, "|all");
    }
    if (o->metavar && n < len) snprintf(buf + n, len - n, "%s", o->metavar);
    return buf;
}

/* "-q, --quiet" or "--rope-base B": the option's words in its help line */
static int option_words(const struct rl_opt *o, char *buf, size_t len)
{
    char m[256];
    int  n = o->letter ? snprintf(buf, len, "-%c, --%s", o->letter, o->name)
                       : snprintf(buf, len, "--%s", o->name);
    if (*metavar(o, m, sizeof m)) n += snprintf(buf + n, len - (size_t)n, " %s", m);
    return n;
}

void rl_opts_wrap(FILE *f, const char *text, int col, int indent)
{
    int first = 1;
    for (const char *w = text; *w;) {
        size_t l = strcspn(w, " \n");
        if (!first && col + 1 + (int)l > HELP_WIDTH)
            fprintf(f, "\n%*s", indent, ""), col = indent, first = 1;
        if (!first) fputc(' ', f), col++;
        fprintf(f, "%.*s", (int)l, w);
        col += (int)l, w += l, first = 0;
        if (*w == '\n') fprintf(f, "\n%*s", indent, ""), col = indent, first = 1;
        while (*w == ' ' || *w == '\n')
            w++;
    }
    fputc('\n', f);
}

/* "  --pe none|rope|t5|alibi   help", then "name: help" of each choice */
static void put_option(FILE *f, const struct rl_opt *o, int column)
{
    char words[320];
    int  n = option_words(o, words, sizeof words);
    if (n + 4 > column)
        fprintf(f, "  %s\n%*s", words, column, "");
    else
        fprintf(f, "  %-*s", column - 2, words);
    rl_opts_wrap(f, o->help ? o->help : "", column, column);
    for (const struct rl_choice *ch = o->choices; ch && ch->name; ch++) {
        int at = fprintf(f, "%*s%s: ", column + 2, "", ch->name);
        rl_opts_wrap(f, ch->help, at, column + 4);
    }
}

/* text with "{NAME}" (a lower-case option name in braces) replaced by option NAME's
 * argument; other braces are text */
static void put_text(FILE *f, const struct rl_command *c, const char *text)
{
    char m[256];
    for (const char *t = text; t && *t;) {
        const char *open = strchr(t, '{');
        size_t      l    = open ? strspn(open + 1, "abcdefghijklmnopqrstuvwxyz0123456789-") : 0;
        if (!open) {
            fputs(t, f);
            return;
        }
        fprintf(f, "%.*s", (int)(open - t + (l && open[l + 1] == '}' ? 0 : 1)), t);
        t = open + 1;
        if (!l || open[l + 1] != '}') continue;
        const struct rl_opt *o = c->opts;
        while (o->name && (strncmp(o->name, open + 1, l) || o->name[l]))
            o++;
        RL_ASSERT(o->name); /* a {NAME} without its option is a typo in the usage text */
        fputs(metavar(o, m, sizeof m), f);
        t = open + l + 2;
    }
}

void rl_opts_usage(FILE *f, const struct rl_command *c)
{
    char words[320];
    int  column = 0;
    for (const struct rl_opt *o = c->opts; o->name; o++) {
        int n = option_words(o, words, sizeof words) + 4;
        if (is_option(o) && n > column && n <= HELP_COLUMN) column = n;
    }
    put_text(f, c, c->head);
    for (const struct rl_opt *o = c->opts; o->name; o++)
        if (is_option(o)) put_option(f, o, column ? column : HELP_COLUMN);
    put_text(f, c, c->tail);
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
