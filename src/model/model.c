/* model.c -- the pre-LN transformer (docs/model.md): tensor table (names, layout), initialisation,
 * activation arena, attention plans, forward and backward wiring.  The layers themselves
 * are in layers.c; see model.h for the API and docs/model.md for the derivations.
 *
 * Parameter layout (one flat buffer, tensors packed in table order, no padding):
 *   embed.weight, [pos.weight | pos.scale], [t5.bias], blocks.0 ..., ln_f.weight, ln_f.bias,
 *   head.weight, head.bias;  block i:
 *   ln1.weight, ln1.bias, attn.wq.weight, attn.wk.weight, attn.wv.weight, attn.wq.bias,
 *   attn.wk.bias, attn.wv.bias, attn.wo.weight, attn.wo.bias, [attn.t5.bias],
 *   [attn.wf.weight, attn.wf.bias], ln2.weight, ln2.bias, mlp.fc1.weight, mlp.fc1.bias,
 *   mlp.fc2.weight, mlp.fc2.bias.
 * Wq, Wk, Wv are adjacent, so they form one (3D x D) matrix: the three projections are one
 * GEMM (and so are their weight gradients); likewise their biases form one 3D vector. */
#include "config.h"
#include "model_impl.h"
#include "../core/threads.h"
#include "layers.h"
#include "../core/rng.h"
#include "../core/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#define NAME_LEN RL_MODEL_NAME_LEN
#define MAX_PLANS RL_MODEL_MAX_PLANS

/* --- tensor table --------------------------------------------------------------------- */

static void add_tensor(rl_model *m, const char *name, int64_t r, int64_t c, int decay)
{
    struct rl_tensor_info *t = &m->tensors[m->n_tensors];
    snprintf(m->names[m->n_tensors], NAME_LEN, "%s", name);
    t->name     = m->names[m->n_tensors];
    t->ndim     = c ? 2 : 1;
    t->shape[0] = r;
    t->shape[1] = c;
    t->count    = (size_t)r * (size_t)(c ? c : 1);
    t->offset   = m->n_params;
    t->decay    = decay;
    m->n_params += t->count;
    m->n_tensors++;
}

static void add_block_tensors(rl_model *m, int i)
{
    static const char *lin[] = {"attn.wq", "attn.wk", "attn.wv"};
    const int64_t      D     = m->D;
    char               nm[NAME_LEN];
#define ADD(suffix, r, c, decay)                                                                   \
    do {                                                                                           \
        snprintf(nm, sizeof nm, "blocks.%d.%s", i, suffix);                                        \
        add_tensor(m, nm, r, c, decay);                                                            \
    } while (0)
    ADD("ln1.weight", D, 0, 0);
    ADD("ln1.bias", D, 0, 0);
    char s[32];
    for (int j = 0; j < 3; j++) {
        snprintf(s, sizeof s, "%s.weight", lin[j]);
        ADD(s, D, D, 1);
    }
    for (int j = 0; j < 3; j++) {
        snprintf(s, sizeof s, "%s.bias", lin[j]);
        ADD(s, D, 0, 0);
    }
    ADD("attn.wo.weight", D, D, 1);
    ADD("attn.wo.bias", D, 0, 0);
    if (m->c.attn.pe == RL_ATTN_PE_T5 && m->c.t5_per_layer)
        ADD("attn.t5.bias", m->H, m->c.attn.t5_buckets, 0);
    if (m->c.attn.forget) { /* a Linear(D, H): the weight decays, the bias does not */
        ADD("attn.wf.weight", m->H, D, 1);
        ADD("attn.wf.bias", m->H, 0, 0);
    }
    ADD("ln2.weight", D, 0, 0);
    ADD("ln2.bias", D, 0, 0);
    ADD("mlp.fc1.weight", 4 * D, D, 1);
    ADD("mlp.fc1.bias", 4 * D, 0, 0);
    ADD("mlp.fc2.weight", D, 4 * D, 1);
    ADD("mlp.fc2.bias", D, 0, 0);
#undef ADD
}

static void build_table(rl_model *m)
{
    add_tensor(m, "embed.weight", m->c.vocab, m->D, 1);
    if (m->c.input_pe == RL_INPUT_PE_LEARNED) add_tensor(m, "pos.weight", m->c.max_len, m->D, 0);
    if (m->c.input_pe == RL_INPUT_PE_SINUSOIDAL) add_tensor(m, "pos.scale", 1, 0, 0);
    if (m->c.attn.pe == RL_ATTN_PE_T5 && !m->c.t5_per_layer)
        add_tensor(m, "t5.bias", m->H, m->c.attn.t5_buckets, 0);
    for (int i = 0; i < m->L; i++)
        add_block_tensors(m, i);
    add_tensor(m, "ln_f.weight", m->D, 0, 0);
    add_tensor(m, "ln_f.bias", m->D, 0, 0);
    add_tensor(m, "head.weight", m->Vo, m->D, 1);
    add_tensor(m, "head.bias", m->Vo, 0, 0);
}

