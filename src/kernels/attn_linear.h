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
 * Backward overwrites dq, dk, dv; it recomputes prefix states rather than storing N.
 * Forget gate (causal): every pair's weight in numerator and denominator times
 * e^{c_m - c_n}, c the cumulative log gate: the scans decay row by row. */
#ifndef RL_ATTN_LINEAR_H
#define RL_ATTN_LINEAR_H

#include <stddef.h>
#include "attn_opts.h"

/* One head's operands: q, k (N, d), v (N, dv); rope (eq. 19 or the input place, as
 * o->rope_place) or NULL; logf (N log gates <= 0, causal) or NULL; rel, T5's relative
 * bias (2N-1), with the gate only (without it T5 takes the FFT path, attn_toeplitz.h). */
struct rl_lin_head {
    const float          *q, *k, *v;
    const struct rl_rope *rope;
    const float          *logf;
    int                   N, d, dv;
    const float          *rel;
    /* the gate's c (N; read with T5 only), made once for the call, and its decays e^{logf}
     * (N; without T5), the pieces form's (rl_attn_linear_decays); NULL: the plan makes
     * whichever it reads */
    const double *cum, *dec;
    /* Shen's column maxima of k (d) and, non-causal, the sums Ztot (d) of exp(k - colmax)
     * over all rows, the pieces form's (rl_attn_linear_maxima); NULL: the plan makes them
     * in a pass over the head */
    const float  *colmax;
    const double *ztot;
    /* the pieces form's store of the head's blocks' features (rl_attn_linear_store_floats)
     * and, per block, the sides it holds (SIDE_K, SIDE_Q; SIDE_DOUT: the backward's dnum
     * and dden), built by this call or kept from its forward; NULL: every phase builds the
     * features of its block again */
    float         *store;
    unsigned char *have;
};

/* One head's gradients: dq, dk (N, d), dv (N, dv), and dlogf (N) with a gate, overwritten;
 * drel (2N-1 doubles, T5 with the gate), accumulated, or NULL. */
struct rl_lin_grads {
    float  *dq, *dk, *dv, *dlogf;
    double *drel;
};

size_t rl_attn_linear_scratch_floats(const struct rl_attn_opts *o, int N, int d, int dv);

void rl_attn_linear_forward(float *out, float *den, long *n_bad, const struct rl_lin_head *h,
                            const struct rl_attn_opts *o, float *scratch);
void rl_attn_linear_backward(const struct rl_lin_grads *g, const float *dout, const float *out,
                             const float *den, const struct rl_lin_head *h,
                             const struct rl_attn_opts *o, float *scratch);

/* The pieces form (attn_linear_split.c): each head cut into blocks of RL_LIN_BLOCK rows, for
 * every map (no bias PE, or ALiBi with the gate as a constant log gate; RoPE and the gate
 * allowed).  A head's states st
 * (rl_attn_linear_state_doubles) pass between the phases:
 * forward  sums (each block) -> prefix (the head) -> rows (each block);
 * backward sums (each block: the forward-running and the reverse-running states' increments)
 *          -> prefix (the head: the prefixes and the suffixes) -> rows (each block), after
 *          which, with the gate, dlogf holds dc per row and the caller takes its suffix sums
 *          (rl_attn_gate_suffix).
 * Shen's map (rl_attn_linear_shen) first takes the column maxima of k: max (each block) ->
 * maxima (the head; non-causal, also Ztot), which every later phase reads
 * (rl_attn_linear_colmax, rl_attn_linear_ztot) through rl_lin_head.colmax and .ztot.
 * Causal, its queries need the sum of u over the rows before them, so its backward takes
 * the reverse increments in a phase of their own, and its dk a last phase:
 *          sums (the forward-running states and Z) -> prefix (the head: prefixes only)
 *          -> rsums (each block: the reverse states' increments) -> suffix (the head)
 *          -> rows (each block: dk without the later blocks' dZ) -> shen_tail (the head:
 *          the suffix of the blocks' dZ; the gate's too) -> fix (each block: dk += u times
 *          that suffix, rotated back with the input placement).
 * Non-causal, the column softmax's backward needs the column sums over all rows:
 *          sums -> prefix (the totals) -> rows (each block: its column sums) -> shen_tail
 *          (their total) -> fix (each block: dk -= phi_k times the total).
 * Any order of the blocks within a phase gives the same bits. */
