/* attn_linear.h -- linear attention for one head without a bias PE.
 * Internal to libropelab; rl_attn (attn.c) dispatches here.
 *
 *   o_m = sum_n phi_q(q_m)^T phi_k(k_n) v_n / ( sum_n phi_q(q_m)^T phi_k(k_n) + eps )
 * feature maps elu1 / softmax (Shen) / exp; causal by a chunked prefix scan whose inner
 * work is GEMMs; non-causal by associativity.  With rope != NULL: RoPE as o->rope_place
 * (feature = RoFormer eq. 19, numerator rotated, denominator as o->rope_denominator;
 * input = rotate q, k before the feature map).
 * den (N): the denominator of each row *including* eps, saved for the backward.
 * Returns (through *n_bad) the number of rows whose denominator before eps is <= eps.
 * Backward overwrites dq, dk, dv; it recomputes prefix states rather than storing N. */
#ifndef RL_ATTN_LINEAR_H
#define RL_ATTN_LINEAR_H

#include <stddef.h>
#include "attn_opts.h"

size_t rl_attn_linear_scratch_floats(const struct rl_attn_opts *o, int N, int d, int dv);

void rl_attn_linear_forward(float *out, float *den, long *n_bad, const float *q, const float *k,
                            const float *v, const struct rl_rope *rope,
                            const struct rl_attn_opts *o, int N, int d, int dv, float *scratch);

void rl_attn_linear_backward(float *dq, float *dk, float *dvg, const float *dout, const float *out,
                             const float *den, const float *q, const float *k, const float *v,
                             const struct rl_rope *rope, const struct rl_attn_opts *o, int N, int d,
                             int dv, float *scratch);

#endif
