/* cmd_eval.c -- `ropelab eval RUN_DIR|CHECKPOINT`: a finished run's points, or one
 * checkpoint, evaluated again at other lengths, with sliding windows, under RoPE
 * extension methods or other shape-keeping settings (evaluate.h), without training. */
#include "config.h"
#include "cli.h"
#include "interrupt.h"
#include "opts.h"
#include "../experiment/evaluate.h"
#include "../core/gemm.h"
#include "../core/status.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
    "Usage: ropelab eval RUN_DIR|CHECKPOINT [--lengths M,...] [--batches B|all] [--stride S]\n"
    "                    [--rope-extend none|pi|ntk|yarn[,...]] [--rope-factor auto|F]\n"
    "                    [--set section.key=value]... [--out DIR]\n"
    "\n"
    "Evaluate trained models again, without training: every point of a finished run\n"
    "(RUN_DIR = OUT/<name>/ of `ropelab run`: each point's config.ini and its latest\n"
    "checkpoint), or one checkpoint (a .safetensors file of ropelab, whose configuration\n"
    "is in its __metadata__).  The evaluation is the training run's own: with the run's\n"
    "settings it repeats the numbers of its results.csv.  Prints the table and writes\n"
    "config.ini, results.csv, summary.md, plots/ and one directory per point under DIR.\n"
    "\n"
    "Options (each sets an [eval] key; docs/config.md, docs/evaluation.md):\n"
    "  --lengths M,...        evaluation lengths (eval.lengths)\n"
    "  --batches B|all        batches per length, or all: the whole validation split of\n"
    "                         charlm and tokens (eval.batches)\n"
    "  --stride S             LM tasks: sliding windows advanced by S < M tokens, each\n"
    "                         scoring its last S (eval.stride; 0 = non-overlapping)\n"
    "  --rope-extend LIST     RoPE points: evaluate under each of none, pi, ntk, yarn\n"
    "                         (eval.rope_extend)\n"
    "  --rope-factor auto|F   their factor s: auto = max(1, M/N), or F >= 1\n"
    "                         (eval.rope_factor)\n"
    "  --set section.key=V    change a key (repeatable): [eval] keys, [model] keys that keep\n"
    "                         every tensor's shape (rope_*, xpos*, eps, ...), [task] path or\n"
    "                         valid_path (data that moved), [experiment] threads; anything\n"
    "                         else is an error naming the key\n"
    "  --threads N            threads (experiment.threads; default the run's, at most the\n"
    "                         cores; results do not depend on it)\n"
    "  --out DIR              output directory (default: RUN_DIR/eval, or ./eval-<name> for\n"
    "                         a checkpoint; -2, -3, ... appended when it exists)\n"
    "  -q, --quiet            no progress lines (the table is still printed); without it a\n"
    "                         long evaluation shows its progress and the time left\n"
    "  -h, --help             show this help\n"
    "\n"
    "Every loss, accuracy and perplexity comes with its 95 % interval (results.csv; the\n"
    "tables show ± half of it).  Ctrl-C stops after the current forward.\n"
    "Exit status: 0 success, 1 runtime failure, 2 usage or configuration error, 130 / 143\n"
    "stopped by SIGINT / SIGTERM.\n";

/* "section.key=value" of --set into an override. */
static int split_set(char *s, struct rl_eval_override *v)
{
    char *dot = strchr(s, '.'), *eq = strchr(s, '=');
    if (!dot || !eq || dot > eq) return 1;
    *dot = 0, *eq = 0;
    v->section = s, v->key = dot + 1, v->value = eq + 1;
    return 0;
}

struct eval_args {
    const char              *path, *out;
    int                      quiet, n;
    struct rl_eval_override *ov;
    char                   **where; /* owned strings of the --set messages */
};

