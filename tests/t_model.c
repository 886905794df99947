/* t_model.c -- the whole transformer (model.h): tensor table (checkpoint names, shapes, decay
 * set), initialisation, gradient checks of the full model for each attention kind x
 * position encoding by finite differences, an overfit of a fixed batch with AdamW,
 * determinism, and the error paths.
 *
 * Gradient check (KANN's directional idea, per tensor): the loss is summed in double over
 * float32 logits; for every tensor t with gradient g_t we compare the 4-point central
 * difference of L along u = g_t/|g_t| with |g_t|, and along a random unit u (on t only)
 * with g_t.u, the error measured relative to |g_t| (floored at 5% of the largest tensor
 * gradient norm: float32 losses resolve smaller gradients only to ~1e-5).  Parameters are drawn
 * larger than the GPT-2 init (std 0.3) so that every tensor's gradient is well above float32 noise.
 * With the forget gate (combo.forget) the gate's projection wf, bf is checked like any tensor:
 * its gradient flows from the kernel's dlogf through log sigmoid.
 */
#include "config.h"
#include "model/adamw.h"
#include "model/checkpoint.h"
#include "core/threads.h"
#include "core/init.h"
#include "model/model.h"
#include "tap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static const char *pe_names[] = {"none", "sinusoidal", "learned", "rope", "t5", "alibi"};

struct combo {
    enum rl_attn_kind kind;
    enum rl_fmap      fmap;
    int               pe; /* index into pe_names */
    int               n_classes, t5_per_layer;
};

static int gc_ext    = 0; /* RoPE extension of the next configs: 1 YaRN (s = 4, L = 3), 2 xPos */
static int gc_forget = 0; /* 1: the next configs have the forget gate (causal only) */

static void make_config(struct rl_model_config *c, const struct combo *k, int causal)
{
    memset(c, 0, sizeof *c);
    rl_attn_opts_default(&c->attn);
    c->vocab = 11, c->d_model = 8, c->heads = 2, c->layers = 2, c->max_len = 8;
    c->n_classes            = k->n_classes;
    c->t5_per_layer         = k->t5_per_layer;
    c->input_pe             = k->pe == 1   ? RL_INPUT_PE_SINUSOIDAL
                              : k->pe == 2 ? RL_INPUT_PE_LEARNED
                                           : RL_INPUT_PE_NONE;
    c->attn.pe              = k->pe == 3   ? RL_ATTN_PE_ROPE
                              : k->pe == 4 ? RL_ATTN_PE_T5
                              : k->pe == 5 ? RL_ATTN_PE_ALIBI
                                           : RL_ATTN_PE_NONE;
    c->attn.kind            = k->kind;
    c->attn.fmap            = k->fmap;
    c->attn.causal          = causal;
    c->attn.t5_buckets      = 6;
    c->attn.t5_max_distance = 8;
    if (gc_ext == 1) c->attn.rope.yarn = 4, c->attn.rope.yarn_orig = 3;
    if (gc_ext == 2) c->attn.xpos = 1, c->attn.xpos_scale_base = 4;
    c->attn.forget = gc_forget;
    c->forget_bias = 2.0;
}

static void make_batch(struct rl_batch *b, int B, int N, int V, int C)
{
    b->B = B, b->N = N;
    b->inputs  = malloc(sizeof(int32_t) * B * N);
    b->targets = malloc(sizeof(int32_t) * B * N);
    b->mask    = malloc((size_t)B * N);
    b->label   = C ? malloc(sizeof(int32_t) * B) : NULL;
    for (int i = 0; i < B * N; i++) {
        b->inputs[i]  = (int32_t)(tap_uniform() * V);
        b->targets[i] = (int32_t)(tap_uniform() * V);
        b->mask[i]    = i % 3 != 1; /* some positions carry no loss */
    }
    for (int i = 0; C && i < B; i++)
        b->label[i] = (int32_t)(tap_uniform() * C);
}

static void free_batch(struct rl_batch *b)
{
    free(b->inputs), free(b->targets), free(b->mask), free(b->label);
}

/* Random parameters well away from the GPT-2 init (larger gradients, nonzero biases). */
static void randomize(rl_model *m, double std)
{
    float *p = rl_model_params(m);
    tap_fill_normal(p, rl_model_num_params(m), std);
    for (int i = 0; i < rl_model_num_tensors(m); i++) {
        const struct rl_tensor_info *t = rl_model_tensor(m, i);
        if (strstr(t->name, "ln") && strstr(t->name, ".weight"))
            for (size_t j = 0; j < t->count; j++)
                p[t->offset + j] += 1.0f;
    }
}

static double loss_at(rl_model *m, const struct rl_batch *b)
{
    double s;
    long   nt, nc;
    if (rl_model_forward(m, b, &s, &nt, &nc) != RL_OK) tap_bail("forward: %s", rl_last_error());
    return s / (double)nt;
}

