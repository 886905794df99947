/* train_run.c -- one run of rl_train_run: the run directory, resume, the update loop with
 * its logging, checkpoints and evaluations; see train.h. */
#include "config.h"
#include "train_impl.h"
#include "../core/threads.h"
#include "governor.h"
#include "../core/json.h"
#include "../core/mpi.h"
#include "../core/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Timings summed since the previous metrics record. */
struct interval {
    int    n;
    double ms_forward, ms_backward, ms_optimizer, ms_total, tokens;
    double ms_cpu;  /* CPU time of the process (all threads) during the updates */
    double threads; /* the thread counts the updates ran with, summed */
};

struct run {
    struct rl_trainer           tr;
    const struct rl_train_opts *o;
    char                        metrics[2300], evals[2300];
    struct interval             iv;
    struct interval             all; /* this process's updates, for the result */
    int64_t                     first_step;
    double                      t_start;
    int64_t                     saved;   /* the step of the newest checkpoint on disk, or -1 */
    double                      t_saved; /* when it was written (or training started), ms */
    struct rl_eval_hooks        hooks;   /* the final evaluation's stop flag and progress */
    struct rl_governor          gov;     /* the thread count under load: core/governor.h */
};

static void interval_add(struct interval *iv, const struct rl_update_stats *s, double tokens)
{
    iv->n++;
    iv->ms_forward += s->ms_forward, iv->ms_backward += s->ms_backward;
    iv->ms_optimizer += s->ms_optimizer, iv->ms_total += s->ms_total, iv->tokens += tokens;
}

static rl_status write_record(struct run *r, const struct rl_update_stats *s)
{
    struct interval   *iv = &r->iv;
    struct rl_json_buf b;
    rl_json_buf_init(&b);
    rl_json_buf_printf(&b,
                       "{\"step\": %lld, \"loss\": %.9g, \"acc\": %.9g, \"lr\": %.9g, "
                       "\"grad_norm\": %.9g, \"tokens_per_s\": %.6g, \"ms_forward\": %.6g, "
                       "\"ms_backward\": %.6g, \"ms_optimizer\": %.6g, \"ms_update\": %.6g, "
                       "\"ms_cpu\": %.6g, \"threads\": %.3g}\n",
                       (long long)r->tr.step, s->loss, s->acc, s->lr, s->grad_norm,
                       iv->tokens / (iv->ms_total / 1000.0), iv->ms_forward / iv->n,
                       iv->ms_backward / iv->n, iv->ms_optimizer / iv->n, iv->ms_total / iv->n,
                       iv->ms_cpu / iv->n, iv->threads / iv->n);
    rl_status st = b.failed ? rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "out of memory")
                            : rl_jsonl_append(r->metrics, b.p);
    rl_json_buf_free(&b);
    return st;
}

static void progress(struct run *r, const struct rl_update_stats *s)
{
    if (!r->o->log) return;
    const struct rl_cfg *c    = r->tr.c;
    double               done = (double)(r->tr.step - r->first_step);
    double eta = (rl_now_ms() - r->t_start) / 1000.0 / done * (double)(c->train.steps - r->tr.step);
    fprintf(r->o->log,
            "step %*lld/%d  loss %.4f  acc %.3f  lr %.3g  grad_norm %.3g  %.0f tok/s"
            "  eta %dm%02ds\n",
            (int)snprintf(NULL, 0, "%d", c->train.steps), (long long)r->tr.step, c->train.steps,
            s->loss, s->acc, s->lr, s->grad_norm, r->iv.tokens / (r->iv.ms_total / 1000.0),
            (int)(eta / 60), (int)fmod(eta, 60));
    fflush(r->o->log);
}

/* The curves of an evaluation row in eval.jsonl: LM tasks the loss over positions
 * (position_width per bin), the other causal tasks the accuracy by the order of a scored
 * target within its row (order_acc[k]: the (k+1)-th; the last entry pools the rest). */
