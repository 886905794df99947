/* train_eval.c -- the evaluation of a trainer's model: every evaluation length in
 * non-overlapping windows or in sliding windows (eval.stride), under every RoPE extension
 * method of eval.rope_extend; the evaluation of a checkpoint and the init_from check.  See
 * train.h for what a row holds. */
#include "config.h"
#include "train_impl.h"
#include "../model/checkpoint.h"
#include "../core/stats.h"
#include "../core/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What one length's forwards add up. */
struct eval_acc {
    double                  loss, ms;
    long                    correct, fwd_rows;
    struct rl_cluster_sums  cl_loss, cl_hit;          /* per sequence: targets, loss sum, hits */
    struct rl_cluster_sums  cl_pos[RL_EVAL_POS_BINS]; /* per sequence and position bin */
    struct rl_eval_progress pr;                       /* for the caller's progress line */
};

static int cmp_int(const void *a, const void *b)
{
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

int rl_eval_pos_edges(int M, int N, int *edge)
{
    int n     = 0;
    edge[n++] = 0;
    for (int k = 0; n < RL_EVAL_POS_BINS / 2; k++) { /* 2 an octave: 1, 2, 3, 4, 6, 8, 11, ... */
        double v = pow(2, k / 2.0);
        if (v >= M) break;
        edge[n++] = (int)lround(v);
    }
    for (double v = N; N > 0 && v < M && n < RL_EVAL_POS_BINS; v *= 2)
        edge[n++] = (int)v;
    qsort(edge, (size_t)n, sizeof *edge, cmp_int);
    int u = 0;
    for (int i = 0; i < n; i++) /* sorted and unique */
        if (!u || edge[i] != edge[u - 1]) edge[u++] = edge[i];
    edge[u] = M;
    return u;
}

/* One scored sequence (or window) of n targets with loss sum y and h right: a cluster of
 * the intervals. */
static void add_sequence(struct eval_acc *a, double n, double y, double h)
{
    rl_cluster_add(&a->cl_loss, n, y);
    rl_cluster_add(&a->cl_hit, n, h);
}

/* LM tasks: the loss by position of one row (its scored positions), bin by bin, each bin's
 * part of the row one cluster of that bin's interval. */
static void score_positions(const double *loss, const uint8_t *mask, int N, struct rl_eval_row *r,
                            struct eval_acc *a)
{
    double n = 0, y = 0;
    for (int p = 0, k = 0; p <= N; p++) {
        if (p == N || p >= r->pos_edge[k + 1]) { /* bin k ends */
            rl_cluster_add(&a->cl_pos[k], n, y);
            r->pos_loss[k] += y, r->pos_targets[k] += (long)n;
            n = y = 0;
            if (p == N) break;
            while (p >= r->pos_edge[k + 1])
                k++;
        }
        if (!mask || mask[p]) n += 1, y += loss[p];
    }
}

/* Not LM: the accuracy by the order of a row's scored targets (orders from the last one
 * pooled), from the row's mask and predictions. */
static void score_orders(const uint8_t *ok, const uint8_t *mask, int N, struct rl_eval_row *r)
{
    for (int p = 0, k = 0; p < N; p++) {
        if (mask && !mask[p]) continue;
        const int o = k < RL_EVAL_ORDERS ? k : RL_EVAL_ORDERS - 1;
        r->order_targets[o]++, r->order_correct[o] += ok[p];
        if (o >= r->n_orders) r->n_orders = o + 1;
        k++;
    }
}

/* Per-sequence exact match, the intervals' clusters and, for LM tasks, the loss by
 * position, for the others the accuracy by the order of a scored target within its row,
 * from the per-row losses and predictions of the last forward on batch b. */
static void score_rows(const rl_model *m, const struct rl_batch *b, int lm, struct rl_eval_row *r,
                       struct eval_acc *a)
{
    const double  *loss = rl_model_row_loss(m);
    const uint8_t *ok   = rl_model_row_correct(m);
    for (int row = 0; row < b->B; row++) {
        int          all = 1, any = 0;
        double       n = 0, y = 0, h = 0;
        const size_t t0 = (size_t)row * b->N;
        for (int p = 0; p < b->N; p++) {
            const size_t t = t0 + p;
            if (b->mask && !b->mask[t]) continue;
            all &= ok[t], any = 1;
            n += 1, y += loss[t], h += ok[t];
        }
        if (lm)
            score_positions(loss + t0, b->mask ? b->mask + t0 : NULL, b->N, r, a);
        else
            score_orders(ok + t0, b->mask ? b->mask + t0 : NULL, b->N, r);
        r->exact += any && all, r->sequences += any;
        add_sequence(a, n, y, h);
    }
}

/* Classifiers: one target (the label) per row. */
static void score_labels(const rl_model *m, const struct rl_batch *b, struct rl_eval_row *r,
                         struct eval_acc *a)
{
    const double  *loss = rl_model_row_loss(m);
    const uint8_t *ok   = rl_model_row_correct(m);
    for (int row = 0; row < b->B; row++)
        if (!b->label || b->label[row] >= 0) {
            r->exact += ok[row], r->sequences++;
            add_sequence(a, 1, loss[row], ok[row]);
        }
}

/* One forward on b (only its masked positions count), added to r and a; then the caller's
 * progress report and stop flag. */
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
        score_rows(t->m, b, rl_task_kind_lm(t->c->task.name), r, a);
    else
        score_labels(t->m, b, r, a);
    const struct rl_eval_hooks *h = t->hooks;
    a->pr.tokens += (double)b->B * b->N, a->pr.done += (double)b->B * b->N, a->pr.ms = a->ms;
    if (h && h->progress) h->progress(h->ctx, &a->pr);
    if (h && h->stop && *h->stop) RL_FAIL(RL_EINTR, "evaluation stopped");
    return RL_OK;
}

