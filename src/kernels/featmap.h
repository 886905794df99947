/* featmap.h -- feature maps of linear attention (elu(x)+1, softmax, exp), rows of length d.
 *
 * query side (all maps keep the dimension d):
 *   elu1:          phi(x) = elu(x) + 1
 *   softmax, exp:  phi(x) = softmax of x over its d features
 * key side:
 *   elu1:          phi(x) = elu(x) + 1
 *   exp:           phi(x) = exp(x)
 *   softmax:       exp(k[n,f] - c_f) with c_f = max_n k[n,f] over the rows given; the
 *                  normalisation over positions (all of them, or the prefix when causal)
 *                  is the kernel's job -- the shift cancels exactly in it.
 * Backward functions overwrite dx given dphi and phi (every map's derivative is a function
 * of phi). */
#ifndef RL_FEATMAP_H
#define RL_FEATMAP_H

#include "attn_opts.h"

void rl_fmap_q_forward(float *phi, const float *x, int N, int d, enum rl_fmap f);
void rl_fmap_q_backward(float *dx, const float *dphi, const float *phi, int N, int d,
                        enum rl_fmap f);
/* colmax (d floats): c_f = max_n x[n,f] over the N rows (-inf when N = 0). */
void rl_fmap_colmax(float *colmax, const float *x, int N, int d);
/* For softmax, colmax (d floats, may be NULL otherwise) receives c_f. */
void rl_fmap_k_forward(float *phi, float *colmax, const float *x, int N, int d, enum rl_fmap f);
/* Elementwise part only (elu1: dphi*elu'(x), from phi; exp and softmax: dphi*phi). */
void rl_fmap_k_backward(float *dx, const float *dphi, const float *phi, int N, int d,
                        enum rl_fmap f);

#endif
