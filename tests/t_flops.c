/* t_flops.c -- the FLOP count per token of src/model/flops.c against an independent count
 * from the model's own tensor table (every Linear weight, out x in, costs 2 in out per
 * token; the embedding costs nothing), plus the attention term by hand; and the measured
 * FMA peak of src/core/peak.c: positive for each width this CPU runs, 0 for the others,
 * on one thread and on two (no timing is asserted beyond "it ran": the machine may be busy). */
#include "config.h"
#include "core/threads.h"
#include "core/init.h"
#include "core/peak.h"
#include "model/flops.h"
#include "model/model.h"
#include "tap.h"

#include <math.h>
#include <string.h>

/* 2 x in x out over the Linear weights of blocks.* and head.weight, per token. */
static double linear_flops(const rl_model *m)
{
    double f = 0;
    for (int i = 0; i < rl_model_num_tensors(m); i++) {
        const struct rl_tensor_info *t = rl_model_tensor(m, i);
        size_t                       n = strlen(t->name);
        int is_w = n > 7 && !strcmp(t->name + n - 7, ".weight") && t->ndim == 2 &&
                   strncmp(t->name, "embed", 5) && strncmp(t->name, "pos", 3);
        if (is_w) f += 2.0 * (double)t->shape[0] * (double)t->shape[1];
    }
    return f;
}

static void check(enum rl_attn_kind kind, int causal, int N, int forget)
{
    struct rl_model_config c;
    memset(&c, 0, sizeof c);
    c.vocab = 64, c.d_model = 128, c.heads = 4, c.layers = 2;
    rl_attn_opts_default(&c.attn);
    c.attn.kind = kind, c.attn.causal = causal, c.attn.pe = RL_ATTN_PE_ROPE;
    c.attn.forget = forget; /* the gate's wf (H x D) is in the tensor table */
    rl_model *m = NULL;
    if (rl_model_create(&m, &c) != RL_OK) tap_bail("rl_model_create: %s", rl_last_error());
    double d = 32, keys = causal ? (N + 1) / 2.0 : N;
    double attn = kind == RL_ATTN_SOFTMAX ? 2.0 * (d + d) * keys * 4 /* heads */
                                          : (2.0 * d * d * 2 + 4.0 * d) * 4;
    double want = linear_flops(m) + c.layers * attn;
    double got  = rl_model_forward_flops_per_token(&c, N);
    tap_ok(fabs(got - want) <= 1e-9 * want,
           "forward FLOPs/token %s %s%s N=%d: %.0f = tensor table + attention %.0f",
           kind == RL_ATTN_SOFTMAX ? "softmax" : "linear", causal ? "causal" : "non-causal",
           forget ? " +forget" : "", N, got, want);
    tap_ok(rl_model_train_flops_per_token(&c, N) == 3 * got, "training FLOPs/token = 3 x forward");
    rl_model_free(m);
}

int main(void)
{
    rl_init(1);
    check(RL_ATTN_SOFTMAX, 1, 256, 0);
    check(RL_ATTN_SOFTMAX, 0, 4096, 0);
    check(RL_ATTN_LINEAR, 1, 256, 0);
    check(RL_ATTN_LINEAR, 0, 4096, 0);
    check(RL_ATTN_SOFTMAX, 1, 256, 1);
    check(RL_ATTN_LINEAR, 1, 256, 1);
    /* the benchmark cell quoted in docs/performance.md */
    struct rl_model_config c;
    memset(&c, 0, sizeof c);
    c.vocab = 64, c.d_model = 128, c.heads = 4, c.layers = 2;
    rl_attn_opts_default(&c.attn);
    c.attn.causal = 1;
    tap_ok(fabs(rl_model_train_flops_per_token(&c, 256) - 2803200.0) < 1,
           "causal softmax N=256: 2.8032 MFLOP/token (docs/performance.md)");

    for (int bits = 256; bits <= 512; bits *= 2) {
        if (!rl_peak_width_supported(bits)) {
            tap_ok(rl_peak_gflops(bits, 1, 20) == 0, "%d-bit FMA peak: 0 where unsupported", bits);
            continue;
        }
        double g1 = rl_peak_gflops(bits, 1, 20), g2 = rl_peak_gflops(bits, 2, 20);
        tap_ok(g1 > 0.5 && isfinite(g1), "%d-bit FMA peak, 1 thread: %.1f GFLOP/s", bits, g1);
        tap_ok(g2 > 0.5 && isfinite(g2), "%d-bit FMA peak, 2 threads: %.1f GFLOP/s", bits, g2);
    }
    return tap_done();
}
