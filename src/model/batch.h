/* batch.h -- what the model reads: B rows of N tokens with their targets.
 *   inputs  (B, N) int32 token ids in [0, vocab)
 *   targets (B, N) int32; for LM-style tasks the next-token target of each position
 *   mask    (B, N) uint8; 1 where the loss is taken (e.g. the copied half of copy)
 *   label   (B)    int32; classifiers only: class in [0, n_classes); -1 for causal rows
 * The tasks (experiment layer) fill batches; the model only reads them. */
#ifndef RL_BATCH_H
#define RL_BATCH_H

#include <stdint.h>
#include "../core/status.h"

struct rl_batch {
    int      B, N;
    int32_t *inputs, *targets, *label; /* label: -1 for causal tasks */
    uint8_t *mask;
};

/* All four arrays, uninitialised; label always allocated. */
rl_status rl_batch_alloc(struct rl_batch *b, int B, int N);
void      rl_batch_free(struct rl_batch *b);

#endif
