/* task_mqar.c -- multi-query associative recall (docs/tasks.md) in the layout of Zoology
 * (Arora et al. 2023, "Zoology: measuring and improving recall in efficient language
 * models", sec. 3): D key-value pairs, then a query region that holds the keys only; the
 * value bound to a query key is the target at that key's position, never an input.
 *
 * Vocabulary V (default 1024): 0 is the filler token, keys are 1 .. K-1 and values
 * K .. V-1 with K = V / 2 (Zoology's halves).  A row at length N is s[0 .. N]:
 *     k_1 v_1 k_2 v_2 .. k_D v_D | query region s[2D .. N]
 * with distinct keys and distinct values.  The query region holds floor((N + 1 - 2D) / 2)
 * two-token slots "k 0"; D of them, chosen uniformly without replacement, hold the D keys
 * (each key once, in random order), the rest "0 0".  inputs s[0 .. N-1]; targets the next
 * token s[i+1], except at a query key's position, whose target is the key's value; mask 1
 * on those D positions only.  So no value appears among the inputs after the pairs, and an
 * answer cannot be found by eliminating values already shown.  D = kv_pairs, or
 * max(1, N / 16) at every length N when kv_pairs = 0, so longer evaluation sequences hold
 * proportionally more pairs.
 * Deviations from Zoology: the query slots are placed uniformly rather than with its
 * power-law gap distribution, and filler is token 0 rather than random tokens, so that
 * recall distance grows with N (what a length-extrapolation study wants to measure). */
#include "config.h"
#include "task_mqar.h"

enum { MQAR_FILL = 0 };

static int pairs_at(const struct rl_task *t, int N)
{
    if (t->kv_pairs) return t->kv_pairs;
    return N / 16 > 1 ? N / 16 : 1;
}

static rl_status check_fit(const struct rl_task *t, int N, int D, const char *key)
{
    int K = t->vocab / 2;
    if (D > K - 1)
        RL_TASK_FAIL(RL_EINVAL, key,
                     "mqar at length %d needs %d distinct keys but vocab = %d "
                     "has %d (keys are 1 .. vocab/2 - 1); raise vocab or lower kv_pairs",
                     N, D, t->vocab, K - 1);
    if (4 * (int64_t)D - 1 > N)
        RL_TASK_FAIL(RL_EINVAL, key,
                     "mqar with %d key-value pairs needs length >= %d (pairs "
                     "and one query slot per pair), got %d",
                     D, 4 * D - 1, N);
    return RL_OK;
}

rl_status rl_task_mqar_setup(struct rl_task *t, const struct rl_task_opts *o)
{
    t->vocab = o->vocab ? o->vocab : 1024;
    if (t->vocab < 4)
        RL_TASK_FAIL(RL_EINVAL, "vocab", "mqar needs vocab >= 4 (filler, keys, values), got %d",
                     t->vocab);
    if (o->kv_pairs > (1 << 28)) RL_TASK_FAIL(RL_EINVAL, "kv_pairs", "%d is too many", o->kv_pairs);
    if (o->train_queries != RL_MQAR_QUERIES_ONCE && o->train_queries != RL_MQAR_QUERIES_DENSE)
        RL_TASK_FAIL(RL_EINVAL, "train_queries", "unknown query layout %d", o->train_queries);
    t->kv_pairs      = o->kv_pairs;
    t->train_queries = o->train_queries;
    t->length        = o->length ? o->length : RL_TASK_DEFAULT_LENGTH;
    RL_TRY(check_fit(t, t->length, pairs_at(t, t->length), o->kv_pairs ? "kv_pairs" : "length"));
    if (o->n_train_lengths > RL_TASK_MAX_TRAIN_LENGTHS)
        RL_TASK_FAIL(RL_EINVAL, "train_lengths", "%d lengths, at most %d", o->n_train_lengths,
                     RL_TASK_MAX_TRAIN_LENGTHS);
    for (int i = 0; i < o->n_train_lengths; i++) {
        int L = o->train_lengths[i];
        if (L < 1 || L > t->length)
            RL_TASK_FAIL(RL_EINVAL, "train_lengths",
                         "%d must be in 1 .. length = %d (a training row holds at most N tokens)",
                         L, t->length);
        RL_TRY(check_fit(t, L, pairs_at(t, L), "train_lengths"));
        t->train_lengths[i] = L;
    }
    t->n_train_lengths = o->n_train_lengths;
    return RL_OK;
}

