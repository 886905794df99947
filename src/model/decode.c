/* decode.c -- one token at a time through the model (decode.h).
 *
 * The step is block_forward of model.c on a single row (B = N = 1): the same layer
 * functions on the model's own parameter buffer, found through the tensor table by their
 * checkpoint names; only attention differs (kernels/attn_step.h instead of rl_attn). */
#include "config.h"
#include "decode.h"
#include "layers.h"
#include "forget.h"
#include "../kernels/attn_step.h"
#include "../core/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const struct rl_choice rl_decode_modes[] = {
    {"recurrent", RL_DECODE_RECURRENT,
     "one token per step: O(1) per token in linear attention (its eq. 19 state), O(context) "
     "in softmax attention (key/value cache)"},
    {"full", RL_DECODE_FULL,
     "the whole prefix through the training forward at every step (the reference)"},
    {NULL, 0, NULL}};
RL_CHOICE_TABLE_CHECK(rl_decode_modes, RL_DECODE_MODE_COUNT);

struct layer_view {
    const float *ln1w, *ln1b, *wqkv, *bqkv, *wo, *bo, *t5, *ln2w, *ln2b, *fc1w, *fc1b, *fc2w, *fc2b;
    const float *wf, *bf; /* the forget gate's projection (NULL without the gate) */
};

struct rl_decoder {
    rl_model              *m;
    struct rl_model_config c;
    enum rl_decode_mode    mode;
    int                    D, H, d, L, V, pos, recompute;
    long                   bad;
    const float           *wte, *pos_w, *pos_scale, *lnfw, *lnfb, *headw, *headb;
    struct layer_view     *blk;
    rl_attn_step         **att;
    struct rl_rope         rope;
    int                    rope_n; /* positions the RoPE table covers (0: none yet) */
    /* one row of activations */
    float *x, *xmid, *ln, *qkv, *q, *k, *v, *o, *om, *h, *g, *pe;
    float *lf; /* the forget gate's log gates of the token (H) */
    /* recomputation: the token history and a batch over it */
    int32_t *toks, *tgt;
    uint8_t *mask;
    int      tok_cap;
};

static const float *param(rl_model *m, const char *name, int layer)
{
    char nm[64];
    if (layer < 0)
        snprintf(nm, sizeof nm, "%s", name);
    else
        snprintf(nm, sizeof nm, "blocks.%d.%s", layer, name);
    const struct rl_tensor_info *t = rl_model_tensor_by_name(m, nm);
    return t ? rl_model_params(m) + t->offset : NULL;
}

static void build_views(rl_decoder *dc)
{
    rl_model *m = dc->m;
    dc->wte = param(m, "embed.weight", -1), dc->pos_w = param(m, "pos.weight", -1);
    dc->pos_scale = param(m, "pos.scale", -1); /* sinusoidal gain, where the model has one */
    dc->lnfw = param(m, "ln_f.weight", -1), dc->lnfb = param(m, "ln_f.bias", -1);
    dc->headw = param(m, "head.weight", -1), dc->headb = param(m, "head.bias", -1);
    const float *t5 = param(m, "t5.bias", -1);
    for (int i = 0; i < dc->L; i++) {
        struct layer_view *b = &dc->blk[i];
        b->ln1w = param(m, "ln1.weight", i), b->ln1b = param(m, "ln1.bias", i);
        b->wqkv = param(m, "attn.wq.weight", i); /* wq, wk, wv adjacent: one (3D x D) matrix */
        b->bqkv = param(m, "attn.wq.bias", i);
        b->wo = param(m, "attn.wo.weight", i), b->bo = param(m, "attn.wo.bias", i);
        b->t5   = dc->c.t5_per_layer ? param(m, "attn.t5.bias", i) : t5;
        b->ln2w = param(m, "ln2.weight", i), b->ln2b = param(m, "ln2.bias", i);
        b->fc1w = param(m, "mlp.fc1.weight", i), b->fc1b = param(m, "mlp.fc1.bias", i);
        b->fc2w = param(m, "mlp.fc2.weight", i), b->fc2b = param(m, "mlp.fc2.bias", i);
        b->wf = param(m, "attn.wf.weight", i), b->bf = param(m, "attn.wf.bias", i);
    }
}