/* d/dh L(p + h u) by the 4-point stencil, u on tensor t only */
static double fd_dir(rl_model *m, const struct rl_batch *b, const struct rl_tensor_info *t,
                     const double *u, double h)
{
    float *p    = rl_model_params(m) + t->offset;
    float *save = malloc(t->count * sizeof *save);
    memcpy(save, p, t->count * sizeof *save);
    double l[4], hs[4] = {-2 * h, -h, h, 2 * h};
    for (int s = 0; s < 4; s++) {
        for (size_t j = 0; j < t->count; j++)
            p[j] = (float)(save[j] + hs[s] * u[j]);
        l[s] = loss_at(m, b);
    }
    memcpy(p, save, t->count * sizeof *save);
    free(save);
    return (8 * (l[2] - l[1]) - (l[3] - l[0])) / (12 * h);
}

/* Step along a unit direction for a tensor with gradient norm gn: the loss should move by
 * ~2e-3 (its float32 noise is ~1e-7), within [1e-3, 1e-2] where the 4-point stencil's
 * truncation (and elu1's jump in the second derivative) stays below ~1e-4 relative
 * (measured on these models). */
static double fd_step(double gn)
{
    double h = 2e-3 / gn;
    return h < 1e-3 ? 1e-3 : h > 1e-2 ? 1e-2 : h;
}

/* Batches of B sequences of length N: the default 2 x 6 is one chunk of the model's
 * parallel regions; 8 x 300 makes ten (rl_model_mlp_rows: 256 rows at this width), which
 * cut sequences and sum their parameter gradients in ten groups (model_step.c). */
static int gc_B = 2, gc_N = 6;

static void grad_check(const struct combo *k, int causal)
{
    struct rl_model_config c;
    make_config(&c, k, causal);
    if (c.max_len < gc_N) c.max_len = gc_N;
    rl_model *m;
    if (rl_model_create(&m, &c) != RL_OK) tap_bail("create: %s", rl_last_error());
    randomize(m, 0.3);
    struct rl_batch b;
    make_batch(&b, gc_B, gc_N, c.vocab, c.n_classes);
    double s;
    long   nt, nc;
    rl_model_zero_grad(m);
    if (rl_model_forward(m, &b, &s, &nt, &nc) != RL_OK || rl_model_backward(m, 1.0f / nt) != RL_OK)
        tap_bail("forward/backward: %s", rl_last_error());
    const float *g     = rl_model_grads(m);
    double       worst = 0, worst_rand = 0, gmax = 0, wg = 0, wrg = 0;
    const char  *wname = "", *wrname = "";
    double       scale_err = -1.0, scale_g = 0.0; /* pos.scale: its own line */
    for (int i = 0; i < rl_model_num_tensors(m); i++) {
        const struct rl_tensor_info *t  = rl_model_tensor(m, i);
        double                       gn = 0;
        for (size_t j = 0; j < t->count; j++)
            gn += (double)g[t->offset + j] * g[t->offset + j];
        gmax = fmax(gmax, sqrt(gn));
    }
    /* float32 forward passes resolve a directional derivative to ~1e-5 absolute: errors
     * are relative to max(|g_t|, 5% of the largest tensor gradient) */
    const double floor = 5e-2 * gmax;
    for (int i = 0; i < rl_model_num_tensors(m); i++) {
        const struct rl_tensor_info *t  = rl_model_tensor(m, i);
        double                      *u  = malloc(t->count * sizeof *u);
        double                       gn = 0, gu = 0, un = 0;
        for (size_t j = 0; j < t->count; j++)
            gn += (double)g[t->offset + j] * g[t->offset + j];
        gn = sqrt(gn);
        /* a gradient that is zero in exact arithmetic (the key bias under softmax
         * attention without RoPE, or under the Shen map) is float noise: no direction */
        if (gn > 1e-5 * gmax) {
            for (size_t j = 0; j < t->count; j++)
                u[j] = g[t->offset + j] / gn;
            double e = fabs(fd_dir(m, &b, t, u, fd_step(fmax(gn, floor))) - gn) / fmax(gn, floor);
            if (e > worst) worst = e, wname = t->name, wg = gn;
            if (!strcmp(t->name, "pos.scale")) scale_err = e, scale_g = g[t->offset];
        }
        for (size_t j = 0; j < t->count; j++)
            u[j] = tap_normal(), un += u[j] * u[j];
        for (size_t j = 0; j < t->count; j++)
            u[j] /= sqrt(un), gu += u[j] * g[t->offset + j];
        /* a zero gradient (the key bias under plain softmax) must have a zero FD too */
        double e = fabs(fd_dir(m, &b, t, u, fd_step(fmax(gn, floor))) - gu) / fmax(gn, floor);
        if (e > worst_rand) worst_rand = e, wrname = t->name, wrg = gn;
        free(u);
    }
    char desc[112];
    snprintf(desc, sizeof desc, "%s%s pe=%s%s%s%s %s %dx%d", k->kind ? "linear" : "softmax",
             k->kind ? (k->fmap == RL_FMAP_EXP       ? "(exp)"
                        : k->fmap == RL_FMAP_SOFTMAX ? "(softmax)"
                                                     : "(elu1)")
                     : "",
             pe_names[k->pe], k->t5_per_layer ? "/per-layer" : "",
             gc_ext == 1   ? "+yarn"
             : gc_ext == 2 ? "+xpos"
                           : "",
             gc_forget ? " +forget" : "",
             k->n_classes ? "classifier"
             : causal     ? "causal LM"
                          : "non-causal LM",
             gc_B, gc_N);
    tap_ok(worst < 1e-3,
           "grad check %s: along each tensor's gradient, worst err/max(|g_t|, "
           "|g|max/20) %.2g (%s, |g_t| %.2g, |g|max %.2g)",
           desc, worst, wname, wg, gmax);
    tap_ok(worst_rand < 1e-3,
           "grad check %s: random directions, worst err/|g_t| %.2g (%s, |g| "
           "%.2g)",
           desc, worst_rand, wrname, wrg);
    if (k->pe == 1)
        tap_ok(scale_err >= 0 && scale_err < 1e-3,
               "grad check %s: pos.scale (dL/dg %.4g) against finite differences, err %.2g", desc,
               scale_g, scale_err);
    free_batch(&b);
    rl_model_free(m);
}