/* Tensor `name` (of block i, or global when i < 0) in the buffer base; NULL if absent. */
static float *at(float *base, const rl_model *m, const char *name, int i)
{
    char nm[NAME_LEN];
    if (i < 0)
        snprintf(nm, sizeof nm, "%s", name);
    else
        snprintf(nm, sizeof nm, "blocks.%d.%s", i, name);
    const struct rl_tensor_info *t = rl_model_tensor_by_name(m, nm);
    return t ? base + t->offset : NULL;
}

static void build_view(struct rl_model_view *v, float *base, const rl_model *m)
{
    v->wte    = at(base, m, "embed.weight", -1);
    v->pos    = at(base, m, "pos.weight", -1);
    v->scale  = at(base, m, "pos.scale", -1);
    v->lnfw   = at(base, m, "ln_f.weight", -1);
    v->lnfb   = at(base, m, "ln_f.bias", -1);
    v->headw  = at(base, m, "head.weight", -1);
    v->headb  = at(base, m, "head.bias", -1);
    float *t5 = at(base, m, "t5.bias", -1);
    for (int i = 0; i < m->L; i++) {
        struct rl_block_view *b = &v->blk[i];
        b->ln1w                 = at(base, m, "ln1.weight", i);
        b->ln1b                 = at(base, m, "ln1.bias", i);
        b->wqkv                 = at(base, m, "attn.wq.weight", i); /* wq, wk, wv adjacent */
        b->bqkv                 = at(base, m, "attn.wq.bias", i);
        b->wo                   = at(base, m, "attn.wo.weight", i);
        b->bo                   = at(base, m, "attn.wo.bias", i);
        b->t5                   = m->c.t5_per_layer ? at(base, m, "attn.t5.bias", i) : t5;
        b->ln2w                 = at(base, m, "ln2.weight", i);
        b->ln2b                 = at(base, m, "ln2.bias", i);
        b->fc1w                 = at(base, m, "mlp.fc1.weight", i);
        b->fc1b                 = at(base, m, "mlp.fc1.bias", i);
        b->fc2w                 = at(base, m, "mlp.fc2.weight", i);
        b->fc2b                 = at(base, m, "mlp.fc2.bias", i);
        b->wf                   = at(base, m, "attn.wf.weight", i);
        b->bf                   = at(base, m, "attn.wf.bias", i);
    }
}

/* --- create / free -------------------------------------------------------------------- */

static rl_status check_config(const struct rl_model_config *c)
{
    if (c->vocab <= 0) RL_FAIL(RL_EINVAL, "model: vocab=%d must be positive", c->vocab);
    if (c->d_model <= 0 || c->heads <= 0 || c->layers <= 0)
        RL_FAIL(RL_EINVAL, "model: d_model=%d, heads=%d, layers=%d must be positive", c->d_model,
                c->heads, c->layers);
    if (c->d_model % c->heads)
        RL_FAIL(RL_EINVAL, "model: d_model=%d is not divisible by heads=%d", c->d_model, c->heads);
    if (c->n_classes < 0) RL_FAIL(RL_EINVAL, "model: n_classes=%d must be >= 0", c->n_classes);
    if (c->input_pe == RL_INPUT_PE_LEARNED && c->max_len <= 0)
        RL_FAIL(RL_EINVAL, "model: learned PE needs max_len > 0, got %d", c->max_len);
    if ((unsigned)c->input_pe > RL_INPUT_PE_LEARNED)
        RL_FAIL(RL_EINVAL, "model: unknown input PE %d", (int)c->input_pe);
    return rl_attn_opts_check(&c->attn, c->heads, c->d_model / c->heads, c->d_model / c->heads);
}

