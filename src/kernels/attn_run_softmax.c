/* attn_run_softmax.c -- softmax attention over G heads (attn_impl.h).
 *
 * A call is cut into pieces fixed by the problem (G heads x query blocks, G heads x key
 * blocks; the block sizes depend on N only), run by a team of at most one thread per
 * piece.  Each piece writes rows no other piece writes, and every sum runs in an order
 * the pieces fix, so the bits do not depend on the thread count or the schedule:
 *   forward   (head, query block): o and lse of the block's rows;
 *   backward  with enough heads for the team (G >= 2 threads), one piece per head: the
 *             whole-head backward of attn_softmax.c, five products per tile;
 *             otherwise FlashAttention-2's split: D = dout . o per (head, query block),
 *             then (head, key block) pieces own dk, dv and the gate's column sums and
 *             (head, query block) pieces own dq -- seven products per tile, the score and
 *             dp tiles formed twice, but as many pieces as blocks.  Both forms run the
 *             same tiles in the same order per output row, so they give the same bits.
 *             T5's relative gradient, a sum along diagonals over every tile, goes into
 *             one part per (head, query block) in both forms; then (bias head, range of
 *             lags) pieces add the parts of heads h, h + H, ... and their blocks in
 *             order.  Where the parts would pass RL_ATTN_T5_PARTS_BYTES, the whole-head
 *             form runs with one piece per bias head, summing its heads in order.
 * The forget gate's cumulative sums are formed once per call (rl_attn_gate_cumsums: N
 * additions in double per head) and read by every piece of the head; its gradient is
 * summed per head at the end.  The choice between the two backward forms is made for the
 * thread count planned (rl_threads_planned: while bench --train counts the regions of a
 * 1-thread update, the count it judges), never for the bits. */
#include "config.h"
#include "attn_impl.h"
#include "attn_softmax.h"
#include "../core/threads.h"

#include <string.h>

/* Per-thread scratch: the kernel's tiles, then (the whole-head backward with the gate) the
 * head's dc, N doubles. */
size_t rl_attn_run_softmax_scratch_floats(const rl_attn *a)
{
    size_t k = rl_attn_softmax_scratch_floats(a->N, a->d, a->dv, a->o.xpos);
    k        = (k + 15) & ~(size_t)15;
    return k + (a->o.forget ? 2 * (size_t)a->N : 0);
}

static double *dc_scratch(const rl_attn *a, float *scratch)
{
    size_t k = rl_attn_softmax_scratch_floats(a->N, a->d, a->dv, a->o.xpos);
    return (double *)(scratch + ((k + 15) & ~(size_t)15));
}

/* Head g's operands; with `gate`, its cumulative log gates (a->cum, made for the call). */
static struct rl_sm_head head_of(const rl_attn *a, const struct rl_attn_in *in, int g, int gate)
{
    const size_t      sq = (size_t)a->N * a->d, sv = (size_t)a->N * a->dv;
    struct rl_sm_head h = {.q    = in->q + g * sq,
                           .k    = in->k + g * sq,
                           .v    = in->v + g * sv,
                           .rope = a->has_rope ? &a->rope : NULL,
                           .rel = a->has_bias ? a->rel + (size_t)(g % a->H) * (2 * a->N - 1) : NULL,
                           .xlam   = a->xlam,
                           .N      = a->N,
                           .d      = a->d,
                           .dv     = a->dv,
                           .causal = a->o.causal};
    if (gate && in->logf) h.cum = a->cum + (size_t)g * a->N;
    if (a->prep_head) h.prep = a->prep + (size_t)g * a->prep_head;
    return h;
}

/* The call's prepared keys (attn_softmax.h; with `values` the packed values too, which the
 * backward reads), one piece per (head, key tile), before the pieces that read them; none
 * where they do not pay. */
static void prepare(rl_attn *a, const struct rl_attn_in *in, int G, int values)
{
    if (!a->prep_head) return;
    const int  nk = rl_attn_softmax_key_blocks(a->N);
    const long np = (long)G * nk;
    double     t0 = rl_region_begin();
#pragma omp parallel for schedule(static) num_threads(rl_attn_team(a, np))
    for (long p = 0; p < np; p++) {
        const int         g = (int)(p / nk);
        struct rl_sm_head h = head_of(a, in, g, 0);
        rl_attn_softmax_prepare(a->prep + (size_t)g * a->prep_head, &h, (int)(p % nk), values);
    }
    rl_region_end(t0, np);
}

