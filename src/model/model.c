/* model.c -- the pre-LN transformer (docs/model.md): tensor table (names, layout), initialisation,
 * activation arena, attention plans, forward and backward wiring.  The layers themselves
 * are in layers.c; see model.h for the API and docs/model.md for the derivations.
 *
 * Parameter layout (one flat buffer, tensors packed in table order, no padding):
 *   embed.weight, [pos.weight | pos.scale], [t5.bias], blocks.0 ..., ln_f.weight, ln_f.bias,
 *   head.weight, head.bias;  block i:
 *   ln1.weight, ln1.bias, attn.wq.weight, attn.wk.weight, attn.wv.weight, attn.wq.bias,
 *   attn.wk.bias, attn.wv.bias, attn.wo.weight, attn.wo.bias, [attn.t5.bias], ln2.weight,
 *   ln2.bias, mlp.fc1.weight, mlp.fc1.bias, mlp.fc2.weight, mlp.fc2.bias.
 * Wq, Wk, Wv are adjacent, so they form one (3D x D) matrix: the three projections are one
 * GEMM (and so are their weight gradients); likewise their biases form one 3D vector. */
#include "config.h"
#include "model.h"
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

#define NAME_LEN 64
#define MAX_PLANS 8
#ifndef ATTN_CHUNK_TOKENS
#define ATTN_CHUNK_TOKENS 512 /* tokens of one chunk of the attention half of a block */
#endif

struct block_view { /* pointers into params or grads */
    float *ln1w, *ln1b, *wqkv, *bqkv, *wo, *bo, *t5, *ln2w, *ln2b, *fc1w, *fc1b, *fc2w, *fc2b;
};

struct view {
    float             *wte, *pos, *scale, *lnfw, *lnfb, *headw, *headb; /* scale: pos.scale */
    struct block_view *blk;                                             /* layers */
};

struct block_acts {
    float *ln1, *mean1, *rstd1, *q, *k, *v, *o, *saved, *om, *xmid, *ln2, *mean2, *rstd2, *h;
    float *sig; /* sigmoid(2u) of the GELU (its output is h * sig) */
};

struct acts {
    float             *x;   /* (L+1) x (T, D): residual stream entering each block, and out */
    struct block_acts *blk; /* layers */
    float             *lnf, *meanf, *rstdf, *pooled, *logits, *lse;
    float             *qkv; /* (T, 3D) scratch; the backward reuses it as dqkv */
    float             *dres, *dln, *dq, *dk, *dv, *dout, *dom, *dh, *dlogits, *dpooled;
    float             *gbuf; /* one MLP chunk of GELU outputs per thread (gslots) */
    int                gslots;
};

struct rl_model {
    struct rl_model_config c;
    int                    D, H, d, L, Vo; /* Vo: head outputs (vocab or n_classes) */
    int                    n_tensors;
    struct rl_tensor_info *tensors;
    char (*names)[NAME_LEN];
    size_t      n_params;
    float      *params, *grads;
    struct view p, g;
    /* activations for the last (B, N) */
    int         B, N, have_forward;
    struct acts a;
    float      *arena;
    size_t      arena_floats;
    int32_t    *tok, *tgt;
    uint8_t    *mask;
    double     *row_loss;
    uint8_t    *row_ok; /* per logits row of the last forward: prediction right */
    size_t      ints_cap;
    float      *sinus; /* sinusoidal table rows 0 .. sinus_rows-1 */
    int         sinus_rows;
    struct {
        int      N;
        rl_attn *a;
    } plans[MAX_PLANS];
    int  next_plan;
    long bad_den; /* linear attention: rows with denominator <= eps in the last forward */
};

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

