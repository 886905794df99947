/* task_seq.c -- copy, reverse and sort (docs/tasks.md).
 *
 * The copy task of Katharopoulos et al. 2020 ("Transformers are RNNs", sec. 4.1): random
 * symbols, a separator, then the same symbols again; reverse and sort ask for them
 * reversed or sorted (ascending id).  At length N a row is the sequence
 *     s = x_1 .. x_L  SEP  y_1 .. y_L  [PAD]      L = floor(N / 2), N + 1 tokens
 * (one PAD when N is odd), inputs s[0 .. N-1], targets s[1 .. N] (next token), and the
 * loss mask is 1 exactly where the target is a y: positions L .. 2L-1.
 * Vocabulary: 0 PAD, 1 SEP, 2 .. symbols+1 the content symbols. */
#include "config.h"
#include "task_seq.h"

#include <stdlib.h>
#include <string.h>

enum { SEQ_PAD = 0, SEQ_SEP = 1, SEQ_FIRST = 2 };

rl_status rl_task_seq_setup(struct rl_task *t, const struct rl_task_opts *o)
{
    const char *name = rl_task_kind_name(o->kind);
    int         sym  = o->symbols;
    if (!sym) sym = o->vocab ? o->vocab - SEQ_FIRST : 10; /* Katharopoulos et al.: 10 */
    if (sym < 1)
        RL_TASK_FAIL(RL_EINVAL, "vocab",
                     "%d leaves no content symbols (%s needs vocab >= 3: "
                     "pad, separator, symbols)",
                     o->vocab, name);
    if (sym > (1 << 30)) RL_TASK_FAIL(RL_EINVAL, "symbols", "%d is too many (at most 2^30)", sym);
    if (o->vocab && o->vocab != sym + SEQ_FIRST)
        RL_TASK_FAIL(RL_EINVAL, "vocab",
                     "%s with symbols = %d has vocab %d (pad, separator, "
                     "symbols), not %d; set one of the two",
                     name, sym, sym + SEQ_FIRST, o->vocab);
    t->symbols = sym;
    t->vocab   = sym + SEQ_FIRST;
    t->length  = o->length ? o->length : RL_TASK_DEFAULT_LENGTH;
    if (t->length < 2)
        RL_TASK_FAIL(RL_EINVAL, "length",
                     "%s needs N >= 2 (a symbol, the separator and its "
                     "copy), got %d",
                     name, t->length);
    return RL_OK;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* s[0 .. N] of one row (N + 1 tokens). */
static void make_row(int32_t *s, enum rl_task_kind kind, int symbols, int N, struct rl_rng *r)
{
    int L = N / 2;
    for (int i = 0; i < L; i++)
        s[i] = SEQ_FIRST + (int32_t)rl_rng_below(r, (uint64_t)symbols);
    s[L]       = SEQ_SEP;
    int32_t *y = s + L + 1;
    for (int i = 0; i < L; i++)
        y[i] = kind == RL_TASK_REVERSE ? s[L - 1 - i] : s[i];
    if (kind == RL_TASK_SORT) qsort(y, (size_t)L, sizeof *y, cmp_i32);
    for (int i = 2 * L + 1; i <= N; i++)
        s[i] = SEQ_PAD;
}

rl_status rl_task_seq_batch(struct rl_task *t, struct rl_batch *b, int split, int64_t step)
{
    int N = b->N;
    if (N < 2) RL_FAIL(RL_EINVAL, "batch: %s needs N >= 2, got %d", rl_task_kind_name(t->kind), N);
    RL_TRY(rl_task_scratch(t, (size_t)N + 1));
    int32_t *s = t->scratch;
    int      L = N / 2;
    for (int row = 0; row < b->B; row++) {
        struct rl_rng r;
        rl_task_row_rng(&r, t, split, step, N, row);
        make_row(s, t->kind, t->symbols, N, &r);
        uint8_t *m = rl_task_put_row(b, row, s, N);
        memset(m + L, 1, (size_t)L); /* the target is one of y_1 .. y_L */
    }
    return RL_OK;
}
