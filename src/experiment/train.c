/* train.c -- the training loop of one model, its evaluation and the run (SPEC 4, 6); see
 * train.h.  The run directory's files are in train_io.c, the benchmark in train_bench.c. */
#include "config.h"
#include "train_impl.h"
#include "../core/json.h"
#include "../core/gemm.h"
#include "../core/util.h"

#include <math.h>
#include <stdint.h>
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

rl_status rl_trainer_update(struct rl_trainer *t, struct rl_update_stats *s)
{
    const struct rl_cfg *c = t->c;
    const int            A = c->train.accumulate, rows = c->train.batch / A;
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
        struct rl_batch mb = micro_batch(&t->batch, i, rows);
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

static double gib(double bytes) { return bytes / (1024.0 * 1024.0 * 1024.0); }

/* The memory a run will need, estimated from the resolved configuration before anything
 * large is allocated: parameters, gradients, AdamW moments and a checkpoint image, the
 * training batch and one micro-batch's activations, and every evaluation length's batch
 * and activations (the arena grows to the largest).  Refused when above what the machine
 * has available now. */
static rl_status check_memory(const struct rl_cfg *c, rl_task *task)
{
    struct rl_model_config mc;
    rl_cfg_model_config(c, rl_task_vocab(task), rl_task_causal(task), rl_task_n_classes(task), &mc);
    const int    B = c->train.batch, N = c->task.length, threads = rl_threads_get();
    const double tokens = (double)B * N, per_token = 4 + 4 + 1; /* inputs, targets, mask */
    double       params, train_call, eval_call = 0, total;
    int          eval_n = 0;
    rl_model_memory(&mc, B / c->train.accumulate, N, threads, &params, &train_call);
    for (int i = 0; i < c->eval.n_lengths; i++) {
        int  n    = c->eval.lengths[i];
        long rows = lround(tokens / n);
        if (rows < 1) rows = 1;
        double call;
        rl_model_memory(&mc, (int)(rows < INT32_MAX ? rows : INT32_MAX), n, threads, NULL, &call);
        call += (double)rows * n * per_token;
        if (call > eval_call) eval_call = call, eval_n = n;
    }
    const double fixed = 2 * params + 0.75 * params + tokens * per_token; /* + moments, image */
    const double need  = fixed + (train_call > eval_call ? train_call : eval_call);
    const double avail = rl_mem_available(&total);
    if (need <= avail) return RL_OK;
    RL_FAIL(RL_EINVAL,
            "%s: the run needs about %.3g GiB of memory (parameters, gradients, AdamW moments "
            "and a checkpoint: %.3g GiB; training batch %d x %d tokens with its activations: "
            "%.3g GiB; evaluation at length %d: %.3g GiB), but this machine has %.3g GiB "
            "available (of %.3g GiB): lower train.batch (or raise train.accumulate), "
            "task.length, eval.lengths or the model size",
            c->file[0] ? c->file : "(config)", gib(need), gib(1.75 * params), B, N,
            gib(tokens * per_token + train_call), eval_n, gib(eval_call), gib(avail), gib(total));
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
    if (st == RL_OK) st = check_memory(c, *task);
    if (st != RL_OK) {
        rl_task_free(*task);
        *task = NULL;
    }
    return st;
}