/* The rows and batches of an evaluation at length n: max(1, round(B N / n)) rows per batch
 * (about the training batch's tokens), eval.batches batches, or with batches = all
 * enough to read each of the validation split's W rows once (the last batch holds the
 * rest).  *last: the rows of the last batch. */
static void eval_plan(const struct rl_trainer *t, int n, int *rows, long *batches, int *last)
{
    const struct rl_cfg *c = t->c;
    long                 r = lround((double)c->train.batch * c->task.length / n);
    *rows                  = r < 1 ? 1 : r > INT32_MAX ? INT32_MAX : (int)r;
    *batches = c->eval.batches, *last = *rows;
    if (c->eval.batches) return;
    const int64_t W = rl_task_valid_rows(t->task, n);
    *batches        = (long)((W + *rows - 1) / *rows);
    *last           = (int)(W - (int64_t)(*batches - 1) * *rows);
}

/* Non-overlapping windows: the validation batches 0 .. batches-1 as the task makes them
 * (every target scored once, with 0 .. n-1 tokens of context). */
static rl_status eval_windows(struct rl_trainer *t, int n, struct rl_eval_row *r,
                              struct eval_acc *a)
{
    struct rl_batch b;
    int             rows, last;
    long            nb;
    eval_plan(t, n, &rows, &nb, &last);
    RL_TRY(rl_batch_alloc(&b, rows, n));
    rl_status st = RL_OK;
    for (long i = 0; st == RL_OK && i < nb; i++) {
        st                = rl_task_batch(t->task, &b, 1, i);
        struct rl_batch v = b; /* the last batch of batches = all: its first rows */
        if (i == nb - 1) v.B = last;
        if (st == RL_OK) st = eval_batch(t, &v, r, a);
    }
    rl_batch_free(&b);
    return st;
}

/* The token stream of the sliding evaluation: the rows of the validation batches, in
 * order (with batches = all, each row of the split once). */