static void build_view(struct view *v, float *base, const rl_model *m)
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
        struct block_view *b = &v->blk[i];
        b->ln1w              = at(base, m, "ln1.weight", i);
        b->ln1b              = at(base, m, "ln1.bias", i);
        b->wqkv              = at(base, m, "attn.wq.weight", i); /* wq, wk, wv adjacent */
        b->bqkv              = at(base, m, "attn.wq.bias", i);
        b->wo                = at(base, m, "attn.wo.weight", i);
        b->bo                = at(base, m, "attn.wo.bias", i);
        b->t5                = m->c.t5_per_layer ? at(base, m, "attn.t5.bias", i) : t5;
        b->ln2w              = at(base, m, "ln2.weight", i);
        b->ln2b              = at(base, m, "ln2.bias", i);
        b->fc1w              = at(base, m, "mlp.fc1.weight", i);
        b->fc1b              = at(base, m, "mlp.fc1.bias", i);
        b->fc2w              = at(base, m, "mlp.fc2.weight", i);
        b->fc2b              = at(base, m, "mlp.fc2.bias", i);
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
    int max_tensors = 8 + 18 * m->L;
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

void rl_model_zero_grad(rl_model *m) { memset(m->grads, 0, m->n_params * sizeof(float)); }

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

static int mlp_rows(const rl_model *m, int T);

static float *carve(float *base, size_t *off, size_t n)
{
    float *p = base ? base + *off : NULL;
    *off += (n + 15) & ~(size_t)15; /* keep every buffer 64-byte aligned */
    return p;
}

/* Lays the activations of a (B, N) call out from base (NULL: only count); returns floats. */
static size_t layout_acts(rl_model *m, float *base, int B, int N)
{
    const size_t T = (size_t)B * N, D = (size_t)m->D, G = (size_t)B * m->H;
    const size_t rows = m->c.n_classes > 0 ? (size_t)B : T;
    size_t       off  = 0;
    struct acts *a    = &m->a;
    a->x              = carve(base, &off, (size_t)(m->L + 1) * T * D);
    for (int l = 0; l < m->L; l++) {
        struct block_acts *b = &a->blk[l];
        b->ln1 = carve(base, &off, T * D), b->mean1 = carve(base, &off, T);
        b->rstd1 = carve(base, &off, T);
        b->q = carve(base, &off, T * D), b->k = carve(base, &off, T * D);
        b->v = carve(base, &off, T * D), b->o = carve(base, &off, T * D);
        b->saved = carve(base, &off, G * (size_t)N), b->om = carve(base, &off, T * D);
        b->xmid = carve(base, &off, T * D), b->ln2 = carve(base, &off, T * D);
        b->mean2 = carve(base, &off, T), b->rstd2 = carve(base, &off, T);
        b->h = carve(base, &off, 4 * T * D), b->sig = carve(base, &off, 4 * T * D);
    }
    a->lnf = carve(base, &off, T * D), a->meanf = carve(base, &off, T);
    a->rstdf = carve(base, &off, T), a->pooled = carve(base, &off, (size_t)B * D);
    a->logits = carve(base, &off, rows * (size_t)m->Vo), a->lse = carve(base, &off, rows);
    a->qkv  = carve(base, &off, 3 * T * D);
    a->dres = carve(base, &off, T * D), a->dln = carve(base, &off, T * D);
    a->dq = carve(base, &off, T * D), a->dk = carve(base, &off, T * D);
    a->dv = carve(base, &off, T * D), a->dout = carve(base, &off, T * D);
    a->dom = carve(base, &off, T * D), a->dh = carve(base, &off, 4 * T * D);
    a->gslots  = rl_threads_get();
    a->gbuf    = carve(base, &off, (size_t)a->gslots * 4 * (size_t)mlp_rows(m, (int)T) * D);
    a->dlogits = carve(base, &off, rows * (size_t)m->Vo);
    a->dpooled = carve(base, &off, (size_t)B * D);
    return off;
}

/* Grows (never shrinks) the arena and the integer buffers for (B, N); lays them out. */
static rl_status ensure_acts(rl_model *m, int B, int N)
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
    layout_acts(m, m->arena, B, N);
    m->B = B, m->N = N;
    return RL_OK;
}

