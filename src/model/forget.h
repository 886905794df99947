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
 * thread that runs them.  Nothing here allocates. */
#ifndef RL_FORGET_H
#define RL_FORGET_H

/* logf (B*H, N) from x (B*N, D). */
void rl_forget_forward(float *logf, const float *x, const float *w, const float *b, int B, int N,
                       int H, int D);
/* In place: dlogf (B*H, N) becomes d a, the gradient at the pre-activation. */
void rl_forget_backward_act(float *dlogf, const float *logf, int B, int N, int H);
/* dx (B*N, D) += d a . wf, with da (B*H, N) from rl_forget_backward_act. */
void rl_forget_backward_dx(float *dx, const float *da, const float *w, int B, int N, int H, int D);
/* dw (H, D) += d a^T x;  db (H) += sum over tokens of d a (tokens in order). */
void rl_forget_backward_dw(float *dw, float *db, const float *da, const float *x, int B, int N,
                           int H, int D);

#endif
