/* task_passkey.c -- passkey retrieval (Mohtashami & Jaggi 2023, "Landmark attention", the
 * test the position-interpolation and YaRN papers use for RoPE context extension;
 * docs/tasks.md): a key of `digits` digits hidden at a uniformly random depth in filler,
 * asked for at the end of the row.
 *
 * Vocabulary V (default 16): 0 .. 9 the digits, 10 KEY, 11 QUERY, 12 .. V-1 filler.
 * A row at length N is s[0 .. N] (N + 1 tokens, k = digits):
 *     filler .. KEY d_1 .. d_k filler ..  QUERY d_1 .. d_k
 * The last k + 1 tokens are the query block; the other N - k tokens are filler with the
 * key block (KEY and the k digits, k + 1 tokens) starting at a position p drawn uniformly
 * from 0 .. N - 2k - 2 (p = 0: the key opens the row; the largest p: it ends right before
 * QUERY).  Digits are uniform over 0 .. 9.  inputs s[0 .. N-1], targets s[1 .. N]; the
 * mask is 1 exactly on the k positions N-k .. N-1, whose targets are the answer digits
 * (the input there is QUERY, then the answer so far: teacher forcing).  At a longer
 * evaluation length only the filler grows: the same k digits, one key, one query.
 * Filler: `pattern` (the default, as the original's repeated sentence) is the filler
 * tokens in order, 12 13 .. V-1 12 13 .., counted over the filler tokens only so the key
 * block interrupts the pattern without shifting it; `random` draws each filler token
 * uniformly from 12 .. V-1. */
#include "config.h"
#include "task_passkey.h"

#include <string.h>

enum { PK_KEY = 10, PK_QUERY = 11, PK_FILL = 12, PK_DEFAULT_VOCAB = 16, PK_DEFAULT_DIGITS = 5 };

int rl_task_passkey_min_length(const struct rl_task *t) { return 2 * t->digits + 2; }

rl_status rl_task_passkey_setup(struct rl_task *t, const struct rl_task_opts *o)
{
    t->vocab = o->vocab ? o->vocab : PK_DEFAULT_VOCAB;
    if (t->vocab <= PK_FILL)
        RL_TASK_FAIL(RL_EINVAL, "vocab",
                     "passkey needs vocab >= %d (10 digits, KEY, QUERY and at least "
                     "one filler token), got %d",
                     PK_FILL + 1, t->vocab);
    t->digits = o->digits ? o->digits : PK_DEFAULT_DIGITS;
    if (t->digits > (1 << 20))
        RL_TASK_FAIL(RL_EINVAL, "digits", "%d is too many (at most 2^20)", t->digits);
    t->filler = o->filler;
    t->length = o->length ? o->length : RL_TASK_DEFAULT_LENGTH;
    if (t->length < rl_task_passkey_min_length(t))
        RL_TASK_FAIL(RL_EINVAL, "length",
                     "passkey with %d digits needs length >= %d (KEY and the digits, "
                     "QUERY and the answer), got %d",
                     t->digits, rl_task_passkey_min_length(t), t->length);
    return RL_OK;
}

/* s[0 .. N] of one row. */
static void make_row(int32_t *s, const struct rl_task *t, int N, struct rl_rng *r)
{
    const int k = t->digits, nf = t->vocab - PK_FILL;
    const int p = (int)rl_rng_below(r, (uint64_t)(N - 2 * k - 1)); /* KEY at s[p] */
    s[p]        = PK_KEY;
    for (int i = 1; i <= k; i++)
        s[p + i] = s[N - k + i] = (int32_t)rl_rng_below(r, 10);
    s[N - k] = PK_QUERY;
    for (int i = 0, f = 0; i < N - k; i++) {
        if (i == p) i += k + 1; /* skip the key block */
        if (i >= N - k) break;
        s[i] = PK_FILL + (int32_t)(t->filler == RL_PASSKEY_FILLER_RANDOM
                                       ? rl_rng_below(r, (uint64_t)nf)
                                       : (uint64_t)(f++ % nf));
    }
}

rl_status rl_task_passkey_batch(struct rl_task *t, struct rl_batch *b, int split, int64_t step)
{
    const int N = b->N, k = t->digits;
    if (N < rl_task_passkey_min_length(t))
        RL_TASK_FAIL(RL_EINVAL, "length", "passkey with %d digits needs length >= %d, asked for %d",
                     k, rl_task_passkey_min_length(t), N);
    RL_TRY(rl_task_scratch(t, (size_t)N + 1));
    int32_t *s = t->scratch;
    for (int row = 0; row < b->B; row++) {
        struct rl_rng r;
        rl_task_row_rng(&r, t, split, step, N, row);
        make_row(s, t, N, &r);
        uint8_t *m = rl_task_put_row(b, row, s, N);
        memset(m + N - k, 1, (size_t)k); /* the key's digits */
    }
    return RL_OK;
}