static void test_table(void)
{
    struct combo           k = {RL_ATTN_SOFTMAX, RL_FMAP_ELU1, 2, 0, 0};
    struct rl_model_config c;
    make_config(&c, &k, 1);
    c.layers = 3;
    rl_model *m;
    if (rl_model_create(&m, &c) != RL_OK) tap_bail("create: %s", rl_last_error());
    const int64_t V = c.vocab, D = c.d_model;
    size_t        want = V * D + c.max_len * D + 3 * (12 * D * D + 13 * D) + 2 * D + V * D + V;
    tap_ok(rl_model_num_params(m) == want,
           "parameter count %zu = V D + max_len D + L (12 D^2 + "
           "13 D) + 2 D + V D + V = %zu",
           rl_model_num_params(m), want);
    static const char *block[] = {
        "ln1.weight",     "ln1.bias",     "attn.wq.weight", "attn.wk.weight",
        "attn.wv.weight", "attn.wq.bias", "attn.wk.bias",   "attn.wv.bias",
        "attn.wo.weight", "attn.wo.bias", "ln2.weight",     "ln2.bias",
        "mlp.fc1.weight", "mlp.fc1.bias", "mlp.fc2.weight", "mlp.fc2.bias"};
    int ok = rl_model_tensor_by_name(m, "embed.weight") &&
             rl_model_tensor_by_name(m, "pos.weight") &&
             rl_model_tensor_by_name(m, "ln_f.weight") && rl_model_tensor_by_name(m, "ln_f.bias") &&
             rl_model_tensor_by_name(m, "head.weight") && rl_model_tensor_by_name(m, "head.bias") &&
             !rl_model_tensor_by_name(m, "t5.bias");
    for (int l = 0; l < 3; l++)
        for (int j = 0; j < 16; j++) {
            char nm[64];
            snprintf(nm, sizeof nm, "blocks.%d.%s", l, block[j]);
            ok &= rl_model_tensor_by_name(m, nm) != NULL;
        }
    tap_ok(ok && rl_model_num_tensors(m) == 6 + 16 * 3, "checkpoint tensor names (%d tensors)",
           rl_model_num_tensors(m));
    const struct rl_tensor_info *f1 = rl_model_tensor_by_name(m, "blocks.1.mlp.fc1.weight");
    const struct rl_tensor_info *f2 = rl_model_tensor_by_name(m, "blocks.1.mlp.fc2.weight");
    const struct rl_tensor_info *h  = rl_model_tensor_by_name(m, "head.weight");
    tap_ok(f1->shape[0] == 4 * D && f1->shape[1] == D && f2->shape[0] == D &&
               f2->shape[1] == 4 * D && h->shape[0] == V && h->shape[1] == D && f1->ndim == 2,
           "nn.Linear convention: weight is out x in");
    ok         = 1;
    size_t off = 0;
    for (int i = 0; i < rl_model_num_tensors(m); i++) {
        const struct rl_tensor_info *t = rl_model_tensor(m, i);
        int                          linear_w =
            strstr(t->name, "attn.w") || strstr(t->name, "mlp.fc") || !strncmp(t->name, "head.", 5);
        linear_w   = linear_w && strstr(t->name, ".weight");
        int want_d = !strcmp(t->name, "embed.weight") || linear_w;
        ok &= t->decay == want_d && t->offset == off;
        off += t->count;
    }
    tap_ok(ok && off == rl_model_num_params(m),
           "weight decay exactly on embed and Linear weights; tensors packed in table order");
    /* init */
    rl_model_init_weights(m, 42);
    const float *p  = rl_model_params(m);
    double       s2 = 0, s2r = 0;
    size_t       n = 0, nr = 0;
    ok = 1;
    for (int i = 0; i < rl_model_num_tensors(m); i++) {
        const struct rl_tensor_info *t = rl_model_tensor(m, i);
        int resid = strstr(t->name, "wo.weight") || strstr(t->name, "fc2.weight");
        for (size_t j = 0; j < t->count; j++) {
            float x = p[t->offset + j];
            if (strstr(t->name, "ln") && strstr(t->name, ".weight"))
                ok &= x == 1.0f;
            else if (strstr(t->name, ".bias"))
                ok &= x == 0.0f;
            else if (resid)
                s2r += (double)x * x, nr++;
            else
                s2 += (double)x * x, n++;
        }
    }
    double sd = sqrt(s2 / n), sdr = sqrt(s2r / nr), want_r = 0.02 / sqrt(6.0);
    tap_ok(ok && fabs(sd - 0.02) < 0.002 && fabs(sdr - want_r) < 0.1 * want_r,
           "GPT-2 init: LN weights 1, biases 0, std %.4f (0.02), residual std %.5f (%.5f)", sd, sdr,
           want_r);
    float *copy = malloc(rl_model_num_params(m) * sizeof *copy);
    memcpy(copy, p, rl_model_num_params(m) * sizeof *copy);
    rl_model_init_weights(m, 42);
    ok = !memcmp(copy, p, rl_model_num_params(m) * sizeof *copy);
    rl_model_init_weights(m, 43);
    tap_ok(ok && memcmp(copy, p, rl_model_num_params(m) * sizeof *copy),
           "init is a function of the seed");
    free(copy);
    rl_model_free(m);
}