static rl_status ensure_sinusoid(rl_model *m, int N)
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
static rl_status get_plan(rl_model *m, int N, rl_attn **out)
{
    for (int i = 0; i < MAX_PLANS; i++)
        if (m->plans[i].a && m->plans[i].N == N)
            return *out = m->plans[i].a, rl_attn_reserve(*out, m->B * m->H);
    int slot     = m->next_plan;
    m->next_plan = (slot + 1) % MAX_PLANS;
    rl_attn_free(m->plans[slot].a);
    m->plans[slot].a = NULL;
    RL_TRY(rl_attn_create(&m->plans[slot].a, &m->c.attn, m->H, N, m->d, m->d));
    m->plans[slot].N = N;
    *out             = m->plans[slot].a;
    return rl_attn_reserve(*out, m->B * m->H); /* a call may take the whole batch */
}

/* --- forward -------------------------------------------------------------------------- */

static rl_status check_batch(const rl_model *m, const struct rl_batch *b)
{
    if (b->B <= 0 || b->N <= 0)
        RL_FAIL(RL_EINVAL, "batch: B=%d, N=%d must be positive", b->B, b->N);
    if (m->c.input_pe == RL_INPUT_PE_LEARNED && b->N > m->c.max_len)
        RL_FAIL(RL_EINVAL,
                "sequence length N=%d exceeds the learned PE's max_len=%d "
                "(n/a: learned PE has max_len rows)",
                b->N, m->c.max_len);
    const long T = (long)b->B * b->N;
    for (long t = 0; t < T; t++) {
        if (b->inputs[t] < 0 || b->inputs[t] >= m->c.vocab)
            RL_FAIL(RL_EINVAL, "batch: token %ld is %d, outside vocab [0, %d)", t, b->inputs[t],
                    m->c.vocab);
        if (m->c.n_classes == 0 && (!b->mask || b->mask[t]) &&
            (b->targets[t] < 0 || b->targets[t] >= m->c.vocab))
            RL_FAIL(RL_EINVAL, "batch: target %ld is %d, outside vocab [0, %d)", t, b->targets[t],
                    m->c.vocab);
    }
    if (m->c.n_classes > 0) {
        if (!b->label) RL_FAIL(RL_EINVAL, "batch: a classifier needs labels");
        for (int i = 0; i < b->B; i++)
            if (b->label[i] < 0 || b->label[i] >= m->c.n_classes)
                RL_FAIL(RL_EINVAL, "batch: label %d is %d, outside [0, %d)", i, b->label[i],
                        m->c.n_classes);
    }
    return RL_OK;
}

/* out = x + b per row: the residual plus the bias; the GEMM then adds the product */
static void residual_bias(float *out, const float *x, const float *b, int T, int C)
{
#pragma omp parallel for schedule(static) num_threads(rl_threads_get())
    for (int t = 0; t < T; t++)
        for (int c = 0; c < C; c++)
            out[(size_t)t * C + c] = x[(size_t)t * C + c] + b[c];
}

/* The MLP runs over the tokens in chunks of mlp_rows() rows: each chunk's fc1 output,
 * GELU and (backward) their gradients stay in cache between the GEMM and the elementwise
 * passes instead of streaming T x 4D arrays through memory several times. */
static int mlp_rows(const rl_model *m, int T) { return rl_model_mlp_rows(m->D, T); }

/* With several threads the chunks of a block themselves are shared out, each a one-thread
 * pass (products with a 128-row side split poorly inside BLIS: 2 threads measured 1.6x one
 * on 32 products of 128 x 512 x 128, two chunks at once 1.9x).  The team: the threads in
 * effect, at most cap (the per-thread buffers there are) and the chunks; 1 runs the chunks
 * in order on the calling thread, each product on all threads. */
