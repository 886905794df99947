/* batch.c -- allocation of the token batches the model reads. */
#include "config.h"
#include "batch.h"
#include "../core/util.h"

#include <stdint.h>
#include <string.h>

rl_status rl_batch_alloc(struct rl_batch *b, int B, int N)
{
    memset(b, 0, sizeof *b);
    if (B < 1 || N < 1 || (size_t)B > SIZE_MAX / sizeof(int32_t) / (size_t)N)
        RL_FAIL(RL_EINVAL, "batch: B = %d, N = %d must be >= 1", B, N);
    size_t n   = (size_t)B * (size_t)N;
    b->B       = B;
    b->N       = N;
    b->inputs  = rl_alloc(n * sizeof *b->inputs);
    b->targets = rl_alloc(n * sizeof *b->targets);
    b->mask    = rl_alloc(n * sizeof *b->mask);
    b->label   = rl_alloc((size_t)B * sizeof *b->label);
    if (!b->inputs || !b->targets || !b->mask || !b->label) {
        rl_batch_free(b);
        RL_FAIL(RL_ENOMEM, "batch: cannot allocate %d x %d tokens", B, N);
    }
    return RL_OK;
}

void rl_batch_free(struct rl_batch *b)
{
    rl_free(b->inputs);
    rl_free(b->targets);
    rl_free(b->mask);
    rl_free(b->label);
    memset(b, 0, sizeof *b);
}