/* The scaled sinusoid: one scalar pos.scale right after the embedding, no weight decay,
 * initialised to D^-1/2 in float32; with g = 0 the model is the NoPE model exactly. */
static void test_pos_scale(void)
{
    struct combo           k = {RL_ATTN_SOFTMAX, RL_FMAP_ELU1, 1, 0, 0};
    struct rl_model_config c;
    make_config(&c, &k, 1);
    c.d_model = 12, c.heads = 2;
    rl_model *m, *none;
    if (rl_model_create(&m, &c) != RL_OK) tap_bail("create: %s", rl_last_error());
    const struct rl_tensor_info *t = rl_model_tensor_by_name(m, "pos.scale");
    const struct rl_tensor_info *e = rl_model_tensor_by_name(m, "embed.weight");
    tap_ok(t && t->ndim == 1 && t->shape[0] == 1 && t->count == 1 && !t->decay &&
               t->offset == e->count && !rl_model_tensor_by_name(m, "pos.weight") &&
               rl_model_num_tensors(m) == 6 + 16 * c.layers,
           "sinusoidal: pos.scale, shape [1], after embed.weight, no weight decay");
    rl_model_init_weights(m, 5);
    const float want = (float)(1.0 / sqrt(12.0)); /* 0.28867513... rounded to float32 */
    tap_ok(rl_model_params(m)[t->offset] == want, "pos.scale init %.9g = (float)12^-1/2 = %.9g",
           (double)rl_model_params(m)[t->offset], (double)want);
    c.input_pe = RL_INPUT_PE_NONE;
    if (rl_model_create(&none, &c) != RL_OK) tap_bail("create: %s", rl_last_error());
    tap_ok(rl_model_num_params(none) + 1 == rl_model_num_params(m),
           "pos.scale is the sinusoid's only parameter (%zu vs %zu)", rl_model_num_params(m),
           rl_model_num_params(none));
    /* the same weights without the gain: copy around the one float */
    const float *p = rl_model_params(m);
    float       *q = rl_model_params(none);
    memcpy(q, p, e->count * sizeof *q);
    memcpy(q + e->count, p + e->count + 1, (rl_model_num_params(none) - e->count) * sizeof *q);
    rl_model_params(m)[t->offset] = 0.0f;
    struct rl_batch b;
    make_batch(&b, 2, 9, c.vocab, 0);
    double s1, s2;
    long   nt, nc;
    size_t nl = (size_t)2 * 9 * c.vocab;
    int    ok = rl_model_forward(m, &b, &s1, &nt, &nc) == RL_OK &&
             rl_model_forward(none, &b, &s2, &nt, &nc) == RL_OK;
    tap_ok(ok && !memcmp(rl_model_logits(m), rl_model_logits(none), nl * sizeof(float)),
           "pos.scale = 0: logits bitwise those of the model without position encoding");
    free_batch(&b);
    rl_model_free(m), rl_model_free(none);
}