rl_status rl_model_create(rl_model **out, const struct rl_model_config *c)
{
    *out = NULL;
    RL_TRY(check_config(c));
    rl_model *m = calloc(1, sizeof *m);
    if (!m) RL_FAIL(RL_ENOMEM, "model: out of memory");
    m->c = *c, m->D = c->d_model, m->H = c->heads, m->d = c->d_model / c->heads;
    m->L            = c->layers;
    m->Vo           = c->n_classes > 0 ? c->n_classes : c->vocab;
    int max_tensors = 8 + 20 * m->L;
    m->tensors      = calloc((size_t)max_tensors, sizeof *m->tensors);
    m->names        = calloc((size_t)max_tensors, sizeof *m->names);
    m->p.blk        = calloc((size_t)m->L, sizeof *m->p.blk);
    m->g.blk        = calloc((size_t)m->L, sizeof *m->g.blk);
    m->a.blk        = calloc((size_t)m->L, sizeof *m->a.blk);
    if (m->tensors && m->names && m->p.blk && m->g.blk && m->a.blk) {
        build_table(m);
        m->params = rl_alloc(m->n_params * sizeof(float));
        m->grads  = rl_alloc(m->n_params * sizeof(float));
    }
    if (!m->params || !m->grads) {
        rl_model_free(m);
        RL_FAIL(RL_ENOMEM, "model: cannot allocate parameters");
    }
    build_view(&m->p, m->params, m);
    build_view(&m->g, m->grads, m);
    *out = m;
    return RL_OK;
}

void rl_model_free(rl_model *m)
{
    if (!m) return;
    for (int i = 0; i < MAX_PLANS; i++)
        rl_attn_free(m->plans[i].a);
    rl_free(m->params);
    rl_free(m->grads);
    free(m->arena);
    rl_free(m->sinus);
    free(m->tok);
    free(m->tgt);
    free(m->mask);
    free(m->row_loss), free(m->row_ok);
    free(m->chunk_loss), free(m->chunk_targets), free(m->chunk_correct);
    rl_free(m->scratch);
    rl_free(m->part);
    free(m->tensors);
    free(m->names);
    free(m->p.blk);
    free(m->g.blk);
    free(m->a.blk);
    free(m);
}

const struct rl_model_config *rl_model_config_get(const rl_model *m) { return &m->c; }
size_t                        rl_model_num_params(const rl_model *m) { return m->n_params; }
float                        *rl_model_params(rl_model *m) { return m->params; }
float                        *rl_model_grads(rl_model *m) { return m->grads; }
int                           rl_model_num_tensors(const rl_model *m) { return m->n_tensors; }
const float                  *rl_model_logits(const rl_model *m) { return m->a.logits; }
const double                 *rl_model_row_loss(const rl_model *m) { return m->row_loss; }
const uint8_t                *rl_model_row_correct(const rl_model *m) { return m->row_ok; }

const struct rl_tensor_info *rl_model_tensor(const rl_model *m, int i)
{
    return i >= 0 && i < m->n_tensors ? &m->tensors[i] : NULL;
}

const struct rl_tensor_info *rl_model_tensor_by_name(const rl_model *m, const char *name)
{
    for (int i = 0; i < m->n_tensors; i++)
        if (strcmp(m->tensors[i].name, name) == 0) return &m->tensors[i];
    return NULL;
}

/* zeroed by blocks of ZERO_BLOCK floats (core/threads.h, rl_pieces) */
#define ZERO_BLOCK 16384
static void zero_piece(void *ctx, long k)
{
    rl_model    *m  = ctx;
    const size_t i0 = (size_t)k * ZERO_BLOCK;
    memset(m->grads + i0, 0,
           (m->n_params - i0 < ZERO_BLOCK ? m->n_params - i0 : ZERO_BLOCK) * sizeof(float));
}

void rl_model_zero_grad(rl_model *m)
{
    rl_pieces((long)((m->n_params + ZERO_BLOCK - 1) / ZERO_BLOCK), zero_piece, m);
}

/* --- initialisation ------------------------------------------------------------------- */

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

void rl_model_init_weights(rl_model *m, uint64_t seed)
{
    struct rl_rng rng;
    rl_rng_seed(&rng, seed);
    const double resid = 0.02 / sqrt(2.0 * m->L); /* GPT-2: residual projections */
    for (int i = 0; i < m->n_tensors; i++) {
        const struct rl_tensor_info *t   = &m->tensors[i];
        float                       *p   = m->params + t->offset;
        double                       std = 0.0, fill = 0.0;
        if (t->decay || strcmp(t->name, "pos.weight") == 0) /* embedding, Linear weights, pos */
            std = ends_with(t->name, "attn.wo.weight") || ends_with(t->name, "mlp.fc2.weight")
                      ? resid
                      : 0.02;
        else if (ends_with(t->name, "ln1.weight") || ends_with(t->name, "ln2.weight") ||
                 strcmp(t->name, "ln_f.weight") == 0)
            fill = 1.0; /* LayerNorm gains; biases and T5 tables stay 0 */
        else if (strcmp(t->name, "pos.scale") == 0)
            fill = pow(m->D, -0.5); /* the sinusoid's gain, D^-1/2 rounded once to float32 */
        else if (ends_with(t->name, "attn.wf.bias"))
            fill = m->c.forget_bias; /* gates sigmoid(forget_bias) at the start */
        for (size_t j = 0; j < t->count; j++)
            p[j] = std > 0.0 ? (float)(std * rl_rng_normal(&rng)) : (float)fill;
    }
}

