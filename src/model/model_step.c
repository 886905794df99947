/* model_step.c -- one forward and one backward of the transformer (docs/model.md), split by
 * the problem so that they spread over any number of threads with the same bits.
 *
 * The batch's T = B*N token rows are cut into chunks of `rows` rows (rl_model_mlp_rows, 256
 * at D = 128), so many that 16 threads have work (16 at T = 4096), and their number and
 * bounds depend on T and D only.  Per block the step is
 *
 *   forward:   [chunks: LN1, QKV, head split]  attention  [chunks: head merge, Wo, residual,
 *              LN2, fc1, GELU, fc2, residual; then the next block's LN1, QKV and split, or
 *              after the last block LN_f, the head and the loss]
 *   backward:  [groups: the loss, head and LN_f backward, or one block's QKV and LN1
 *              backward; then the block below's MLP, LN2 and Wo backward]  [reduction]
 *              attention backward ...
 *
 * where [chunks: ...] is one parallel region whose pieces are the chunks, each a one-thread
 * pass whose operands stay in cache from one product to the next (or, with chunks for at
 * most half of the threads, the chunks in turn, each step on all of them: pieces_in_turn
 * below), and the attention runs
 * once per layer on the whole batch (G = B*H heads) outside any region, so that its kernels
 * split their own work over the threads.  In the backward what sums over rows -- the
 * weight, bias and LayerNorm gradients -- goes to one slot per group of consecutive chunks
 * (at most GRAD_GROUPS groups, bounds set by T; a group's chunks run in order on one
 * thread), and a reduction region over the gradient's elements adds the slots in group
 * order.  No ordered section and no atomics: every sum has one order whatever the thread
 * count.  Every region goes through rl_team and is booked for the serial fraction
 * (core/threads.h). */
#include "config.h"
#include "model_impl.h"
#include "layers.h"
#include "forget.h"
#include "../core/gemm.h"
#include "../core/threads.h"
#include "../core/util.h"
#include "../core/vexp.h"

#include <string.h>

/* A backward region's groups: at most GRAD_GROUPS, and their slots at most PART_BUDGET
 * floats together (a large model gets fewer groups, never fewer than 4 or the chunks). */
#ifndef GRAD_GROUPS
#define GRAD_GROUPS 32
#endif
#define PART_BUDGET ((size_t)1 << 26)
#define RED_BLOCK 2048 /* floats per piece of the reduction */

/* --- sizes ---------------------------------------------------------------------------- */

static size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

/* floats of each part of a group's slot, in the order of enum rl_model_part */
static void part_sizes(const struct rl_model_config *c, size_t *len)
{
    const size_t D = (size_t)c->d_model, V = (size_t)(c->n_classes > 0 ? c->n_classes : c->vocab);
    const size_t H = c->attn.forget ? (size_t)c->heads : 0; /* the gate's wf (H, D), bf (H) */
    /* LN1 w, b, bqkv, bo, LN2 w, b, fc1 b, fc2 b, LN_f w, b, head b, wf, bf; Wqkv, Wo, fc1,
     * fc2, head */
    const size_t l[RL_PART_COUNT] = {D, D, 3 * D, D, D,         D,     4 * D,     D,         D,
                                     D, V, H * D, H, 3 * D * D, D * D, 4 * D * D, 4 * D * D, V * D};
    _Static_assert(RL_PART_COUNT == 18, "part_sizes lists every part of enum rl_model_part");
    memcpy(len, l, sizeof l);
}

size_t rl_model_part_floats(const struct rl_model_config *c)
{
    size_t len[RL_PART_COUNT], n = 0;
    part_sizes(c, len);
    for (int i = 0; i < RL_PART_COUNT; i++)
        n += round16(len[i]);
    return n;
}

int rl_model_grad_groups(const struct rl_model_config *c, long T)
{
    const long rows = rl_model_mlp_rows(c->d_model, T), chunks = (T + rows - 1) / rows;
    long       cap = (long)(PART_BUDGET / rl_model_part_floats(c));
    cap            = cap > GRAD_GROUPS ? GRAD_GROUPS : cap < 4 ? 4 : cap;
    return (int)(chunks < cap ? chunks : cap);
}