static void test_errors(void)
{
    struct combo           k = {RL_ATTN_SOFTMAX, RL_FMAP_ELU1, 2, 0, 0};
    struct rl_model_config c;
    make_config(&c, &k, 1);
    rl_model *m = NULL;
    c.heads     = 3;
    TAP_CHECK(rl_model_create(&m, &c) == RL_EINVAL && !m, "d_model %% heads != 0 refused: %s",
          rl_last_error());
    make_config(&c, &k, 1);
    c.attn.pe = RL_ATTN_PE_ROPE, c.d_model = 6; /* d = 3, odd, with RoPE */
    TAP_CHECK(rl_model_create(&m, &c) == RL_EINVAL, "odd head dim with RoPE refused: %s",
          rl_last_error());
    make_config(&c, &k, 1);
    if (rl_model_create(&m, &c) != RL_OK) tap_bail("create: %s", rl_last_error());
    tap_ok(rl_model_backward(m, 1.0f) == RL_EINVAL, "backward before forward refused");
    struct rl_batch b;
    make_batch(&b, 2, c.max_len + 1, c.vocab, 0);
    double    s;
    long      nt, nc;
    rl_status st = rl_model_forward(m, &b, &s, &nt, &nc);
    TAP_CHECK(st == RL_EINVAL && strstr(rl_last_error(), "max_len"),
          "learned PE: N = max_len + 1 refused: %s", rl_last_error());
    free_batch(&b);
    make_batch(&b, 2, 4, c.vocab, 0);
    b.inputs[3] = c.vocab;
    TAP_CHECK(rl_model_forward(m, &b, &s, &nt, &nc) == RL_EINVAL, "token id >= vocab refused: %s",
          rl_last_error());
    b.inputs[3] = 0, b.targets[4] = -1, b.mask[4] = 1;
    TAP_CHECK(rl_model_forward(m, &b, &s, &nt, &nc) == RL_EINVAL, "target < 0 refused: %s",
          rl_last_error());
    b.mask[4] = 0;
    tap_ok(rl_model_forward(m, &b, &s, &nt, &nc) == RL_OK, "an unmasked position's target is "
                                                           "not read");
    free_batch(&b);
    rl_model_free(m);
}

/* Fixed batch, AdamW: the loss goes to ~0 (the model can memorise it). Also checks that
 * re-running the same steps gives bitwise the same weights. */
static void test_overfit(enum rl_attn_kind kind, int pe)
{
    struct combo           k = {kind, RL_FMAP_ELU1, pe, 0, 0};
    struct rl_model_config c;
    make_config(&c, &k, 1);
    c.d_model = 32, c.heads = 4, c.vocab = 16;
    struct rl_batch b;
    make_batch(&b, 4, 16, c.vocab, 0);
    /* no token repeats within a row and rows start differently: with a relative PE two
     * positions are told apart only by the tokens before them, so make every prefix unique */
    for (int i = 0; i < 64; i++)
        b.inputs[i] = (5 * (i / 16) + 7 * (i % 16)) % 16;
    struct rl_adamw_opts o;
    rl_adamw_opts_default(&o);
    o.lr            = 1e-2;
    float *final[2] = {NULL, NULL};
    double first = 0, last = 0;
    long   correct = 0, targets = 0;
    for (int run = 0; run < 2; run++) {
        rl_model *m;
        if (rl_model_create(&m, &c) != RL_OK) tap_bail("create: %s", rl_last_error());
        rl_model_init_weights(m, 1);
        size_t n  = rl_model_num_params(m);
        float *mm = calloc(n, sizeof *mm), *vv = calloc(n, sizeof *vv);
        for (int t = 1; t <= 300; t++) {
            double s;
            long   nt, nc;
            rl_model_zero_grad(m);
            if (rl_model_forward(m, &b, &s, &nt, &nc) || rl_model_backward(m, 1.0f / nt))
                tap_bail("step: %s", rl_last_error());
            if (t == 1) first = s / nt;
            last = s / nt, correct = nc, targets = nt;
            float *g = rl_model_grads(m);
            rl_clip(g, n, 1.0, rl_grad_norm(g, n));
            rl_adamw_step(rl_model_params(m), g, mm, vv, rl_model_tensor(m, 0),
                          rl_model_num_tensors(m), o.lr, &o, t);
        }
        final[run] = malloc(n * sizeof(float));
        memcpy(final[run], rl_model_params(m), n * sizeof(float));
        if (run == 1)
            tap_ok(!memcmp(final[0], final[1], n * sizeof(float)),
                   "%s pe=%s: 300 updates twice give bitwise identical weights",
                   kind ? "linear" : "softmax", pe_names[pe]);
        free(mm), free(vv);
        rl_model_free(m);
    }
    tap_ok(last < 0.05 * first && correct == targets,
           "%s pe=%s overfits a fixed batch: loss %.3f -> %.4f, acc %ld/%ld",
           kind ? "linear" : "softmax", pe_names[pe], first, last, correct, targets);
    free(final[0]), free(final[1]);
    free_batch(&b);
}

/* save -> load into a fresh model -> the same logits, bitwise (learned PE and T5 tables
 * included, so that every kind of tensor travels) */
