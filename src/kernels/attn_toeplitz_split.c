/* attn_toeplitz_split.c -- the FFT Toeplitz products (attn_toeplitz.c) of a call with few
 * heads, cut into (head, group of features) pieces.
 *
 * A head's sums run over its d features, each feature one batched transform of dv + 1
 * columns: num[m,j] = sum_f A[m,f] (T x_f,j)[m], den[m] likewise, and in the backward
 * dv[n,j] = sum_f B[n,f] (T^T dy_f,j)[n] and d E = sum_f corr(dy_f, x_f).  The features
 * are independent but for these sums, so with G heads the call runs in phases:
 *
 *   prepare (a piece per head):         the features A, B, v^T into the head's store (and
 *                                       in the backward dnum, dden, dnum^T, row scales)
 *   sums (a piece per (head, group)):   the group's features in order, on the calling
 *                                       thread's transforms; their sums into the group's
 *                                       part (num^T and den, or dv^T and the correlation);
 *                                       the backward writes dA, dB's own columns
 *   rows (forward; (head, row block)):  num, den = the parts' sum in group order; o
 *   grads (backward; a piece per head, run by the thread that ends the head's last group
 *         of sums, attn_run_linear.c): dv = the parts' sum in group order; dq, dk
 *   drel (T5; a piece per bias head h): d rel_h += E_h corr_g, g = h, h + H, ... in order
 *
 * The groups are set by G, N, d and dv alone (rl_toeplitz_groups), so a call gives the
 * same bits at every thread count.  A call of 16 heads or more already has a piece per
 * thread and keeps one piece per head (attn_toeplitz.c's whole-head functions). */
#include "config.h"
#include "attn_toeplitz_impl.h"

#include <string.h>

#define TP_PIECES 32                  /* pieces a call of few heads aims for */
#define TP_SPLIT_HEADS 16             /* from this many heads on, one piece per head */
#define TP_BYTES ((double)(1L << 30)) /* stores and parts at most */
#define TP_ROWS 1024                  /* rows per piece of the forward's last phase */

size_t rl_toeplitz_part_doubles(int N, int dv)
{
    return (size_t)(dv + 1) * N + 2 * (size_t)N; /* num^T | den (dv^T | -), corr (2N - 1) */
}

int rl_toeplitz_fft(const struct rl_attn_opts *o)
{
    return o->kind == RL_ATTN_LINEAR && !o->forget && !o->alibi_scan &&
           (o->pe == RL_ATTN_PE_T5 || o->pe == RL_ATTN_PE_ALIBI);
}

int rl_toeplitz_groups(int G, int N, int d, int dv)
{
    if (G < 1 || G >= TP_SPLIT_HEADS) return 0;
    int          ng    = (TP_PIECES + G - 1) / G;
    const double store = (double)G * rl_toeplitz_store_bytes(N, d, dv);
    const double part  = 8.0 * G * rl_toeplitz_part_doubles(N, dv);
    ng                 = ng < d ? ng : d;
    while (ng >= 2 && store + ng * part > TP_BYTES)
        ng--;
    return ng >= 2 ? ng : 0;
}

int rl_toeplitz_row_blocks(int N) { return (N + TP_ROWS - 1) / TP_ROWS; }

/* group J's features [f0, f1) of d (the groups' sizes differ by one at most) */
static void group_span(int d, int ng, int J, int *f0, int *f1)
{
    *f0 = J * d / ng, *f1 = (J + 1) * d / ng;
}

static double *part_of(const struct rl_toeplitz_piece *p, int J)
{
    return p->part + (size_t)J * rl_toeplitz_part_doubles(p->h->N, p->h->dv);
}

void rl_toeplitz_split_prepare(const struct rl_toeplitz_piece *p)
{
    rl_toeplitz_exp_rel(p->hs, p->h->rel);
    if (p->dout)
        rl_toeplitz_prepare_backward(p->hs, p->h, p->dout, p->out, p->den, p->o);
    else
        rl_toeplitz_prepare(p->hs, p->h, p->o);
}