/* --- activation arena ----------------------------------------------------------------- */

/* The arena (tens to hundreds of MiB) is streamed by every elementwise pass and GEMM
 * packing: with 4 KiB pages that is a TLB miss every 1024 floats.  Ask for transparent
 * huge pages (Linux, THP in "madvise" mode) before the first touch; elsewhere this is
 * plain aligned memory.  Zeroed, freed with free(). */
static float *alloc_arena(size_t floats)
{
    const size_t huge = (size_t)2 << 20, bytes = (floats * sizeof(float) + huge - 1) / huge * huge;
    void        *p = NULL;
    if (posix_memalign(&p, huge, bytes) != 0) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE); /* advisory: failure only costs speed */
#endif
    memset(p, 0, bytes);
    return p;
}

static float *carve(float *base, size_t *off, size_t n)
{
    float *p = base && n > 0 ? base + *off : NULL; /* an empty buffer is NULL */
    *off += (n + 15) & ~(size_t)15;                /* keep every buffer 64-byte aligned */
    return p;
}

/* Lays the activations of a (B, N) call out from base (NULL: only count); returns floats. */
static size_t layout_acts(rl_model *m, float *base, int B, int N)
{
    const size_t          T = (size_t)B * N, D = (size_t)m->D, G = (size_t)B * m->H;
    const size_t          rows = m->c.n_classes > 0 ? (size_t)B : T;
    size_t                off  = 0;
    struct rl_model_acts *a    = &m->a;
    a->x                       = carve(base, &off, (size_t)(m->L + 1) * T * D);
    for (int l = 0; l < m->L; l++) {
        struct rl_block_acts *b = &a->blk[l];
        b->ln1 = carve(base, &off, T * D), b->mean1 = carve(base, &off, T);
        b->rstd1 = carve(base, &off, T);
        b->q = carve(base, &off, T * D), b->k = carve(base, &off, T * D);
        b->v = carve(base, &off, T * D), b->o = carve(base, &off, T * D);
        b->saved = carve(base, &off, G * (size_t)N), b->om = carve(base, &off, T * D);
        b->xmid = carve(base, &off, T * D), b->ln2 = carve(base, &off, T * D);
        b->mean2 = carve(base, &off, T), b->rstd2 = carve(base, &off, T);
        b->g = carve(base, &off, 4 * T * D), b->gp = carve(base, &off, 4 * T * D);
        b->logf = carve(base, &off, m->c.attn.forget ? G * (size_t)N : 0);
        b->keep = carve(base, &off, rl_attn_keep_floats(&m->c.attn, (int)G, N, m->d, m->d));
    }
    a->lnf = carve(base, &off, T * D), a->meanf = carve(base, &off, T);
    a->rstdf = carve(base, &off, T), a->pooled = carve(base, &off, (size_t)B * D);
    a->logits = carve(base, &off, rows * (size_t)m->Vo), a->lse = carve(base, &off, rows);
    a->dres = carve(base, &off, T * D), a->dln = carve(base, &off, T * D);
    a->dq = carve(base, &off, T * D), a->dk = carve(base, &off, T * D);
    a->dv = carve(base, &off, T * D), a->dout = carve(base, &off, T * D);
    a->dlogits = carve(base, &off, rows * (size_t)m->Vo);
    a->dpooled = carve(base, &off, (size_t)B * D);
    a->dlogf   = carve(base, &off, m->c.attn.forget ? G * (size_t)N : 0);
    return off;
}