/* Partial Fisher-Yates: pool[0 .. k-1] becomes k distinct values of pool[0 .. n-1] in
 * random order. */
static void sample_distinct(int32_t *pool, int n, int k, struct rl_rng *r)
{
    for (int i = 0; i < k; i++) {
        int     j = i + (int)rl_rng_below(r, (uint64_t)(n - i));
        int32_t v = pool[i];
        pool[i]   = pool[j];
        pool[j]   = v;
    }
}

/* s[0 .. N] of one row asking Q queries (Q = D: each key once; Q = nslots: dense, each
 * key once and the other slots a key drawn uniformly); q[0 .. Q-1] get the query
 * positions, in increasing order, and q[Q .. 2Q-1] the values asked for there; returns Q.
 * pool: max(V - 1, N) ints. */
static int make_row(int32_t *s, int32_t *q, int32_t *pool, const struct rl_task *t, int N, int D,
                    int dense, struct rl_rng *r)
{
    int K = t->vocab / 2, nslots = (N + 1 - 2 * D) / 2, Q = dense ? nslots : D;
    for (int i = 0; i <= N; i++)
        s[i] = MQAR_FILL;
    int32_t *keys = pool, *vals = pool + (K - 1), *slots = pool;
    for (int i = 0; i < K - 1; i++)
        keys[i] = 1 + i;
    sample_distinct(keys, K - 1, D, r);
    for (int i = 0; i < D; i++)
        s[2 * i] = keys[i];
    for (int i = 0; i < t->vocab - K; i++)
        vals[i] = K + i;
    sample_distinct(vals, t->vocab - K, D, r);
    for (int i = 0; i < D; i++)
        s[2 * i + 1] = vals[i];
    /* keys and values now sit in s; the pool is reused for the slots (nslots ints) and
     * the pair each slot asks for (owner, nslots more: 2 nslots <= N).  The first D of Q
     * slots drawn ask pair 0 .. D-1, the others (dense rows) a pair drawn uniformly. */
    int32_t *owner = pool + nslots;
    for (int j = 0; j < nslots; j++)
        slots[j] = j, owner[j] = -1;
    sample_distinct(slots, nslots, Q, r);
    for (int i = 0; i < Q; i++)
        owner[slots[i]] = i < D ? i : (int32_t)rl_rng_below(r, (uint64_t)D);
    /* the query region left to right: its keys, and their values as targets (never inputs) */
    for (int j = 0, n = 0; j < nslots; j++) {
        if (owner[j] < 0) continue;
        int p = 2 * D + 2 * j, i = owner[j];
        s[p] = s[2 * i], q[n] = p, q[Q + n] = s[2 * i + 1], n++;
    }
    return Q;
}

rl_status rl_task_mqar_batch(struct rl_task *t, struct rl_batch *b, int split, int64_t step)
{
    int N = b->N;
    RL_TRY(check_fit(t, N, pairs_at(t, N), "length"));
    /* keys and values (vocab - 1 ids), later the slots and their owners (2 nslots <= N) */
    size_t npool = (size_t)(t->vocab - 1) > (size_t)N ? (size_t)(t->vocab - 1) : (size_t)N;
    /* training rows with train_queries = dense ask every slot: at most N / 2 queries */
    int dense = split == 0 && t->train_queries == RL_MQAR_QUERIES_DENSE;
    RL_TRY(rl_task_scratch(t, 2 * (size_t)N + 1 + npool));
    int32_t *s = t->scratch, *q = s + N + 1, *pool = q + N;
    for (int row = 0; row < b->B; row++) {
        struct rl_rng r;
        rl_task_row_rng(&r, t, split, step, N, row);
        /* a training row of length L < N (train_lengths): its s[0 .. L], then filler, which
         * no scored position sees (the model is causal and the queries sit before L) */
        int L = split == 0 && t->n_train_lengths ? t->train_lengths[row % t->n_train_lengths] : N;
        if (L > N) L = N;
        int Q = make_row(s, q, pool, t, L, pairs_at(t, L), dense, &r);
        for (int i = L + 1; i <= N; i++)
            s[i] = MQAR_FILL;
        uint8_t *m  = rl_task_put_row(b, row, s, N);
        int32_t *tg = b->targets + (size_t)row * (size_t)N;
        for (int i = 0; i < Q; i++)
            m[q[i]] = 1, tg[q[i]] = q[Q + i];
    }
    return RL_OK;
}
