/* task_common.c -- what every generator family shares: the per-row generator, the
 * scratch buffer and the unigram baseline. */
#include "config.h"
#include "task_common.h"
#include "../core/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull; /* splitmix64's increment and finaliser */
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void rl_task_row_rng(struct rl_rng *r, const struct rl_task *t, int split, int64_t step, int N,
                     int row)
{
    /* chained, so that (split, step) and (step, split) swaps land on different streams */
    uint64_t h = mix64(t->seed);
    h          = mix64(h ^ (uint64_t)split);
    h          = mix64(h ^ (uint64_t)step);
    h          = mix64(h ^ (uint64_t)N);
    h          = mix64(h ^ (uint64_t)row);
    rl_rng_seed(r, h);
}

uint8_t *rl_task_put_row(struct rl_batch *b, int row, const int32_t *s, int N)
{
    const size_t off = (size_t)row * (size_t)N;
    memcpy(b->inputs + off, s, (size_t)N * sizeof *s);
    memcpy(b->targets + off, s + 1, (size_t)N * sizeof *s);
    memset(b->mask + off, 0, (size_t)N);
    return b->mask + off;
}

rl_status rl_task_scratch(struct rl_task *t, size_t n)
{
    if (n <= t->scratch_len) return RL_OK;
    int32_t *p = realloc(t->scratch, n * sizeof *p);
    if (!p) RL_FAIL(RL_ENOMEM, "task: cannot allocate %zu ints of scratch", n);
    t->scratch     = p;
    t->scratch_len = n;
    return RL_OK;
}

/* ---- the task object ---- */

void rl_task_unigram(const double *count, const double *seen, int V, double *loss, double *acc)
{
    double total = 0, n = 0, ce = 0;
    int    best  = 0;
    for (int v = 0; v < V; v++) {
        total += count[v], n += seen[v];
        if (count[v] > count[best]) best = v;
    }
    for (int v = 0; v < V; v++)
        if (seen[v] > 0) ce -= seen[v] * log((count[v] + 1) / (total + V));
    *loss = n > 0 ? ce / n : NAN;
    *acc  = n > 0 ? seen[best] / n : NAN;
}
