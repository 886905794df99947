/* train.c -- the training loop of one model, its evaluation and the run (SPEC 4, 6); see
 * train.h.  The run directory's files are in train_io.c, the benchmark in train_bench.c. */
#include "config.h"
#include "train_impl.h"
#include "../core/json.h"
#include "../core/mpi.h"
#include "../core/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

rl_status rl_trainer_init(struct rl_trainer *t, const struct rl_cfg *c, rl_task *task)
{
    memset(t, 0, sizeof *t);
    t->c = c, t->task = task;
    struct rl_model_config mc;
    rl_cfg_model_config(c, rl_task_vocab(task), rl_task_causal(task), rl_task_n_classes(task), &mc);
    RL_TRY(rl_model_create(&t->m, &mc));
    t->n_params  = rl_model_num_params(t->m);
    t->mom_m     = rl_alloc(t->n_params * sizeof(float));
    t->mom_v     = rl_alloc(t->n_params * sizeof(float));
    rl_status st = rl_batch_alloc(&t->batch, c->train.batch, c->task.length);
    t->ranks     = c->train.data_parallel ? rl_mpi_size() : 1;
    if (st == RL_OK && t->ranks > 1 &&
        !(t->dp_scratch = rl_alloc(rl_mpi_sum_floats_scratch(t->n_params) * sizeof(float))))
        st = rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "out of memory");
    if (st == RL_OK && (!t->mom_m || !t->mom_v))
        st = rl_error_report(RL_ENOMEM, __FILE__, __LINE__,
                             "trainer: cannot allocate the "
                             "AdamW moments (%zu parameters)",
                             t->n_params);
    if (st != RL_OK) {
        rl_trainer_free(t);
        return st;
    }
    rl_adamw_opts_default(&t->ao);
    t->ao.lr = c->train.lr, t->ao.beta1 = c->train.beta1, t->ao.beta2 = c->train.beta2;
    t->ao.eps = c->train.adam_eps, t->ao.weight_decay = c->train.weight_decay;
    /* the generator seeds the initialisation; its state goes into every checkpoint */
    rl_rng_seed(&t->rng, c->train.seed);
    rl_model_init_weights(t->m, rl_rng_u64(&t->rng));
    return RL_OK;
}

void rl_trainer_free(struct rl_trainer *t)
{
    rl_model_free(t->m);
    rl_free(t->mom_m);
    rl_free(t->mom_v);
    rl_free(t->dp_scratch);
    rl_batch_free(&t->batch);
    memset(t, 0, sizeof *t);
}

/* Targets of a batch: one label per row for a classifier, the mask's ones otherwise. */
static long count_targets(const rl_task *task, const struct rl_batch *b)
{
    if (rl_task_n_classes(task) > 0) return b->B;
    long   n = 0;
    size_t T = (size_t)b->B * b->N;
    for (size_t i = 0; i < T; i++)
        n += b->mask[i] != 0;
    return n;
}

/* Rows [i*rows, (i+1)*rows) of b, without copying. */
static struct rl_batch micro_batch(const struct rl_batch *b, int i, int rows)
{
    size_t          off = (size_t)i * rows * b->N;
    struct rl_batch m   = {.B       = rows,
                           .N       = b->N,
                           .inputs  = b->inputs + off,
                           .targets = b->targets + off,
                           .mask    = b->mask + off};
    m.label             = b->label ? b->label + (size_t)i * rows : NULL;
    return m;
}

int rl_trainer_writer(const struct rl_trainer *t)
{
    return !t->c->train.data_parallel || rl_mpi_rank() == 0;
}

rl_status rl_trainer_share(struct rl_trainer *t)
{
    if (t->ranks == 1) return RL_OK;
    RL_TRY(rl_mpi_bcast(&t->step, sizeof t->step));
    RL_TRY(rl_mpi_bcast(&t->rng, sizeof t->rng));
    RL_TRY(rl_mpi_bcast(rl_model_params(t->m), t->n_params * sizeof(float)));
    RL_TRY(rl_mpi_bcast(t->mom_m, t->n_params * sizeof(float)));
    return rl_mpi_bcast(t->mom_v, t->n_params * sizeof(float));
}

/* Data parallel: each rank holds the gradient (already scaled by 1 / the update's
 * targets), loss sum and counts of its own rows; sum them over the ranks in a fixed order
 * (core/mpi.h), so that every rank takes the same AdamW step. */
