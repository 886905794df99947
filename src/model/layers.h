/* layers.h -- the dense layers of the transformer (docs/model.md), llm.c style: each a pair of
 * plain functions <layer>_forward / <layer>_backward on raw float pointers.
 *
 * Argument order: outputs, saved-for-backward, inputs, weights, sizes.  Shapes use
 * T = rows (B*N tokens), C = features.  Backward functions *accumulate* into parameter
 * gradients (dw, db, dwte ...); what they do to input gradients is stated per function.
 * Loops are cut into pieces by the problem's size (core/threads.h, rl_pieces: blocks of
 * rows, of elements, of columns) and run on up to rl_threads_get() threads, or on the
 * calling thread inside a parallel region; GEMMs go through rl_sgemm (BLIS, transposes
 * instead of copies).  Every reduction has a fixed order that depends neither on thread
 * scheduling nor on thread count (row sums in row order, column sums by column blocks,
 * piece sums in piece order), so results are bitwise reproducible.  Nothing here allocates.
 * Derivations: docs/model.md. */
#ifndef RL_LAYERS_H
#define RL_LAYERS_H

#include <stddef.h>
#include <stdint.h>
#include "heads.h"

/* --- token embedding + input position encoding ---------------------------------------
 * out[b,n,:] = wte[tok[b,n],:] + g * pos[n,:]  (pos (N, C) or NULL; g = 1 for a learned
 * table, the learned gain pos.scale for the sinusoid).  tok must be in range. */
void rl_embed_forward(float *out, const int32_t *tok, const float *wte, const float *pos, float g,
                      int B, int N, int C);
/* The token rows [t0, t0 + n) of the batch alone (out and tok point at row t0). */
void rl_embed_forward_rows(float *out, const int32_t *tok, const float *wte, const float *pos,
                           float g, long t0, long n, int N, int C);
/* dwte[tok[b,n],:] += dout[b,n,:]; dpos[n,:] += dout[b,n,:] (dpos may be NULL); V: rows of
 * wte.  Each row is summed in token order (pieces own blocks of rows of the table). */
void rl_embed_backward(float *dwte, float *dpos, const float *dout, const int32_t *tok, int B,
                       int N, int C, int V);
/* The gain of a fixed table: dg[0] += sum over b, n, c of dout[b,n,c] * pos[n,c] (summed in
 * double, in a fixed order). */
void rl_pos_scale_backward(float *dg, const float *dout, const float *pos, int B, int N, int C);
/* Sinusoidal table: p[m,2t] = sin(m / 10000^(2t/C)), p[m,2t+1] = cos(same), in
 * double, for m < N (an odd C's last column is a sine). */
void rl_sinusoid_table(float *p, int N, int C);
/* Row m of that table alone (C floats; recurrent decoding). */
void rl_sinusoid_row(float *p, int m, int C);

/* --- LayerNorm (eps 1e-5, biased variance, as torch.nn.LayerNorm) ----------------------
 * out = (x - mean) * rstd * w + b per row; saves mean, rstd (T). */
#define RL_LN_EPS 1e-5f
void rl_layernorm_forward(float *out, float *mean, float *rstd, const float *x, const float *w,
                          const float *b, int T, int C);
/* dx += ..., dw += ..., db += ... */
void rl_layernorm_backward(float *dx, float *dw, float *db, const float *dout, const float *x,
                           const float *mean, const float *rstd, const float *w, int T, int C);

/* --- linear, PyTorch convention: W is (OC, C), y = x W^T + b ---------------------------
 * accumulate = 0: out = x W^T + b;  accumulate = 1: out += x W^T + b (a residual add).
 * b may be NULL. */
void rl_linear_forward(float *out, const float *x, const float *W, const float *b, int T, int C,
                       int OC, int accumulate);
/* dx (= or += by accumulate_dx) dout W;  dW += dout^T x;  db += sum over rows of dout.
 * dx, dW and db may each be NULL (the product or sum is then skipped). */
void rl_linear_backward(float *dx, float *dW, float *db, const float *dout, const float *x,
                        const float *W, int T, int C, int OC, int accumulate_dx);
/* db[c] += sum_t x[t,c] (column sums in row order). */
void rl_colsum_add(float *db, const float *x, int T, int C);
/* out[c] += ((x[c] + x[ld + c]) + x[2 ld + c]) + ... over `rows` rows ld floats apart, for
 * c < n, on the calling thread: each column summed in row order, from its first row. */
void rl_rows_sum_add(float *out, const float *x, int rows, size_t ld, size_t n);

/* --- GELU, tanh approximation (torch approximate="tanh") -------------------------------
 * gelu(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), computed as the
 * identical x * sigmoid(2u) with the vectorised exp of vexp.h.
 * Fused with the bias of the preceding linear: with x = h + b (the pre-activation, not
 * stored: h is left as it is), g = gelu(x), and gp = gelu'(x) where a backward will follow
 * (NULL: not computed).  What the backward needs is g (fc2's weight gradient) and gp;
 * keeping these two, rather than x and sigmoid(2u), leaves the backward one multiply per
 * element instead of a recomputation. */
void rl_bias_gelu_forward(float *g, float *gp, const float *h, const float *b, int T, int C);
/* The same with the rows of a training forward (gp not NULL) by a loop written for
 * AVX-512 (wide = 1; only where rl_vexp_wide()) or by the compiler's vectorised clones
 * (wide = 0): the same floats either way (tests/t_layers.c compares them).
 * rl_bias_gelu_forward picks the first where the CPU has AVX-512. */
void rl_bias_gelu_forward_wide(float *g, float *gp, const float *h, const float *b, int T, int C,
                               int wide);
/* dh = dg * gp, gp = gelu'(h) from the forward (overwrites; dh may equal dg). */
void rl_gelu_backward(float *dh, const float *dg, const float *gp, size_t n);
/* The same and fc1's bias gradient in one pass over (T, C) rows, on the calling thread:
 * dh = dh * gp in place (dh holds dg on entry); db[c] += sum over rows of dh[., c] (rows in
 * order, as rl_colsum_add). */
void rl_gelu_backward_sum(float *dh, float *db, const float *gp, int T, int C);

/* --- mean over positions (classifier) ---------------------------------------------------
 * out[b,:] = (1/N) sum_n x[b,n,:];  backward: dx[b,n,:] (=) dout[b,:] / N (overwrites). */
void rl_meanpool_forward(float *out, const float *x, int B, int N, int C);
void rl_meanpool_backward(float *dx, const float *dout, int B, int N, int C);

/* --- fused softmax + cross-entropy ------------------------------------------------------
 * Over rows r with mask[r] != 0 (mask NULL: every row): loss_r = lse_r - logits[r,target_r],
 * lse_r = log sum_j exp(logits[r,j]).  Writes lse (rows) and row_loss (rows, double, 0 for
 * unmasked rows) and, when row_ok is not NULL, row_ok (rows: 1 where a scored row's
 * prediction is right, else 0); returns sum of losses (in double: row order within pieces
 * of rows, the pieces in order), targets and correct predictions (argmax, first maximum on
 * ties, == target). */
double rl_softmax_ce_forward(float *lse, double *row_loss, uint8_t *row_ok, long *n_targets,
                             long *n_correct, const float *logits, const int32_t *targets,
                             const uint8_t *mask, int rows, int V);
/* dlogits[r,j] = scale * (softmax(logits[r])_j - [j == target_r]) on masked rows, 0 on
 * the others (overwrites). */
void rl_softmax_ce_backward(float *dlogits, const float *logits, const float *lse,
                            const int32_t *targets, const uint8_t *mask, float scale, int rows,
                            int V);

#endif