static void test_save_load(int pe)
{
    struct combo           k = {RL_ATTN_SOFTMAX, RL_FMAP_ELU1, pe, 0, 0};
    struct rl_model_config c;
    make_config(&c, &k, 1);
    rl_model *a, *b;
    if (rl_model_create(&a, &c) || rl_model_create(&b, &c)) tap_bail("create: %s", rl_last_error());
    randomize(a, 0.3);
    rl_model_init_weights(b, 9);
    struct rl_batch batch;
    make_batch(&batch, 3, 7, c.vocab, 0);
    double s1, s2;
    long   nt, nc;
    char   path[64];
    snprintf(path, sizeof path, "t_model.%ld.safetensors", (long)getpid());
    size_t nl = (size_t)3 * 7 * c.vocab;
    float *l1 = malloc(nl * sizeof *l1);
    int    ok = rl_model_forward(a, &batch, &s1, &nt, &nc) == RL_OK;
    memcpy(l1, rl_model_logits(a), nl * sizeof *l1);
    ok = ok && rl_checkpoint_save(path, a, NULL, NULL, 0, "", "") == RL_OK;
    ok = ok && rl_checkpoint_load(path, b, NULL, NULL, NULL, NULL, NULL) == RL_OK;
    ok = ok && rl_model_forward(b, &batch, &s2, &nt, &nc) == RL_OK;
    TAP_CHECK(ok && !memcmp(l1, rl_model_logits(b), nl * sizeof *l1) && s1 == s2,
          "pe=%s: logits bitwise equal after save -> load %s", pe_names[pe],
          ok ? "" : rl_last_error());
    remove(path);
    free(l1);
    free_batch(&batch);
    rl_model_free(a), rl_model_free(b);
}

/* Same thread count, same numbers: two forward+backward passes on 2 threads agree bitwise
 * (no atomics, no reduction whose order depends on scheduling). */
static void test_threads(enum rl_attn_kind kind, int pe)
{
    rl_init(2);
    struct combo           k = {kind, RL_FMAP_ELU1, pe, 0, 0};
    struct rl_model_config c;
    make_config(&c, &k, 1);
    c.d_model = 32, c.heads = 4;
    rl_model *m;
    if (rl_model_create(&m, &c) != RL_OK) tap_bail("create: %s", rl_last_error());
    randomize(m, 0.3);
    struct rl_batch b;
    make_batch(&b, 8, 8, c.vocab, 0);
    size_t n = rl_model_num_params(m);
    float *g[2];
    double s[2];
    for (int r = 0; r < 2; r++) {
        long nt, nc;
        rl_model_zero_grad(m);
        if (rl_model_forward(m, &b, &s[r], &nt, &nc) || rl_model_backward(m, 1.0f / nt))
            tap_bail("step: %s", rl_last_error());
        g[r] = malloc(n * sizeof(float));
        memcpy(g[r], rl_model_grads(m), n * sizeof(float));
    }
    tap_ok(s[0] == s[1] && !memcmp(g[0], g[1], n * sizeof(float)),
           "%s pe=%s on 2 threads: loss and gradients bitwise reproducible",
           kind ? "linear" : "softmax", pe_names[pe]);
    free(g[0]), free(g[1]);
    free_batch(&b);
    rl_model_free(m);
    rl_init(1);
}

/* The linear-attention count of rows with denominator <= eps reaches the model's caller:
 * with eps larger than any denominator every row of every layer and head counts; with
 * eps = 0 and the (positive) eq. 19 denominator none does; softmax attention counts 0. */
static void test_bad_denominators(void)
{
    struct combo           k = {RL_ATTN_LINEAR, RL_FMAP_ELU1, 3, 0, 0};
    struct rl_model_config c;
    struct rl_batch        b;
    double                 s;
    long                   nt, nc;
    const int              B = 2, N = 6;
    make_batch(&b, B, N, 11, 0);
    for (int pass = 0; pass < 3; pass++) {
        make_config(&c, &k, 1);
        if (pass == 1) c.attn.eps = 0.0f;
        if (pass == 2)
            c.attn.kind = RL_ATTN_SOFTMAX;
        else if (pass == 0)
            c.attn.eps = 1e6f;
        rl_model *m = NULL;
        if (rl_model_create(&m, &c) != RL_OK) tap_bail("model: %s", rl_last_error());
        rl_model_init_weights(m, 7);
        long want = pass == 0 ? (long)B * N * c.layers * c.heads : 0;
        TAP_CHECK(rl_model_forward(m, &b, &s, &nt, &nc) == RL_OK &&
                  rl_model_bad_denominators(m) == want,
              "denominator diagnostic: %ld rows <= eps (want %ld) for %s",
              rl_model_bad_denominators(m), want,
              pass == 0   ? "linear, eps=1e6"
              : pass == 1 ? "linear, eps=0"
                          : "softmax");
        rl_model_free(m);
    }
    free_batch(&b);
}

/* The forget gate's tensors: blocks.{i}.attn.wf.weight (H x D, decayed like every Linear
 * weight) and .bias (H, not decayed) after the attention's other tensors; init N(0, 0.02^2)
 * and forget_bias; refused without causal attention. */