static rl_status dp_sum(struct rl_trainer *t, double *loss, long *got, long *correct)
{
    double v[3] = {*loss, (double)*got, (double)*correct};
    RL_TRY(rl_mpi_sum_floats(rl_model_grads(t->m), t->n_params, t->dp_scratch));
    RL_TRY(rl_mpi_sum_doubles(v, 3));
    *loss = v[0], *got = lround(v[1]), *correct = lround(v[2]);
    return RL_OK;
}

rl_status rl_trainer_update(struct rl_trainer *t, struct rl_update_stats *s)
{
    const struct rl_cfg *c = t->c;
    /* data parallel: rank k takes rows [k B/K, (k+1) B/K) of the update, in A micro-batches;
     * the batch itself (and so the target count) is the same on every rank */
    const int A = c->train.accumulate, rows = c->train.batch / (t->ranks * A);
    const int first = t->ranks > 1 ? rl_mpi_rank() * A : 0;
    memset(s, 0, sizeof *s);
    double t0 = rl_now_ms();
    RL_TRY(rl_task_batch(t->task, &t->batch, 0, t->step));
    long total = count_targets(t->task, &t->batch);
    if (total == 0) RL_FAIL(RL_EINVAL, "update %lld: the batch has no targets", (long long)t->step);
    s->lr     = rl_lr_schedule(t->step, c->train.lr, c->train.warmup, c->train.min_lr_ratio,
                               c->train.steps);
    double tz = rl_now_ms();
    rl_model_zero_grad(t->m);
    s->ms_optimizer = rl_now_ms() - tz;
    double loss     = 0;
    long   got = 0, correct = 0;
    for (int i = 0; i < A; i++) {
        struct rl_batch mb = micro_batch(&t->batch, first + i, rows);
        double          ls, ta = rl_now_ms();
        long            nt, nc;
        RL_TRY(rl_model_forward(t->m, &mb, &ls, &nt, &nc));
        double tb = rl_now_ms();
        /* loss = (sum over the update's targets) / total: every micro-batch's dlogits is
         * scaled by 1/total, so the accumulated gradient is that of the whole update */
        RL_TRY(rl_model_backward(t->m, (float)(1.0 / (double)total)));
        s->ms_forward += tb - ta;
        s->ms_backward += rl_now_ms() - tb;
        loss += ls, got += nt, correct += nc;
    }
    if (t->ranks > 1) {
        double tc = rl_now_ms();
        RL_TRY(dp_sum(t, &loss, &got, &correct));
        s->ms_backward += rl_now_ms() - tc; /* the gradient sum counts as backward time */
    }
    if (got != total)
        RL_FAIL(RL_EINVAL, "update %lld: the model counted %ld targets, the batch %ld",
                (long long)t->step, got, total);
    double to    = rl_now_ms();
    float *g     = rl_model_grads(t->m);
    s->grad_norm = rl_grad_norm(g, t->n_params);
    if (!isfinite(s->grad_norm) || !isfinite(loss))
        RL_FAIL(RL_EINVAL,
                "update %lld: loss %g, gradient norm %g: training diverged (lower "
                "train.lr, add train.warmup or keep train.clip > 0)",
                (long long)t->step + 1, loss / (double)total, s->grad_norm);
    rl_clip(g, t->n_params, c->train.clip, s->grad_norm);
    rl_adamw_step(rl_model_params(t->m), g, t->mom_m, t->mom_v, rl_model_tensor(t->m, 0),
                  rl_model_num_tensors(t->m), s->lr, &t->ao, t->step + 1);
    s->ms_optimizer += rl_now_ms() - to;
    s->loss    = loss / (double)total;
    s->acc     = (double)correct / (double)total;
    s->targets = total;
    t->step++;
    s->ms_total = rl_now_ms() - t0;
    return RL_OK;
}

/* Per-sequence exact match and, for LM tasks, the loss by position, from the per-row
 * losses and predictions of the last forward on batch b (rows of N positions). */
static void score_rows(const rl_model *m, const struct rl_batch *b, int lm, struct rl_eval_row *r)
{
    const double  *loss = rl_model_row_loss(m);
    const uint8_t *ok   = rl_model_row_correct(m);
    for (int row = 0; row < b->B; row++) {
        int all = 1, any = 0;
        for (int n = 0; n < b->N; n++) {
            const size_t t = (size_t)row * b->N + n;
            if (b->mask && !b->mask[t]) continue;
            all &= ok[t], any = 1;
            if (!lm) continue;
            r->pos_loss[n / r->pos_width] += loss[t];
            r->pos_targets[n / r->pos_width]++;
        }
        r->exact += any && all, r->sequences += any;
    }
}