static int chunk_team(int cap, int chunks)
{
    int t = rl_threads_get();
    if (t > cap) t = cap;
    return chunks > 1 && t > 1 ? (t < chunks ? t : chunks) : 1;
}

/* y = xmid + fc2(gelu(fc1(LN2(xmid)))); rows are independent, so the chunks may run in
 * any order (the bits do not depend on which thread takes which) */
static void mlp_forward(rl_model *m, int l, float *y)
{
    const int                T = m->B * m->N, D = m->D, R = mlp_rows(m, T), nc = (T + R - 1) / R;
    const int                team = chunk_team(m->a.gslots, nc);
    const struct block_view *p    = &m->p.blk[l];
    struct block_acts       *a    = &m->a.blk[l];
#pragma omp parallel for schedule(static) num_threads(team) if (team > 1)
    for (int c = 0; c < nc; c++) {
        const int    t0 = c * R, n = T - t0 < R ? T - t0 : R;
        const size_t o1 = (size_t)t0 * D, o4 = (size_t)t0 * 4 * D;
        float       *g = m->a.gbuf + (size_t)rl_thread_slot() * 4 * R * D;
        rl_layernorm_forward(a->ln2 + o1, a->mean2 + t0, a->rstd2 + t0, a->xmid + o1, p->ln2w,
                             p->ln2b, n, D);
        rl_linear_forward(a->h + o4, a->ln2 + o1, p->fc1w, NULL, n, D, 4 * D, 0);
        rl_bias_gelu_forward(g, a->sig + o4, a->h + o4, p->fc1b, n, 4 * D);
        residual_bias(y + o1, a->xmid + o1, p->fc2b, n, D);
        rl_linear_forward(y + o1, g, p->fc2w, NULL, n, 4 * D, D, 1);
    }
}

/* The MLP's backward, chunk by chunk: dres (the gradient at y) gains the gradient that
 * flows through LN2.  A chunk's input gradients (dh, dln: rows of their own) need nothing
 * from other chunks; what sums over rows -- the weight and bias gradients of fc1, fc2 and
 * LN2 -- is added in chunk order (an ordered section), the same additions in the same
 * order as on one thread, so the bits do not depend on the thread count. */
static void mlp_backward(rl_model *m, int l)
{
    const int                T = m->B * m->N, D = m->D, R = mlp_rows(m, T), nc = (T + R - 1) / R;
    const int                team = chunk_team(m->a.gslots, nc);
    const struct block_view *p    = &m->p.blk[l];
    const struct block_view *g    = &m->g.blk[l];
    struct block_acts       *a    = &m->a.blk[l];
    struct acts             *s    = &m->a;
#pragma omp parallel for ordered schedule(static, 1) num_threads(team) if (team > 1)
    for (int c = 0; c < nc; c++) {
        const int    t0 = c * R, n = T - t0 < R ? T - t0 : R;
        const size_t o1 = (size_t)t0 * D, o4 = (size_t)t0 * 4 * D;
        /* dh and dln: the chunk's own rows in a team, the first rows (kept in cache) alone */
        float *dres = s->dres + o1, *dh = s->dh + (team > 1 ? o4 : 0);
        float *dln = s->dln + (team > 1 ? o1 : 0);
        float *gb  = s->gbuf + (size_t)rl_thread_slot() * 4 * R * D;
        rl_gelu_recompute(gb, a->h + o4, a->sig + o4, (size_t)n * 4 * D); /* g = gelu(h) */
        rl_linear_backward(dh, NULL, NULL, dres, gb, p->fc2w, n, 4 * D, D, 0);
        rl_gelu_backward(dh, dh, a->h + o4, a->sig + o4, (size_t)n * 4 * D);
        rl_linear_backward(dln, NULL, NULL, dh, a->ln2 + o1, p->fc1w, n, D, 4 * D, 0);
#pragma omp ordered
        {
            rl_linear_backward(NULL, g->fc2w, g->fc2b, dres, gb, p->fc2w, n, 4 * D, D, 0);
            rl_linear_backward(NULL, g->fc1w, g->fc1b, dh, a->ln2 + o1, p->fc1w, n, D, 4 * D, 0);
            rl_layernorm_backward(dres, g->ln2w, g->ln2b, dln, a->xmid + o1, a->mean2 + t0,
                                  a->rstd2 + t0, p->ln2w, n, D);
        }
    }
}