static void test_forget_table(void)
{
    struct combo           k = {RL_ATTN_SOFTMAX, RL_FMAP_ELU1, 3, 0, 0};
    struct rl_model_config c;
    gc_forget = 1;
    make_config(&c, &k, 1);
    c.d_model = 64, c.heads = 4, c.layers = 3, c.forget_bias = 5.0;
    rl_model *m = NULL, *plain = NULL;
    if (rl_model_create(&m, &c) != RL_OK) tap_bail("create: %s", rl_last_error());
    const int64_t D = c.d_model, H = c.heads;
    int           ok = rl_model_num_tensors(m) == 5 + 18 * 3;
    for (int l = 0; l < 3; l++) {
        char w[64], b[64], prev[64];
        snprintf(w, sizeof w, "blocks.%d.attn.wf.weight", l);
        snprintf(b, sizeof b, "blocks.%d.attn.wf.bias", l);
        snprintf(prev, sizeof prev, "blocks.%d.attn.wo.bias", l);
        const struct rl_tensor_info *tw = rl_model_tensor_by_name(m, w);
        const struct rl_tensor_info *tb = rl_model_tensor_by_name(m, b);
        const struct rl_tensor_info *tp = rl_model_tensor_by_name(m, prev);
        ok &= tw && tb && tp && tw->ndim == 2 && tw->shape[0] == H && tw->shape[1] == D &&
              tw->decay == 1 && tb->ndim == 1 && tb->shape[0] == H && tb->decay == 0 &&
              tw->offset == tp->offset + tp->count && tb->offset == tw->offset + tw->count;
    }
    tap_ok(ok,
           "forget gate: blocks.{i}.attn.wf.weight (H x D, decayed), .wf.bias (H, not decayed) "
           "after attn.wo.bias (%d tensors)",
           rl_model_num_tensors(m));
    c.attn.forget = 0;
    if (rl_model_create(&plain, &c) != RL_OK) tap_bail("create: %s", rl_last_error());
    tap_ok(rl_model_num_params(m) == rl_model_num_params(plain) + 3 * (size_t)(H * D + H),
           "forget gate adds L (H D + H) parameters (%zu vs %zu)", rl_model_num_params(m),
           rl_model_num_params(plain));
    rl_model_init_weights(m, 7);
    const float *p  = rl_model_params(m);
    double       s2 = 0, s1 = 0;
    ok              = 1;
    for (int l = 0; l < 3; l++) {
        char w[64], b[64];
        snprintf(w, sizeof w, "blocks.%d.attn.wf.weight", l);
        snprintf(b, sizeof b, "blocks.%d.attn.wf.bias", l);
        const struct rl_tensor_info *tw = rl_model_tensor_by_name(m, w);
        const struct rl_tensor_info *tb = rl_model_tensor_by_name(m, b);
        for (size_t j = 0; j < tw->count; j++)
            s1 += p[tw->offset + j], s2 += (double)p[tw->offset + j] * p[tw->offset + j];
        for (size_t j = 0; j < tb->count; j++)
            ok &= p[tb->offset + j] == 5.0f;
    }
    const double n = 3.0 * (double)(H * D), sd = sqrt(s2 / n - (s1 / n) * (s1 / n));
    tap_ok(ok && fabs(sd - 0.02) < 0.002,
           "forget gate init: bias = forget_bias 5, wf std %.4f (0.02)", sd);
    rl_model_free(plain);
    rl_model_free(m);
    make_config(&c, &k, 0);
    gc_forget = 0;
    TAP_CHECK(rl_model_create(&m, &c) == RL_EINVAL && !m,
              "forget gate with non-causal attention refused: %s", rl_last_error());
}

/* A gate held at 1 (wf = 0, bias 100: lambda = -softplus(-100) ~ -4e-44) weighs nothing:
 * the logits are those of the same weights without the gate, for both attention kinds. */
static void test_forget_open(enum rl_attn_kind kind)
{
    struct combo           k = {kind, RL_FMAP_ELU1, 3, 0, 0};
    struct rl_model_config c;
    gc_forget = 1;
    make_config(&c, &k, 1);
    gc_forget = 0;
    rl_model *m, *plain;
    if (rl_model_create(&m, &c) != RL_OK) tap_bail("create: %s", rl_last_error());
    c.attn.forget = 0;
    if (rl_model_create(&plain, &c) != RL_OK) tap_bail("create: %s", rl_last_error());
    randomize(plain, 0.3);
    float *p = rl_model_params(m);
    for (int i = 0; i < rl_model_num_tensors(m); i++) {
        const struct rl_tensor_info *t = rl_model_tensor(m, i);
        const struct rl_tensor_info *u = rl_model_tensor_by_name(plain, t->name);
        for (size_t j = 0; j < t->count; j++)
            p[t->offset + j] = u                            ? rl_model_params(plain)[u->offset + j]
                               : strstr(t->name, "wf.bias") ? 100.0f
                                                            : 0.0f;
    }
    struct rl_batch b;
    make_batch(&b, 2, 7, c.vocab, 0);
    double s1, s2;
    long   nt, nc;
    int    ok = rl_model_forward(m, &b, &s1, &nt, &nc) == RL_OK &&
             rl_model_forward(plain, &b, &s2, &nt, &nc) == RL_OK;
    double err = 0, mx = 0;
    for (size_t i = 0; ok && i < (size_t)2 * 7 * c.vocab; i++) {
        err = fmax(err, fabs(rl_model_logits(m)[i] - rl_model_logits(plain)[i]));
        mx  = fmax(mx, fabs(rl_model_logits(plain)[i]));
    }
    tap_ok(ok && err <= 1e-6 * mx,
           "%s: a gate held at 1 gives the gateless model's logits (max diff %.2g of %.3g)",
           kind ? "linear" : "softmax", err, mx);
    free_batch(&b);
    rl_model_free(m), rl_model_free(plain);
}

