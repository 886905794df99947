/* flops.h -- the floating-point work of one training token, by the formula of
 * docs/performance.md: what the math needs (multiply-adds count 2), so that a measured
 * throughput can be stated as GFLOP/s and as a share of the CPU's FMA peak. */
#ifndef RL_FLOPS_H
#define RL_FLOPS_H

#include "model.h"

/* Forward FLOPs per token of model c on sequences of length N:
 *   per layer  24 D^2                (Q, K, V, O projections 8 D^2; MLP 16 D^2)
 *            + attention: softmax    4 D keys      (q.k and p.v over keys = N, or
 *                                                   (N + 1) / 2 on average when causal)
 *                         linear     4 D d + 4 D   (phi(k) v^T into the state and
 *                                                   phi(q)^T S; the denominator's sums)
 *            + 2 D H                 with the forget gate (its projection wf, H x D)
 *   head       2 D V                 (V = vocab, or the classes of a classifier, which
 *                                     pools first: counted per token as 2 D V / N)
 * Elementwise work (LayerNorm, GELU, softmax exponentials, RoPE, feature maps) is not
 * counted. */
double rl_model_forward_flops_per_token(const struct rl_model_config *c, int N);
/* Forward + backward: 3 x the forward (each product's backward is two products). */
double rl_model_train_flops_per_token(const struct rl_model_config *c, int N);

#endif