/* the most rows a chunk has, at any T */
static int rows_max(int D) { return rl_model_mlp_rows(D, 1L << 30); }

/* per thread: a (rows, 4D) buffer of a chunk, then a (rows, D) one */
size_t rl_model_scratch_floats(const struct rl_model_config *c)
{
    return round16(5 * (size_t)rows_max(c->d_model) * (size_t)c->d_model);
}

static rl_status ensure_scratch(rl_model *m)
{
    const int need = rl_threads_get();
    if (m->scratch_slots >= need) return RL_OK;
    rl_free(m->scratch);
    m->scratch_slots = 0;
    m->scratch       = rl_alloc((size_t)need * rl_model_scratch_floats(&m->c) * sizeof(float));
    if (!m->scratch) RL_FAIL(RL_ENOMEM, "model: cannot allocate the scratch of %d threads", need);
    m->scratch_slots = need;
    return RL_OK;
}

static rl_status ensure_parts(rl_model *m, int groups)
{
    if (m->part_groups >= groups) return RL_OK;
    size_t len[RL_PART_COUNT], off = 0;
    part_sizes(&m->c, len);
    for (int i = 0; i < RL_PART_COUNT; i++)
        m->part_off[i] = off, off += round16(len[i]);
    m->part_off[RL_PART_COUNT] = off;
    rl_free(m->part);
    m->part_groups = 0;
    if (!(m->part = rl_alloc((size_t)groups * off * sizeof(float))))
        RL_FAIL(RL_ENOMEM, "model: cannot allocate %d slots of partial gradients", groups);
    m->part_groups = groups;
    return RL_OK;
}

static void chunk_span(const rl_model *m, int c, long *r0, int *n)
{
    const long T = (long)m->B * m->N;
    *r0          = (long)c * m->rows;
    *n           = (int)(T - *r0 < m->rows ? T - *r0 : m->rows);
}

static float *thread_scratch(const rl_model *m)
{
    return m->scratch + (size_t)rl_thread_slot() * rl_model_scratch_floats(&m->c);
}