static void json_curves(struct rl_json_buf *b, const struct rl_eval_row *r)
{
    if (r->pos_bins) { /* LM: the loss curve over positions, bins between edges */
        rl_json_buf_puts(b, ", \"position_edges\": [");
        for (int k = 0; k <= r->pos_bins; k++)
            rl_json_buf_printf(b, "%s%d", k ? ", " : "", r->pos_edge[k]);
        rl_json_buf_puts(b, "], \"position_loss\": [");
        for (int k = 0; k < r->pos_bins; k++) {
            if (k) rl_json_buf_puts(b, ", ");
            if (isnan(r->pos_loss[k]))
                rl_json_buf_puts(b, "null");
            else
                rl_json_buf_printf(b, "%.6g", r->pos_loss[k]);
        }
        rl_json_buf_puts(b, "]");
    }
    if (!r->n_orders) return;
    rl_json_buf_puts(b, ", \"order_targets\": [");
    for (int k = 0; k < r->n_orders; k++)
        rl_json_buf_printf(b, "%s%ld", k ? ", " : "", r->order_targets[k]);
    rl_json_buf_puts(b, "], \"order_acc\": [");
    for (int k = 0; k < r->n_orders; k++)
        if (r->order_targets[k])
            rl_json_buf_printf(b, "%s%.6g", k ? ", " : "",
                               (double)r->order_correct[k] / (double)r->order_targets[k]);
        else
            rl_json_buf_printf(b, "%snull", k ? ", " : "");
    rl_json_buf_puts(b, "]");
}

static rl_status write_eval_record(struct run *r, const struct rl_eval_row *rows, int n)
{
    struct rl_json_buf b;
    rl_json_buf_init(&b);
    rl_json_buf_printf(&b, "{\"step\": %lld, \"eval\": [", (long long)r->tr.step);
    for (int i = 0; i < n; i++) {
        if (rows[i].na) {
            rl_json_buf_printf(&b, "%s{\"length\": %d, \"rope_extend\": \"%s\", \"na\": ",
                               i ? ", " : "", rows[i].length, rl_cfg_extend_name(rows[i].method));
            rl_json_buf_string(&b, rows[i].note, strlen(rows[i].note));
            rl_json_buf_puts(&b, "}");
            continue;
        }
        rl_json_buf_printf(&b,
                           "%s{\"length\": %d, \"rope_extend\": \"%s\", \"rope_factor\": "
                           "%.6g, \"stride\": %d, \"loss\": %.9g, \"acc\": %.9g, "
                           "\"exact\": %.9g, \"sequences\": %ld, "
                           "\"ms_per_1k_tokens\": %.6g, \"rows_denominator_le_eps\": %ld, "
                           "\"denominator_rows\": %ld",
                           i ? ", " : "", rows[i].length, rl_cfg_extend_name(rows[i].method),
                           rows[i].factor, rows[i].stride, rows[i].loss, rows[i].acc, rows[i].exact,
                           rows[i].sequences, rows[i].ms_per_1k_tokens, rows[i].bad_den,
                           rows[i].den_rows);
        json_curves(&b, &rows[i]);
        rl_json_buf_puts(&b, "}");
    }
    rl_json_buf_puts(&b, "]}\n");
    rl_status st = b.failed ? rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "out of memory")
                            : rl_jsonl_append(r->evals, b.p);
    rl_json_buf_free(&b);
    return st;
}

/* Load the newest intact checkpoint (k, path: the latest on entry; *k = -1 when none is
 * left).  A damaged one (checksum, non-finite values, truncated, unreadable) is passed
 * over with a warning; a configuration mismatch stops the resume. */
static rl_status resume_from(struct run *r, const char *dir, int64_t *k, char *ck, size_t len)
{
    FILE *warn    = r->o->warn;
    int   removed = 0;
    RL_TRY(rl_train_remove_stale(dir, &removed));
    if (removed && warn)
        fprintf(warn, "warning: %s: removed %d temporary file%s of an interrupted write\n", dir,
                removed, removed == 1 ? "" : "s");
    while (*k >= 0) {
        rl_status st = rl_trainer_load(&r->tr, ck);
        if (st == RL_OK) break;
        if (st != RL_EFORMAT && st != RL_ESHAPE && st != RL_EIO) return st;
        if (warn)
            fprintf(warn, "warning: %s\nwarning: passing over this checkpoint\n", rl_last_error());
        RL_TRY(rl_train_latest_checkpoint(dir, *k, k, ck, len));
        if (warn && *k >= 0) fprintf(warn, "warning: trying %s instead\n", ck);
    }
    if (*k < 0) {
        /* nothing usable: start again (the trainer's state is still its initial one) */
        if (r->o->log || warn)
            fprintf(r->o->log ? r->o->log : warn,
                    "no usable checkpoint in %s/checkpoints: starting at update 0\n", dir);
    } else if (r->o->log) {
        fprintf(r->o->log, "resuming %s from update %lld\n", dir, (long long)r->tr.step);
    }
    return RL_OK;
}

/* Fresh run: refuse to overwrite one; resume: load the latest checkpoint and cut the
 * logs back to it.  Writes config.ini either way. */
