/* train_eval.c -- the evaluation of a trainer's model: every evaluation length in
 * non-overlapping windows or in sliding windows (eval.stride), under every RoPE extension
 * method of eval.rope_extend; the evaluation of a checkpoint and the init_from check.  See
 * train.h for what a row holds. */
#include "config.h"
#include "train_impl.h"
#include "../model/checkpoint.h"
#include "../core/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What one length's forwards add up. */
struct eval_acc {
    double loss, ms;
    long   correct, fwd_rows;
};

/* Per-sequence exact match, and for LM tasks the loss by position, for the others the
 * accuracy by the order of a scored target within its row, from the per-row losses and
 * predictions of the last forward on batch b (rows of N positions). */
static void score_rows(const rl_model *m, const struct rl_batch *b, int lm, struct rl_eval_row *r)
{
    const double  *loss = rl_model_row_loss(m);
    const uint8_t *ok   = rl_model_row_correct(m);
    for (int row = 0; row < b->B; row++) {
        int all = 1, k = 0;
        for (int n = 0; n < b->N; n++) {
            const size_t t = (size_t)row * b->N + n;
            if (b->mask && !b->mask[t]) continue;
            all &= ok[t];
            if (!lm) { /* the k-th scored target (orders from the last one pooled) */
                const int o = k < RL_EVAL_ORDERS ? k : RL_EVAL_ORDERS - 1;
                r->order_targets[o]++, r->order_correct[o] += ok[t];
                if (o >= r->n_orders) r->n_orders = o + 1;
            }
            k++;
            if (!lm) continue;
            r->pos_loss[n / r->pos_width] += loss[t];
            r->pos_targets[n / r->pos_width]++;
        }
        r->exact += k && all, r->sequences += k > 0;
    }
}

/* One forward on b (only its masked positions count), added to r and a. */
static rl_status eval_batch(struct rl_trainer *t, const struct rl_batch *b, struct rl_eval_row *r,
                            struct eval_acc *a)
{
    double ls, t0 = rl_now_ms();
    long   nt, nc;
    RL_TRY(rl_model_forward(t->m, b, &ls, &nt, &nc));
    a->ms += rl_now_ms() - t0;
    a->loss += ls, r->targets += nt, a->correct += nc, a->fwd_rows += b->B;
    r->bad_den += rl_model_bad_denominators(t->m);
    if (rl_task_causal(t->task))
        score_rows(t->m, b, rl_task_kind_lm(t->c->task.name), r);
    else
        r->exact += (double)nc, r->sequences += nt; /* one target per sequence */
    return RL_OK;
}

/* Non-overlapping windows: the validation batches 0 .. eval.batches-1 as the task makes
 * them (every target scored once, with 0 .. n-1 tokens of context). */
static rl_status eval_windows(struct rl_trainer *t, int n, int rows, struct rl_eval_row *r,
                              struct eval_acc *a)
{
    struct rl_batch b;
    RL_TRY(rl_batch_alloc(&b, rows, n));
    rl_status st = RL_OK;
    for (int i = 0; st == RL_OK && i < t->c->eval.batches; i++) {
        st = rl_task_batch(t->task, &b, 1, i);
        if (st == RL_OK) st = eval_batch(t, &b, r, a);
    }
    rl_batch_free(&b);
    return st;
}

/* Sliding windows of M tokens advanced by S < M (the ALiBi paper's sliding evaluation,
 * fairseq's --context-window).  The rows of the validation batches 0 .. eval.batches-1,
 * in order, form one stream of T tokens (charlm: consecutive text).  Window w ends at
 * e_w = min(M + w S, T), starts at e_w - M and scores the targets [e_{w-1}, e_w) through
 * the mask (the first window all of its M): every target of the non-overlapping
 * evaluation is scored once, with M - S or more tokens of context after the first
 * window.  Windows are packed `rows` to a forward; S = M gives exactly the batches of
 * eval_windows. */
