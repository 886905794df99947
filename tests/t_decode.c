/* t_decode.c -- recurrent decoding (model/decode.h, kernels/attn_step.h) against the
 * training forward, and the sampler (model/sample.h).
 *
 * For every attention x map x PE combination with a recurrence, on a small model with
 * random parameters (std 0.3, so that attention is far from uniform and the logits spread):
 *  - the recurrent logits at every position of a 300-token sequence equal the rows of
 *    rl_model_forward over prefixes of 1, 37 and 300 tokens (which crosses the linear
 *    kernels' 256-row blocks and changes the Shen map's global shift), within 1e-4 of the
 *    row's largest logit;
 *  - greedy continuations of a prompt are identical in recurrent and full mode;
 *  - sampling is deterministic for a seed and top-k = 1 is greedy.
 * Linear attention with T5 decodes by recomputation (checked to say so, and equal).
 * With the forget gate (its bias drawn around +3, so that the gates spread around 0.95 and
 * reach far back) the same checks for softmax and every linear recurrence: the softmax
 * cache of the gates' prefix sums, the decayed linear states.
 * The sampler: draws stay in the top k, and their frequencies follow the tempered softmax. */
#include "config.h"
#include "model/decode.h"
#include "model/model.h"
#include "model/sample.h"
#include "core/threads.h"
#include "core/init.h"
#include "tap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define V_ 13
#define N_ 300

struct combo {
    enum rl_attn_kind  kind;
    enum rl_fmap       fmap;
    enum rl_attn_pe    pe;
    enum rl_input_pe   input;
    enum rl_rope_place place;
    enum rl_rope_denom den;
    int                layout, dims; /* RoPE layout and rope_dims (0 = d) */
    const char        *name;
    int                scan; /* linear ALiBi in training: the decayed scan (else FFT) */
};

/* Extensions of the combination checked next (YaRN factor, xPos on or off, forget gate). */
static struct {
    double yarn;
    int    xpos, forget;
} ext = {1.0, 0, 0};

static void make_config(struct rl_model_config *c, const struct combo *k)
{
    memset(c, 0, sizeof *c);
    rl_attn_opts_default(&c->attn);
    c->vocab = V_, c->d_model = 16, c->heads = 2, c->layers = 2, c->max_len = N_;
    c->input_pe              = k->input;
    c->attn.kind             = k->kind;
    c->attn.fmap             = k->fmap;
    c->attn.pe               = k->pe;
    c->attn.causal           = 1;
    c->attn.rope_place       = k->place;
    c->attn.rope_denominator = k->den;
    c->attn.rope.layout      = (enum rl_rope_layout)k->layout;
    c->attn.rope.dims        = k->dims;
    c->attn.rope.base        = 100.0; /* angles that turn within 300 positions */
    c->attn.t5_buckets       = 8;
    c->attn.t5_max_distance  = 40;
    c->attn.alibi_scan       = k->scan;
    c->attn.rope.yarn        = ext.yarn;
    c->attn.rope.yarn_orig   = ext.yarn != 1.0 ? 64 : 0;
    c->attn.xpos             = ext.xpos;
    c->attn.xpos_scale_base  = 24.0; /* decays that matter within 300 positions */
    c->attn.forget           = ext.forget;
}

static rl_model *make_model(const struct combo *k)
{
    struct rl_model_config c;
    rl_model              *m = NULL;
    make_config(&c, k);
    if (rl_model_create(&m, &c) != RL_OK) tap_bail("%s: %s", k->name, rl_last_error());
    float *p = rl_model_params(m);
    tap_fill_normal(p, rl_model_num_params(m), 0.3);
    for (int i = 0; i < rl_model_num_tensors(m); i++) {
        const struct rl_tensor_info *t = rl_model_tensor(m, i);
        if (strstr(t->name, "ln") && strstr(t->name, ".weight"))
            for (size_t j = 0; j < t->count; j++)
                p[t->offset + j] += 1.0f;
        if (strstr(t->name, "attn.wf.bias")) /* gates near 0.95, wf . x spreading them */
            for (size_t j = 0; j < t->count; j++)
                p[t->offset + j] += 3.0f;
    }
    return m;
}