static rl_status open_run(struct run *r, const char *dir)
{
    char    path[2300], ck[2300];
    int64_t k = -1;
    r->saved  = -1;
    if (!rl_trainer_writer(&r->tr)) return RL_OK; /* data parallel: rank 0 keeps the files */
    RL_TRY(rl_mkdir_p(dir));
    RL_TRY(rl_train_path(path, sizeof path, dir, "checkpoints"));
    RL_TRY(rl_mkdir_p(path));
    RL_TRY(rl_train_path(r->metrics, sizeof r->metrics, dir, "metrics.jsonl"));
    RL_TRY(rl_train_path(r->evals, sizeof r->evals, dir, "eval.jsonl"));
    RL_TRY(rl_train_latest_checkpoint(dir, INT64_MAX, &k, ck, sizeof ck));
    if (!r->o->resume && (k >= 0 || rl_path_exists(r->metrics)))
        RL_FAIL(RL_EINVAL,
                "%s already holds a run; continue it with --resume, or choose "
                "another --out or [experiment] name",
                dir);
    if (r->o->resume) RL_TRY(resume_from(r, dir, &k, ck, sizeof ck));
    r->saved = k;
    RL_TRY(rl_jsonl_truncate(r->metrics, r->tr.step));
    RL_TRY(rl_jsonl_truncate(r->evals, r->tr.step));
    char *text = malloc(1 << 16);
    if (!text) RL_FAIL(RL_ENOMEM, "out of memory");
    int n = rl_cfg_render(r->tr.c, text, 1 << 16, 0);
    RL_ASSERT(n < (1 << 16));
    rl_status st = rl_train_path(path, sizeof path, dir, "config.ini");
    if (st == RL_OK) st = rl_write_file_atomic(path, text, (size_t)n, NULL, 0);
    free(text);
    RL_TRY(st);
    if (k < 0) RL_TRY(rl_train_init_from(r->tr.m, r->tr.c)); /* a fresh run only */
    if (k < 0 && r->tr.c->train.checkpoint_initial) {
        RL_TRY(rl_trainer_save(&r->tr, NULL));
        r->saved = 0;
    }
    return RL_OK;
}

/* Checkpoints of an update: the scheduled ones, and a safety one after checkpoint_minutes
 * of training since the last (kept until the next: train_io.c prunes it). */
static rl_status save_due(struct run *r)
{
    const struct rl_cfg *c   = r->tr.c;
    const double         now = rl_now_ms();
    if (!rl_train_scheduled(c, r->tr.step) &&
        !(c->train.checkpoint_minutes > 0 &&
          now - r->t_saved >= c->train.checkpoint_minutes * 60000.0))
        return RL_OK;
    RL_TRY(rl_trainer_save(&r->tr, NULL));
    r->saved = r->tr.step, r->t_saved = now;
    return RL_OK;
}

static rl_status after_update(struct run *r, const struct rl_update_stats *s)
{
    const struct rl_cfg *c = r->tr.c;
    const int64_t        k = r->tr.step;
    if (!rl_trainer_writer(&r->tr)) return RL_OK;
    if (k % c->train.log_every == 0 || k == c->train.steps) {
        RL_TRY(write_record(r, s));
        progress(r, s);
        memset(&r->iv, 0, sizeof r->iv);
    }
    /* the evaluation record before the checkpoint: a run killed between the two resumes
     * from the previous checkpoint and writes the record again, never skips it */
    if (c->eval.every && k % c->eval.every == 0 && k < c->train.steps) {
        struct rl_eval_row *rows = malloc(RL_EVAL_MAX_ROWS * sizeof *rows);
        int                 n    = 0;
        if (!rows) RL_FAIL(RL_ENOMEM, "out of memory");
        rl_status st = rl_trainer_evaluate(&r->tr, rows, &n);
        if (st == RL_OK) st = write_eval_record(r, rows, n);
        free(rows);
        RL_TRY(st);
    }
    return save_due(r);
}

/* Stop before the next update?  A stop flag raised on one rank of a data-parallel job
 * stops every rank at the same update (else the others would wait for it forever). */
static int stop_now(struct run *r)
{
    const struct rl_train_opts *o = r->o;
    if (o->stop_after > 0 && r->tr.step >= o->stop_after) return 1;
    if (o->max_updates > 0 && r->tr.step - r->first_step >= o->max_updates) return 1;
    double v = o->stop && *o->stop;
    if (r->tr.ranks > 1 && rl_mpi_sum_doubles(&v, 1) != RL_OK) return 1; /* aborts anyway */
    return v > 0;
}