void rl_decoder_free(rl_decoder *dc)
{
    if (!dc) return;
    for (int l = 0; dc->att && l < dc->L; l++)
        rl_attn_step_free(dc->att[l]);
    free(dc->att);
    free(dc->blk);
    rl_rope_free(&dc->rope);
    free(dc->x); /* one block holds every activation row */
    free(dc->toks), free(dc->tgt), free(dc->mask);
    free(dc);
}

static rl_status alloc_rows(rl_decoder *dc)
{
    const size_t D = (size_t)dc->D, n = 20 * D + (size_t)dc->H; /* the rows carved below */
    float       *p = calloc(n, sizeof(float));
    if (!p) RL_FAIL(RL_ENOMEM, "decoder: out of memory");
    dc->x = p, p += D, dc->xmid = p, p += D, dc->ln = p, p += D, dc->qkv = p, p += 3 * D;
    dc->q = p, p += D, dc->k = p, p += D, dc->v = p, p += D, dc->o = p, p += D;
    dc->om = p, p += D, dc->pe = p, p += D, dc->h = p, p += 4 * D;
    dc->g = p, p += 4 * D, dc->lf = p;
    return RL_OK;
}

rl_status rl_decoder_create(rl_decoder **out, rl_model *m, enum rl_decode_mode mode, int capacity)
{
    *out                            = NULL;
    const struct rl_model_config *c = rl_model_config_get(m);
    if (c->n_classes > 0)
        RL_FAIL(RL_EINVAL, "decoder: the model is a classifier (%d classes), not a language model",
                c->n_classes);
    if (!c->attn.causal) RL_FAIL(RL_EINVAL, "decoder: the model's attention is not causal");
    if (c->attn.pe == RL_ATTN_PE_ROPE && c->attn.rope.yarn != 1.0 && c->attn.rope.yarn_orig <= 0)
        RL_FAIL(RL_EINVAL, "decoder: YaRN needs rope_yarn_orig (the training context) set: "
                           "otherwise it follows the sequence length");
    rl_decoder *dc = calloc(1, sizeof *dc);
    if (!dc) RL_FAIL(RL_ENOMEM, "decoder: out of memory");
    dc->m = m, dc->c = *c, dc->mode = mode;
    dc->D = c->d_model, dc->H = c->heads, dc->d = c->d_model / c->heads, dc->L = c->layers;
    dc->V         = c->vocab;
    dc->recompute = mode == RL_DECODE_FULL || !rl_attn_step_supported(&c->attn);
    dc->blk       = calloc((size_t)dc->L, sizeof *dc->blk);
    dc->att       = calloc((size_t)dc->L, sizeof *dc->att);
    rl_status st  = dc->blk && dc->att
                        ? alloc_rows(dc)
                        : rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "decoder: out of memory");
    for (int l = 0; st == RL_OK && !dc->recompute && l < dc->L; l++)
        st = rl_attn_step_create(&dc->att[l], &c->attn, dc->H, dc->d, dc->d,
                                 capacity > 0 ? capacity : 1);
    if (st != RL_OK) {
        rl_decoder_free(dc);
        return st;
    }
    build_views(dc);
    *out = dc;
    return RL_OK;
}

void rl_decoder_reset(rl_decoder *dc)
{
    dc->pos = 0, dc->bad = 0;
    for (int l = 0; !dc->recompute && l < dc->L; l++)
        rl_attn_step_reset(dc->att[l]);
}

int  rl_decoder_position(const rl_decoder *dc) { return dc->pos; }
int  rl_decoder_recomputes(const rl_decoder *dc) { return dc->recompute; }
long rl_decoder_bad_denominators(const rl_decoder *dc) { return dc->bad; }

size_t rl_decoder_state_bytes(const rl_decoder *dc)
{
    if (dc->recompute) return (size_t)dc->pos * sizeof(int32_t);
    size_t b = 0;
    for (int l = 0; l < dc->L; l++)
        b += rl_attn_step_state_bytes(dc->att[l]);
    return b;
}

/* The RoPE table covers positions 0 .. need-1 (rebuilt larger by doubling; the entries
 * are the training kernels', computed per position in double). */