static rl_status sliding_stream(struct rl_trainer *t, int M, int32_t **in, int32_t **tg,
                                uint8_t **mk, size_t *T)
{
    int             rows, last;
    long            nb;
    struct rl_batch b;
    eval_plan(t, M, &rows, &nb, &last);
    const size_t per = (size_t)rows * M;
    *T               = per * (size_t)(nb - 1) + (size_t)last * M;
    *in = malloc(*T * sizeof **in), *tg = malloc(*T * sizeof **tg), *mk = malloc(*T);
    if (!*in || !*tg || !*mk) RL_FAIL(RL_ENOMEM, "evaluation: out of memory (%zu tokens)", *T);
    RL_TRY(rl_batch_alloc(&b, rows, M));
    rl_status st = RL_OK;
    for (long i = 0; st == RL_OK && i < nb; i++) {
        const size_t k = i == nb - 1 ? (size_t)last * M : per;
        st             = rl_task_batch(t->task, &b, 1, i);
        memcpy(*in + i * per, b.inputs, k * sizeof **in);
        memcpy(*tg + i * per, b.targets, k * sizeof **tg);
        memcpy(*mk + i * per, b.mask, k);
    }
    rl_batch_free(&b);
    return st;
}

/* Sliding windows of M tokens advanced by S < M (the ALiBi paper's sliding evaluation,
 * fairseq's --context-window).  The rows of the validation batches, in order, form one
 * stream of T tokens (charlm: consecutive text).  Window w ends at e_w = min(M + w S, T),
 * starts at e_w - M and scores the targets [e_{w-1}, e_w) through the mask (the first
 * window all of its M): every target of the non-overlapping evaluation is scored once,
 * with M - S or more tokens of context after the first window.  Windows are packed
 * `rows` to a forward; S = M gives exactly the batches of eval_windows. */
static rl_status eval_sliding(struct rl_trainer *t, int M, int S, struct rl_eval_row *r,
                              struct eval_acc *a)
{
    int32_t        *in = NULL, *tg = NULL;
    uint8_t        *mk = NULL;
    size_t          T  = 0;
    int             rows, last;
    long            nb;
    struct rl_batch w;
    eval_plan(t, M, &rows, &nb, &last);
    rl_status st = sliding_stream(t, M, &in, &tg, &mk, &T);
    if (st == RL_OK) st = rl_batch_alloc(&w, rows, M);
    if (st != RL_OK) return free(in), free(tg), free(mk), st;
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
    rl_batch_free(&w);
    free(in), free(tg), free(mk);
    return st;
}

/* The tokens the forwards of one length process (the progress report's unit). */
static double eval_tokens(const struct rl_trainer *t, int M)
{
    int  rows, last;
    long nb;
    eval_plan(t, M, &rows, &nb, &last);
    const double T = (double)rows * (double)(nb - 1) + last, S = t->c->eval.stride;
    if (!S) return T * M;
    return (1 + ceil(fmax(0, T * M - M) / S)) * M; /* the windows, M tokens each */
}

/* The 95 % intervals of the row's means (core/stats.h). */
static void intervals(struct rl_eval_row *r, const struct eval_acc *a, int causal)
{
    const double hl = rl_cluster_halfwidth(&a->cl_loss);
    r->loss_lo = r->loss - hl, r->loss_hi = r->loss + hl;
    rl_cluster_wilson(&a->cl_hit, &r->acc_lo, &r->acc_hi);
    r->ppl_lo = causal ? exp(r->loss_lo) : NAN, r->ppl_hi = causal ? exp(r->loss_hi) : NAN;
    if (r->sequences >= 2)
        rl_wilson95(r->exact * (double)r->sequences, (double)r->sequences, &r->exact_lo,
                    &r->exact_hi);
    else
        r->exact_lo = r->exact_hi = NAN;
}

