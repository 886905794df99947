/* adamw.h -- AdamW (Loshchilov and Hutter 2019) with PyTorch's torch.optim.AdamW semantics,
 * a warm-up + cosine learning-rate schedule and global-norm gradient clipping, on flat buffers.
 *
 * One update, t = 1, 2, ... (t = s + 1 for update s), for every parameter p with gradient g
 * and moments m, v (zero at t = 1), exactly in this order (torch.optim.AdamW,
 * amsgrad=False, maximize=False):
 *   1. p <- p * (1 - lr_t * wd)              decoupled decay; wd = 0 for tensors without decay
 *   2. m <- beta1 * m + (1 - beta1) * g
 *   3. v <- beta2 * v + (1 - beta2) * g * g
 *   4. denom = sqrt(v) / sqrt(1 - beta2^t) + eps
 *   5. p <- p - (lr_t / (1 - beta1^t)) * m / denom
 * Scalars (bias corrections, step size, 1 - lr_t wd) are formed in double and rounded to
 * float once; the element updates are float32, as PyTorch's float32 tensors.
 * Decay applies to the token embedding and every Linear weight (struct rl_tensor_info's
 * decay flag), never to biases, LayerNorm parameters, pos.weight, pos.scale or T5 tables.
 *
 * Every function here is elementwise or a fixed-order reduction: bitwise reproducible for
 * a given thread count. */
#ifndef RL_ADAMW_H
#define RL_ADAMW_H

#include <stddef.h>
#include <stdint.h>
#include "model.h"

struct rl_adamw_opts {
    double lr;           /* peak learning rate [1e-3] */
    double beta1, beta2; /* [0.9, 0.999] */
    double eps;          /* [1e-8] */
    double weight_decay; /* [0.01] */
};

void rl_adamw_opts_default(struct rl_adamw_opts *o);

/* Learning rate of update s = 0, 1, ... (docs/model.md), T = total_steps - 1, W = warmup:
 *   s < W:            lr * (s + 1) / W
 *   W <= s, T > W:    lr * (r + (1 - r) * 0.5 * (1 + cos(pi * (s - W) / (T - W))))
 *   W <= s, T <= W:   lr             (warm-up only: no cosine phase to run)
 * r = min_lr_ratio; s beyond T is treated as T. */
double rl_lr_schedule(int64_t s, double lr, int warmup, double min_lr_ratio, int64_t total_steps);

/* ||g||_2, squares summed in double. */
double rl_grad_norm(const float *g, size_t n);
/* g <- g * min(1, c / (norm + 1e-6)); nothing when c <= 0 (clipping off). */
void rl_clip(float *g, size_t n, double c, double norm);

/* One AdamW update of n contiguous floats; decay: whether weight decay applies. */
void rl_adamw_update(float *p, const float *g, float *m, float *v, size_t n, int decay, double lr_t,
                     const struct rl_adamw_opts *o, int64_t t);
/* The update over a model's whole flat buffers (params, grads, m, v share the layout of
 * the tensor table), tensor by tensor with each tensor's decay flag. */
void rl_adamw_step(float *params, const float *grads, float *m, float *v,
                   const struct rl_tensor_info *tensors, int n_tensors, double lr_t,
                   const struct rl_adamw_opts *o, int64_t t);

#endif
