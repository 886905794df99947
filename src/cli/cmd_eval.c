/* cmd_eval.c -- `ropelab eval RUN_DIR|CHECKPOINT`: a finished run's points, or one
 * checkpoint, evaluated again at other lengths, with sliding windows, under RoPE
 * extension methods or other shape-keeping settings (evaluate.h), without training. */
#include "config.h"
#include "cli.h"
#include "interrupt.h"
#include "opts.h"
#include "../config/cfg.h"
#include "../experiment/evaluate.h"
#include "../core/gemm.h"
#include "../core/status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct eval_args {
    const char              *path, *out;
    int                      quiet, n;
    struct rl_eval_override *ov;
    char                   **where; /* owned strings of the overrides (argc entries) */
};

/* The next override, its where string (of n bytes) allocated, or NULL. */
static struct rl_eval_override *next_override(struct eval_args *a, size_t n)
{
    if (!(a->where[a->n] = malloc(n))) return NULL;
    struct rl_eval_override *v = &a->ov[a->n];
    v->where                   = a->where[a->n++];
    return v;
}

/* --lengths M,... and the others that set one key: [eval] NAME (dashes as underscores), or
 * [experiment] threads; where: "--NAME" followed by the key's name. */
static int set_key(void *args, const struct rl_opt *row, const char *value)
{
    size_t                   n = strlen(row->name);
    struct rl_eval_override *v = next_override(args, 2 * n + 4);
    if (!v) return RL_EXIT_FAIL;
    char *where = (char *)v->where, *key = where + n + 3;
    sprintf(where, "--%s", row->name);
    for (size_t i = 0; i <= n; i++)
        key[i] = row->name[i] == '-' ? '_' : row->name[i];
    v->section = strcmp(row->name, "threads") ? "eval" : "experiment";
    v->key = key, v->value = value;
    return RL_EXIT_OK;
}

/* --set section.key=value: where "--set section.key=value", then its split copy */
static int set_any(void *args, const struct rl_opt *row, const char *value)
{
    size_t                   n = strlen(value);
    struct rl_eval_override *v = next_override(args, 2 * n + 16);
    if (!v) return RL_EXIT_FAIL;
    char *copy = (char *)v->where + n + 7;
    sprintf((char *)v->where, "--set %s", value);
    memcpy(copy, value, n + 1);
    char *dot = strchr(copy, '.'), *eq = strchr(copy, '=');
    if (!dot || !eq || dot > eq)
        return rl_usage_error("eval", "--%s %s: expected section.key=value", row->name, value);
    *dot = 0, *eq = 0;
    v->section = copy, v->key = dot + 1, v->value = eq + 1;
    return RL_EXIT_OK;
}

#define A struct eval_args
static const struct rl_opt eval_opts[] = {
    RL_OPT_OPERAND("RUN_DIR or CHECKPOINT", A, path),
    RL_OPT_CALL("lengths", set_key, "M,...", "evaluation lengths (eval.lengths)"),
    RL_OPT_CALL("batches", set_key, "B|all",
                "batches per length, or all: the whole validation split of charlm and tokens "
                "(eval.batches)"),
    RL_OPT_CALL("stride", set_key, "S",
                "LM tasks: sliding windows advanced by S < M tokens, each scoring its last S "
                "(eval.stride; 0 = non-overlapping)"),
    {.name    = "rope-extend",
     .arg     = RL_ARG_CALL,
     .call    = set_key,
     .choices = rl_cfg_extends,
     .metavar = "[,...]",
     .help    = "RoPE points: evaluate under each method listed (eval.rope_extend)"},
    RL_OPT_CALL("rope-factor", set_key, "auto|F",
                "their factor s: auto = max(1, M/N), or F >= 1 (eval.rope_factor)"),
    RL_OPT_CALL("set", set_any, "section.key=V",
                "change a key (repeatable): [eval] keys, [model] keys that keep every tensor's "
                "shape (rope_*, xpos*, eps, ...), [task] path or valid_path (data that moved), "
                "[experiment] threads; anything else is an error naming the key"),
    RL_OPT_CALL("threads", set_key, "N",
                "threads (experiment.threads; default the run's, at most the cores; results do "
                "not depend on it)"),
    RL_OPT_STRING("out", A, out, "DIR",
                  "output directory (default: RUN_DIR/eval, or ./eval-<name> for a checkpoint; "
                  "-2, -3, ... appended when it exists)"),
    RL_OPT_FLAG("quiet", 'q', A, quiet, 1,
                "no progress lines (the table is still printed); without it a long evaluation "
                "shows its progress and the time left"),
    RL_OPT_HELP,
    RL_OPT_END};
#undef A

static const struct rl_command eval_command = {
    "eval", eval_opts,
    "Usage: ropelab eval RUN_DIR|CHECKPOINT [--lengths M,...] [--batches B|all] [--stride S]\n"
    "                    [--rope-extend {rope-extend}] [--rope-factor auto|F]\n"
    "                    [--set section.key=value]... [--out DIR]\n"
    "\n"
    "Evaluate trained models again, without training: every point of a finished run\n"
    "(RUN_DIR = OUT/<name>/ of `ropelab run`: each point's config.ini and its latest\n"
    "checkpoint), or one checkpoint (a .safetensors file of ropelab, whose configuration\n"
    "is in its __metadata__).  The evaluation is the training run's own: with the run's\n"
    "settings it repeats the numbers of its results.csv.  Prints the table and writes\n"
    "config.ini, results.csv, summary.md, plots/ and one directory per point under DIR.\n"
    "\n"
    "Options (each sets an [eval] key; docs/config.md, docs/evaluation.md):\n",
    "\n"
    "Every loss, accuracy and perplexity comes with its 95 % interval (results.csv; the\n"
    "tables show ± half of it).  Ctrl-C stops after the current forward.\n"
    "Exit status: 0 success, 1 runtime failure, 2 usage or configuration error, 130 / 143\n"
    "stopped by SIGINT / SIGTERM.\n",
    0};

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
    int rc  = a.ov && a.where ? rl_opts_parse(&eval_command, &a, argc, argv, NULL) : RL_EXIT_FAIL;
    if (rc == RL_OPTS_GO_ON) {
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
        } else {
            rc = RL_EXIT_OK;
        }
    }
    for (int i = 0; a.where && i < argc; i++)
        free(a.where[i]);
    free(a.ov), free(a.where);
    return rc;
}