/* The attention half of a block also runs in chunks, of whole sequences (attention mixes
 * the tokens of a sequence): about ATTN_CHUNK_TOKENS tokens, at least one sequence. */
static int attn_seqs(const rl_model *m)
{
    int c = ATTN_CHUNK_TOKENS / m->N;
    return c < 1 ? 1 : c > m->B ? m->B : c;
}

/* The attention half's team (chunk_team): at most the attention plan's per-thread buffers,
 * and 1 with T5 (its tables are refreshed, and its gradient summed, inside every call). */
static int attn_team(const rl_model *m, const rl_attn *plan, int chunks)
{
    return m->c.attn.pe == RL_ATTN_PE_T5 ? 1 : chunk_team(rl_attn_threads(plan), chunks);
}

static rl_status block_forward(rl_model *m, int l, rl_attn *plan)
{
    const int B = m->B, N = m->N, T = B * N, D = m->D, S = attn_seqs(m), nch = (B + S - 1) / S;
    const int team               = attn_team(m, plan, nch);
    const struct block_view *p   = &m->p.blk[l];
    struct block_acts       *a   = &m->a.blk[l];
    const float             *x   = m->a.x + (size_t)l * T * D;
    float                   *y   = m->a.x + (size_t)(l + 1) * T * D;
    long                     bad = 0;
    rl_status                rc  = RL_OK;
    /* xmid = x + Wo . Attn(LN1(x)), sequences b0 .. b0+nb-1 at a time (chunks independent);
     * qkv: the first rows as chunk scratch alone, the chunk's own rows in a team */
#pragma omp parallel for schedule(static) num_threads(team) if (team > 1) reduction(+ : bad)
    for (int c = 0; c < nch; c++) {
        const int    b0 = c * S, nb = B - b0 < S ? B - b0 : S, n = nb * N, t0 = b0 * N;
        const size_t o1  = (size_t)t0 * D; /* also the offset of head b0*H in q, k, v, o */
        float       *qkv = m->a.qkv + (team > 1 ? 3 * o1 : 0);
        rl_layernorm_forward(a->ln1 + o1, a->mean1 + t0, a->rstd1 + t0, x + o1, p->ln1w, p->ln1b, n,
                             D);
        rl_linear_forward(qkv, a->ln1 + o1, p->wqkv, NULL, n, D, 3 * D, 0);
        rl_heads_split(a->q + o1, a->k + o1, a->v + o1, qkv, p->bqkv, nb, N, m->H, m->d);
        struct rl_attn_stats st = {0};
        const struct rl_attn_in in = {a->q + o1, a->k + o1, a->v + o1, p->t5, NULL};
        rl_status r = rl_attn_forward(plan, a->o + o1, a->saved + (size_t)b0 * m->H * N, &in,
                                      nb * m->H, &st);
        if (r != RL_OK) {
#pragma omp critical(rl_block_status)
            rc = rc != RL_OK ? rc : r;
            continue;
        }
        bad += st.bad_denominators;
        rl_heads_merge(a->om + o1, a->o + o1, nb, N, m->H, m->d);
        residual_bias(a->xmid + o1, x + o1, p->bo, n, D);
        rl_linear_forward(a->xmid + o1, a->om + o1, p->wo, NULL, n, D, D, 1);
    }
    RL_TRY(rc);
    m->bad_den += bad;
    mlp_forward(m, l, y);
    return RL_OK;
}