void rl_attn_run_softmax_forward(rl_attn *a, float *o, float *saved, const struct rl_attn_in *in,
                                 int G)
{
    const int  nb = rl_attn_softmax_blocks(a->N, a->o.causal, a->xlam, a->d);
    const long np = (long)G * nb;
    prepare(a, in, G, 0);
    double t0 = rl_region_begin();
#pragma omp parallel num_threads(rl_attn_team(a, np))
    {
        float            *scr  = a->scratch[rl_thread_slot()];
        int               last = -1;
        struct rl_sm_head h;
#pragma omp for schedule(dynamic, 1)
        for (long p = 0; p < np; p++) {
            int g = (int)(p / nb), b = (int)(p % nb);
            if (g != last) h = head_of(a, in, g, 1), last = g;
            rl_attn_softmax_forward_block(o + (size_t)g * a->N * a->dv, saved + (size_t)g * a->N,
                                          &h, b, scr);
        }
    }
    rl_region_end(t0, np);
}

/* T5's parts (attn_softmax.h, rl_attn_softmax_drel_part) of a call of G heads: their
 * doubles, or 0 where they would pass RL_ATTN_T5_PARTS_BYTES (then head h's owner sums the
 * heads g = h, h + H, ... into its drel in order, one piece per bias head). */
size_t rl_attn_run_softmax_t5_parts(const rl_attn *a, int G)
{
    if (a->o.kind != RL_ATTN_SOFTMAX || a->o.pe != RL_ATTN_PE_T5) return 0;
    const int nb = rl_attn_softmax_blocks(a->N, a->o.causal, a->xlam, a->d);
    size_t    len, per = rl_attn_softmax_drel_part(a->N, a->o.causal, a->xlam, a->d, nb, &len);
    return 8.0 * (double)per * G <= RL_ATTN_T5_PARTS_BYTES ? per * (size_t)G : 0;
}

/* head g's parts, when the call has them and wants T5's gradient (gr->dt5) */
static double *t5_parts_of(const rl_attn *a, const struct rl_attn_grads *gr, int G, int g)
{
    const size_t n = gr->dt5 ? rl_attn_run_softmax_t5_parts(a, G) : 0;
    return n ? a->t5part + n / (size_t)G * (size_t)g : NULL;
}

/* One head's whole backward (T5: drel is head h's slice, summed in g order by its owner;
 * or the head's parts). */
static void head_backward(rl_attn *a, const struct rl_attn_grads *gr, const float *dout,
                          const float *o, const float *saved, const struct rl_attn_in *in, int g,
                          double *drel, double *parts, float *scr)
{
    const size_t       sq = (size_t)a->N * a->d, sv = (size_t)a->N * a->dv;
    struct rl_sm_head  h    = head_of(a, in, g, 1);
    double            *dcum = NULL;
    struct rl_sm_grads w = {gr->dq + g * sq, gr->dk + g * sq, gr->dv + g * sv, drel, NULL, parts};
    if (in->logf) /* dc in double in the thread's scratch, then dlogf */
        dcum = dc_scratch(a, scr), w.dcum = dcum;
    rl_attn_softmax_backward(&w, dout + g * sv, o + g * sv, saved + (size_t)g * a->N, &h, scr);
    if (dcum) {
        float *dl = gr->dlogf + (size_t)g * a->N;
        for (int n = 0; n < a->N; n++)
            dl[n] = (float)dcum[n];
        rl_attn_gate_suffix(dl, a->N);
    }
}

static void backward_by_head(rl_attn *a, const struct rl_attn_grads *gr, const float *dout,
                             const float *o, const float *saved, const struct rl_attn_in *in, int G)
{
    const int t5    = a->o.pe == RL_ATTN_PE_T5 && gr->dt5;
    const int owner = t5 && !rl_attn_run_softmax_t5_parts(a, G);
    const int np    = owner ? a->H : G; /* head h's owner takes g = h, h + H, ... in order */
    double    t0    = rl_region_begin();
#pragma omp parallel for schedule(dynamic, 1) num_threads(rl_attn_team(a, np))
    for (int p = 0; p < np; p++) {
        float *scr = a->scratch[rl_thread_slot()];
        for (int g = p; g < G; g += owner ? a->H : G)
            head_backward(a, gr, dout, o, saved, in, g,
                          owner ? a->drel + (size_t)(g % a->H) * (2 * a->N - 1) : NULL,
                          owner ? NULL : t5_parts_of(a, gr, G, g), scr);
    }
    rl_region_end(t0, np);
}

/* T5's parts into each bias head's drel: piece (h, range of RL_SM_LAGS lags) adds, for
 * each lag, the parts of heads g = h, h + H, ... and of their query blocks in order. */
