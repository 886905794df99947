/* attn_linear_plan.h -- the per-head plan of linear attention without a bias PE, shared by
 * attn_linear.c (the plan, the features, the ungated scans) and attn_linear_gate.c (the
 * forget gate).  Internal.
 *
 * Every option reduces to the generic form of attn_linear_impl.h,
 *   num_m = sum_{n in P(m)} (A_m . C_n) v_n,  den_m = sum_{n in P(m)} (B_m . E_n) + eps,
 * with per-row features built block by block (RL_LIN_BLOCK rows) by rl_lin_build_block. */
#ifndef RL_ATTN_LINEAR_PLAN_H
#define RL_ATTN_LINEAR_PLAN_H

#include <stddef.h>
#include "attn_opts.h"

enum lin_mode { PLAIN, ROT_NUM, ROT_BOTH, SHEN, SHEN_ROT_NUM, SHEN_ROT_BOTH };
/* a block's sides in a store (rl_lin_head.have): its key and query features, and (the
 * backward) the output gradient's dnum and dden */
enum { SIDE_K = 1, SIDE_Q = 2, SIDE_DOUT = 4 };

/* Views into the caller's scratch.  Block buffers hold RL_LIN_BLOCK rows; B, E, dB, dE,
 * dphq, dphk alias other buffers where the table above says so. */
struct lin_plan {
    enum lin_mode         mode;
    enum rl_fmap          fmap;
    const struct rl_rope *rope;
    int                   N, d, dv, D, Dd, causal, shen, input_rot, sep, nb;
    float                *xq, *xk, *phq, *phk, *A, *C, *B, *E, *row, *colmax, *cmb;
    float                *dnum, *dA, *dC, *dB, *dE, *dphq, *dphk, *Sf, *Gf, *scan[3];
    const float          *q, *k; /* the block's (rotated) inputs */
    /* the block buffers of the features and rotated inputs (xq .. B above) come first in
     * the plan's scratch: feat, feat_floats of them (rl_lin_plan_to_block moves them) */
    float  *feat;
    size_t  feat_floats;
    double *dden, *dZ, *Zrun, *Ztot, *Zs, *z, *g, *Sd, *Gd, *ck;
    size_t  ck_stride, scan_floats;
    /* forget gate: c (N), its decays e^{lambda} (N), a block's decays e^{lambda_i} (float
     * for the scans, double for the sums) and e^{lambda_{i+1}}, fold weights, E.g per row,
     * the fold's workspace */
    const float *logf;
    double      *cum, *dec, *ad, *adn, *wk, *eg;
    float       *af, *afn, *Kw;
    /* T5 with the gate (quadratic tiles): the relative bias (2N-1) and its gradient, the
     * features and their gradients of every row (N x D), a tile's scores, weights and
     * gradient, a tile's factors of its weights (te: 4 x RL_LIN_BLOCK), the key block's C and V
     * transposed for rl_tile_gemm (tP: (D + dv) x RL_LIN_BLOCK), dc in double */
    const float *rel;
    double      *drel, *dcd;
    float       *Af, *Cf, *dAf, *dCf, *tS, *tW, *tD, *te, *tP;
};

/* The denominator operands of the plan's current block of l rows (its B, E, z, g and, with
 * the gate, the block's decays). */
struct rl_lin_den;
struct rl_lin_den rl_lin_den_of(const struct lin_plan *p, int l);

struct rl_lin_head;
struct rl_lin_grads;
/* The plan of one head in the caller's scratch (Shen: its column maxima; the gate: c). */
void rl_lin_plan_make(struct lin_plan *p, const struct rl_lin_head *h, const struct rl_attn_opts *o,
                      float *scratch);
/* Floats of one block's features, rotated inputs, dnum and dden (Shen's map: 0, its
 * features depend on the running Z), the pieces form's store per block. */
size_t rl_lin_block_store_floats(const struct rl_attn_opts *o, int has_rope, int N, int d, int dv);
/* Points the plan's block buffers of features, rotated inputs, dnum and dden at block b's
 * slot of `store` (rl_lin_block_store_floats per block) instead of the scratch. */
void rl_lin_plan_to_block(struct lin_plan *p, float *store, int b);
/* Features of rows t0 .. t0+l-1 (side: SIDE_K and/or SIDE_Q; the Shen causal queries need
 * the keys of the same block and advance Zrun). */
void rl_lin_build_block(struct lin_plan *p, const float *q, const float *k, int t0, int l,
                        int side);
/* o_m = num_m / den_m  =>  dnum_m = dout_m / den_m,  dden_m = -(dout_m . o_m) / den_m */
void rl_lin_output_backward(float *dnum, double *dden, const float *dout, const float *out,
                            const float *den, int l, int dv);
/* The denominators' share of the block's dB, dE (zeroed first where they are buffers of
 * their own) and, with the gate (p->logf), of eg; z starts from z0 (causal: the prefix
 * before the block; non-causal: the total) and g from g0 (NULL: g carries on from the
 * block after). */
void rl_lin_den_block_backward(struct lin_plan *p, const double *z0, const double *g0, int l,
                               int causal);
/* dq, dk of rows t0 .. t0+l-1 from the block's dA, dB, dC, dE. */
void rl_lin_chain_block(struct lin_plan *p, float *dq, float *dk, int t0, int l, double *colsum);

/* The forget gate (attn_linear_gate.c; its forward is attn_linear.c's causal forward):
 * the backward with p->logf and its decays p->dec (T5 with the gate: c, p->cum).
 * rl_lin_gate_decays: the block's decays ad/af[i] = e^{lambda_{t0+i}}, adn/afn[i] =
 * e^{lambda_{t0+i+1}} (1 at the end: no state follows).  rl_lin_gate_fold_weights: p->wk,
 * each row's decay to the block's last row (forward) or from its first row (reverse), and
 * the decay of a state carried across the block (reverse: 0 past the last block). */
void rl_lin_gate_decays(struct lin_plan *p, int t0, int l);
/* The causal backward's pre-pass (attn_linear.c), gated or not: the states at block starts. */
void   rl_lin_record_prefix_states(struct lin_plan *p, const float *q, const float *k,
                                   const float *v);
double rl_lin_gate_fold_weights(struct lin_plan *p, int t0, int l, int reverse);
/* The decay of a state carried across the block alone (what rl_lin_gate_fold_weights
 * returns, without the rows' weights). */
double rl_lin_gate_block_decay(const struct lin_plan *p, int t0, int l, int reverse);
void   rl_lin_backward_gated(struct lin_plan *p, const struct rl_lin_grads *g, const float *dout,
                             const float *out, const float *den, const struct rl_lin_head *h,
                             float eps);

/* dc_m of the block's rows (attn_linear_gate.c): the gate's gradient before its suffix sum,
 * from the rows' v, dv (l x dv) and the plan's dden, eg. */
void rl_lin_gate_dc(float *dc, const struct lin_plan *p, const float *v, const float *dvg, int l,
                    float eps);

/* T5 with the gate: every pair (m, n <= m) weighted by e^{rel(n-m) + c_m - c_n}, tile by
 * tile (O(N^2 D); the weight has no recurrence).  p->rel is set; p->drel accumulates. */
void rl_lin_forward_quad(struct lin_plan *p, float *out, float *den, long *bad, const float *q,
                         const float *k, const float *v, float eps);
void rl_lin_backward_quad(struct lin_plan *p, const struct rl_lin_grads *g, const float *dout,
                          const float *out, const float *den, const struct rl_lin_head *h);

#endif