static void copy_batch(rl_model *m, const struct rl_batch *b)
{
    const size_t T = (size_t)b->B * b->N;
    memcpy(m->tok, b->inputs, T * sizeof *m->tok);
    if (m->c.n_classes > 0) {
        memcpy(m->tgt, b->label, (size_t)b->B * sizeof *m->tgt);
        return;
    }
    memcpy(m->tgt, b->targets, T * sizeof *m->tgt);
    if (b->mask)
        memcpy(m->mask, b->mask, T * sizeof *m->mask);
    else
        memset(m->mask, 1, T * sizeof *m->mask);
}

rl_status rl_model_forward(rl_model *m, const struct rl_batch *b, double *loss_sum, long *n_targets,
                           long *n_correct)
{
    m->have_forward = 0;
    m->bad_den      = 0;
    RL_TRY(check_batch(m, b));
    rl_attn *plan = NULL;
    RL_TRY(ensure_acts(m, b->B, b->N));
    RL_TRY(ensure_sinusoid(m, b->N));
    RL_TRY(get_plan(m, b->N, &plan));
    copy_batch(m, b);
    const int    B = b->B, N = b->N, T = B * N, D = m->D, cls = m->c.n_classes > 0;
    const float *pos = m->c.input_pe == RL_INPUT_PE_LEARNED      ? m->p.pos
                       : m->c.input_pe == RL_INPUT_PE_SINUSOIDAL ? m->sinus
                                                                 : NULL;
    const float  g   = m->p.scale ? m->p.scale[0] : 1.0f; /* x0 = E[tok] + g P */
    struct acts *a   = &m->a;
    rl_embed_forward(a->x, m->tok, m->p.wte, pos, g, B, N, D);
    for (int l = 0; l < m->L; l++)
        RL_TRY(block_forward(m, l, plan));
    rl_layernorm_forward(a->lnf, a->meanf, a->rstdf, a->x + (size_t)m->L * T * D, m->p.lnfw,
                         m->p.lnfb, T, D);
    if (cls) rl_meanpool_forward(a->pooled, a->lnf, B, N, D);
    const int rows = cls ? B : T;
    rl_linear_forward(a->logits, cls ? a->pooled : a->lnf, m->p.headw, m->p.headb, rows, D, m->Vo,
                      0);
    double s        = rl_softmax_ce_forward(a->lse, m->row_loss, m->row_ok, n_targets, n_correct,
                                            a->logits, m->tgt, cls ? NULL : m->mask, rows, m->Vo);
    *loss_sum       = s;
    m->have_forward = 1;
    return RL_OK;
}

/* --- backward ------------------------------------------------------------------------- */

