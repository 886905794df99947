/* forget.h -- the forget gate's projection (the Forgetting Transformer, Lin et al. 2025;
 * the scalar-per-head gate of gated linear attention).  For a block's LN1 output x
 * (B, N, D) and the block's tensors wf (H, D) and bf (H):
 *
 *     a_h[m]      = wf_h . x_m + bf_h
 *     lambda_h[m] = log sigmoid(a_h[m]) = -softplus(-a_h[m])  <= 0
 *
 * written in the attention's heads layout logf (G, N), G = B*H, row g = b*H + h, which
 * the attention kernels read as log forget values (attn.h: the pair n <= m weighs
 * exp(sum_{l=n+1}^{m} lambda[l])).
 *
 * Backward: d a = d lambda * sigmoid(-a) = d lambda * (1 - exp(lambda)), computed as
 * -expm1(lambda), which keeps its relative accuracy for gates near 1 (lambda -> 0-), then
 * dx += d a . wf, dwf += d a^T x, dbf += sum d a.  Loops are serial in a fixed order (the
 * projection is H/(3D) of the Q/K/V projection's work): results do not depend on the
 * thread that runs them, and the model calls them per chunk of token rows.  Nothing here allocates.
 */
#ifndef RL_FORGET_H
#define RL_FORGET_H

/* The token rows [t0, t0 + n) of a batch of sequences of length N (token t is position
 * t mod N of sequence t / N), H heads, model width D. */
struct rl_forget_rows {
    long t0;
    int  n, N, H, D;
};

/* x is the batch's (B*N, D) LN1 output, logf its (B*H, N) log gates, both whole; the rows'
 * log gates are written. */
void rl_forget_forward_rows(float *logf, const float *x, const float *w, const float *b,
                            const struct rl_forget_rows *r);

/* The backward of the same rows: dlogf (B*H, N, whole) holds the kernel's gradient at the
 * rows' log gates and becomes, in place, the gradient at the pre-activation d a; then
 * dx (n, D: the rows' own) += d a . wf, dw (H, D) += d a^T x and db (H) += sum of d a, the
 * rows taken in order. */
void rl_forget_backward_rows(float *dx, float *dw, float *db, float *dlogf, const float *logf,
                             const float *x, const float *w, const struct rl_forget_rows *r);

#endif
