/* attn_toeplitz.h -- linear attention with a relative bias (Luo et al. 2021):
 *   sim(m,n) = phi_q(q_m)^T phi_k(k_n) * exp(rel[(n-m)+N-1])
 * in numerator and denominator; every sum over n is a Toeplitz matrix-vector product,
 * computed with double-precision FFTW (r2c/c2r) in O(N log N); causal = Toeplitz
 * matrix zeroed above the diagonal.  Also the O(N) decayed scan for causal ALiBi
 * (exp(rel) = gamma^(m-n), gamma = exp(-slope)).
 * Internal to libropelab; rl_attn (attn.c) owns one rl_toeplitz plan per thread.
 * den (N): denominator per row including eps; backward overwrites dq, dk, dv and
 * accumulates d rel (2N-1 doubles; may be NULL). */
#ifndef RL_ATTN_TOEPLITZ_H
#define RL_ATTN_TOEPLITZ_H

#include "attn_linear.h"
#include "attn_opts.h"

typedef struct rl_toeplitz rl_toeplitz;

/* Plans (FFTW_ESTIMATE, made under a lock: FFTW's planner is not thread-safe) and
 * buffers for sequences of length N, head dims d, dv. */
rl_status rl_toeplitz_create(rl_toeplitz **out, int N, int d, int dv);
void      rl_toeplitz_free(rl_toeplitz *t);

/* One head, as the linear kernels take it (attn_linear.h): q, k, v, N, d, dv and rel (2N-1,
 * the FFT path's bias); the gradients' dq, dk, dv and drel (NULL: not wanted). */
void rl_attn_toeplitz_forward(rl_toeplitz *t, float *out, float *den, long *n_bad,
                              const struct rl_lin_head *h, const struct rl_attn_opts *o);
void rl_attn_toeplitz_backward(rl_toeplitz *t, const struct rl_lin_grads *g, const float *dout,
                               const float *out, const float *den, const struct rl_lin_head *h,
                               const struct rl_attn_opts *o);

/* Causal ALiBi by the decayed scan S_m = gamma S_{m-1} + phi_k(k_m) v_m^T, O(N d dv);
 * h->rel is not read. */
void rl_attn_decay_forward(rl_toeplitz *t, float *out, float *den, long *n_bad,
                           const struct rl_lin_head *h, double gamma, const struct rl_attn_opts *o);
void rl_attn_decay_backward(rl_toeplitz *t, const struct rl_lin_grads *g, const float *dout,
                            const float *out, const float *den, const struct rl_lin_head *h,
                            double gamma, const struct rl_attn_opts *o);

#endif