/* The per-token and per-chunk buffers of T tokens in C chunks (grown, never shrunk). */
static rl_status ensure_ints(rl_model *m, size_t T, int C)
{
    if (T > m->ints_cap) {
        free(m->tok), free(m->tgt), free(m->mask), free(m->row_loss), free(m->row_ok);
        m->tok      = malloc(T * sizeof *m->tok);
        m->tgt      = malloc(T * sizeof *m->tgt);
        m->mask     = malloc(T * sizeof *m->mask);
        m->row_loss = malloc(T * sizeof *m->row_loss);
        m->row_ok   = malloc(T * sizeof *m->row_ok);
        m->ints_cap = m->tok && m->tgt && m->mask && m->row_loss && m->row_ok ? T : 0;
        if (!m->ints_cap) RL_FAIL(RL_ENOMEM, "model: cannot allocate batch buffers");
    }
    if (C > m->chunks_cap) {
        free(m->chunk_loss), free(m->chunk_targets), free(m->chunk_correct);
        m->chunk_loss    = malloc((size_t)C * sizeof *m->chunk_loss);
        m->chunk_targets = malloc((size_t)C * sizeof *m->chunk_targets);
        m->chunk_correct = malloc((size_t)C * sizeof *m->chunk_correct);
        m->chunks_cap    = m->chunk_loss && m->chunk_targets && m->chunk_correct ? C : 0;
        if (!m->chunks_cap) RL_FAIL(RL_ENOMEM, "model: cannot allocate chunk buffers");
    }
    return RL_OK;
}

/* Grows (never shrinks) the arena and the integer buffers for (B, N); lays them out. */
rl_status rl_model_ensure_acts(rl_model *m, int B, int N)
{
    if (m->B == B && m->N == N && m->arena) return RL_OK;
    size_t need = layout_acts(m, NULL, B, N), T = (size_t)B * N;
    if (need > m->arena_floats) {
        free(m->arena);
        m->arena_floats = 0;
        m->B = m->N = 0;
        if (!(m->arena = alloc_arena(need)))
            RL_FAIL(RL_ENOMEM, "model: cannot allocate %zu MiB of activations for B=%d, N=%d",
                    need * sizeof(float) >> 20, B, N);
        m->arena_floats = need;
    }
    const int rows = rl_model_mlp_rows(m->D, (long)T), chunks = (int)((T + rows - 1) / rows);
    RL_TRY(ensure_ints(m, T, chunks));
    layout_acts(m, m->arena, B, N);
    m->B = B, m->N = N, m->rows = rows, m->chunks = chunks;
    return RL_OK;
}

rl_status rl_model_ensure_sinusoid(rl_model *m, int N)
{
    if (m->c.input_pe != RL_INPUT_PE_SINUSOIDAL || N <= m->sinus_rows) return RL_OK;
    rl_free(m->sinus);
    m->sinus_rows = 0;
    if (!(m->sinus = rl_alloc((size_t)N * m->D * sizeof(float))))
        RL_FAIL(RL_ENOMEM, "model: cannot allocate the sinusoidal table");
    rl_sinusoid_table(m->sinus, N, m->D);
    m->sinus_rows = N;
    return RL_OK;
}

/* The attention plan for length N (made on first use, a few kept). */
rl_status rl_model_plan(rl_model *m, int N, rl_attn **out)
{
    for (int i = 0; i < MAX_PLANS; i++)
        if (m->plans[i].a && m->plans[i].N == N)
            return *out = m->plans[i].a, rl_attn_reserve(*out, m->B * m->H);
    int slot     = m->next_plan;
    m->next_plan = (slot + 1) % MAX_PLANS;
    rl_attn_free(m->plans[slot].a);
    m->plans[slot].a = NULL;
    RL_TRY(rl_attn_create(&m->plans[slot].a, &m->c.attn, m->H, N, m->d, m->d));
    rl_attn_caller_keeps(m->plans[slot].a); /* every call passes its block's keep */
    m->plans[slot].N = N;
    *out             = m->plans[slot].a;
    return rl_attn_reserve(*out, m->B * m->H); /* a call may take the whole batch */
}

long rl_model_bad_denominators(const rl_model *m) { return m->bad_den; }

static int same_rope(const struct rl_rope_opts *a, const struct rl_rope_opts *b)
{
    return a->base == b->base && a->layout == b->layout && a->dims == b->dims &&
           a->scale == b->scale && a->ntk == b->ntk && a->yarn == b->yarn &&
           a->yarn_orig == b->yarn_orig;
}

rl_status rl_model_set_rope(rl_model *m, const struct rl_rope_opts *o)
{
    struct rl_attn_opts a = m->c.attn;
    a.rope                = *o;
    if (same_rope(o, &m->c.attn.rope)) return RL_OK;
    RL_TRY(rl_attn_opts_check(&a, m->H, m->d, m->d));
    for (int i = 0; i < MAX_PLANS; i++) { /* plans hold RoPE tables of the old options */
        rl_attn_free(m->plans[i].a);
        m->plans[i].a = NULL;
    }
    m->c.attn.rope  = *o;
    m->have_forward = 0;
    return RL_OK;
}
