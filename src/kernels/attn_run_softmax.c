/* attn_run_softmax.c -- softmax attention over G heads (attn_impl.h).
 *
 * A call is cut into pieces fixed by the problem (G heads x query blocks, G heads x key
 * blocks; the block sizes depend on N only), run by a team of at most one thread per
 * piece.  Each piece writes rows no other piece writes, and every sum runs in an order
 * the pieces fix, so the bits do not depend on the thread count or the schedule:
 *   forward   (head, query block): o and lse of the block's rows;
 *   backward  with enough heads for the team (G >= 2 threads, or T5, whose relative
 *             gradient is summed head by head), one piece per head: the whole-head
 *             backward of attn_softmax.c, five products per tile;
 *             otherwise FlashAttention-2's split: D = dout . o per (head, query block),
 *             then (head, key block) pieces own dk, dv and the gate's column sums and
 *             (head, query block) pieces own dq -- seven products per tile, the score and
 *             dp tiles formed twice, but as many pieces as blocks.  Both forms run the
 *             same tiles in the same order per output row, so they give the same bits.
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

/* One head's whole backward (T5: drel is head h's slice, summed in g order by its owner). */
static void head_backward(rl_attn *a, const struct rl_attn_grads *gr, const float *dout,
                          const float *o, const float *saved, const struct rl_attn_in *in, int g,
                          double *drel, float *scr)
{
    const size_t       sq = (size_t)a->N * a->d, sv = (size_t)a->N * a->dv;
    struct rl_sm_head  h    = head_of(a, in, g, 1);
    double            *dcum = NULL;
    struct rl_sm_grads w    = {gr->dq + g * sq, gr->dk + g * sq, gr->dv + g * sv, drel, NULL};
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
    const int t5 = a->o.pe == RL_ATTN_PE_T5 && gr->dt5;
    const int np = t5 ? a->H : G; /* T5: head h's owner takes g = h, h + H, ... in order */
    double    t0 = rl_region_begin();
#pragma omp parallel for schedule(dynamic, 1) num_threads(rl_attn_team(a, np))
    for (int p = 0; p < np; p++) {
        float *scr = a->scratch[rl_thread_slot()];
        for (int g = p; g < G; g += t5 ? a->H : G)
            head_backward(a, gr, dout, o, saved, in, g,
                          t5 ? a->drel + (size_t)(g % a->H) * (2 * a->N - 1) : NULL, scr);
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
                rl_attn_softmax_backward_q(gr->dq + g * sq, dg, lse, Dg, &h, b, scr);
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
    const int by_head = (a->o.pe == RL_ATTN_PE_T5 && gr->dt5) || G >= 2 * team;
    prepare(a, in, G, 1);
    if (by_head) {
        backward_by_head(a, gr, dout, o, saved, in, G);
        return;
    }
    backward_split(a, gr, dout, o, saved, in, G);
    if (!in->logf) return;
    double t0 = rl_region_begin();
#pragma omp parallel for schedule(static) num_threads(rl_attn_team(a, G))
    for (int g = 0; g < G; g++)
        rl_attn_gate_suffix(gr->dlogf + (size_t)g * a->N, a->N);
    rl_region_end(t0, G);
}