static rl_status block_backward(rl_model *m, int l, rl_attn *plan)
{
    const int B = m->B, N = m->N, T = B * N, D = m->D, S = attn_seqs(m), nch = (B + S - 1) / S;
    const int team              = attn_team(m, plan, nch);
    const struct block_view *p  = &m->p.blk[l];
    const struct block_view *g  = &m->g.blk[l];
    struct block_acts       *a  = &m->a.blk[l];
    struct acts             *s  = &m->a;
    const float             *x  = s->x + (size_t)l * T * D;
    rl_status                rc = RL_OK;
    /* y = xmid + mlp(xmid): dres flows to xmid unchanged and through the MLP */
    mlp_backward(m, l);
    /* by sequence chunks as in the forward; dom, dout, dq, dk, dv, qkv (as dqkv) and dln
     * hold one chunk (their first rows alone, the chunk's own rows in a team); what sums
     * over rows -- Wo's, Wqkv's and LN1's parameter gradients -- is added in chunk order */
#pragma omp parallel for ordered schedule(static, 1) num_threads(team) if (team > 1)
    for (int c = 0; c < nch; c++) {
        const int    b0 = c * S, nb = B - b0 < S ? B - b0 : S, n = nb * N, t0 = b0 * N;
        const size_t o1 = (size_t)t0 * D, w = team > 1 ? o1 : 0;
        float       *dres = s->dres + o1, *dom = s->dom + w, *dout = s->dout + w;
        float       *dq = s->dq + w, *dk = s->dk + w, *dv = s->dv + w, *dqkv = s->qkv + 3 * w;
        float       *dln = s->dln + w;
        /* xmid = x + om Wo^T + bo */
        rl_linear_backward(dom, NULL, NULL, dres, a->om + o1, p->wo, n, D, D, 0);
        rl_heads_split1(dout, dom, nb, N, m->H, m->d);
        const struct rl_attn_in    in = {a->q + o1, a->k + o1, a->v + o1, p->t5, NULL};
        const struct rl_attn_grads gr = {dq, dk, dv, g->t5, NULL};
        rl_status r = rl_attn_backward(plan, &gr, dout, a->o + o1, a->saved + (size_t)b0 * m->H * N,
                                       &in, nb * m->H);
        /* q|k|v = split(ln1 Wqkv^T + bqkv) */
        rl_heads_merge3(dqkv, dq, dk, dv, nb, N, m->H, m->d);
        rl_linear_backward(dln, NULL, NULL, dqkv, a->ln1 + o1, p->wqkv, n, D, 3 * D, 0);
#pragma omp ordered
        {
            if (r != RL_OK) rc = rc != RL_OK ? rc : r;
            rl_linear_backward(NULL, g->wo, g->bo, dres, a->om + o1, p->wo, n, D, D, 0);
            rl_linear_backward(NULL, g->wqkv, g->bqkv, dqkv, a->ln1 + o1, p->wqkv, n, D, 3 * D, 0);
            rl_layernorm_backward(dres, g->ln1w, g->ln1b, dln, x + o1, a->mean1 + t0, a->rstd1 + t0,
                                  p->ln1w, n, D);
        }
    }
    return rc;
}

rl_status rl_model_backward(rl_model *m, float scale)
{
    if (!m->have_forward) RL_FAIL(RL_EINVAL, "model: backward without a successful forward");
    const int    B = m->B, N = m->N, T = B * N, D = m->D, cls = m->c.n_classes > 0;
    const int    rows = cls ? B : T;
    struct acts *a    = &m->a;
    rl_attn     *plan = NULL;
    RL_TRY(get_plan(m, N, &plan));
    /* loss = sum over targets of CE(logits): fused softmax-CE gradient, times scale */
    rl_softmax_ce_backward(a->dlogits, a->logits, a->lse, m->tgt, cls ? NULL : m->mask, scale, rows,
                           m->Vo);
    if (cls) { /* logits = pooled Whead^T + b, pooled = mean_n lnf */
        rl_linear_backward(a->dpooled, m->g.headw, m->g.headb, a->dlogits, a->pooled, m->p.headw, B,
                           D, m->Vo, 0);
        rl_meanpool_backward(a->dln, a->dpooled, B, N, D);
    } else {
        rl_linear_backward(a->dln, m->g.headw, m->g.headb, a->dlogits, a->lnf, m->p.headw, T, D,
                           m->Vo, 0);
    }
    memset(a->dres, 0, (size_t)T * D * sizeof(float));
    rl_layernorm_backward(a->dres, m->g.lnfw, m->g.lnfb, a->dln, a->x + (size_t)m->L * T * D,
                          a->meanf, a->rstdf, m->p.lnfw, T, D);
    for (int l = m->L - 1; l >= 0; l--)
        RL_TRY(block_backward(m, l, plan));
    rl_embed_backward(m->g.wte, m->c.input_pe == RL_INPUT_PE_LEARNED ? m->g.pos : NULL, a->dres,
                      m->tok, B, N, D);
    if (m->g.scale)
        rl_pos_scale_backward(m->g.scale, a->dres, m->sinus, B, N, D); /* x0 = E + g P */
    return RL_OK;
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
