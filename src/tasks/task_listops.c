/* task_listops.c -- ListOps (docs/tasks.md) with the rules of Long Range Arena
 * (Tay et al. 2021, sec. 3.1; Nangia and Bowman 2018): nested lists of single digits
 * under the operators MAX, MIN, MED (median; an even count takes the floor of the mean
 * of the two middle values, as LRA's int(np.median)) and SUM_MOD (sum mod 10), e.g.
 *     [MAX 4 3 [MIN 2 3 ] 1 0 [MED 1 5 8 9 2 ] ]  ->  5
 * A non-causal 10-way classification: the label is the value of the expression.
 *
 * Vocabulary (16): 0 PAD, 1 .. 10 the digits 0 .. 9, 11 [MAX, 12 [MIN, 13 [MED, 14 [SM,
 * 15 the closing bracket ] (kept as a token, as in LRA).  A row at length N is one
 * expression of at most N tokens, right-padded with PAD; inputs are the tokens, label the
 * value, mask 1 on the expression's tokens (0 on padding), targets 0 (unused).
 * Operators take 2 .. args arguments and nest at most depth deep (LRA: 10 and 10).
 * Length: each row draws a token budget T uniformly in [max(4, ceil(N/2)), N] and grows
 * the tree top-down to use it (a budget too small for an operator becomes a digit), so
 * expressions fill half to all of N and evaluation at longer N means longer, deeper trees
 * (up to the depth and args limits). */
#include "config.h"
#include "task_listops.h"

#include <limits.h>

enum { LO_PAD = 0, LO_DIGIT = 1, LO_MAX = 11, LO_MIN, LO_MED, LO_SM, LO_CLOSE, LO_VOCAB };
#define LO_MAX_DEPTH 64 /* the generator recurses once per level */

rl_status rl_task_listops_setup(struct rl_task *t, const struct rl_task_opts *o)
{
    t->depth  = o->depth ? o->depth : 10;
    t->args   = o->args ? o->args : 10;
    t->vocab  = LO_VOCAB;
    t->length = o->length ? o->length : RL_TASK_DEFAULT_LENGTH;
    if (t->depth > LO_MAX_DEPTH)
        RL_TASK_FAIL(RL_EINVAL, "depth", "listops nesting depth %d exceeds %d", t->depth,
                     LO_MAX_DEPTH);
    if (t->args < 2 || t->args > (1 << 20))
        RL_TASK_FAIL(RL_EINVAL, "args",
                     "listops operators take 2 .. args arguments; args = %d "
                     "must be in [2, 2^20]",
                     t->args);
    if (o->vocab && o->vocab != LO_VOCAB)
        RL_TASK_FAIL(RL_EINVAL, "vocab", "listops has a fixed vocabulary of %d tokens, got %d",
                     LO_VOCAB, o->vocab);
    if (t->length < 4)
        RL_TASK_FAIL(RL_EINVAL, "length",
                     "listops needs N >= 4 (the shortest operator "
                     "expression, [MAX 1 2 ]), got %d",
                     t->length);
    return RL_OK;
}

struct lo_gen {
    int32_t       *s;   /* output tokens */
    int            pos; /* tokens written */
    int            args;
    int            cap[LO_MAX_DEPTH + 1]; /* cap[d]: longest expression of depth <= d */
    struct rl_rng *r;
};

static int imin(int a, int b) { return a < b ? a : b; }

/* Value of an operator over the digit counts cnt[0..9] of its k arguments. */
static int apply(int op, const int cnt[10], int k)
{
    int lo = 0, hi = 9, sum = 0;
    while (!cnt[lo])
        lo++;
    while (!cnt[hi])
        hi--;
    for (int v = 0; v < 10; v++)
        sum += v * cnt[v];
    if (op == LO_MAX) return hi;
    if (op == LO_MIN) return lo;
    if (op == LO_SM) return sum % 10;
    /* median: the sorted values at ranks (k-1)/2 and k/2, floor of their mean */
    int a = -1, b = -1;
    for (int v = 0, seen = 0; v < 10; v++) {
        if (a < 0 && seen + cnt[v] > (k - 1) / 2) a = v;
        if (b < 0 && seen + cnt[v] > k / 2) b = v;
        seen += cnt[v];
    }
    return (a + b) / 2;
}

/* Write an expression of at most `budget` tokens and operator depth <= d; its value. */
static int gen(struct lo_gen *g, int budget, int d)
{
    if (d == 0 || budget < 4) {
        int v          = (int)rl_rng_below(g->r, 10);
        g->s[g->pos++] = LO_DIGIT + v;
        return v;
    }
    int op      = LO_MAX + (int)rl_rng_below(g->r, 4);
    int k       = 2 + (int)rl_rng_below(g->r, (uint64_t)(imin(g->args, budget - 2) - 1));
    int cnt[10] = {0}, rem = budget - 2; /* tokens left for the arguments */
    g->s[g->pos++] = op;
    for (int i = 0; i < k; i++) {
        int left = k - i, share = rem;
        if (left > 1) {
            /* uniform in [1, 2 rem/left - 1] (mean rem/left), leaving 1 per later argument */
            int mean = rem / left;
            share    = 1 + (int)rl_rng_below(g->r, (uint64_t)(mean > 1 ? 2 * mean - 1 : 1));
            share    = imin(share, rem - (left - 1));
        }
        int before = g->pos;
        cnt[gen(g, imin(share, g->cap[d - 1]), d - 1)]++;
        rem -= g->pos - before; /* unused budget passes on to the later arguments */
    }
    g->s[g->pos++] = LO_CLOSE;
    return apply(op, cnt, k);
}

rl_status rl_task_listops_batch(struct rl_task *t, struct rl_batch *b, int split, int64_t step)
{
    int N = b->N;
    if (N < 4) RL_FAIL(RL_EINVAL, "batch: listops needs N >= 4, got %d", N);
    struct lo_gen g = {.args = t->args};
    g.cap[0]        = 1;
    for (int d = 1; d <= t->depth; d++) /* 2 + args * cap[d-1], saturating */
        g.cap[d] =
            g.cap[d - 1] > (INT_MAX / 2 - 2) / t->args ? INT_MAX / 2 : 2 + t->args * g.cap[d - 1];
    int lo = (N + 1) / 2 > 4 ? (N + 1) / 2 : 4;
    for (int row = 0; row < b->B; row++) {
        struct rl_rng r;
        rl_task_row_rng(&r, t, split, step, N, row);
        size_t off = (size_t)row * (size_t)N;
        g.s = b->inputs + off, g.pos = 0, g.r = &r;
        int budget    = lo + (int)rl_rng_below(&r, (uint64_t)(N - lo + 1));
        b->label[row] = gen(&g, imin(budget, g.cap[t->depth]), t->depth);
        for (int i = 0; i < N; i++) {
            b->mask[off + i]    = i < g.pos;
            b->targets[off + i] = 0;
            if (i >= g.pos) g.s[i] = LO_PAD;
        }
    }
    return RL_OK;
}