static rl_status train_loop(struct run *r, struct rl_train_result *res)
{
    const struct rl_cfg   *c      = r->tr.c;
    const double           tokens = (double)c->train.batch * c->task.length;
    struct rl_update_stats s;
    r->first_step = r->tr.step;
    r->t_start = r->t_saved = rl_now_ms();
    rl_governor_init(&r->gov, rl_threads_get());
    while (r->tr.step < c->train.steps && !stop_now(r)) {
        double cpu0 = rl_cpu_ms(), threads = rl_threads_get();
        RL_TRY(rl_trainer_update(&r->tr, &s));
        double cpu = rl_cpu_ms() - cpu0;
        rl_governor_update(&r->gov, s.ms_total, cpu);
        interval_add(&r->iv, &s, tokens);
        interval_add(&r->all, &s, tokens);
        r->iv.ms_cpu += cpu, r->all.ms_cpu += cpu;
        r->iv.threads += threads, r->all.threads += threads;
        res->last_loss = s.loss, res->last_acc = s.acc;
        RL_TRY(after_update(r, &s));
        if (r->o->on_update) r->o->on_update(r->o->ctx, r->tr.step, c->train.steps, s.loss);
    }
    res->steps_done = r->tr.step;
    res->updates    = r->tr.step - r->first_step;
    if (r->all.n) {
        res->tokens_per_s = r->all.tokens / (r->all.ms_total / 1000.0);
        res->ms_forward   = r->all.ms_forward / r->all.n;
        res->ms_backward  = r->all.ms_backward / r->all.n;
        res->ms_optimizer = r->all.ms_optimizer / r->all.n;
    }
    return RL_OK;
}

/* Stopped before the last update: a checkpoint of the last completed one, unless there is
 * one (or no update was ever done). */
static rl_status save_stopped(struct run *r, struct rl_train_result *res)
{
    res->stopped = 1;
    if (!rl_trainer_writer(&r->tr) || r->tr.step == 0) return RL_OK;
    if (r->saved == r->tr.step) {
        int64_t k;
        return rl_train_latest_checkpoint(r->tr.dir, r->tr.step + 1, &k, res->checkpoint,
                                          sizeof res->checkpoint);
    }
    RL_TRY(rl_trainer_save(&r->tr, res->checkpoint));
    r->saved = r->tr.step;
    return RL_OK;
}

static rl_status finish(struct run *r, const char *dir, struct rl_train_result *res)
{
    const struct rl_cfg *c = r->tr.c;
    if (!rl_trainer_writer(&r->tr)) return RL_OK; /* data parallel: rank 0 evaluates */
    r->hooks     = (struct rl_eval_hooks){r->o->stop, r->o->on_eval, r->o->ctx};
    r->tr.hooks  = &r->hooks;
    rl_status st = rl_trainer_evaluate(&r->tr, res->eval, &res->n_eval);
    r->tr.hooks  = NULL;
    if (st == RL_EINTR) /* the final checkpoint is there: a resume evaluates again */
        return save_stopped(r, res);
    RL_TRY(st);
    rl_trainer_mark_diverged(c, r->tr.task, res->eval, res->n_eval);
    RL_TRY(rl_jsonl_truncate(r->evals, r->tr.step - 1)); /* a resumed finished run: no twin */
    RL_TRY(write_eval_record(r, res->eval, res->n_eval));
    RL_TRY(rl_write_results_csv(dir, c, res->eval, res->n_eval));
    if (r->o->table)
        rl_print_eval_table(r->o->table, c, res->eval, res->n_eval, rl_task_causal(r->tr.task));
    return RL_OK;
}

rl_status rl_train_run(const struct rl_cfg *c, rl_task *task, const char *dir,
                       const struct rl_train_opts *opts, struct rl_train_result *res)
{
    struct rl_train_result local;
    struct rl_train_opts   quiet = {0};
    struct run            *r     = calloc(1, sizeof *r);
    if (!r) RL_FAIL(RL_ENOMEM, "out of memory");
    if (!res) res = &local;
    memset(res, 0, sizeof *res);
    r->o         = opts ? opts : &quiet;
    rl_status st = rl_trainer_init(&r->tr, c, task);
    if (st != RL_OK) {
        free(r);
        return st;
    }
    snprintf(r->tr.dir, sizeof r->tr.dir, "%s", dir);
    st = open_run(r, dir);
    if (st == RL_OK) st = rl_trainer_share(&r->tr);
    if (st == RL_OK) st = train_loop(r, res);
    if (st == RL_OK && r->tr.step < c->train.steps) st = save_stopped(r, res);
    if (st == RL_OK && r->tr.step == c->train.steps) st = finish(r, dir, res);
    rl_governor_end(&r->gov); /* the count asked for, for the next run */
    rl_trainer_free(&r->tr);
    free(r);
    return st;
}