/* logits (n x V) of rl_model_forward over tok[0 .. n-1] */
static void full_logits(rl_model *m, float *out, const int32_t *tok, int n)
{
    int32_t        *tgt  = calloc((size_t)n, sizeof *tgt);
    uint8_t        *mask = calloc((size_t)n, 1);
    struct rl_batch b    = {.B = 1, .N = n, .inputs = (int32_t *)tok, .targets = tgt, .mask = mask};
    double          s;
    long            nt, nc;
    if (rl_model_forward(m, &b, &s, &nt, &nc) != RL_OK) tap_bail("forward: %s", rl_last_error());
    memcpy(out, rl_model_logits(m), (size_t)n * V_ * sizeof(float));
    free(tgt), free(mask);
}

/* worst over rows of max_j |a - b| / max_j |b| */
static double row_err(const float *a, const float *b, int rows)
{
    double worst = 0.0;
    for (int r = 0; r < rows; r++) {
        double e = 0.0, mx = 1e-30;
        for (int j = 0; j < V_; j++) {
            e  = fmax(e, fabs((double)a[r * V_ + j] - b[r * V_ + j]));
            mx = fmax(mx, fabs((double)b[r * V_ + j]));
        }
        worst = fmax(worst, e / mx);
    }
    return worst;
}

/* prompt (len) then K tokens chosen by rl_sample; returns the generated ids in gen */
static void generate(rl_decoder *dc, int32_t *gen, const int32_t *prompt, int len, int K,
                     double temp, int top_k, uint64_t seed)
{
    float         logits[V_];
    unsigned char work[V_ * 16];
    struct rl_rng rng;
    rl_rng_seed(&rng, seed);
    rl_decoder_reset(dc);
    for (int i = 0; i < len; i++)
        if (rl_decoder_step(dc, logits, prompt[i]) != RL_OK) tap_bail("%s", rl_last_error());
    for (int i = 0; i < K; i++) {
        gen[i] = rl_sample(logits, V_, temp, top_k, &rng, work);
        if (i + 1 < K && rl_decoder_step(dc, logits, gen[i]) != RL_OK)
            tap_bail("%s", rl_last_error());
    }
}

static void check_combo(const struct combo *k)
{
    rl_model   *m   = make_model(k);
    rl_decoder *rec = NULL, *full = NULL;
    if (rl_decoder_create(&rec, m, RL_DECODE_RECURRENT, 8) != RL_OK ||
        rl_decoder_create(&full, m, RL_DECODE_FULL, 8) != RL_OK)
        tap_bail("%s: %s", k->name, rl_last_error());
    int     t5lin = k->kind == RL_ATTN_LINEAR && k->pe == RL_ATTN_PE_T5;
    int32_t tok[N_];
    for (int i = 0; i < N_; i++)
        tok[i] = (int32_t)(tap_uniform() * V_);
    float *lr = malloc(sizeof(float) * N_ * V_), *lf = malloc(sizeof(float) * N_ * V_);
    tap_ok(rl_decoder_recomputes(rec) == t5lin, "%s: recurrent mode %s", k->name,
           t5lin ? "recomputes (no recurrence)" : "has a recurrence");
    for (int i = 0; i < N_; i++)
        if (rl_decoder_step(rec, lr + (size_t)i * V_, tok[i]) != RL_OK)
            tap_bail("%s step %d: %s", k->name, i, rl_last_error());
    static const int lens[] = {1, 37, N_};
    for (int s = 0; s < 3; s++) {
        full_logits(m, lf, tok, lens[s]);
        double e = row_err(lr, lf, lens[s]);
        tap_ok(e <= 1e-4,
               "%s: recurrent = full forward over %d tokens, every position (max err "
               "%.2e of the row's largest logit)",
               k->name, lens[s], e);
    }
    /* greedy continuations of prompts of 1 and 23 tokens: same ids in both modes */
    int32_t g1[24], g2[24], g3[24];
    int     same = 1;
    for (int len = 1; len <= 23; len += 22) {
        generate(rec, g1, tok, len, 24, 0.0, 0, 1);
        generate(full, g2, tok, len, 24, 0.0, 0, 1);
        same = same && !memcmp(g1, g2, sizeof g1);
    }
    tap_ok(same, "%s: greedy text identical in recurrent and full mode", k->name);
    generate(rec, g1, tok, 5, 24, 1.0, 4, 99);
    generate(rec, g2, tok, 5, 24, 1.0, 4, 99);
    generate(rec, g3, tok, 5, 24, 0.0, 0, 99);
    int greedy_ok = 1;
    generate(rec, g2, tok, 5, 24, 1.0, 1, 7); /* top-k 1 at temperature 1 */
    greedy_ok = !memcmp(g2, g3, sizeof g2);
    generate(rec, g2, tok, 5, 24, 1.0, 4, 99);
    tap_ok(!memcmp(g1, g2, sizeof g1) && greedy_ok,
           "%s: sampling deterministic for a seed; top-k 1 = greedy", k->name);
    free(lr), free(lf);
    rl_decoder_free(rec), rl_decoder_free(full);
    rl_model_free(m);
}