/* One evaluation length (eval_plan's batches). */
static rl_status eval_length(struct rl_trainer *t, int n, struct rl_eval_row *r, struct eval_acc *a)
{
    const struct rl_cfg *c = t->c;
    memset(r, 0, sizeof *r);
    r->length = n, r->stride = c->eval.stride;
    if (c->model.pe == RL_CFG_PE_LEARNED && n > c->model.max_len) {
        r->na = 1, r->loss = r->acc = r->ppl = r->ms_per_1k_tokens = NAN;
        r->loss_lo = r->loss_hi = r->acc_lo = r->acc_hi = r->ppl_lo = r->ppl_hi = NAN;
        r->exact_lo = r->exact_hi = NAN;
        snprintf(r->note, sizeof r->note, "learned PE has max_len rows");
        return RL_OK;
    }
    r->pos_bins =
        rl_task_kind_lm(c->task.name) ? rl_eval_pos_edges(n, c->task.length, r->pos_edge) : 0;
    RL_TRY(c->eval.stride ? eval_sliding(t, n, c->eval.stride, r, a) : eval_windows(t, n, r, a));
    r->loss  = r->targets ? a->loss / (double)r->targets : NAN;
    r->acc   = r->targets ? (double)a->correct / (double)r->targets : NAN;
    r->ppl   = rl_task_causal(t->task) ? exp(r->loss) : NAN;
    r->exact = r->sequences ? r->exact / (double)r->sequences : NAN;
    intervals(r, a, rl_task_causal(t->task));
    for (int i = 0; i < r->pos_bins; i++) {
        const double h = rl_cluster_halfwidth(&a->cl_pos[i]);
        r->pos_loss[i] = r->pos_targets[i] ? r->pos_loss[i] / (double)r->pos_targets[i] : NAN;
        r->pos_lo[i] = r->pos_loss[i] - h, r->pos_hi[i] = r->pos_loss[i] + h;
    }
    r->ms_per_1k_tokens = a->ms * 1000.0 / ((double)a->fwd_rows * n);
    /* the denominator diagnostic exists for linear attention only */
    r->den_rows = c->model.attention == RL_ATTN_LINEAR
                      ? a->fwd_rows * n * (long)c->model.layers * c->model.heads
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
    const int                 nm      = c->model.pe == RL_CFG_PE_ROPE ? c->eval.n_extend : 1;
    rl_status                 st      = RL_OK;
    int                       n       = 0;
    double                    total = 0, done = 0, ref_loss, ref_acc;
    for (int i = 0; i < c->eval.n_lengths; i++)
        total += nm * eval_tokens(t, c->eval.lengths[i]);
    RL_TRY(rl_task_reference(t->task, &ref_loss, &ref_acc));
    /* method-major: the plans of a (method, length) are built once, by its first forward */
    for (int k = 0; st == RL_OK && k < nm; k++) {
        const enum rl_cfg_extend e =
            c->model.pe == RL_CFG_PE_ROPE ? c->eval.extend[k] : RL_CFG_EXTEND_NONE;
        for (int i = 0; st == RL_OK && i < c->eval.n_lengths; i++) {
            const int M = c->eval.lengths[i];
            double    s = c->eval.rope_factor > 0 ? c->eval.rope_factor
                                                  : fmax(1.0, (double)M / c->task.length);
            if (e == RL_CFG_EXTEND_NONE) s = 1;
            const struct rl_rope_opts o = extend_opts(trained, e, s, c->task.length);
            struct eval_acc           a = {
                          .pr = {M, (int)e, n, nm * c->eval.n_lengths, 0, eval_tokens(t, M), done, total, 0}};
            st = rl_model_set_rope(t->m, &o);
            if (st == RL_OK) st = eval_length(t, M, &rows[n], &a);
            done += a.pr.length_tokens;
            rows[n].method = e, rows[n].factor = s;
            rows[n].ref_loss = ref_loss, rows[n].ref_acc = ref_acc;
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
                                       const struct rl_eval_hooks *hooks, struct rl_train_result *r,
                                       int64_t *step)
{
    struct rl_trainer tr;
    memset(r, 0, sizeof *r);
    RL_TRY(rl_trainer_init(&tr, c, task));
    tr.hooks     = hooks;
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
