/* attn_toeplitz.h -- linear attention with a relative bias (Luo et al. 2021):
 *   sim(m,n) = phi_q(q_m)^T phi_k(k_n) * exp(rel[(n-m)+N-1])
 * in numerator and denominator; every sum over n is a Toeplitz matrix-vector product,
 * computed with double-precision FFTW (r2c/c2r) in O(N log N); causal = Toeplitz
 * matrix zeroed above the diagonal.  (Causal ALiBi by the O(N) decayed scan is the
 * forget gate's scan with a constant log gate: attn_linear.h, rl_attn_linear_kernel_opts.)
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

/* The FFT products of a call with few heads, in (head, group of features) pieces
 * (attn_toeplitz_split.c).  rl_toeplitz_groups: the groups per head for a call of G heads
 * (0: one piece per head), set by the problem alone.  Each head has a store (a workspace
 * without transforms, rl_toeplitz_create_store) and groups parts of
 * rl_toeplitz_part_doubles.  A piece: the calling thread's workspace t, the head's store,
 * operands and parts; dout NULL in the forward, which writes out and den; the backward
 * reads them and writes g's dq, dk, dv and adds to g->drel (the bias head's). */
struct rl_toeplitz_piece {
    rl_toeplitz               *t, *hs;
    const struct rl_lin_head  *h;
    const struct rl_attn_opts *o;
    double                    *part;
    int                        groups;
    float                     *out, *den;
    const float               *dout;
    const struct rl_lin_grads *g;
};
int       rl_toeplitz_fft(const struct rl_attn_opts *o); /* linear, T5 or ALiBi, no gate, no scan */
int       rl_toeplitz_groups(int G, int N, int d, int dv);
size_t    rl_toeplitz_part_doubles(int N, int dv);
size_t    rl_toeplitz_store_bytes(int N, int d, int dv);
int       rl_toeplitz_row_blocks(int N);
rl_status rl_toeplitz_create_store(rl_toeplitz **out, int N, int d, int dv);
/* the phases: prepare (a piece per head), sums (per (head, group J)), then the forward's
 * rows (per (head, block b of rl_toeplitz_row_blocks)) or the backward's grads (per head)
 * and, for T5, drel (per bias head: its heads g = h, h + stride, ... in order, the piece's
 * parts those of head h) */
void rl_toeplitz_split_prepare(const struct rl_toeplitz_piece *p);
void rl_toeplitz_split_sums(const struct rl_toeplitz_piece *p, int J);
long rl_toeplitz_split_rows(const struct rl_toeplitz_piece *p, int b);
void rl_toeplitz_split_grads(const struct rl_toeplitz_piece *p);
void rl_toeplitz_split_drel(const struct rl_toeplitz_piece *p, int heads, int stride);

#endif
