/* train.c -- the training loop of one model (docs/model.md); see train.h.  Its evaluation is in
 * train_eval.c, the run in train_run.c, the run directory's files in train_io.c, the
 * benchmark in train_bench.c. */
#include "config.h"
#include "train_impl.h"
#include "../core/json.h"
#include "../core/mpi.h"
#include "../core/threads.h"
#include "../core/util.h"
#include "../config/cfg_keys.h"

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

/* Where a task error's key got its value: the tasks report the key with the error
 * (rl_last_error_key), and the user is pointed at that line ("exp.ini:12", or the --set
 * that gave it), as for errors of the configuration itself; the file alone when the key
 * kept its default. */
static const char *task_error_where(const struct rl_cfg *c)
{
    const char *section, *key;
    int         i = rl_last_error_key(&section, &key) ? rl_cfg_find_key(section, key) : -1;
    if (i >= 0 && c->where[i][0]) return c->where[i];
    return c->file[0] ? c->file : "(config)";
}

/* eval.batches = all reads the whole validation split: the generators have no end. */
static rl_status check_all_batches(const struct rl_cfg *c, const rl_task *task)
{
    if (c->eval.batches || rl_task_valid_rows(task, c->task.length) > 0) return RL_OK;
    const int i = rl_cfg_find_key("eval", "batches");
    RL_FAIL(RL_EINVAL,
            "%s: [eval] batches: all: the %s task generates its validation data without end; "
            "give a number of batches (all applies to charlm and tokens)",
            i >= 0 && c->where[i][0] ? c->where[i]
            : c->file[0]             ? c->file
                                     : "(config)",
            rl_task_kind_name(c->task.name));
}

rl_status rl_train_prepare(struct rl_cfg *c, rl_task **task)
{
    struct rl_task_opts o;
    *task = NULL;
    RL_TRY(rl_cfg_check(c));
    rl_cfg_task_opts(c, &o);
    rl_status st = rl_task_create(task, &o);
    if (st != RL_OK) {
        char        m[1024];
        const char *where = task_error_where(c);
        snprintf(m, sizeof m, "%s", rl_last_error());
        RL_FAIL(st, "%s: %s", where, m);
    }
    st = rl_cfg_resolve(c, rl_task_length(*task), rl_task_vocab(*task), rl_task_max_length(*task),
                        rl_task_min_length(*task));
    if (st == RL_OK) st = check_memory(c, *task);
    if (st == RL_OK) st = check_all_batches(c, *task);
    if (st != RL_OK) {
        rl_task_free(*task);
        *task = NULL;
    }
    return st;
}