static rl_status eval_sliding(struct rl_trainer *t, int M, int S, int rows, struct rl_eval_row *r,
                              struct eval_acc *a)
{
    const size_t    per = (size_t)rows * M, T = per * (size_t)t->c->eval.batches;
    struct rl_batch b, w;
    int32_t        *in = malloc(T * sizeof *in), *tg = malloc(T * sizeof *tg);
    uint8_t        *mk = malloc(T);
    rl_status       st = in && tg && mk ? rl_batch_alloc(&b, rows, M)
                                        : rl_error_report(RL_ENOMEM, __FILE__, __LINE__,
                                                          "evaluation: out of memory (%zu tokens)", T);
    if (st == RL_OK && (st = rl_batch_alloc(&w, rows, M)) != RL_OK) rl_batch_free(&b);
    if (st != RL_OK) return free(in), free(tg), free(mk), st;
    for (int i = 0; st == RL_OK && i < t->c->eval.batches; i++) {
        st = rl_task_batch(t->task, &b, 1, i);
        memcpy(in + i * per, b.inputs, per * sizeof *in);
        memcpy(tg + i * per, b.targets, per * sizeof *tg);
        memcpy(mk + i * per, b.mask, per);
    }
    size_t prev = 0;
    int    k    = 0;
    for (size_t e = (size_t)M; st == RL_OK;) {
        const size_t s0 = e - (size_t)M, o = (size_t)k * M;
        memcpy(w.inputs + o, in + s0, (size_t)M * sizeof *in);
        memcpy(w.targets + o, tg + s0, (size_t)M * sizeof *tg);
        for (size_t p = 0; p < (size_t)M; p++) /* score [prev, e) only */
            w.mask[o + p] = s0 + p >= prev ? mk[s0 + p] : 0;
        w.label[k++] = -1;
        prev         = e;
        if (k == rows || e == T) {
            struct rl_batch v = w;
            v.B               = k;
            st                = eval_batch(t, &v, r, a);
            k                 = 0;
        }
        if (e == T) break;
        e = e + (size_t)S < T ? e + (size_t)S : T;
    }
    rl_batch_free(&b);
    rl_batch_free(&w);
    free(in), free(tg), free(mk);
    return st;
}

/* One evaluation length: eval.batches batches of the validation split with about the
 * training batch's token count each (max(1, round(B N / n)) rows of n tokens). */
static rl_status eval_length(struct rl_trainer *t, int n, struct rl_eval_row *r)
{
    const struct rl_cfg *c = t->c;
    memset(r, 0, sizeof *r);
    r->length = n, r->stride = c->eval.stride;
    if (c->model.pe == RL_CFG_PE_LEARNED && n > c->model.max_len) {
        r->na = 1, r->loss = r->acc = r->ppl = r->ms_per_1k_tokens = NAN;
        snprintf(r->note, sizeof r->note, "learned PE has max_len rows");
        return RL_OK;
    }
    long rows = lround((double)c->train.batch * c->task.length / n);
    if (rows < 1) rows = 1;
    r->pos_width      = (n + RL_EVAL_POS_BINS - 1) / RL_EVAL_POS_BINS;
    r->pos_bins       = rl_task_kind_lm(c->task.name) ? (n + r->pos_width - 1) / r->pos_width : 0;
    struct eval_acc a = {0};
    RL_TRY(c->eval.stride ? eval_sliding(t, n, c->eval.stride, (int)rows, r, &a)
                          : eval_windows(t, n, (int)rows, r, &a));
    r->loss  = r->targets ? a.loss / (double)r->targets : NAN;
    r->acc   = r->targets ? (double)a.correct / (double)r->targets : NAN;
    r->ppl   = rl_task_causal(t->task) ? exp(r->loss) : NAN;
    r->exact = r->sequences ? r->exact / (double)r->sequences : NAN;
    for (int i = 0; i < r->pos_bins; i++)
        r->pos_loss[i] = r->pos_targets[i] ? r->pos_loss[i] / (double)r->pos_targets[i] : NAN;
    r->ms_per_1k_tokens = a.ms * 1000.0 / ((double)a.fwd_rows * n);
    /* the denominator diagnostic exists for linear attention only */
    r->den_rows = c->model.attention == RL_ATTN_LINEAR
                      ? a.fwd_rows * n * (long)c->model.layers * c->model.heads
                      : 0;
    return RL_OK;
}

/* The RoPE options of extension method e with factor s (training length N). */
static struct rl_rope_opts extend_opts(struct rl_rope_opts o, enum rl_cfg_extend e, double s, int N)
{
    if (e == RL_CFG_EXTEND_PI) o.scale = s;
    if (e == RL_CFG_EXTEND_NTK) o.ntk = s;
    if (e == RL_CFG_EXTEND_YARN) o.yarn = s, o.yarn_orig = N;
    return o;
}