int main(void)
{
    rl_init(1);
    tap_seed(2024);
    test_table();
    test_errors();
    for (int kind = 0; kind < 2; kind++)
        for (int pe = 0; pe < 6; pe++) {
            struct combo k = {kind, RL_FMAP_ELU1, pe, 0, 0};
            grad_check(&k, 1);
        }
    struct combo extra[] = {
        {RL_ATTN_SOFTMAX, RL_FMAP_ELU1, 4, 0, 1}, /* per-layer T5 tables */
        {RL_ATTN_LINEAR, RL_FMAP_EXP, 3, 0, 0},   /* other feature maps with RoPE */
        {RL_ATTN_LINEAR, RL_FMAP_SOFTMAX, 3, 0, 0},
        {RL_ATTN_SOFTMAX, RL_FMAP_ELU1, 3, 3, 0}, /* mean-pooled classifier */
        {RL_ATTN_LINEAR, RL_FMAP_ELU1, 4, 3, 0},
        {RL_ATTN_SOFTMAX, RL_FMAP_ELU1, 2, 3, 0},
        {RL_ATTN_LINEAR, RL_FMAP_ELU1, 1, 3, 0}, /* scaled sinusoid, mean-pooled */
    };
    for (size_t i = 0; i < sizeof extra / sizeof *extra; i++)
        grad_check(&extra[i], extra[i].n_classes == 0);
    struct combo rope_sm = {RL_ATTN_SOFTMAX, RL_FMAP_ELU1, 3, 0, 0};
    struct combo rope_li = {RL_ATTN_LINEAR, RL_FMAP_ELU1, 3, 0, 0};
    gc_ext               = 1; /* YaRN in both kinds, xPos in softmax */
    grad_check(&rope_sm, 1);
    grad_check(&rope_li, 1);
    gc_ext = 2;
    grad_check(&rope_sm, 1);
    gc_ext = 0;
    gc_B = 8, gc_N = 300; /* many chunks */
    struct combo chunked[] = {{RL_ATTN_SOFTMAX, RL_FMAP_ELU1, 4, 0, 0},
                              {RL_ATTN_LINEAR, RL_FMAP_ELU1, 3, 0, 0}};
    for (size_t i = 0; i < sizeof chunked / sizeof *chunked; i++)
        grad_check(&chunked[i], 1);
    gc_B = 2, gc_N = 6;
    test_threads(RL_ATTN_SOFTMAX, 4);
    test_threads(RL_ATTN_LINEAR, 3);
    test_save_load(2);
    test_save_load(4);
    test_overfit(RL_ATTN_SOFTMAX, 3);
    test_overfit(RL_ATTN_LINEAR, 3);
    test_bad_denominators();
    test_pos_scale();
    test_forget_table();
    test_forget_open(RL_ATTN_SOFTMAX);
    test_forget_open(RL_ATTN_LINEAR);
    /* the forget gate with every attention-level PE and feature map (whole-model gradients,
     * the gate's wf and bf included), and across the chunks of the attention loops */
    gc_forget            = 1;
    struct combo gated[] = {
        {RL_ATTN_SOFTMAX, RL_FMAP_ELU1, 0, 0, 0},   {RL_ATTN_SOFTMAX, RL_FMAP_ELU1, 3, 0, 0},
        {RL_ATTN_SOFTMAX, RL_FMAP_ELU1, 4, 0, 0},   {RL_ATTN_SOFTMAX, RL_FMAP_ELU1, 5, 0, 0},
        {RL_ATTN_LINEAR, RL_FMAP_ELU1, 0, 0, 0},    {RL_ATTN_LINEAR, RL_FMAP_ELU1, 3, 0, 0},
        {RL_ATTN_LINEAR, RL_FMAP_ELU1, 5, 0, 0},    {RL_ATTN_LINEAR, RL_FMAP_EXP, 3, 0, 0},
        {RL_ATTN_LINEAR, RL_FMAP_SOFTMAX, 3, 0, 0}, {RL_ATTN_LINEAR, RL_FMAP_ELU1, 4, 0, 0},
    };
    for (size_t i = 0; i < sizeof gated / sizeof *gated; i++)
        grad_check(&gated[i], 1);
    gc_B = 8, gc_N = 300;
    struct combo gated_chunked[] = {{RL_ATTN_SOFTMAX, RL_FMAP_ELU1, 3, 0, 0},
                                    {RL_ATTN_LINEAR, RL_FMAP_ELU1, 3, 0, 0}};
    for (size_t i = 0; i < sizeof gated_chunked / sizeof *gated_chunked; i++)
        grad_check(&gated_chunked[i], 1);
    gc_B = 2, gc_N = 6, gc_forget = 0;
    return tap_done();
}
