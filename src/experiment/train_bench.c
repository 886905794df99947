/* train_bench.c -- training throughput (`ropelab bench --train`): tokens/s of one
 * forward + backward + AdamW update on the issue-4 model, split into its phases; see
 * train.h.  Data: uniform random tokens from a fixed seed (the cost does not depend on
 * the values). */
#include "config.h"
#include "train_impl.h"
#include "../core/gemm.h"
#include "../core/threads.h"
#include "../core/util.h"
#include "../model/flops.h"

#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void bench_model_config(struct rl_model_config *mc, const struct rl_bench_train_cell *c)
{
    memset(mc, 0, sizeof *mc);
    mc->vocab = 64, mc->d_model = 128, mc->heads = 4, mc->layers = 2;
    mc->input_pe = RL_INPUT_PE_NONE;
    rl_attn_opts_default(&mc->attn);
    mc->attn.kind       = c->kind;
    mc->attn.fmap       = RL_FMAP_ELU1;
    mc->attn.pe         = c->pe;
    mc->attn.alibi_scan = c->kind == RL_ATTN_LINEAR && c->pe == RL_ATTN_PE_ALIBI;
    mc->attn.forget     = c->forget;
    mc->attn.causal     = 1;
}

/* One update: zero-grad, forward, backward, norm, clipping, AdamW (step s); times[4]: the
 * clock at each phase's start and the end. */
static rl_status update(rl_model *m, const struct rl_batch *b, float *mom, int s, double *times)
{
    const size_t         n = rl_model_num_params(m);
    struct rl_adamw_opts ao;
    double               ls;
    long                 nt, nc;
    rl_adamw_opts_default(&ao);
    times[0] = rl_now_ms();
    rl_model_zero_grad(m);
    times[1] = rl_now_ms();
    RL_TRY(rl_model_forward(m, b, &ls, &nt, &nc));
    times[2] = rl_now_ms();
    RL_TRY(rl_model_backward(m, 1.0f / (float)((size_t)b->B * b->N)));
    times[3] = rl_now_ms();
    float *g = rl_model_grads(m);
    rl_clip(g, n, 1.0, rl_grad_norm(g, n));
    rl_adamw_step(rl_model_params(m), g, mom, mom + n, rl_model_tensor(m, 0),
                  rl_model_num_tensors(m), 1e-3, &ao, s + 1);
    times[4] = rl_now_ms();
    return RL_OK;
}

/* The serial fraction (train.h) of 1-thread updates that took `total` ms, their regions
 * booked since rl_regions_count(1, 16): the time outside the regions plus their serial parts
 * for 16 and 64 threads. */
static void serial_from(struct rl_bench_train_cell *cell, double total, int updates)
{
    rl_regions_count(0, 16);
    const struct rl_regions r       = rl_regions_counted();
    const double            outside = total > r.ms ? total - r.ms : 0;
    cell->serial16                  = total > 0 ? (outside + r.serial_ms) / total : 1;
    cell->serial64                  = total > 0 ? (outside + rl_regions_serial_ms(64)) / total : 1;
    cell->amdahl16                  = 1 / (cell->serial16 + (1 - cell->serial16) / 16);
    cell->amdahl64                  = 1 / (cell->serial64 + (1 - cell->serial64) / 64);
    cell->serial_updates            = updates;
}

/* The serial fraction of `count` extra 1-thread updates from step s on, apart from the
 * timed ones (while regions are counted, a choice between two forms of a region is made
 * for 16 threads: core/threads.h, rl_threads_planned). */
static rl_status serial_fraction(struct rl_bench_train_cell *cell, rl_model *m,
                                 const struct rl_batch *b, float *mom, int s, int count)
{
    const int had   = rl_threads_get();
    double    total = 0, t[5];
    rl_status st    = RL_OK;
    rl_threads_set(1);
    rl_regions_count(1, 16);
    for (int i = 0; st == RL_OK && i < count; i++)
        if ((st = update(m, b, mom, s + i, t)) == RL_OK) total += t[4] - t[0];
    serial_from(cell, total, count);
    rl_threads_set(had);
    return st;
}

/* Timed updates of model m on batch b; fills the medians of cell. */
static rl_status run_updates(struct rl_bench_train_cell *cell, rl_model *m,
                             const struct rl_batch *b, int warmup, int steps)
{
    size_t    n   = rl_model_num_params(m);
    float    *mom = rl_alloc(2 * n * sizeof(float));
    double   *ms  = malloc(4 * (size_t)steps * sizeof(double));
    rl_status st =
        mom && ms ? RL_OK : rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "bench: out of memory");
    double total = 0; /* ms of the timed updates */
    for (int s = 0; st == RL_OK && s < warmup + steps; s++) {
        if (s == warmup) rl_products_count(1), rl_region_sites(cell->regions);
        double t[5];
        if ((st = update(m, b, mom, s, t)) != RL_OK || s < warmup) continue;
        int i             = s - warmup;
        ms[i]             = t[2] - t[1];                   /* forward */
        ms[steps + i]     = t[3] - t[2];                   /* backward */
        ms[2 * steps + i] = (t[1] - t[0]) + (t[4] - t[3]); /* zero-grad, norm, clip, AdamW */
        ms[3 * steps + i] = t[4] - t[0];
        total += t[4] - t[0];
    }
    rl_products_count(0);
    rl_region_sites(0);
    cell->ms_timed = total;
    if (st == RL_OK) st = serial_fraction(cell, m, b, mom, warmup + steps, steps < 3 ? steps : 3);
    if (st == RL_OK) {
        struct rl_products p             = rl_products_counted();
        cell->products_time_share        = p.thread_ms / (total * rl_threads_get());
        cell->products_gflops_per_thread = p.thread_ms > 0 ? p.flops / (p.thread_ms * 1e6) : 0;
        cell->ms_forward                 = median(ms, steps);
        cell->ms_backward                = median(ms + steps, steps);
        cell->ms_optimizer               = median(ms + 2 * steps, steps);
        cell->ms_step                    = median(ms + 3 * steps, steps);
        cell->tokens_per_s               = (double)b->B * b->N / (cell->ms_step / 1000.0);
    }
    rl_free(mom);
    free(ms);
    return st;
}

rl_status rl_bench_train_cell(struct rl_bench_train_cell *cell, int warmup, int steps)
{
    if (steps < 1 || warmup < 0) RL_FAIL(RL_EINVAL, "bench: steps %d, warmup %d", steps, warmup);
    struct rl_model_config mc;
    bench_model_config(&mc, cell);
    cell->flops_per_token = rl_model_train_flops_per_token(&mc, cell->N);
    rl_model *m           = NULL;
    RL_TRY(rl_model_create(&m, &mc));
    rl_model_init_weights(m, 1);
    struct rl_batch b;
    rl_status       st = rl_batch_alloc(&b, cell->B, cell->N);
    if (st == RL_OK) {
        uint64_t x = 0x9E3779B97F4A7C15ull; /* xorshift tokens */
        for (size_t i = 0; i < (size_t)cell->B * cell->N; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            b.inputs[i]  = (int32_t)(x % 64);
            b.targets[i] = (int32_t)((x >> 20) % 64);
            b.mask[i]    = 1;
        }
        st = run_updates(cell, m, &b, warmup, steps);
        rl_batch_free(&b);
    }
    rl_model_free(m);
    return st;
}