rl_status rl_trainer_evaluate(struct rl_trainer *t, struct rl_eval_row *rows, int *n_rows)
{
    const struct rl_cfg      *c       = t->c;
    const struct rl_rope_opts trained = rl_model_config_get(t->m)->attn.rope;
    const int                 rope    = c->model.pe == RL_CFG_PE_ROPE;
    rl_status                 st      = RL_OK;
    int                       n       = 0;
    /* method-major: the plans of a (method, length) are built once, by its first forward */
    for (int k = 0; st == RL_OK && k < (rope ? c->eval.n_extend : 1); k++) {
        const enum rl_cfg_extend e = rope ? c->eval.extend[k] : RL_CFG_EXTEND_NONE;
        for (int i = 0; st == RL_OK && i < c->eval.n_lengths; i++) {
            const int M = c->eval.lengths[i];
            double    s = c->eval.rope_factor > 0 ? c->eval.rope_factor
                                                  : fmax(1.0, (double)M / c->task.length);
            if (e == RL_CFG_EXTEND_NONE) s = 1;
            const struct rl_rope_opts o = extend_opts(trained, e, s, c->task.length);
            st                          = rl_model_set_rope(t->m, &o);
            if (st == RL_OK) st = eval_length(t, M, &rows[n]);
            rows[n].method = e, rows[n].factor = s;
            n += st == RL_OK;
        }
    }
    rl_status back = rl_model_set_rope(t->m, &trained); /* training goes on with its own */
    *n_rows        = n;
    return st != RL_OK ? st : back;
}

/* A diverged model: its evaluation loss at the training length (or the shortest length
 * evaluated) is more than twice a uniform guess's ln(V) -- the loss a freshly initialised
 * model starts from -- or a loss or perplexity is not finite.  Every row's note says so
 * (results.csv, summary.md). */
void rl_trainer_mark_diverged(const struct rl_cfg *c, rl_task *task, struct rl_eval_row *rows,
                              int n)
{
    const int classes = rl_task_n_classes(task) > 0 ? rl_task_n_classes(task) : rl_task_vocab(task);
    const double limit = 2 * log(classes > 1 ? classes : 2);
    int          ref = -1, bad = 0;
    for (int i = 0; i < n; i++) {
        if (rows[i].na) continue;
        if (ref < 0 || rows[i].length == c->task.length ||
            (rows[ref].length != c->task.length && rows[i].length < rows[ref].length))
            ref = i;
        bad |= !isfinite(rows[i].loss) || (rl_task_causal(task) && !isfinite(rows[i].ppl));
    }
    if (ref >= 0) bad |= rows[ref].loss > limit;
    for (int i = 0; bad && i < n; i++) {
        size_t at = strlen(rows[i].note);
        snprintf(rows[i].note + at, sizeof rows[i].note - at, "%sdiverged", at ? "; " : "");
    }
}

rl_status rl_train_evaluate_checkpoint(const struct rl_cfg *c, rl_task *task, const char *path,
                                       struct rl_train_result *r, int64_t *step)
{
    struct rl_trainer tr;
    memset(r, 0, sizeof *r);
    RL_TRY(rl_trainer_init(&tr, c, task));
    rl_status st = rl_checkpoint_load(path, tr.m, NULL, NULL, step, NULL, NULL);
    if (st == RL_OK) st = rl_trainer_evaluate(&tr, r->eval, &r->n_eval);
    if (st == RL_OK) rl_trainer_mark_diverged(c, task, r->eval, r->n_eval); /* as the run did */
    rl_trainer_free(&tr);
    return st;
}

rl_status rl_train_init_from(rl_model *m, const struct rl_cfg *c)
{
    char msg[1024];
    if (!c->train.init_from[0]) return RL_OK;
    rl_status st = rl_checkpoint_load(c->train.init_from, m, NULL, NULL, NULL, NULL, NULL);
    if (st == RL_OK) return RL_OK;
    snprintf(msg, sizeof msg, "%s", rl_last_error());
    RL_FAIL(st, "%s: [train] init_from: %s", c->file[0] ? c->file : "(config)", msg);
}

rl_status rl_train_check_init_from(const struct rl_cfg *c, rl_task *task)
{
    struct rl_model_config mc;
    rl_model              *m;
    if (!c->train.init_from[0]) return RL_OK;
    rl_cfg_model_config(c, rl_task_vocab(task), rl_task_causal(task), rl_task_n_classes(task), &mc);
    RL_TRY(rl_model_create(&m, &mc));
    rl_status st = rl_train_init_from(m, c);
    rl_model_free(m);
    return st;
}