/* One evaluation length: eval.batches batches of the validation split with about the
 * training batch's token count each (max(1, round(B N / n)) rows of n tokens). */
static rl_status eval_length(struct rl_trainer *t, int n, struct rl_eval_row *r)
{
    const struct rl_cfg *c = t->c;
    memset(r, 0, sizeof *r);
    r->length = n;
    if (c->model.pe == RL_CFG_PE_LEARNED && n > c->model.max_len) {
        r->na = 1, r->loss = r->acc = r->ppl = r->ms_per_1k_tokens = NAN;
        snprintf(r->note, sizeof r->note, "learned PE has max_len rows");
        return RL_OK;
    }
    long rows = lround((double)c->train.batch * c->task.length / n);
    if (rows < 1) rows = 1;
    const int causal = rl_task_causal(t->task);
    const int lm     = rl_task_kind_lm(c->task.name);
    r->pos_width     = (n + RL_EVAL_POS_BINS - 1) / RL_EVAL_POS_BINS;
    r->pos_bins      = lm ? (n + r->pos_width - 1) / r->pos_width : 0;
    struct rl_batch b;
    RL_TRY(rl_batch_alloc(&b, (int)rows, n));
    double    loss = 0, ms = 0;
    long      correct = 0;
    rl_status st      = RL_OK;
    for (int i = 0; st == RL_OK && i < c->eval.batches; i++) {
        double ls, t0;
        long   nt, nc;
        st = rl_task_batch(t->task, &b, 1, i);
        t0 = rl_now_ms();
        if (st == RL_OK) st = rl_model_forward(t->m, &b, &ls, &nt, &nc);
        ms += rl_now_ms() - t0;
        if (st == RL_OK) loss += ls, r->targets += nt, correct += nc;
        if (st == RL_OK) r->bad_den += rl_model_bad_denominators(t->m);
        if (st == RL_OK && causal) score_rows(t->m, &b, lm, r);
        if (st == RL_OK && !causal) r->exact += (double)nc, r->sequences += nt; /* one each */
    }
    rl_batch_free(&b);
    RL_TRY(st);
    r->loss  = r->targets ? loss / (double)r->targets : NAN;
    r->acc   = r->targets ? (double)correct / (double)r->targets : NAN;
    r->ppl   = causal ? exp(r->loss) : NAN;
    r->exact = r->sequences ? r->exact / (double)r->sequences : NAN;
    for (int i = 0; i < r->pos_bins; i++)
        r->pos_loss[i] = r->pos_targets[i] ? r->pos_loss[i] / (double)r->pos_targets[i] : NAN;
    r->ms_per_1k_tokens = ms * 1000.0 / ((double)rows * n * c->eval.batches);
    /* the denominator diagnostic exists for linear attention only */
    r->den_rows = c->model.attention == RL_ATTN_LINEAR
                      ? rows * n * (long)c->eval.batches * c->model.layers * c->model.heads
                      : 0;
    return RL_OK;
}

rl_status rl_trainer_evaluate(struct rl_trainer *t, struct rl_eval_row *rows)
{
    for (int i = 0; i < t->c->eval.n_lengths; i++)
        RL_TRY(eval_length(t, t->c->eval.lengths[i], &rows[i]));
    return RL_OK;
}

rl_status rl_train_prepare(struct rl_cfg *c, rl_task **task)
{
    struct rl_task_opts o;
    *task = NULL;
    RL_TRY(rl_cfg_check(c));
    rl_cfg_task_opts(c, &o);
    rl_status st = rl_task_create(task, &o);
    if (st != RL_OK) {
        char m[1024];
        snprintf(m, sizeof m, "%s", rl_last_error());
        RL_FAIL(st, "%s: %s", c->file[0] ? c->file : "(config)", m);
    }
    st = rl_cfg_resolve(c, rl_task_length(*task), rl_task_vocab(*task), rl_task_max_length(*task),
                        rl_task_min_length(*task));
    if (st != RL_OK) {
        rl_task_free(*task);
        *task = NULL;
    }
    return st;
}
