/* attn_linear_impl.h -- pieces of linear attention shared by attn_linear*.c (internal).
 *
 * Every variant of linear attention without a bias PE reduces to one generic form with
 * per-row feature matrices (docs/attention_linear.md):
 *
 *   num_m = sum_{n in P(m)} (A_m . C_n) v_n        A, C: (N, D)
 *   den_m = sum_{n in P(m)} (B_m . E_n) + eps      B, E: (N, Dd)
 *   o_m   = num_m / den_m
 *
 * P(m) = all n (non-causal) or n <= m (causal).  attn_linear.c builds A, B, C, E from
 * q, k (feature map, RoPE, Shen's normaliser) and maps their gradients back; this file's
 * functions (attn_linear_scan.c) do the O(N D dv) sums, one block of rows at a time:
 *  - causal: a prefix scan (a register-tiled rank-1-update kernel) whose state is carried
 *    from block to block; the float state is folded into a double one after every block
 *    by a GEMM of the block's increment;
 *  - non-causal: S = C^T V by associativity (GEMMs summed in double), num = A S;
 *  - the denominator, O(N Dd): a (prefix) sum of E in double, dotted with B.
 * All row pointers below point at a block's first row; l <= RL_LIN_BLOCK rows. */
#ifndef RL_ATTN_LINEAR_IMPL_H
#define RL_ATTN_LINEAR_IMPL_H

#include <stddef.h>
#include "rope.h"

/* Rows per block: features, scans and gradients are computed block by block so that the
 * working set stays in L2; also the interval between folds of the scan's float state. */
#define RL_LIN_BLOCK 256

/* The rows of the block that starts at row t0 of N: RL_LIN_BLOCK, or what is left. */
static inline int rl_lin_block_rows(int N, int t0)
{
    return N - t0 < RL_LIN_BLOCK ? N - t0 : RL_LIN_BLOCK;
}

/* A scan state carried across blocks:
 *   out_i = sum_x Q_i[x] S_i[x][:],  S_i = sum over the rows n scanned so far, i included,
 *                                          of K_n[x] W_n[:]              (X x Y) */
struct rl_lin_scan {
    int     X, Y, Yp;
    float  *S, *T, *wb, *ob, *zero; /* float state (X x Yp), GEMM output, row staging */
    double *Sd;                     /* double state (X x Y) */
};

size_t rl_lin_scan_floats(int X, int Y);
/* Start from Sd0 (X x Y doubles) or from zero when Sd0 is NULL.  work: rl_lin_scan_floats. */
void rl_lin_scan_init(struct rl_lin_scan *s, float *work, int X, int Y, const double *Sd0);
/* The l rows of a block, in order or reversed (i = l-1 .. 0).  fold: then rl_lin_scan_fold. */
void rl_lin_scan_rows(struct rl_lin_scan *s, float *out, const float *Q, const float *K,
                      const float *W, int l, int reverse, int fold);
/* Adds the block's increment K^T W to the double state (one GEMM) and restarts the float
 * state from it, so rounding does not build up over N.  twin (may be NULL): a scan whose
 * state is the transpose of this one's (Y x X); it gets the same increment, transposed. */
void rl_lin_scan_fold(struct rl_lin_scan *s, const float *K, const float *W, int l,
                      struct rl_lin_scan *twin);

/* The decayed scan of the forget gate: before row i's update (in scan order) the state is
 * multiplied by decay[i] (row index as in the block; reversed scans pass the decay that
 * leads from row i+1 to row i).  No fold: the caller folds with rl_lin_scan_fold_decay.
 * The state is at its true scale on return (the scan runs in a scaled frame inside). */
void rl_lin_scan_rows_decay(struct rl_lin_scan *s, float *out, const float *Q, const float *K,
                            const float *W, int l, int reverse, const float *decay);
/* Sd = block_decay Sd + sum_n wk[n] K_n^T W_n (K_n's weight: its decay to the state's
 * position), then the float state restarts from it; the twin gets the same, transposed.
 * Kw: l x X floats of workspace. */
void rl_lin_scan_fold_decay(struct rl_lin_scan *s, const float *K, const float *W, int l,
                            struct rl_lin_scan *twin, const double *wk, double block_decay,
                            float *Kw);

/* Y (l x n) = X with row i multiplied by w[i] (in float). */
void rl_lin_weight_rows(float *Y, const float *X, const double *w, int l, int n);

/* c[m] = sum_{l<=m} logf[l] in double. */
void rl_lin_cumsum(double *c, const float *logf, int N);

/* Sd (nx x ny, double) += X^T Y over l rows (one GEMM into T, nx x ny floats). */
void rl_lin_gemm_acc(double *Sd, float *T, const float *X, int nx, const float *Y, int ny, int l);
/* z (n) += sum of the l rows of E (n wide);  g (n) += sum_m w_m B_m. */
void rl_lin_sum_rows(double *z, const float *E, int l, int n);
void rl_lin_wsum_rows(double *g, const double *w, const float *B, int l, int n);

