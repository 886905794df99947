/* attn_softmax.h -- tiled (online-softmax, FlashAttention-style) softmax attention for
 * one head.  Internal to libropelab; rl_attn (attn.c) dispatches here.
 *
 *   s[m,n] = q_m . k_n / sqrt(d) + rel[(n-m)+N-1],   o_m = sum_n softmax_n(s[m,.]) v_n
 *
 * q, k (N, d) are already rotated when RoPE is used (attn.c rotates, and rotates dq, dk
 * back).  rel is the relative bias vector (2N-1, see posbias.h) or NULL.  causal: n <= m.
 * Memory O(N*d): the N x N matrix is never stored; tiles are Bq x Bk.
 * lse (N): log-sum-exp of each score row, saved for the backward.
 * Backward overwrites dq, dk, dv; accumulates into drel (2N-1 doubles, may be NULL when
 * rel is NULL or not learned). */
#ifndef RL_ATTN_SOFTMAX_H
#define RL_ATTN_SOFTMAX_H

#include <stddef.h>

size_t rl_attn_softmax_scratch_floats(int N, int d, int dv);

void rl_attn_softmax_forward(float *o, float *lse, const float *q, const float *k, const float *v,
                             const float *rel, int N, int d, int dv, int causal, float *scratch);

void rl_attn_softmax_backward(float *dq, float *dk, float *dvg, double *drel, const float *dout,
                              const float *o, const float *lse, const float *q, const float *k,
                              const float *v, const float *rel, int N, int d, int dv, int causal,
                              float *scratch);

/* The same with xPos: xlam (d floats) = ln(zeta_f)/gamma for each rotated feature f (the
 * zeta of its RoPE pair), 0 for the others, or NULL; the score term of feature f gets the
 * factor exp((m-n) xlam[f]) (causal only).  The scratch then needs
 * rl_attn_softmax_scratch_floats + rl_attn_softmax_xpos_scratch_floats. */
size_t rl_attn_softmax_xpos_scratch_floats(int N, int d);
void   rl_attn_softmax_forward_xpos(float *o, float *lse, const float *q, const float *k,
                                    const float *v, const float *rel, const float *xlam, int N, int d,
                                    int dv, int causal, float *scratch);
void   rl_attn_softmax_backward_xpos(float *dq, float *dk, float *dvg, double *drel,
                                     const float *dout, const float *o, const float *lse,
                                     const float *q, const float *k, const float *v, const float *rel,
                                     const float *xlam, int N, int d, int dv, int causal,
                                     float *scratch);

#endif