#define SM(pe, in, nm)                                                                             \
    {                                                                                              \
        RL_ATTN_SOFTMAX, RL_FMAP_ELU1, pe, in, 0, 0, 0, 0, nm, 0                                   \
    }
#define LN(f, pe, pl, dn, nm)                                                                      \
    {                                                                                              \
        RL_ATTN_LINEAR, f, pe, RL_INPUT_PE_NONE, pl, dn, 0, 0, nm, 0                               \
    }

static const struct combo combos[] = {
    SM(RL_ATTN_PE_NONE, RL_INPUT_PE_NONE, "softmax none"),
    SM(RL_ATTN_PE_ROPE, RL_INPUT_PE_NONE, "softmax rope"),
    SM(RL_ATTN_PE_ALIBI, RL_INPUT_PE_NONE, "softmax alibi"),
    SM(RL_ATTN_PE_T5, RL_INPUT_PE_NONE, "softmax t5"),
    SM(RL_ATTN_PE_NONE, RL_INPUT_PE_SINUSOIDAL, "softmax sinusoidal"),
    SM(RL_ATTN_PE_NONE, RL_INPUT_PE_LEARNED, "softmax learned"),
    {RL_ATTN_SOFTMAX, RL_FMAP_ELU1, RL_ATTN_PE_ROPE, RL_INPUT_PE_NONE, 0, 0, 1, 6,
     "softmax rope halves dims 6", 0},
#define LIN_MAP(f, s)                                                                              \
    LN(f, RL_ATTN_PE_NONE, 0, 0, "linear " s " none"),                                             \
        LN(f, RL_ATTN_PE_ROPE, RL_ROPE_PLACE_FEATURE, 0, "linear " s " rope (eq. 19)"),            \
        LN(f, RL_ATTN_PE_ROPE, RL_ROPE_PLACE_INPUT, 0, "linear " s " rope input"),                 \
        LN(f, RL_ATTN_PE_ROPE, RL_ROPE_PLACE_FEATURE, RL_ROPE_DENOM_ROTATED,                       \
           "linear " s " rope rotated denominator"),                                               \
        LN(f, RL_ATTN_PE_ALIBI, 0, 0, "linear " s " alibi")
    LIN_MAP(RL_FMAP_ELU1, "elu1"),
    LIN_MAP(RL_FMAP_EXP, "exp"),
    LIN_MAP(RL_FMAP_SOFTMAX, "softmax"),
    {RL_ATTN_LINEAR, RL_FMAP_SOFTMAX, RL_ATTN_PE_ROPE, RL_INPUT_PE_NONE, 0, 0, 1, 6,
     "linear softmax rope halves dims 6", 0},
    {RL_ATTN_LINEAR, RL_FMAP_ELU1, RL_ATTN_PE_NONE, RL_INPUT_PE_SINUSOIDAL, 0, 0, 0, 0,
     "linear elu1 sinusoidal", 0},
    {RL_ATTN_LINEAR, RL_FMAP_EXP, RL_ATTN_PE_NONE, RL_INPUT_PE_LEARNED, 0, 0, 0, 0,
     "linear exp learned", 0},
    {RL_ATTN_LINEAR, RL_FMAP_SOFTMAX, RL_ATTN_PE_ALIBI, RL_INPUT_PE_NONE, 0, 0, 0, 0,
     "linear softmax alibi (training by the decayed scan)", 1},
    LN(RL_FMAP_ELU1, RL_ATTN_PE_T5, 0, 0, "linear elu1 t5 (recomputes)"),
};