/* the (rows, D) buffer after the (rows, 4D) one */
static float *narrow_scratch(const rl_model *m, float *wide)
{
    return wide + 4 * (size_t)rows_max(m->D) * m->D;
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

/* out = x + b per row: the residual plus the bias; the GEMM then adds the product */
static void residual_bias(float *out, const float *x, const float *b, int n, int C)
{
    for (int t = 0; t < n; t++) {
        float *o = out + (size_t)t * C;
#pragma omp simd
        for (int c = 0; c < C; c++)
            o[c] = x[(size_t)t * C + c] + b[c];
    }
}

/* the residual stream entering block l (l = L: the last block's output) */
static float *stream(const rl_model *m, int l) { return m->a.x + (size_t)l * m->B * m->N * m->D; }

/* x0 = E[tok] + g P, rows [r0, r0 + n) */
static void embed_forward(rl_model *m, long r0, int n)
{
    const float *pos = m->c.input_pe == RL_INPUT_PE_LEARNED      ? m->p.pos
                       : m->c.input_pe == RL_INPUT_PE_SINUSOIDAL ? m->sinus
                                                                 : NULL;
    const float  g   = m->p.scale ? m->p.scale[0] : 1.0f;
    rl_embed_forward_rows(m->a.x + r0 * m->D, m->tok + r0, m->p.wte, pos, g, r0, n, m->N, m->D);
}

/* q|k|v = split(LN1(x) Wqkv^T + bqkv) of block l; qkv: (n, 3D) scratch */
static void qkv_forward(rl_model *m, int l, long r0, int n, float *qkv)
{
    const int                   D = m->D;
    const size_t                o = (size_t)r0 * D;
    const struct rl_block_view *p = &m->p.blk[l];
    struct rl_block_acts       *a = &m->a.blk[l];
    rl_layernorm_forward(a->ln1 + o, a->mean1 + r0, a->rstd1 + r0, stream(m, l) + o, p->ln1w,
                         p->ln1b, n, D);
    rl_linear_forward(qkv, a->ln1 + o, p->wqkv, NULL, n, D, 3 * D, 0);
    rl_heads_split_rows(a->q, a->k, a->v, qkv, p->bqkv, r0, n, m->N, m->H, m->d);
    if (m->c.attn.forget) {
        const struct rl_forget_rows fr = {r0, n, m->N, m->H, D};
        rl_forget_forward_rows(a->logf, a->ln1, p->wf, p->bf, &fr);
    }
}

/* xmid = x + merge(o) Wo^T + bo;  y = xmid + fc2(gelu(fc1(LN2(xmid)))) of block l;
 * h: (n, 4D) scratch for fc1's output, the GELU's input */
static void out_mlp_forward(rl_model *m, int l, long r0, int n, float *h)
{
    const int                   D  = m->D;
    const size_t                o1 = (size_t)r0 * D, o4 = 4 * o1;
    const struct rl_block_view *p = &m->p.blk[l];
    struct rl_block_acts       *a = &m->a.blk[l];
    const float                *x = stream(m, l);
    float                      *y = stream(m, l + 1);
    rl_heads_merge_rows(a->om + o1, a->o, r0, n, m->N, m->H, m->d);
    residual_bias(a->xmid + o1, x + o1, p->bo, n, D);
    rl_linear_forward(a->xmid + o1, a->om + o1, p->wo, NULL, n, D, D, 1);
    rl_layernorm_forward(a->ln2 + o1, a->mean2 + r0, a->rstd2 + r0, a->xmid + o1, p->ln2w, p->ln2b,
                         n, D);
    rl_linear_forward(h, a->ln2 + o1, p->fc1w, NULL, n, D, 4 * D, 0);
    rl_bias_gelu_forward(a->g + o4, a->gp + o4, h, p->fc1b, n, 4 * D);
    residual_bias(y + o1, a->xmid + o1, p->fc2b, n, D);
    rl_linear_forward(y + o1, a->g + o4, p->fc2w, NULL, n, 4 * D, D, 1);
}

/* f = LN_f(x_L); a language model's logits = f Whead^T + bhead and chunk c's loss */
static void tail_forward(rl_model *m, int c, long r0, int n)
{
    const int             D = m->D, V = m->Vo;
    const size_t          o = (size_t)r0 * D, ol = (size_t)r0 * V;
    struct rl_model_acts *a = &m->a;
    rl_layernorm_forward(a->lnf + o, a->meanf + r0, a->rstdf + r0, stream(m, m->L) + o, m->p.lnfw,
                         m->p.lnfb, n, D);
    if (m->c.n_classes > 0) return; /* pooled over whole sequences afterwards */
    rl_linear_forward(a->logits + ol, a->lnf + o, m->p.headw, m->p.headb, n, D, V, 0);
    m->chunk_loss[c] = rl_softmax_ce_forward(a->lse + r0, m->row_loss + r0, m->row_ok + r0,
                                             &m->chunk_targets[c], &m->chunk_correct[c],
                                             a->logits + ol, m->tgt + r0, m->mask + r0, n, V);
}

/* Chunk c after the attention of block l (l = -1: the embedding before block 0). */
static void forward_chunk(rl_model *m, int l, int c)
{
    long   r0;
    int    n;
    float *wide = thread_scratch(m);
    chunk_span(m, c, &r0, &n);
    if (l < 0)
        embed_forward(m, r0, n);
    else
        out_mlp_forward(m, l, r0, n, wide);
    if (l + 1 < m->L)
        qkv_forward(m, l + 1, r0, n, wide);
    else
        tail_forward(m, c, r0, n);
}

/* Whether a region of `pieces` chunks (or groups) runs its pieces in turn on this thread
 * instead: when one piece per thread would leave at least half of the threads without work
 * (a short batch on many threads: 1024 tokens are 4 chunks at D = 128).  Then each step
 * of a piece is spread over all the threads -- its products by BLIS's threads, its row
 * loops by rl_pieces -- and every step gives the same bits on any number of threads, so
 * the two forms do too.  Judged for the planned count (rl_threads_planned), as the
 * attention's choice of form, and never past the cores: BLIS's threads wait for each other
 * in spin barriers, which a count past the cores (ROPELAB_OVERSUBSCRIBE=1, for tests)
 * turns into lost time slices (a 3-update run took minutes instead of seconds). */
static int pieces_in_turn(long pieces)
{
    return !rl_nested() && 2 * pieces <= rl_threads_planned() &&
           rl_threads_get() <= rl_cores_available();
}

static void forward_rows(rl_model *m, int l)
{
    const int chunks = m->chunks, team = rl_team(chunks);
    if (pieces_in_turn(chunks)) {
        for (int c = 0; c < chunks; c++)
            forward_chunk(m, l, c);
        return;
    }
    const double t0 = rl_region_begin();
#pragma omp parallel for schedule(static) num_threads(team)
    for (int c = 0; c < chunks; c++)
        forward_chunk(m, l, c);
    rl_region_end(t0, chunks);
}

static rl_status attn_forward(rl_model *m, int l, rl_attn *plan)
{
    struct rl_block_acts   *a  = &m->a.blk[l];
    const struct rl_attn_in in = {a->q, a->k, a->v, m->p.blk[l].t5, a->logf, a->keep};
    struct rl_attn_stats    st = {0};
    RL_TRY(rl_attn_forward(plan, a->o, a->saved, &in, m->B * m->H, &st));
    m->bad_den += st.bad_denominators;
    return RL_OK;
}

/* a classifier: logits = mean_n(f) Whead^T + bhead, one label per sequence */
static double classify_forward(rl_model *m, long *n_targets, long *n_correct)
{
    struct rl_model_acts *a = &m->a;
    rl_meanpool_forward(a->pooled, a->lnf, m->B, m->N, m->D);
    rl_linear_forward(a->logits, a->pooled, m->p.headw, m->p.headb, m->B, m->D, m->Vo, 0);
    return rl_softmax_ce_forward(a->lse, m->row_loss, m->row_ok, n_targets, n_correct, a->logits,
                                 m->tgt, NULL, m->B, m->Vo);
}

rl_status rl_model_forward(rl_model *m, const struct rl_batch *b, double *loss_sum, long *n_targets,
                           long *n_correct)
{
    m->have_forward = 0;
    m->bad_den      = 0;
    RL_TRY(check_batch(m, b));
    rl_attn *plan = NULL;
    RL_TRY(rl_model_ensure_acts(m, b->B, b->N));
    RL_TRY(rl_model_ensure_sinusoid(m, b->N));
    RL_TRY(rl_model_plan(m, b->N, &plan));
    RL_TRY(ensure_scratch(m));
    copy_batch(m, b);
    forward_rows(m, -1);
    for (int l = 0; l < m->L; l++) {
        RL_TRY(attn_forward(m, l, plan));
        forward_rows(m, l);
    }
    if (m->c.n_classes > 0) {
        *loss_sum = classify_forward(m, n_targets, n_correct);
    } else { /* the chunks' sums in chunk order */
        double s  = 0;
        long   nt = 0, nc = 0;
        for (int c = 0; c < m->chunks; c++)
            s += m->chunk_loss[c], nt += m->chunk_targets[c], nc += m->chunk_correct[c];
        *loss_sum = s, *n_targets = nt, *n_correct = nc;
    }
    m->have_forward = 1;
    return RL_OK;
}

/* --- backward ------------------------------------------------------------------------- */

/* dW (OC, C) = dout^T x over the n rows of a group's first chunk, += over the next ones */
static void wgrad(float *dW, const float *dout, const float *x, int n, int C, int OC, int first)
{
    rl_sgemm(RL_TRANS_T, RL_TRANS_N, OC, C, n, 1.0f, dout, OC, x, C, first ? 0.0f : 1.0f, dW, C);
}

/* the loss, head and final LayerNorm backward: dres = the gradient at x_L */
static void tail_backward(rl_model *m, long r0, int n, float *slot, int first, float *narrow)
{
    const int             D = m->D, V = m->Vo;
    const size_t          o = (size_t)r0 * D, ol = (size_t)r0 * V, *off = m->part_off;
    struct rl_model_acts *a    = &m->a;
    float                *dlnf = a->dln + o; /* a classifier's: from the pooling's backward */
    if (m->c.n_classes == 0) {
        /* loss = CE(logits): dlogits = scale (softmax(logits) - onehot(target)) */
        rl_softmax_ce_backward(a->dlogits + ol, a->logits + ol, a->lse + r0, m->tgt + r0,
                               m->mask + r0, m->dscale, n, V);
        /* logits = f Whead^T + bhead */
        dlnf = narrow;
        rl_linear_backward(dlnf, NULL, NULL, a->dlogits + ol, NULL, m->p.headw, n, D, V, 0);
        wgrad(slot + off[RL_PART_HEADW], a->dlogits + ol, a->lnf + o, n, D, V, first);
        rl_colsum_add(slot + off[RL_PART_HEADB], a->dlogits + ol, n, V);
    }
    /* f = LN_f(x_L) */
    memset(a->dres + o, 0, (size_t)n * D * sizeof(float));
    rl_layernorm_backward(a->dres + o, slot + off[RL_PART_LNFW], slot + off[RL_PART_LNFB], dlnf,
                          stream(m, m->L) + o, a->meanf + r0, a->rstdf + r0, m->p.lnfw, n, D);
}

/* block l's MLP and output projection backward: dres (the gradient at y) becomes the
 * gradient at xmid, which reaches x unchanged and the attention through dout */
static void mlp_wo_backward(rl_model *m, int l, long r0, int n, float *slot, int first, float *wide,
                            float *narrow)
{
    const int                   D  = m->D;
    const size_t                o1 = (size_t)r0 * D, o4 = 4 * o1, *off = m->part_off;
    const struct rl_block_view *p    = &m->p.blk[l];
    struct rl_block_acts       *a    = &m->a.blk[l];
    float                      *dres = m->a.dres + o1, *dh = wide, *dln = narrow;
    /* y = xmid + g W2^T + b2, g = gelu(h): dg = dres W2 into dh, then one pass makes
     * dh = dg gelu'(h) and sums fc1's bias gradient (h = ... + b1) */
    rl_linear_backward(dh, NULL, NULL, dres, NULL, p->fc2w, n, 4 * D, D, 0);
    rl_gelu_backward_sum(dh, slot + off[RL_PART_FC1B], a->gp + o4, n, 4 * D);
    wgrad(slot + off[RL_PART_FC2W], dres, a->g + o4, n, 4 * D, D, first);
    rl_colsum_add(slot + off[RL_PART_FC2B], dres, n, D);
    /* h = LN2(xmid) W1^T + b1 */
    wgrad(slot + off[RL_PART_FC1W], dh, a->ln2 + o1, n, D, 4 * D, first);
    rl_linear_backward(dln, NULL, NULL, dh, NULL, p->fc1w, n, D, 4 * D, 0);
    rl_layernorm_backward(dres, slot + off[RL_PART_LN2W], slot + off[RL_PART_LN2B], dln,
                          a->xmid + o1, a->mean2 + r0, a->rstd2 + r0, p->ln2w, n, D);
    /* xmid = x + om Wo^T + bo, om = merge(o) */
    float *dom = narrow;
    wgrad(slot + off[RL_PART_WO], dres, a->om + o1, n, D, D, first);
    rl_colsum_add(slot + off[RL_PART_BO], dres, n, D);
    rl_linear_backward(dom, NULL, NULL, dres, NULL, p->wo, n, D, D, 0);
    rl_heads_split1_rows(m->a.dout, dom, r0, n, m->N, m->H, m->d);
}

/* block l's QKV and LN1 backward: dres (the gradient at x) gains what flows through LN1 */
static void qkv_backward(rl_model *m, int l, long r0, int n, float *slot, int first, float *wide,
                         float *narrow)
{
    const int                   D  = m->D;
    const size_t                o1 = (size_t)r0 * D, *off = m->part_off;
    const struct rl_block_view *p    = &m->p.blk[l];
    struct rl_block_acts       *a    = &m->a.blk[l];
    float                      *dqkv = wide, *dln = narrow;
    /* q|k|v = split(ln1 Wqkv^T + bqkv) */
    rl_heads_merge3_rows(dqkv, m->a.dq, m->a.dk, m->a.dv, r0, n, m->N, m->H, m->d);
    wgrad(slot + off[RL_PART_WQKV], dqkv, a->ln1 + o1, n, D, 3 * D, first);
    rl_colsum_add(slot + off[RL_PART_BQKV], dqkv, n, 3 * D);
    rl_linear_backward(dln, NULL, NULL, dqkv, NULL, p->wqkv, n, D, 3 * D, 0);
    /* log f = log sigmoid(ln1 wf^T + bf) */
    if (m->c.attn.forget) {
        const struct rl_forget_rows fr = {r0, n, m->N, m->H, D};
        rl_forget_backward_rows(dln, slot + off[RL_PART_WF], slot + off[RL_PART_BF], m->a.dlogf,
                                a->logf, a->ln1, p->wf, &fr);
    }
    /* ln1 = LN1(x) */
    rl_layernorm_backward(m->a.dres + o1, slot + off[RL_PART_LN1W], slot + off[RL_PART_LN1B], dln,
                          stream(m, l) + o1, a->mean1 + r0, a->rstd1 + r0, p->ln1w, n, D);
}

/* The vector parts of a slot, at its start, are summed by += from zero (the matrices are
 * written by their group's first product). */
static void zero_vectors(const rl_model *m, float *slot)
{
    memset(slot, 0, m->part_off[RL_PART_WQKV] * sizeof(float));
}

/* Group grp's chunks, in order, on this thread: block l's QKV backward (l = L: the loss and
 * head instead), then block l-1's MLP and output projection (l > 0). */
static void backward_group(rl_model *m, int l, int grp, int groups)
{
    const int c0 = (int)((long)grp * m->chunks / groups),
              c1 = (int)((long)(grp + 1) * m->chunks / groups);
    float *slot  = m->part + (size_t)grp * m->part_off[RL_PART_COUNT];
    float *wide = thread_scratch(m), *narrow = narrow_scratch(m, wide);
    zero_vectors(m, slot);
    for (int c = c0; c < c1; c++) {
        long r0;
        int  n;
        chunk_span(m, c, &r0, &n);
        if (l == m->L)
            tail_backward(m, r0, n, slot, c == c0, narrow);
        else
            qkv_backward(m, l, r0, n, slot, c == c0, wide, narrow);
        if (l > 0) mlp_wo_backward(m, l - 1, r0, n, slot, c == c0, wide, narrow);
    }
}

/* The reduction: gradient part p += the groups' slots of p, summed in group order, by
 * pieces of RED_BLOCK elements. */
struct reduce_ctx {
    const rl_model *m;
    float          *dst[RL_PART_COUNT]; /* NULL: the part is not in this region */
    size_t          len[RL_PART_COUNT];
    long            first[RL_PART_COUNT + 1]; /* the parts' first pieces */
    int             groups;
};

static void reduce_piece(void *ctx, long k)
{
    const struct reduce_ctx *r = ctx;
    int                      p = 0;
    while (k >= r->first[p + 1])
        p++;
    const size_t i0 = (size_t)(k - r->first[p]) * RED_BLOCK;
    const size_t n  = r->len[p] - i0 < RED_BLOCK ? r->len[p] - i0 : RED_BLOCK;
    /* each element summed over the groups' slots in group order (slots part_off[COUNT] apart) */
    rl_rows_sum_add(r->dst[p] + i0, r->m->part + r->m->part_off[p] + i0, r->groups,
                    r->m->part_off[RL_PART_COUNT], n);
}

/* the gradient tensors of a backward region (as backward_group) */
static void region_parts(const rl_model *m, int l, float **dst)
{
    if (l == m->L) {
        dst[RL_PART_LNFW] = m->g.lnfw, dst[RL_PART_LNFB] = m->g.lnfb;
        if (m->c.n_classes == 0) dst[RL_PART_HEADW] = m->g.headw, dst[RL_PART_HEADB] = m->g.headb;
    } else {
        const struct rl_block_view *g = &m->g.blk[l];
        dst[RL_PART_LN1W] = g->ln1w, dst[RL_PART_LN1B] = g->ln1b;
        dst[RL_PART_WQKV] = g->wqkv, dst[RL_PART_BQKV] = g->bqkv;
        if (m->c.attn.forget) dst[RL_PART_WF] = g->wf, dst[RL_PART_BF] = g->bf;
    }
    if (l > 0) {
        const struct rl_block_view *g = &m->g.blk[l - 1];
        dst[RL_PART_WO] = g->wo, dst[RL_PART_BO] = g->bo;
        dst[RL_PART_LN2W] = g->ln2w, dst[RL_PART_LN2B] = g->ln2b;
        dst[RL_PART_FC1W] = g->fc1w, dst[RL_PART_FC1B] = g->fc1b;
        dst[RL_PART_FC2W] = g->fc2w, dst[RL_PART_FC2B] = g->fc2b;
    }
}

static void backward_rows(rl_model *m, int l)
{
    const int groups = rl_model_grad_groups(&m->c, (long)m->B * m->N), team = rl_team(groups);
    if (pieces_in_turn(groups)) {
        for (int g = 0; g < groups; g++)
            backward_group(m, l, g, groups);
    } else {
        const double t0 = rl_region_begin();
#pragma omp parallel for schedule(static) num_threads(team)
        for (int g = 0; g < groups; g++)
            backward_group(m, l, g, groups);
        rl_region_end(t0, groups);
    }

    struct reduce_ctx r = {.m = m, .groups = groups};
    region_parts(m, l, r.dst);
    part_sizes(&m->c, r.len);
    for (int p = 0; p < RL_PART_COUNT; p++)
        r.first[p + 1] =
            r.first[p] + (r.dst[p] ? (long)((r.len[p] + RED_BLOCK - 1) / RED_BLOCK) : 0);
    rl_pieces(r.first[RL_PART_COUNT], reduce_piece, &r);
}

static rl_status attn_backward(rl_model *m, int l, rl_attn *plan)
{
    struct rl_block_acts      *a  = &m->a.blk[l];
    struct rl_model_acts      *s  = &m->a;
    const struct rl_attn_in    in = {a->q, a->k, a->v, m->p.blk[l].t5, a->logf, a->keep};
    const struct rl_attn_grads gr = {s->dq, s->dk, s->dv, m->g.blk[l].t5, s->dlogf};
    return rl_attn_backward(plan, &gr, s->dout, a->o, a->saved, &in, m->B * m->H);
}

/* a classifier: logits = pooled Whead^T + b, pooled = mean_n f; dln = the gradient at f */
static void classify_backward(rl_model *m)
{
    struct rl_model_acts *a = &m->a;
    rl_softmax_ce_backward(a->dlogits, a->logits, a->lse, m->tgt, NULL, m->dscale, m->B, m->Vo);
    rl_linear_backward(a->dpooled, m->g.headw, m->g.headb, a->dlogits, a->pooled, m->p.headw, m->B,
                       m->D, m->Vo, 0);
    rl_meanpool_backward(a->dln, a->dpooled, m->B, m->N, m->D);
}

rl_status rl_model_backward(rl_model *m, float scale)
{
    if (!m->have_forward) RL_FAIL(RL_EINVAL, "model: backward without a successful forward");
    rl_attn *plan = NULL;
    RL_TRY(rl_model_plan(m, m->N, &plan));
    RL_TRY(ensure_scratch(m));
    RL_TRY(ensure_parts(m, rl_model_grad_groups(&m->c, (long)m->B * m->N)));
    m->dscale = scale; /* loss = (sum over targets of CE) * scale */
    if (m->c.n_classes > 0) classify_backward(m);
    backward_rows(m, m->L);
    for (int l = m->L - 1; l >= 0; l--) {
        RL_TRY(attn_backward(m, l, plan));
        backward_rows(m, l);
    }
    /* x0 = E[tok] + g P */
    rl_embed_backward(m->g.wte, m->c.input_pe == RL_INPUT_PE_LEARNED ? m->g.pos : NULL, m->a.dres,
                      m->tok, m->B, m->N, m->D, m->c.vocab);
    if (m->g.scale) rl_pos_scale_backward(m->g.scale, m->a.dres, m->sinus, m->B, m->N, m->D);
    return RL_OK;
}