static rl_status ensure_rope(rl_decoder *dc, int need)
{
    if (dc->c.attn.pe != RL_ATTN_PE_ROPE || need <= dc->rope_n) return RL_OK;
    int n = dc->rope_n * 2 > need ? dc->rope_n * 2 : need < 256 ? 256 : need;
    rl_rope_free(&dc->rope);
    dc->rope_n = 0;
    RL_TRY(rl_rope_init(&dc->rope, n, dc->d, &dc->c.attn.rope));
    if (dc->c.attn.kind == RL_ATTN_SOFTMAX) /* YaRN: a R_m q, a R_n k (a = 1 without) */
        rl_rope_scale(&dc->rope, rl_rope_yarn_mscale(&dc->c.attn.rope));
    dc->rope_n = n;
    return RL_OK;
}

/* Token history for recomputation, grown by doubling. */
static rl_status ensure_tokens(rl_decoder *dc, int need)
{
    if (need <= dc->tok_cap) return RL_OK;
    int      cap = dc->tok_cap * 2 > need ? dc->tok_cap * 2 : need < 64 ? 64 : need;
    int32_t *t   = realloc(dc->toks, (size_t)cap * sizeof *t);
    if (t) dc->toks = t;
    int32_t *g = realloc(dc->tgt, (size_t)cap * sizeof *g);
    if (g) dc->tgt = g;
    uint8_t *k = realloc(dc->mask, (size_t)cap);
    if (k) dc->mask = k;
    if (!t || !g || !k) RL_FAIL(RL_ENOMEM, "decoder: cannot grow the token history to %d", cap);
    memset(dc->tgt + dc->tok_cap, 0, (size_t)(cap - dc->tok_cap) * sizeof *g);
    memset(dc->mask + dc->tok_cap, 0, (size_t)(cap - dc->tok_cap)); /* no loss is taken */
    dc->tok_cap = cap;
    return RL_OK;
}

/* The prefix 0 .. pos through rl_model_forward; logits of its last row. */
static rl_status step_full(rl_decoder *dc, float *logits, int32_t tok)
{
    RL_TRY(ensure_tokens(dc, dc->pos + 1));
    dc->toks[dc->pos] = tok;
    struct rl_batch b = {.B       = 1,
                         .N       = dc->pos + 1,
                         .inputs  = dc->toks,
                         .targets = dc->tgt,
                         .label   = NULL,
                         .mask    = dc->mask};
    double          loss;
    long            nt, nc;
    RL_TRY(rl_model_forward(dc->m, &b, &loss, &nt, &nc));
    dc->bad += rl_model_bad_denominators(dc->m);
    memcpy(logits, rl_model_logits(dc->m) + (size_t)dc->pos * dc->V, (size_t)dc->V * sizeof(float));
    return RL_OK;
}

/* x = wte[tok] + input PE of the position */
static void embed_row(rl_decoder *dc, int32_t tok)
{
    const float *pe = NULL;
    float        g  = 1.0f; /* the sinusoid's learned gain pos.scale, as in training */
    if (dc->c.input_pe == RL_INPUT_PE_LEARNED) pe = dc->pos_w + (size_t)dc->pos * dc->D;
    if (dc->c.input_pe == RL_INPUT_PE_SINUSOIDAL) {
        rl_sinusoid_row(dc->pe, dc->pos, dc->D);
        if (dc->pos_scale) g = dc->pos_scale[0];
        pe = dc->pe;
    }
    rl_embed_forward(dc->x, &tok, dc->wte, pe, g, 1, 1, dc->D);
}