/* Draws stay in the top k; frequencies follow softmax(l / T) over the kept (chi-square). */
static void check_sampler(void)
{
    enum { V = 7, DRAWS = 20000 };
    const float   l[V] = {0.3f, 1.2f, -0.5f, 1.2f, 0.9f, -2.0f, 0.1f};
    unsigned char work[V * 16];
    struct rl_rng rng;
    rl_rng_seed(&rng, 5);
    tap_ok(rl_sample(l, V, 0.0, 0, &rng, work) == 1 && rl_sample(l, V, 2.0, 1, &rng, work) == 1,
           "sampler: temperature 0 and top-k 1 give the first maximum");
    static const int    ks[] = {3, 0};
    static const double ts[] = {0.7, 1.5};
    for (int c = 0; c < 2; c++) {
        int    k = ks[c], kept[V] = {0, 1, 0, 1, 1, 0, 0}, cnt[V] = {0}, out = 0;
        double T = ts[c], p[V], z = 0.0, chi = 0.0;
        for (int j = 0; j < V; j++) {
            if (!k) kept[j] = 1;
            p[j] = kept[j] ? exp(l[j] / T) : 0.0;
            z += p[j];
        }
        for (int i = 0; i < DRAWS; i++) {
            int32_t t = rl_sample(l, V, T, k, &rng, work);
            cnt[t]++;
            out += !kept[t];
        }
        int dof = -1;
        for (int j = 0; j < V; j++)
            if (kept[j]) {
                double e = DRAWS * p[j] / z;
                chi += (cnt[j] - e) * (cnt[j] - e) / e, dof++;
            }
        /* chi-square with <= 6 degrees of freedom: 22.5 is its 0.999 quantile */
        tap_ok(!out && chi < 22.5,
               "sampler: top-k %d, T %.1f: %d draws outside the top k, chi2 %.1f (%d dof)", k, T,
               out, chi, dof);
    }
}

static void check_errors(void)
{
    struct combo k  = SM(RL_ATTN_PE_NONE, RL_INPUT_PE_LEARNED, "errors");
    rl_model    *m  = make_model(&k);
    rl_decoder  *dc = NULL;
    float        logits[V_];
    if (rl_decoder_create(&dc, m, RL_DECODE_RECURRENT, 4) != RL_OK) tap_bail("%s", rl_last_error());
    int refused = rl_decoder_step(dc, logits, V_) == RL_EINVAL &&
                  rl_decoder_step(dc, logits, -1) == RL_EINVAL && rl_decoder_position(dc) == 0;
    tap_ok(refused, "token outside the vocabulary refused (%s)", rl_last_error());
    rl_status st = RL_OK;
    int       i;
    for (i = 0; i <= N_ && st == RL_OK; i++)
        st = rl_decoder_step(dc, logits, 1);
    tap_ok(st == RL_EINVAL && i == N_ + 1 && strstr(rl_last_error(), "token 301"),
           "learned PE: the token past max_len is refused, named (%s)", rl_last_error());
    rl_decoder_free(dc);
    rl_model_free(m);
    /* finite weights whose logits overflow float32: an error, not NaN logits that a
     * sampler would read as token 0 */
    m = make_model(&k);
    const struct rl_tensor_info *h = rl_model_tensor_by_name(m, "head.weight");
    for (size_t j = 0; h && j < h->count; j++)
        rl_model_params(m)[h->offset + j] = j % 2 ? -3e38f : 3e38f;
    st = h ? rl_decoder_create(&dc, m, RL_DECODE_RECURRENT, 4) : RL_EINVAL;
    if (st == RL_OK) st = rl_decoder_step(dc, logits, 1);
    tap_ok(st != RL_OK && strstr(rl_last_error(), "not finite"),
           "logits that overflow are an error (%s)", st == RL_OK ? "accepted" : rl_last_error());
    rl_decoder_free(dc);
    rl_model_free(m);
    struct rl_model_config c;
    make_config(&c, &k);
    c.n_classes   = 3;
    c.attn.causal = 0;
    if (rl_model_create(&m, &c) != RL_OK) tap_bail("%s", rl_last_error());
    refused = rl_decoder_create(&dc, m, RL_DECODE_RECURRENT, 4) == RL_EINVAL && !dc;
    tap_ok(refused, "a classifier is refused (%s)", rl_last_error());
    rl_model_free(m);
}

