/* sample.h -- the next token from a row of logits: greedy, temperature and top-k.
 *
 *   temperature 0 (or top_k 1): the argmax, the first maximum on ties;
 *   otherwise the k largest logits (all when top_k <= 0 or >= vocab; ties broken by the
 *   smaller id) are kept and token j is drawn with probability
 *   exp((l_j - l_max) / T) / sum over the kept, by one uniform of rng (inverse CDF in
 *   the order largest logit first), so a seed fixes the draw. */
#ifndef RL_SAMPLE_H
#define RL_SAMPLE_H

#include <stddef.h>
#include <stdint.h>
#include "../core/rng.h"

/* work: rl_sample_work_bytes(V) bytes of workspace. */
size_t  rl_sample_work_bytes(int V);
int32_t rl_sample(const float *logits, int V, double temperature, int top_k, struct rl_rng *rng,
                  void *work);

#endif