/* A block's denominator operands: the query-side features B and the key-side features E
 * (l rows of Dd), the running states z (sums of E) and g (sums of dden B), Dd doubles each,
 * and the forget gate's decays (NULL without it): a[i] = e^{lambda_i} of the block's row i,
 * a_next[i] = e^{lambda_{i+1}} (the decay from row i+1 back to row i). */
struct rl_lin_den {
    const float  *B, *E;
    double       *z, *g;
    const double *a, *a_next;
    int           l, Dd;
};

/* den[m] = (float)(B_m . z_m + eps) for the block's rows; out[m] (num on entry, rows of dv)
 * /= den[m].  Causal: z is the prefix sum of E before the block and is advanced row by row
 * (z_m includes E_m); non-causal: z is the total and is not changed.
 * Returns the rows with B_m . z_m <= eps. */
long rl_lin_den_rows(float *den, float *out, int dv, const struct rl_lin_den *n, int causal,
                     float eps);
/* Accumulates dB_m += dden_m z_m and dE_n += g_n, g_n = sum_{m >= n} dden_m B_m: causal, z
 * is the prefix before the block (advanced forward) and g the suffix after it (advanced
 * backward over the rows); non-causal, both are totals.  add = 0: dB and dE are written
 * as if zeroed first (their earlier contents are not read). */
void rl_lin_den_rows_backward(float *dB, float *dE, const double *dden, const struct rl_lin_den *n,
                              int causal, int add);

/* Gated (causal) denominators: z_m = a_m z_{m-1} + E_m (double); the backward's prefix z
 * likewise and the suffix g_n = a_next[n] g_{n+1} + dden_n B_n, dE_n += g_n, eg[n] =
 * E_n . g_n. */
long rl_lin_den_rows_decay(float *den, float *out, int dv, const struct rl_lin_den *n, float eps);
void rl_lin_den_rows_backward_decay(float *dB, float *dE, double *eg, const double *dden,
                                    const struct rl_lin_den *n);
/* z = block_decay z + sum_i wk[i] E_i over l rows of n. */
void rl_lin_sum_rows_decay(double *z, const float *E, int l, int n, const double *wk,
                           double block_decay);

/* Causal Shen map with RoPE at the feature place (attn_linear_shen.c).  The rotation
 * mixes features a, b of a pair whose prefix normalisers Z_m[a], Z_m[b] differ, so the
 * numerator keeps a state per original feature and per cos / sin: with P = R_m phi_q(q_m),
 * u_n = exp(k_n - colmax), and per pair (a, b) at angle n theta:
 *   C'_n = [u_n cos(n theta) | u_n sin(n theta)]                         (l, 2d)
 *   A'_m = [P_a/Z_a, P_b/Z_b | P_b/Z_a, -P_a/Z_b]  at (a, b | a, b)       (l, 2d)
 * so that A'_m . C'_n = (R_m phi_q)^T R_n (u_n / Z_m).  Features past rope_dims: P_f/Z_f
 * against u_f, zero in the sin half.  Rows are positions pos0 .. pos0+l-1.
 * The functions below take a block of the map (struct rl_lin_shen_block):
 * keys: C' (l, 2d) from u.  queries: A' (l, 2d) and, when B is not NULL, B = phi_q / Z_m
 * (l, d), the plain denominator's queries; Z holds the prefix sum of u before the block
 * and is advanced. */
struct rl_lin_shen_block {
    const struct rl_rope *rope;
    const float          *u;    /* exp(k - colmax) of the block's rows (l x d) */
    double               *Z;    /* d running sums: see each function */
    float                *work; /* 5d floats of workspace (64-byte aligned) */
    int                   l, d, pos0;
};
void rl_lin_shen_rope_keys(float *C, const struct rl_lin_shen_block *b);
void rl_lin_shen_rope_queries(float *A, float *B, const float *phq,
                              const struct rl_lin_shen_block *b);

/* Backward, query side (rows in order, Z the prefix of u, advanced as above): dphq (l, d)
 * and dZ_m (l x d doubles) from dA' (l, 2d) and, for the plain denominator, dB (l, d)
 * (else NULL). */
void rl_lin_shen_rope_query_backward(float *dphq, double *dZ, const float *dA, const float *dB,
                                     const float *A, const float *B,
                                     const struct rl_lin_shen_block *b);

/* Backward, key side (rows reversed): dk (l, d) through u = exp(k - colmax) from dC' (l, 2d),
 * dE (l, d, plain denominator, else NULL) and dZ (consumed); Z here is the suffix sum of dZ
 * after the block and is advanced. */
void rl_lin_shen_rope_key_backward(float *dk, const float *dC, const float *dE, double *dZ,
                                   const struct rl_lin_shen_block *b);

#endif