/* x += Wo Attn(LN1(x)) + bo; x += fc2(gelu(fc1(LN2(x)))): model.c's block on one row */
static rl_status block_step(rl_decoder *dc, int l)
{
    const struct layer_view *p = &dc->blk[l];
    const int                D = dc->D;
    float                    mean, rstd;
    long                     bad = 0;
    rl_layernorm_forward(dc->ln, &mean, &rstd, dc->x, p->ln1w, p->ln1b, 1, D);
    rl_linear_forward(dc->qkv, dc->ln, p->wqkv, NULL, 1, D, 3 * D, 0);
    rl_heads_split(dc->q, dc->k, dc->v, dc->qkv, p->bqkv, 1, 1, dc->H, dc->d);
    if (dc->c.attn.forget) { /* lambda_h = log sigmoid(wf_h . ln + bf_h), as in training */
        const struct rl_forget_rows fr = {0, 1, 1, dc->H, D};
        rl_forget_forward_rows(dc->lf, dc->ln, p->wf, p->bf, &fr);
    }
    const struct rl_attn_step_in in = {dc->q, dc->k,
                                       dc->v, dc->rope_n ? &dc->rope : NULL,
                                       p->t5, dc->c.attn.forget ? dc->lf : NULL};
    RL_TRY(rl_attn_step_forward(dc->att[l], dc->o, &bad, &in));
    dc->bad += bad;
    rl_heads_merge(dc->om, dc->o, 1, 1, dc->H, dc->d);
    memcpy(dc->xmid, dc->x, (size_t)D * sizeof(float));
    rl_linear_forward(dc->xmid, dc->om, p->wo, p->bo, 1, D, D, 1);
    rl_layernorm_forward(dc->ln, &mean, &rstd, dc->xmid, p->ln2w, p->ln2b, 1, D);
    rl_linear_forward(dc->h, dc->ln, p->fc1w, NULL, 1, D, 4 * D, 0);
    rl_bias_gelu_forward(dc->g, NULL, dc->h, p->fc1b, 1, 4 * D);
    memcpy(dc->x, dc->xmid, (size_t)D * sizeof(float));
    rl_linear_forward(dc->x, dc->g, p->fc2w, p->fc2b, 1, 4 * D, D, 1);
    return RL_OK;
}

/* Logits that overflowed float32 (NaN or infinity): a sampler would read them as token 0. */
static rl_status check_logits(const rl_decoder *dc, const float *logits)
{
    for (int j = 0; j < dc->V; j++)
        if (!isfinite(logits[j]))
            RL_FAIL(RL_EINVAL,
                    "decoder: the logits after position %d are not finite (%g for token %d): "
                    "the model overflows float32 on this input",
                    dc->pos, logits[j], j);
    return RL_OK;
}

rl_status rl_decoder_step(rl_decoder *dc, float *logits, int32_t tok)
{
    if (tok < 0 || tok >= dc->V)
        RL_FAIL(RL_EINVAL, "decoder: token %d (position %d) is outside the vocabulary [0, %d)", tok,
                dc->pos, dc->V);
    if (dc->c.input_pe == RL_INPUT_PE_LEARNED && dc->pos >= dc->c.max_len)
        RL_FAIL(RL_EINVAL,
                "decoder: the learned PE has max_len=%d rows; token %d (position %d) has no row",
                dc->c.max_len, dc->pos + 1, dc->pos);
    if (dc->recompute) {
        RL_TRY(step_full(dc, logits, tok));
        RL_TRY(check_logits(dc, logits));
        dc->pos++;
        return RL_OK;
    }
    RL_TRY(ensure_rope(dc, dc->pos + 1));
    embed_row(dc, tok);
    for (int l = 0; l < dc->L; l++)
        RL_TRY(block_step(dc, l));
    float mean, rstd;
    rl_layernorm_forward(dc->ln, &mean, &rstd, dc->x, dc->lnfw, dc->lnfb, 1, dc->D);
    rl_linear_forward(logits, dc->ln, dc->headw, dc->headb, 1, dc->D, dc->V, 0);
    RL_TRY(check_logits(dc, logits));
    dc->pos++;
    return RL_OK;
}

rl_status rl_decoder_fill_random(rl_decoder *dc, int n, uint64_t seed)
{
    if (n < 0) RL_FAIL(RL_EINVAL, "decoder: context %d must be >= 0", n);
    rl_decoder_reset(dc);
    if (dc->recompute) {
        RL_TRY(ensure_tokens(dc, n + 1));
        uint64_t x = seed;
        for (int i = 0; i < n; i++) {
            x           = x * 6364136223846793005ULL + 1442695040888963407ULL;
            dc->toks[i] = (int32_t)((x >> 33) % (uint64_t)dc->V);
        }
    } else {
        RL_TRY(ensure_rope(dc, n + 1));
        for (int l = 0; l < dc->L; l++)
            RL_TRY(rl_attn_step_fill_random(dc->att[l], n, seed + (uint64_t)l));
    }
    dc->pos = n;
    return RL_OK;
}
