/* sample.c -- greedy, temperature and top-k sampling (sample.h). */
#include "config.h"
#include "sample.h"

#include <math.h>
#include <stdlib.h>

struct cand {
    float   l;
    int32_t id;
};

size_t rl_sample_work_bytes(int V) { return (size_t)(V > 0 ? V : 1) * sizeof(struct cand); }

static int32_t argmax(const float *l, int V)
{
    int32_t best = 0;
    for (int j = 1; j < V; j++)
        if (l[j] > l[best]) best = j;
    return best;
}

/* larger logit first, then smaller id */
static int by_logit(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->l != y->l) return x->l > y->l ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

int32_t rl_sample(const float *logits, int V, double temperature, int top_k, struct rl_rng *rng,
                  void *work)
{
    if (temperature <= 0.0 || top_k == 1 || V == 1) return argmax(logits, V);
    struct cand *c = work;
    int          k = top_k <= 0 || top_k > V ? V : top_k;
    for (int j = 0; j < V; j++)
        c[j].l = logits[j], c[j].id = j;
    qsort(c, (size_t)V, sizeof *c, by_logit);
    double sum = 0.0;
    for (int i = 0; i < k; i++)
        sum += exp(((double)c[i].l - (double)c[0].l) / temperature);
    double u = rl_rng_uniform(rng) * sum, acc = 0.0;
    for (int i = 0; i < k; i++) {
        acc += exp(((double)c[i].l - (double)c[0].l) / temperature);
        if (u < acc) return c[i].id;
    }
    return c[k - 1].id; /* u rounded up to the total */
}
