/* attn_linear_impl.h -- pieces of linear attention shared by attn_linear*.c (internal).
 *
 * Every variant of SPEC 2.2/2.3 without a bias PE reduces to one generic form with
 * per-row feature matrices (docs/attention_linear.md):
 *
 *   num_m = sum_{n in P(m)} (A_m . C_n) v_n        A, C: (N, D)
 *   den_m = sum_{n in P(m)} (B_m . E_n) + eps      B, E: (N, Dd)
 *   o_m   = num_m / den_m
 *
 * P(m) = all n (non-causal) or n <= m (causal).  attn_linear.c builds A, B, C, E from
 * q, k (feature map, RoPE, Shen's normaliser) and maps their gradients back; this file's
 * functions (attn_linear_scan.c) do the O(N D dv) sums:
 *  - non-causal: S = C^T V by associativity, num = A S (GEMMs);
 *  - causal: a prefix scan (a register-tiled rank-1-update kernel), the float state folded
 *    into a double one every RL_LIN_CHUNK rows by a GEMM of the chunk's increment.
 * The denominator is O(N Dd): a (prefix) sum of E in double, dotted with B. */
#ifndef RL_ATTN_LINEAR_IMPL_H
#define RL_ATTN_LINEAR_IMPL_H

#include <stddef.h>
#include "rope.h"

/* Rows between folds of the causal scan's float state into its double state. */
#define RL_LIN_CHUNK 256
/* Rows per block when the non-causal state S = C^T V is summed (double between blocks). */
#define RL_LIN_BLOCK 1024

/* Floats of workspace for the numerator functions (forward and backward), O(D dv). */
size_t rl_lin_num_work_floats(int D, int dv);

/* num (N, dv) = the numerator above.  work: rl_lin_num_work_floats, 8-byte aligned. */
void rl_lin_num_forward(float *num, const float *A, const float *C, const float *V, int N, int D,
                        int dv, int causal, float *work);

/* Given dnum (N, dv): overwrites dA, dC (N, D) and dV (N, dv). */
void rl_lin_num_backward(float *dA, float *dC, float *dV, const float *dnum, const float *A,
                         const float *C, const float *V, int N, int D, int dv, int causal,
                         float *work);

/* den[m] = (float)(B_m . z_m + eps) with z_m = sum_{n in P(m)} E_n in double; out[m] /= den[m]
 * (out holds num on entry; may be NULL).  Returns the rows with B_m . z_m <= eps.
 * z: Dd doubles of workspace. */
long rl_lin_den_forward(float *den, float *out, int dv, const float *B, const float *E, int N,
                        int Dd, int causal, float eps, double *z);

/* dden (N) given: dB += dden_m z_m, dE_n += sum_{m in P^-1(n)} dden_m B_m (accumulates, so
 * that B and A may share storage).  z: 2*Dd doubles of workspace. */
void rl_lin_den_backward(float *dB, float *dE, const double *dden, const float *B, const float *E,
                         int N, int Dd, int causal, double *z);

/* Causal Shen map with RoPE at the feature place (attn_linear_shen.c).  The rotation
 * mixes features a, b of a pair whose prefix normalisers Z_m[a], Z_m[b] differ, so the
 * numerator keeps a state per original feature and per cos / sin: with P = R_m phi_q(q_m),
 * u_n = exp(k_n - colmax), and per pair (a, b) at angle n theta:
 *   C'_n = [u_n cos(n theta) | u_n sin(n theta)]                         (N, 2d)
 *   A'_m = [P_a/Z_a, P_b/Z_b | P_b/Z_a, -P_a/Z_b]  at (a, b | a, b)       (N, 2d)
 * so that A'_m . C'_n = (R_m phi_q)^T R_n (u_n / Z_m).  Features past rope_dims: P_f/Z_f
 * against u_f, zero in the sin half.  B (may be NULL): phi_q / Z_m (N, d), the plain
 * denominator's queries.  Z: d doubles, row: d floats of workspace. */
void rl_lin_shen_rope_features(float *A, float *C, float *B, const float *phq, const float *u,
                               const struct rl_rope *rope, int N, int d, double *Z, float *row);

/* Backward of the above: dphq (N, d) and dk (N, d) (through u = exp(k - colmax)) from dA, dC
 * (N, 2d) and, for the plain denominator, dB, dE (N, d) (else NULL).  A, B as built by the
 * forward.  Z: d doubles, dZ: N d doubles, row: d floats. */
void rl_lin_shen_rope_backward(float *dphq, float *dk, const float *dA, const float *dC,
                               const float *dB, const float *dE, const float *A, const float *B,
                               const float *u, const struct rl_rope *rope, int N, int d,
                               double *Z, double *dZ, float *row);

#endif