#define RL_SM_LAGS 256
static void add_parts(rl_attn *a, const struct rl_attn_grads *gr, int G, int h, int r0, int r1)
{
    const int N = a->N, nb = rl_attn_softmax_blocks(N, a->o.causal, a->xlam, a->d);
    double   *drel = a->drel + (size_t)h * (2 * N - 1); /* index r + N - 1 for lag r */
    for (int g = h; g < G; g += a->H) {
        const double *parts = t5_parts_of(a, gr, G, g);
        for (int b = 0; b < nb; b++) {
            int    i0, mb;
            size_t len, off = rl_attn_softmax_drel_part(N, a->o.causal, a->xlam, a->d, b, &len);
            rl_attn_softmax_block_rows(N, a->o.causal, a->xlam, a->d, b, &i0, &mb);
            const int lo = N - i0 - mb; /* the part's entry 0, as an index of drel */
            const int i1 = r1 < lo + (int)len ? r1 : lo + (int)len;
            for (int i = r0 > lo ? r0 : lo; i < i1; i++)
                drel[i] += parts[off + (size_t)(i - lo)];
        }
    }
}

static void reduce_parts(rl_attn *a, const struct rl_attn_grads *gr, int G)
{
    const int  nr = (2 * a->N - 1 + RL_SM_LAGS - 1) / RL_SM_LAGS;
    const long np = (long)a->H * nr;
    double     t0 = rl_region_begin();
#pragma omp parallel for schedule(dynamic, 1) num_threads(rl_attn_team(a, np))
    for (long p = 0; p < np; p++) {
        const int r0 = (int)(p % nr) * RL_SM_LAGS, r1 = r0 + RL_SM_LAGS;
        add_parts(a, gr, G, (int)(p / nr), r0, r1 < 2 * a->N - 1 ? r1 : 2 * a->N - 1);
    }
    rl_region_end(t0, np);
}

/* FlashAttention-2's split: D rows, then key-block and query-block pieces in one team. */
static void backward_split(rl_attn *a, const struct rl_attn_grads *gr, const float *dout,
                           const float *o, const float *saved, const struct rl_attn_in *in, int G)
{
    const size_t sq = (size_t)a->N * a->d, sv = (size_t)a->N * a->dv;
    const int    nq = rl_attn_softmax_blocks(a->N, a->o.causal, a->xlam, a->d);
    const int    nk = rl_attn_softmax_key_blocks(a->N);
    const long   np = (long)G * (nq + nk);
    float       *D  = a->rowbuf; /* G x N: D_m = dout_m . o_m */
    double       t0 = rl_region_begin();
#pragma omp parallel num_threads(rl_attn_team(a, np))
    {
        float *scr = a->scratch[rl_thread_slot()];
#pragma omp for schedule(static)
        for (long p = 0; p < (long)G * nq; p++) {
            int               g = (int)(p / nq);
            struct rl_sm_head h = head_of(a, in, g, 0);
            rl_attn_softmax_row_dots(D + (size_t)g * a->N, dout + g * sv, o + g * sv, &h,
                                     (int)(p % nq));
        }
        int               last = -1;
        struct rl_sm_head h;
#pragma omp for schedule(dynamic, 1)
        for (long p = 0; p < np; p++) {
            int kv = p < (long)G * nk, g = kv ? (int)(p / nk) : (int)((p - (long)G * nk) / nq);
            int b = kv ? (int)(p % nk) : (int)((p - (long)G * nk) % nq);
            if (g != last) h = head_of(a, in, g, 1), last = g;
            const float *dg = dout + g * sv, *lse = saved + (size_t)g * a->N,
                        *Dg = D + (size_t)g * a->N;
            if (kv) /* the gate's column sums go to dlogf, summed per head below */
                rl_attn_softmax_backward_kv(gr->dk + g * sq, gr->dv + g * sv,
                                            in->logf ? gr->dlogf + (size_t)g * a->N : NULL, dg, lse,
                                            Dg, &h, b, scr);
            else
                rl_attn_softmax_backward_q(gr->dq + g * sq, t5_parts_of(a, gr, G, g), dg, lse, Dg,
                                           &h, b, scr);
        }
    }
    rl_region_end(t0, np);
}

void rl_attn_run_softmax_backward(rl_attn *a, const struct rl_attn_grads *gr, const float *dout,
                                  const float *o, const float *saved, const struct rl_attn_in *in,
                                  int G)
{
    const int planned = rl_threads_planned(); /* > threads only while regions are counted */
    const int team    = planned > rl_threads_get() ? planned : rl_attn_team(a, (long)G * a->N);
    const int t5      = a->o.pe == RL_ATTN_PE_T5 && gr->dt5;
    const int parts   = t5 && rl_attn_run_softmax_t5_parts(a, G);
    const int by_head = (t5 && !parts) || G >= 2 * team;
    prepare(a, in, G, 1);
    if (by_head)
        backward_by_head(a, gr, dout, o, saved, in, G);
    else
        backward_split(a, gr, dout, o, saved, in, G);
    if (parts) reduce_parts(a, gr, G);
    if (by_head || !in->logf) return;
    double t0 = rl_region_begin();
#pragma omp parallel for schedule(static) num_threads(rl_attn_team(a, G))
    for (int g = 0; g < G; g++)
        rl_attn_gate_suffix(gr->dlogf + (size_t)g * a->N, a->N);
    rl_region_end(t0, G);
}