/* The options the generic kernels (attn_linear.c, attn_linear_split.c) see for a plan's
 * options: ALiBi's causal weight e^{-slope (m-n)} is the constant log gate -slope of every
 * row, so ALiBi with the gate is the gate with log gates lambda - slope, and causal ALiBi
 * by the decayed scan (alibi_scan) is the gate with log gates 0 - slope: pe none, forget
 * on, the slope subtracted where the decays are made (rl_attn_linear_decays, or the whole
 * head's log gates in attn_run_linear.c).  Others: unchanged. */
struct rl_attn_opts rl_attn_linear_kernel_opts(const struct rl_attn_opts *o);
/* Whether the generic kernels can run the options in pieces: no PE or RoPE, after
 * rl_attn_linear_kernel_opts. */
int rl_attn_linear_splits(const struct rl_attn_opts *o);
/* Whether a call of G heads runs in pieces (Shen's map: only with few heads), and how many
 * heads' states a plan for calls of up to G heads keeps. */
int    rl_attn_linear_pieces(const struct rl_attn_opts *o, int G);
int    rl_attn_linear_state_heads(const struct rl_attn_opts *o, int G);
int    rl_attn_linear_blocks(int N);
size_t rl_attn_linear_state_doubles(const struct rl_attn_opts *o, int N, int d, int dv);
/* Floats per head of the store (rl_lin_head.store) that keeps each block's features from
 * the first phase of a call that builds them to the later ones (the maps without Shen's
 * normaliser; 0 for Shen's, whose query features depend on the running Z). */
size_t rl_attn_linear_store_floats(const struct rl_attn_opts *o, int N, int d, int dv);
/* A call's flags of its G heads' blocks (rl_lin_head.have), before its first phase: none
 * held, or (kept: a backward reading the store its forward filled) both sides' features. */
void rl_attn_linear_store_begin(unsigned char *have, int G, int N, int kept);
/* The bytes of that store for a call of G heads: 0 where the call does not run in pieces,
 * has one block (N <= RL_LIN_BLOCK: no phase reads another's features), where the map has
 * no store, or above RL_ATTN_STORE_BYTES (attn.h). */
double rl_attn_linear_store_bytes(const struct rl_attn_opts *o, int G, int N, int d, int dv);
/* The gate's decays dec[m] = e^{logf[m] - slope} of block b's rows (the pieces form reads
 * them from rl_lin_head.dec in every phase after the first, which makes them); slope:
 * ALiBi's slope of the head with the gate (the float logf[m] - slope, as the whole-head
 * form's log gates), else 0. */
void rl_attn_linear_decays(double *dec, const float *logf, float slope, int b, int N);
/* One block of a prefix (or, in reverse block order, a suffix) of the blocks' states: run
 * (n doubles) moves past the block, run = bd run + x, bd the decay across the block, from
 * the block's increments x; exclusive: x becomes the state entering the block (else x is
 * kept: the totals alone). */
void rl_lin_carry(double *x, double *run, size_t n, double bd, int exclusive);
int  rl_attn_linear_shen(const struct rl_attn_opts *o);
void rl_attn_linear_max(double *st, const struct rl_lin_head *h, const struct rl_attn_opts *o,
                        int b, float *scratch);
void rl_attn_linear_maxima(double *st, const struct rl_lin_head *h, const struct rl_attn_opts *o);
const float  *rl_attn_linear_colmax(const double *st, const struct rl_attn_opts *o, int N, int d,
                                    int dv);
const double *rl_attn_linear_ztot(const double *st, const struct rl_attn_opts *o, int N, int d,
                                  int dv);
void rl_attn_linear_fwd_sums(double *st, const struct rl_lin_head *h, const struct rl_attn_opts *o,
                             int b, float *scratch);
void rl_attn_linear_fwd_prefix(double *st, const struct rl_lin_head *h,
                               const struct rl_attn_opts *o, float *scratch);
