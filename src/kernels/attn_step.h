/* attn_step.h -- causal attention one token at a time (recurrent decoding), for the H
 * heads of one layer.  The step for the token at position m reads q_m, k_m (H, d) and
 * v_m (H, dv), head h = features h*d .. h*d+d-1 as in attn.h, updates the layer's
 * cache or state and writes o_m (H, dv): the row m that rl_attn_forward would compute
 * for the whole prefix 0 .. m (up to rounding).
 *
 * softmax: a cache of the (rotated) keys and values, (context, H*d) and (context, H*dv),
 *   grown by doubling; s_n = (R_m q_m).(R_n k_n)/sqrt(d) + b_h(m, n) for n <= m with the
 *   ALiBi or T5 bias of the new query row; O(context) work per token.  YaRN's factor is
 *   in the RoPE table the caller passes; xPos multiplies the term of feature f by
 *   zeta_f^((m-n)/gamma), from a table of the decays by distance.
 * linear, RoFormer eq. 19 (and every variant of attn_linear.h), per head in double:
 *   S_m = S_{m-1} + C_m v_m^T,  z_m = z_{m-1} + E_m,  o_m = A_m^T S_m / (B_m . z_m + eps)
 *   with the training kernel's features: PLAIN A = B = phi_q, C = E = phi_k;
 *   eq. 19 A = R_m phi_q, C = R_m phi_k, B = phi_q, E = phi_k; rotated denominator
 *   B = A, E = C; rope_place = input: phi of the rotated q, k.  O(d dv) per token.
 * causal Shen map (feature softmax over the prefix): u_n = exp(k_n - c) with c a running
 *   per-feature maximum (when it grows, every state row of that feature is rescaled by
 *   exp(c_old - c_new): the normaliser Z_m = sum u_n and the sums share the shift, which
 *   cancels); A = phi_q / Z_m.  With eq. 19 the numerator state has 2d rows (u cos, u sin
 *   per feature, attn_linear_impl.h), since the rotation mixes features with different
 *   normalisers.
 * causal ALiBi in linear attention: the decayed state (the forget gate's with the
 *   constant log gate -slope_h, attn_linear.h),
 *   S_m = gamma S_{m-1} + phi_k(k_m) v_m^T,  z_m = gamma z_{m-1} + phi_k(k_m),
 *   gamma = exp(-slope_h), o_m = A_m^T S_m / (A_m . z_m + eps).
 * Forget gate (opts.forget): the step also reads the new token's log forget values
 *   lambda_h[m] <= 0 (H).  Softmax keeps c_h[n] = sum_{l <= n} lambda_h[l] (double) per
 *   cached position and adds c_h[m] - c_h[n] to score n.  Linear attention decays the
 *   state before the new term: S_m = exp(lambda_m) S_{m-1} + C_m v_m^T, z_m =
 *   exp(lambda_m) z_{m-1} + E_m, for every mode above (with causal ALiBi the two decays
 *   combine: exp(lambda_m - slope_h)); the Shen map's normaliser Z is not decayed.
 * T5 in linear attention has no such recurrence: rl_attn_step_supported says 0 and the
 * caller recomputes the prefix.  Non-causal options are refused.
 *
 * RoPE: the caller passes a table (rope.h) built from the same options and covering
 * position m; it is shared by the layers, so it is not part of the state. */
#ifndef RL_ATTN_STEP_H
#define RL_ATTN_STEP_H

#include <stddef.h>
#include "../core/status.h"
#include "attn_opts.h"

typedef struct rl_attn_step rl_attn_step;

/* 1 when the options have a recurrent step (causal, and not linear attention with T5). */
int rl_attn_step_supported(const struct rl_attn_opts *o);

/* capacity: positions the softmax cache holds before it first grows (>= 1). */
rl_status rl_attn_step_create(rl_attn_step **out, const struct rl_attn_opts *o, int H, int d,
                              int dv, int capacity);
void      rl_attn_step_free(rl_attn_step *s);
/* Back to position 0 (empty cache, zero states). */
void rl_attn_step_reset(rl_attn_step *s);
/* Tokens consumed so far (the position of the next step). */
int rl_attn_step_position(const rl_attn_step *s);

/* What one step reads: q, k (H*d) and v (H*dv) of the token at position
 * rl_attn_step_position(s); rope: a table covering that position (pe = rope), else NULL;
 * t5: the H x t5_buckets table (pe = t5), else NULL; logf: the token's H log forget values
 * (forget gate), else NULL. */
struct rl_attn_step_in {
    const float          *q, *k, *v;
    const struct rl_rope *rope;
    const float          *t5;
    const float          *logf;
};

/* One token: o (H*dv).  *n_bad (may be NULL) gets the heads whose linear denominator
 * before eps was <= eps.  Fails only when the softmax cache cannot grow. */
rl_status rl_attn_step_forward(rl_attn_step *s, float *o, long *n_bad,
                               const struct rl_attn_step_in *in);

/* Bytes of the cache or state in use: softmax 4 * position * H * (d + dv) (the keys and
 * values; with the forget gate also 8 * position * H for the gate's prefix sums), linear
 * the per-head double states (independent of the position). */
size_t rl_attn_step_state_bytes(const rl_attn_step *s);

/* For benchmarks: pretend n tokens were consumed, with finite pseudo-random cache and
 * state contents drawn from seed (the outputs that follow are meaningless; the cost per
 * step is that of a real context of n tokens). */
rl_status rl_attn_step_fill_random(rl_attn_step *s, int n, unsigned long long seed);

#endif
