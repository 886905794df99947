/* flops.c -- FLOPs per token of the transformer; see flops.h for the formula. */
#include "config.h"
#include "flops.h"

double rl_model_forward_flops_per_token(const struct rl_model_config *c, int N)
{
    const double D = c->d_model, d = (double)c->d_model / c->heads;
    double       attn;
    if (c->attn.kind == RL_ATTN_SOFTMAX) {
        double keys = c->attn.causal ? (N + 1) / 2.0 : (double)N;
        attn        = 4.0 * D * keys;
    } else {
        attn = 4.0 * D * d + 4.0 * D;
    }
    double per_layer = 24.0 * D * D + attn;
    if (c->attn.forget) per_layer += 2.0 * D * c->heads; /* the gate's projection wf */
    double head      = c->n_classes > 0 ? 2.0 * D * c->n_classes / N : 2.0 * D * c->vocab;
    return c->layers * per_layer + head;
}

double rl_model_train_flops_per_token(const struct rl_model_config *c, int N)
{
    return 3.0 * rl_model_forward_flops_per_token(c, N);
}