long rl_attn_linear_fwd_rows(float *out, float *den, const double *st, const struct rl_lin_head *h,
                             const struct rl_attn_opts *o, int b, float *scratch);
void rl_attn_linear_bwd_sums(double *st, const float *dout, const float *out, const float *den,
                             const struct rl_lin_head *h, const struct rl_attn_opts *o, int b,
                             float *scratch);
void rl_attn_linear_bwd_prefix(double *st, const struct rl_lin_head *h,
                               const struct rl_attn_opts *o, float *scratch);
void rl_attn_linear_bwd_rows(const struct rl_lin_grads *g, const double *st, const float *dout,
                             const float *out, const float *den, const struct rl_lin_head *h,
                             const struct rl_attn_opts *o, int b, float *scratch);
void rl_attn_linear_bwd_rsums(double *st, const float *dout, const float *out, const float *den,
                              const struct rl_lin_head *h, const struct rl_attn_opts *o, int b,
                              float *scratch);
void rl_attn_linear_bwd_suffix(double *st, const struct rl_lin_head *h,
                               const struct rl_attn_opts *o, float *scratch);
void rl_attn_linear_shen_tail(double *st, const struct rl_lin_head *h, const struct rl_attn_opts *o,
                              float *scratch);
void rl_attn_linear_bwd_fix(float *dk, const double *st, const struct rl_lin_head *h,
                            const struct rl_attn_opts *o, int b, float *scratch);

/* T5 with the forget gate (attn_linear_quad.c) in pieces, in calls of fewer than
 * RL_LIN_QUAD_SPLIT_HEADS heads whose parts fit RL_ATTN_T5_PARTS_BYTES (attn.h); else one
 * piece per head.  Phases: features (the head: A, C of every row into its store; Shen's
 * column maxima) -> rows (each query block: its tiles, the head loop's bits).  Backward:
 * features -> query (each query block: dnum, dden, dA and dc's row share; T5's part of the
 * block) -> key (each key block: dv, dC and dc's column share) -> head (dlogf's suffix, dq
 * and dk by the chain rule); then the callers add the parts into drel
 * (rl_attn_linear_quad_drel). */
#define RL_LIN_QUAD_SPLIT_HEADS 16
struct rl_lin_quad { /* one head's store (rl_attn_linear_quad_store_floats) and parts */
    float  *Af, *Cf, *dAf, *dCf, *dnum, *colmax;
    double *dden, *dcq, *dck, *part;
};
int    rl_attn_linear_quad_pieces(const struct rl_attn_opts *o, int G, int N);
size_t rl_attn_linear_quad_store_floats(int N, int d, int dv);
/* T5's parts of a head: a part per query block over the lags it reaches */
size_t             rl_attn_linear_quad_part_doubles(int N);
struct rl_lin_quad rl_attn_linear_quad_store(float *base, double *part, int N, int d, int dv);
void rl_attn_linear_quad_features(const struct rl_lin_quad *s, const struct rl_lin_head *h,
                                  const struct rl_attn_opts *o, float *scratch);
long rl_attn_linear_quad_fwd_rows(float *out, float *den, const struct rl_lin_quad *s,
                                  const struct rl_lin_head *h, const struct rl_attn_opts *o, int b,
                                  float *scratch);
void rl_attn_linear_quad_bwd_query(const struct rl_lin_quad *s, const float *dout, const float *out,
                                   const float *den, const struct rl_lin_head *h,
                                   const struct rl_attn_opts *o, int b, float *scratch);
void rl_attn_linear_quad_bwd_key(float *dvg, const struct rl_lin_quad *s,
                                 const struct rl_lin_head *h, const struct rl_attn_opts *o, int b,
                                 float *scratch);
void rl_attn_linear_quad_bwd_head(const struct rl_lin_grads *g, const struct rl_lin_quad *s,
                                  const struct rl_lin_head *h, const struct rl_attn_opts *o,
                                  float *scratch);
/* drel[r0 .. r1) += the parts (head_doubles apart) of heads g = h, h + H, ... < G, each
 * head's blocks in order */
void rl_attn_linear_quad_drel(double *drel, const double *parts, size_t head_doubles, int G, int H,
                              int h, int N, int r0, int r1);

#endif