static int parse_args(struct eval_args *a, int argc, char **argv)
{
    static const struct option opts[] = {{"lengths", required_argument, NULL, 'L'},
                                         {"batches", required_argument, NULL, 'B'},
                                         {"stride", required_argument, NULL, 'S'},
                                         {"rope-extend", required_argument, NULL, 'E'},
                                         {"rope-factor", required_argument, NULL, 'F'},
                                         {"set", required_argument, NULL, 's'},
                                         {"out", required_argument, NULL, 'o'},
                                         {"threads", required_argument, NULL, 'T'},
                                         {"quiet", no_argument, NULL, 'q'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    static const char *const key[] = {"lengths", "batches", "stride", "rope_extend", "rope_factor"};
    static const char        flag[] = "LBSEF";
    int                      c;
    optind = 1, opterr = 0;
    while ((c = getopt_long(argc, argv, ":qh", opts, NULL)) != -1) {
        const char              *f = strchr(flag, c);
        struct rl_eval_override *v = &a->ov[a->n];
        if (c == 'h') return fputs(usage, stdout), -1;
        if (c == 'q') {
            a->quiet = 1;
        } else if (c == 'o') {
            a->out = optarg;
        } else if (f) {
            const char *name = opts[f - flag].name;
            if (!(a->where[a->n] = malloc(strlen(name) + 3))) return RL_EXIT_FAIL;
            sprintf(a->where[a->n], "--%s", name);
            v->section = "eval", v->key = key[f - flag], v->value = optarg;
            v->where = a->where[a->n++];
        } else if (c == 'T') {
            if (!(a->where[a->n] = malloc(16))) return RL_EXIT_FAIL;
            sprintf(a->where[a->n], "--threads");
            v->section = "experiment", v->key = "threads", v->value = optarg;
            v->where = a->where[a->n++];
        } else if (c == 's') {
            size_t n       = strlen(optarg);
            a->where[a->n] = malloc(2 * n + 16);
            if (!a->where[a->n]) return RL_EXIT_FAIL;
            sprintf(a->where[a->n], "--set %s", optarg);
            char *copy = a->where[a->n] + n + 7;
            memcpy(copy, optarg, n + 1);
            if (split_set(copy, v))
                return rl_usage_error("eval", "--set %s: expected section.key=value", optarg);
            v->where = a->where[a->n++];
        } else if (c == ':') {
            return rl_usage_error("eval", "option '%s' needs an argument", argv[optind - 1]);
        } else {
            return rl_usage_error("eval", "unknown option '%s'", argv[optind - 1]);
        }
    }
    for (int i = optind; i < argc; i++) {
        if (a->path)
            return rl_usage_error("eval", "one RUN_DIR or CHECKPOINT expected, got '%s' and '%s'",
                                  a->path, argv[i]);
        a->path = argv[i];
    }
    if (!a->path) return rl_usage_error("eval", "missing RUN_DIR or CHECKPOINT");
    return RL_EXIT_OK;
}

/* ---- the progress line of a long evaluation ---- */

struct progress {
    FILE  *f;
    int    tty, shown;
    char   point[256];
    double t_point, t_length, last; /* ms: when the point and its length began, last line */
    int    index;                   /* the (method, length) being evaluated */
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void fmt_secs(char *buf, size_t len, double s)
{
    if (!(s >= 0) || s > 1e7) s = 0;
    if (s < 60)
        snprintf(buf, len, "%.0fs", s);
    else
        snprintf(buf, len, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
}

/* After every forward: nothing in the first 2 s of a point, then a line (redrawn in place on
 * a terminal, every 10 s otherwise) with the length, its share done and the time left at
 * the rate of its tokens so far, for it and for the point's whole evaluation. */
static void on_progress(void *ctx, const char *point, const struct rl_eval_progress *p)
{
    struct progress *pr = ctx;
    double           t  = now_ms();
    if (!pr->t_point || strcmp(point, pr->point) || p->index < pr->index) {
        snprintf(pr->point, sizeof pr->point, "%s", point);
        pr->t_point = t - p->ms, pr->last = 0, pr->index = -1;
    }
    if (p->index != pr->index) pr->index = p->index, pr->t_length = t - p->ms;
    if (t - pr->t_point < 2000 || t - pr->last < (pr->tty ? 250 : 10000)) return;
    pr->last = t;
    char   left[32], all[32];
    double rate = p->tokens / (t - pr->t_length); /* tokens per ms at this length */
    fmt_secs(left, sizeof left, (p->length_tokens - p->tokens) / rate / 1000);
    /* the later lengths at this one's rate: an underestimate where they are longer */
    fmt_secs(all, sizeof all, (p->total - p->done) / rate / 1000);
    fprintf(pr->f, "%s%s%slength %d (%d of %d): %.0f %% of its tokens, eta %s (all %s)%s",
            pr->tty ? "\r" : "", point, *point ? ": " : "", p->length, p->index + 1, p->count,
            100 * p->tokens / p->length_tokens, left, all, pr->tty ? "\033[K" : "\n");
    fflush(pr->f);
    pr->shown = 1;
}

int rl_cmd_eval(int argc, char **argv)
{
    struct eval_args a = {0};
    char             out[4096];
    a.ov    = calloc((size_t)argc + 1, sizeof *a.ov);
    a.where = calloc((size_t)argc + 1, sizeof *a.where);
    int rc  = a.ov && a.where ? parse_args(&a, argc, argv) : RL_EXIT_FAIL;
    if (rc == RL_EXIT_OK) {
        rl_cli_threads("eval", 0);
        struct progress         pr = {.f = stdout, .tty = isatty(STDOUT_FILENO), .index = -1};
        struct rl_evaluate_opts o  = {.ov       = a.ov,
                                      .n_ov     = a.n,
                                      .out      = a.out,
                                      .table    = stdout,
                                      .log      = a.quiet ? NULL : stdout,
                                      .progress = a.quiet ? NULL : on_progress,
                                      .ctx      = &pr,
                                      .stop     = rl_cli_interrupt_install("after this forward")};
        rl_status               st = rl_evaluate(a.path, &o, out, sizeof out);
        if (pr.shown && pr.tty) fputs("\r\033[K", stdout);
        if (st == RL_EINTR) {
            fprintf(stderr, "ropelab: evaluation interrupted: nothing written for the point it "
                            "was evaluating\n");
            rc = rl_cli_interrupt_status();
        } else if (st != RL_OK) {
            fprintf(stderr, "ropelab: %s\n", rl_last_error());
            rc = st == RL_EINVAL ? RL_EXIT_USAGE : RL_EXIT_FAIL;
        }
    }
    for (int i = 0; a.where && i < argc; i++)
        free(a.where[i]);
    free(a.ov), free(a.where);
    return rc < 0 ? RL_EXIT_OK : rc;
}