int main(void)
{
    rl_init(1);
    tap_seed(20261123);
    for (size_t i = 0; i < sizeof combos / sizeof *combos; i++)
        check_combo(&combos[i]);
    /* YaRN (s = 4, trained context 64): softmax (frequencies and the factor on q, k) and
     * linear attention (frequencies); xPos (softmax, causal) */
    static const struct combo yarn[] = {
        SM(RL_ATTN_PE_ROPE, RL_INPUT_PE_NONE, "softmax rope yarn 4"),
        LN(RL_FMAP_ELU1, RL_ATTN_PE_ROPE, RL_ROPE_PLACE_FEATURE, 0,
           "linear elu1 rope (eq. 19) yarn 4"),
        LN(RL_FMAP_SOFTMAX, RL_ATTN_PE_ROPE, RL_ROPE_PLACE_FEATURE, 0,
           "linear softmax rope (eq. 19) yarn 4")};
    ext.yarn = 4.0;
    for (size_t i = 0; i < sizeof yarn / sizeof *yarn; i++)
        check_combo(&yarn[i]);
    ext.yarn                         = 1.0;
    ext.xpos                         = 1;
    static const struct combo xpos[] = {
        SM(RL_ATTN_PE_ROPE, RL_INPUT_PE_NONE, "softmax rope xpos (gamma 24)"),
        {RL_ATTN_SOFTMAX, RL_FMAP_ELU1, RL_ATTN_PE_ROPE, RL_INPUT_PE_NONE, 0, 0, 1, 6,
         "softmax rope halves dims 6 xpos (gamma 24)", 0}};
    for (size_t i = 0; i < sizeof xpos / sizeof *xpos; i++)
        check_combo(&xpos[i]);
    ext.xpos                          = 0;
    ext.forget                        = 1;
    static const struct combo gated[] = {
        SM(RL_ATTN_PE_NONE, RL_INPUT_PE_NONE, "forget gate: softmax none"),
        SM(RL_ATTN_PE_ROPE, RL_INPUT_PE_NONE, "forget gate: softmax rope"),
        SM(RL_ATTN_PE_ALIBI, RL_INPUT_PE_NONE, "forget gate: softmax alibi"),
        SM(RL_ATTN_PE_T5, RL_INPUT_PE_NONE, "forget gate: softmax t5"),
        LIN_MAP(RL_FMAP_ELU1, "elu1 +forget"),
        LIN_MAP(RL_FMAP_EXP, "exp +forget"),
        LIN_MAP(RL_FMAP_SOFTMAX, "softmax +forget"),
        {RL_ATTN_LINEAR, RL_FMAP_ELU1, RL_ATTN_PE_ALIBI, RL_INPUT_PE_NONE, 0, 0, 0, 0,
         "linear elu1 alibi +forget (training by the decayed scan)", 1},
        LN(RL_FMAP_ELU1, RL_ATTN_PE_T5, 0, 0, "linear elu1 t5 +forget (recomputes)")};
    for (size_t i = 0; i < sizeof gated / sizeof *gated; i++)
        check_combo(&gated[i]);
    ext.forget = 0;
    check_sampler();
    check_errors();
    return tap_done();
}