void rl_toeplitz_split_sums(const struct rl_toeplitz_piece *p, int J)
{
    const int N = p->h->N, dv = p->h->dv, causal = p->o->causal;
    double   *part = part_of(p, J), *corr = part + (size_t)(dv + 1) * N;
    int       f0, f1;
    group_span(p->h->d, p->groups, J, &f0, &f1);
    rl_fft_conv_set_kernel(p->t->conv, p->hs->E, causal);
    memset(part, 0, (size_t)(dv + !p->dout) * N * sizeof(double)); /* num^T | den, or dv^T */
    if (!p->dout) {
        for (int f = f0; f < f1; f++)
            rl_toeplitz_forward_feature(p->t, p->hs, part, part + (size_t)dv * N, f, causal);
        return;
    }
    const int want_rel = p->g->drel != NULL;
    if (want_rel) rl_fft_conv_corr_zero(p->t->conv);
    for (int f = f0; f < f1; f++)
        rl_toeplitz_backward_feature(p->t, p->hs, part, f, causal, want_rel);
    if (want_rel) rl_fft_conv_corr_read(p->t->conv, corr);
}

/* dst[i] = sum over the groups of part_J[off + i], i < n, in group order; part: a head's
 * parts */
static void parts_sum(double *dst, const struct rl_toeplitz_piece *p, const double *part,
                      size_t off, size_t n)
{
    const size_t each = rl_toeplitz_part_doubles(p->h->N, p->h->dv);
    for (int J = 0; J < p->groups; J++) {
        const double *s = part + J * each + off;
        if (J == 0)
            memcpy(dst, s, n * sizeof(double));
        else
#pragma omp simd
            for (size_t i = 0; i < n; i++)
                dst[i] += s[i];
    }
}

long rl_toeplitz_split_rows(const struct rl_toeplitz_piece *p, int b)
{
    rl_toeplitz *hs = p->hs;
    const int    N = p->h->N, dv = p->h->dv, m0 = b * TP_ROWS;
    const int    m1 = m0 + TP_ROWS < N ? m0 + TP_ROWS : N, n = m1 - m0;
    double      *col = p->t->gaf; /* one column's rows, in the thread's workspace */
    for (int j = 0; j < dv; j++) {
        parts_sum(col, p, p->part, (size_t)j * N + m0, (size_t)n);
        for (int m = m0; m < m1; m++)
            hs->num[(size_t)m * dv + j] = col[m - m0];
    }
    parts_sum(hs->den + m0, p, p->part, (size_t)dv * N + m0, (size_t)n);
    return rl_toeplitz_finish_rows(hs, p->out, p->den, p->o->eps, m0, m1);
}

void rl_toeplitz_split_grads(const struct rl_toeplitz_piece *p)
{
    rl_toeplitz *hs = p->hs;
    const int    N = p->h->N, dv = p->h->dv;
    parts_sum(hs->numT, p, p->part, 0, (size_t)dv * N);
    rl_toeplitz_dv_out(p->g->dv, hs->numT, N, dv);
    rl_toeplitz_features_backward(hs, p->g->dq, p->g->dk, p->h->k, p->o->fmap, p->o->causal);
}

void rl_toeplitz_split_drel(const struct rl_toeplitz_piece *p, int heads, int stride)
{
    const int    N = p->h->N, dv = p->h->dv;
    const size_t head = (size_t)p->groups * rl_toeplitz_part_doubles(N, dv);
    double      *corr = p->t->corr;
    for (int i = 0; i < heads; i++) {
        parts_sum(corr, p, p->part + (size_t)i * stride * head, (size_t)(dv + 1) * N,
                  2 * (size_t)N - 1);
        rl_toeplitz_drel_add(p->g->drel, p->hs->E, corr, N, p->o->causal);
    }
}
