/* t_task.c -- the task generators (docs/tasks.md): determinism from the seed,
 * vocabulary bounds, loss masks, the answers of copy / reverse / sort / MQAR checked from
 * the inputs, ListOps labels checked by an evaluator written here (it parses the tokens
 * back into a tree), charlm's split boundaries (a random file and a sparse enwik8),
 * evaluation at 4x the training length, dispatch to the tokens task, and bad options. */
#include "config.h"
#include "tasks/task.h"
#include "tap.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static rl_task *make(enum rl_task_kind kind, int length, uint64_t seed)
{
    struct rl_task_opts o;
    rl_task_opts_default(&o);
    o.kind = kind, o.length = length, o.seed = seed;
    rl_task  *t  = NULL;
    rl_status st = rl_task_create(&t, &o);
    if (st != RL_OK) tap_bail("rl_task_create(%s): %s", rl_task_kind_name(kind), rl_last_error());
    return t;
}

static void fill(rl_task *t, struct rl_batch *b, int B, int N, int split, int64_t step)
{
    if (rl_batch_alloc(b, B, N) != RL_OK) tap_bail("rl_batch_alloc: %s", rl_last_error());
    if (rl_task_batch(t, b, split, step) != RL_OK)
        tap_bail("rl_task_batch(N=%d, split %d, step %lld): %s", N, split, (long long)step,
                 rl_last_error());
}

static int same_rows(const struct rl_batch *a, const struct rl_batch *b, int rows)
{
    size_t n = (size_t)rows * (size_t)a->N;
    return a->N == b->N && !memcmp(a->inputs, b->inputs, n * 4) &&
           !memcmp(a->targets, b->targets, n * 4) && !memcmp(a->mask, b->mask, n) &&
           !memcmp(a->label, b->label, (size_t)rows * 4);
}

static int in_vocab(const struct rl_batch *b, int V)
{
    for (size_t i = 0; i < (size_t)b->B * (size_t)b->N; i++)
        if (b->inputs[i] < 0 || b->inputs[i] >= V || b->targets[i] < 0 || b->targets[i] >= V ||
            b->mask[i] > 1)
            return 0;
    return 1;
}

/* ---- copy / reverse / sort: 0 PAD, 1 SEP, symbols from 2 ---- */

static int cmp_int(const void *a, const void *b)
{
    return (*(const int32_t *)a > *(const int32_t *)b) -
           (*(const int32_t *)a < *(const int32_t *)b);
}

static int seq_row_ok(enum rl_task_kind kind, const int32_t *in, const int32_t *tg,
                      const uint8_t *m, int N, int V)
{
    int     L = N / 2;
    int32_t want[4096];
    if (L > 4096 || in[L] != 1) return 0;
    for (int i = 0; i < L; i++) {
        if (in[i] < 2 || in[i] >= V) return 0;
        want[i] = kind == RL_TASK_REVERSE ? in[L - 1 - i] : in[i];
    }
    if (kind == RL_TASK_SORT) qsort(want, (size_t)L, sizeof *want, cmp_int);
    for (int i = 0; i < N; i++) {
        if (m[i] != (i >= L && i < 2 * L)) return 0;
        if (i + 1 < N && tg[i] != in[i + 1]) return 0; /* next-token targets */
        if (m[i] && tg[i] != want[i - L]) return 0;
    }
    return N % 2 == 0 || tg[N - 1] == 0; /* odd N: one trailing PAD */
}

/* ---- MQAR: 0 filler, keys 1 .. K-1, values K .. V-1 ---- */

/* One row checked from its tokens (Zoology's layout): D pairs with distinct keys and
 * distinct values, then a query region of two-token slots "key 0" or "0 0" from 2D on,
 * holding no value and Q query keys: every key once when Q = D, every key at least once
 * when Q > D (dense training rows); the mask exactly on the query keys, whose targets are
 * their values; the other targets the next input.  order (may be NULL; Q = D) gets, for
 * pair i, its rank among the row's queries. */
static int mqar_row_ok(const int32_t *in, const int32_t *tg, const uint8_t *m, int N, int D, int V,
                       int Q, int *order)
{
    int K = V / 2, nmask = 0, keys_asked = 0;
    int val_of[2048] = {0}, pair_of[2048] = {0}, asked[2048] = {0}, seen_val[2048] = {0};
    if (V > 2048 || 4 * D - 1 > N) return 0;
    for (int i = 0; i < D; i++) {
        int k = in[2 * i], v = in[2 * i + 1];
        if (k < 1 || k >= K || v < K || v >= V || val_of[k] || seen_val[v]++) return 0;
        val_of[k] = v, pair_of[k] = i;
    }
    for (int i = 0; i < N; i++) {
        if (i < 2 * D || !m[i]) {
            if (m[i] || (i + 1 < N && tg[i] != in[i + 1]) || tg[i] < 0 || tg[i] >= V) return 0;
            if (i >= 2 * D && in[i] != 0) return 0; /* after the pairs: filler or a query */
            continue;
        }
        int k = in[i];
        if ((i - 2 * D) % 2 || k < 1 || k >= K || !val_of[k] || tg[i] != val_of[k]) return 0;
        if (asked[k]++ && Q == D) return 0;        /* each key once */
        if (i + 1 < N && in[i + 1] != 0) return 0; /* a query's slot ends with filler */
        if (order) order[pair_of[k]] = nmask;
        keys_asked += asked[k] == 1;
        nmask++;
    }
    return nmask == Q && keys_asked == D;
}

/* ---- ListOps: an evaluator of our own (0 PAD, 1..10 digits, 11 MAX 12 MIN 13 MED 14 SM,
 * 15 close) ---- */

struct lo_parse {
    const int32_t *s;
    int            n, pos, depth, args, bad;
};

static int lo_eval(struct lo_parse *p, int level)
{
    if (p->pos >= p->n) return p->bad = 1, 0;
    int tok = p->s[p->pos++];
    if (tok >= 1 && tok <= 10) return tok - 1;
    if (tok < 11 || tok > 14 || level >= p->depth) return p->bad = 1, 0;
    int vals[64], k = 0;
    while (!p->bad && p->pos < p->n && p->s[p->pos] != 15) {
        int v = lo_eval(p, level + 1);
        if (k < 64) vals[k] = v;
        k++;
    }
    if (p->pos >= p->n || k < 2 || k > p->args || k > 64) return p->bad = 1, 0;
    p->pos++; /* the closing bracket */
    qsort(vals, (size_t)k, sizeof *vals, cmp_int);
    int sum = 0;
    for (int i = 0; i < k; i++)
        sum += vals[i];
    switch (tok) {
    case 11:
        return vals[k - 1];
    case 12:
        return vals[0];
    case 13:
        return k % 2 ? vals[k / 2] : (vals[k / 2 - 1] + vals[k / 2]) / 2; /* int(median) */
    default:
        return sum % 10;
    }
}

/* 1 if the row parses, respects the limits, is padded and its label is right; *len gets
 * the expression length. */
static int listops_row_ok(const int32_t *in, const uint8_t *m, int label, int N, int depth,
                          int args, int *len)
{
    struct lo_parse p = {.s = in, .n = N, .depth = depth, .args = args};
    int             v = lo_eval(&p, 0);
    *len              = p.pos;
    if (p.bad || v != label) return 0;
    for (int i = 0; i < N; i++)
        if (m[i] != (i < p.pos) || (i >= p.pos && in[i] != 0)) return 0;
    return 1;
}

/* All rows of a batch of a generated task at length N; returns the bad rows. */
static int bad_rows(rl_task *t, enum rl_task_kind kind, const struct rl_batch *b, double *fill_frac)
{
    int bad = 0, V = rl_task_vocab(t), N = b->N, total = 0;
    for (int r = 0; r < b->B; r++) {
        const int32_t *in = b->inputs + (size_t)r * N, *tg = b->targets + (size_t)r * N;
        const uint8_t *m  = b->mask + (size_t)r * N;
        int            ok = 0, len = 0;
        if (kind <= RL_TASK_SORT)
            ok = seq_row_ok(kind, in, tg, m, N, V) && b->label[r] == -1;
        else if (kind == RL_TASK_MQAR) {
            int D = N / 16 > 1 ? N / 16 : 1;
            ok    = mqar_row_ok(in, tg, m, N, D, V, D, NULL);
        } else
            ok = listops_row_ok(in, m, b->label[r], N, 10, 10, &len);
        total += len;
        bad += !ok;
    }
    if (fill_frac) *fill_frac = (double)total / ((double)b->B * N);
    return bad;
}

/* ---- generated tasks ---- */

static void test_generated(enum rl_task_kind kind, int N, int vocab)
{
    const char     *name = rl_task_kind_name(kind);
    rl_task        *t = make(kind, N, 7), *t2 = make(kind, N, 7), *t3 = make(kind, N, 8);
    struct rl_batch a, a2, c, d, e, f, x;
    tap_ok(rl_task_vocab(t) == vocab && rl_task_length(t) == N &&
               rl_task_causal(t) == (kind != RL_TASK_LISTOPS) &&
               rl_task_n_classes(t) == (kind == RL_TASK_LISTOPS ? 10 : 0) &&
               rl_task_max_length(t) == (kind == RL_TASK_MQAR ? 16 * (vocab / 2) - 1 : 0) &&
               rl_task_min_length(t) == 1,
           "%s: vocab %d, length %d, causal %d, classes %d", name, rl_task_vocab(t),
           rl_task_length(t), rl_task_causal(t), rl_task_n_classes(t));
    fill(t, &a, 8, N, 0, 3);
    fill(t2, &a2, 8, N, 0, 3);
    fill(t2, &c, 3, N, 0, 3);
    fill(t, &d, 8, N, 0, 4);
    fill(t, &e, 8, N, 1, 3);
    fill(t3, &f, 8, N, 0, 3);
    tap_ok(same_rows(&a, &a2, 8),
           "%s: a batch is a function of (seed, split, step): a fresh "
           "task object after other calls gives the same one",
           name);
    tap_ok(same_rows(&a, &c, 3), "%s: row r does not depend on the batch size", name);
    tap_ok(!same_rows(&a, &d, 8) && !same_rows(&a, &e, 8) && !same_rows(&a, &f, 8),
           "%s: other step, other split, other seed give other data", name);
    tap_ok(in_vocab(&a, vocab) && in_vocab(&e, vocab), "%s: ids in [0, %d), mask 0/1", name, vocab);
    double fr  = 0;
    int    bad = bad_rows(t, kind, &a, &fr) + bad_rows(t, kind, &e, NULL);
    tap_ok(bad == 0, "%s N=%d: train and valid rows checked from their inputs (%d bad)", name, N,
           bad);
    if (kind == RL_TASK_LISTOPS) tap_diag("listops N=%d: expressions fill %.2f of N", N, fr);
    /* the checks can fail: a wrong answer in row 1 is caught */
    size_t first = (size_t)N;
    while (!a.mask[first])
        first++;
    if (kind == RL_TASK_LISTOPS)
        a.label[1] = (a.label[1] + 1) % 10;
    else
        a.targets[first] = a.targets[first] == 2 ? 3 : 2;
    tap_ok(bad_rows(t, kind, &a, NULL) == 1, "%s: a corrupted answer is caught", name);
    /* evaluation at 4x the training length */
    fill(t, &x, 6, 4 * N, 1, 0);
    bad = bad_rows(t, kind, &x, &fr);
    tap_ok(bad == 0 && in_vocab(&x, vocab), "%s: evaluation at 4N = %d checked (%d bad rows)", name,
           4 * N, bad);
    if (kind == RL_TASK_LISTOPS) tap_diag("listops N=%d: expressions fill %.2f of N", 4 * N, fr);
    struct rl_batch *all[] = {&a, &a2, &c, &d, &e, &f, &x};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        rl_batch_free(all[i]);
    rl_task_free(t), rl_task_free(t2), rl_task_free(t3);
}

/* Copy family on an odd length and a vocabulary given instead of symbols. */
static void test_seq_options(void)
{
    struct rl_task_opts o;
    rl_task_opts_default(&o);
    o.kind = RL_TASK_SORT, o.length = 33, o.vocab = 5; /* 3 symbols: many ties to sort */
    rl_task *t = NULL;
    tap_ok(rl_task_create(&t, &o) == RL_OK && rl_task_vocab(t) == 5,
           "sort: vocab 5 means 3 symbols");
    struct rl_batch b;
    fill(t, &b, 16, 33, 0, 0);
    tap_ok(bad_rows(t, RL_TASK_SORT, &b, NULL) == 0 && in_vocab(&b, 5),
           "sort N=33 (odd: one trailing pad), 3 symbols: sorted targets under the mask");
    rl_batch_free(&b);
    rl_task_free(t);
}

/* MQAR with explicit kv_pairs: the count stays fixed at longer lengths. */
static void test_mqar_fixed(void)
{
    struct rl_task_opts o;
    rl_task_opts_default(&o);
    o.kind = RL_TASK_MQAR, o.length = 40, o.kv_pairs = 8, o.vocab = 64;
    rl_task *t = NULL;
    tap_ok(rl_task_create(&t, &o) == RL_OK && rl_task_max_length(t) == 0 &&
               rl_task_min_length(t) == 31,
           "mqar: kv_pairs 8, vocab 64, N 40 (lengths from 4 D - 1 = 31 up)");
    struct rl_batch b, x;
    fill(t, &b, 16, 40, 0, 1);
    fill(t, &x, 4, 160, 1, 1);
    int bad = 0;
    for (int r = 0; r < 16; r++)
        bad += !mqar_row_ok(b.inputs + r * 40, b.targets + r * 40, b.mask + r * 40, 40, 8, 64, 8,
                            NULL);
    for (int r = 0; r < 4; r++)
        bad += !mqar_row_ok(x.inputs + r * 160, x.targets + r * 160, x.mask + r * 160, 160, 8, 64,
                            8, NULL);
    tap_ok(bad == 0, "mqar: 8 pairs at N = 40 and at 4N = 160, answers right (%d bad)", bad);
    rl_batch_free(&b), rl_batch_free(&x);
    rl_task_free(t);
}

static rl_task *make_mqar(int N, int vocab, int kv_pairs, int queries, uint64_t seed)
{
    struct rl_task_opts o;
    rl_task_opts_default(&o);
    o.kind = RL_TASK_MQAR, o.length = N, o.vocab = vocab, o.kv_pairs = kv_pairs, o.seed = seed;
    o.train_queries = queries;
    rl_task *t      = NULL;
    if (rl_task_create(&t, &o) != RL_OK) tap_bail("mqar: %s", rl_last_error());
    return t;
}

/* Rows of b checked with D pairs and Q queries; rank[i][r]++ when pair i is asked r-th
 * (rank: D x D, may be NULL; Q = D). */
static int mqar_bad(const struct rl_batch *b, int D, int V, int Q, int *rank)
{
    int bad = 0, order[2048];
    for (int r = 0; r < b->B; r++) {
        size_t o  = (size_t)r * b->N;
        int    ok = mqar_row_ok(b->inputs + o, b->targets + o, b->mask + o, b->N, D, V, Q, order);
        bad += !ok;
        for (int i = 0; ok && rank && i < D; i++)
            rank[i * D + order[i]]++;
    }
    return bad;
}

/* The layout that makes MQAR measure recall: no value is an input after the pairs, every
 * key is asked once in a uniformly random order, the mask and targets sit exactly on the
 * query keys; more pairs at longer evaluation lengths. */
static void test_mqar_layout(void)
{
    rl_task        *t = make_mqar(64, 64, 0, RL_MQAR_QUERIES_ONCE, 3);
    struct rl_batch b;
    int             rank[16] = {0}, leaked = 0, first = 0, last = 0, nmask = 0;
    fill(t, &b, 4000, 64, 0, 5);
    int bad = mqar_bad(&b, 4, 64, 4, rank);
    for (int r = 0; r < 4000; r++)
        for (int i = 8; i < 64; i++) {
            leaked += b.inputs[r * 64 + i] >= 32; /* a value id among the inputs */
            nmask += b.mask[r * 64 + i];
            first += i == 8 && b.mask[r * 64 + i];
            last += i == 62 && b.mask[r * 64 + i];
        }
    tap_ok(bad == 0 && leaked == 0 && nmask == 4 * 4000,
           "mqar N=64, vocab 64, 4 pairs: 4000 rows checked; no value among the inputs after the "
           "pairs (%d seen), 4 scored query keys per row (%d bad rows)",
           leaked, bad);
    /* pair i asked r-th: 1000 expected per cell; a permutation matrix has (D-1)^2 = 9 degrees
     * of freedom, and 27.9 is the 0.999 quantile of chi-square with 9 */
    double chi2 = 0;
    for (int i = 0; i < 16; i++)
        chi2 += (rank[i] - 1000.0) * (rank[i] - 1000.0) / 1000.0;
    tap_ok(chi2 < 27.9 && first > 0 && last > 0,
           "mqar: the order of the queries is uniform over the pairs (chi2 %.1f, 9 dof); the first "
           "and last query slots are used (%d, %d rows)",
           chi2, first, last);
    /* the check can fail: a value shown after the pairs, a query asked twice */
    int r1 = 0;
    while (b.mask[r1 * 64 + 62]) /* a row whose last slot is filler */
        r1++;
    b.inputs[r1 * 64 + 63] = b.inputs[r1 * 64 + 1], b.targets[r1 * 64 + 62] = b.inputs[r1 * 64 + 1];
    tap_ok(mqar_bad(&b, 4, 64, 4, NULL) == 1,
           "mqar: a value leaked into the query region is caught");
    rl_batch_free(&b);
    /* evaluation: D = M / 16 pairs at M = 128, 256, 496, up to vocab / 2 - 1 = 31 keys */
    int              ok        = rl_task_max_length(t) == 511;
    static const int lengths[] = {128, 256, 496};
    for (size_t k = 0; k < sizeof lengths / sizeof lengths[0]; k++) {
        int             M = lengths[k], n = 0;
        struct rl_batch x;
        fill(t, &x, 16, M, 1, 2);
        for (int i = 0; i < 16 * M; i++)
            n += x.mask[i];
        ok &= mqar_bad(&x, M / 16, 64, M / 16, NULL) == 0 && n == 16 * (M / 16) && in_vocab(&x, 64);
        rl_batch_free(&x);
    }
    struct rl_batch y;
    rl_batch_alloc(&y, 1, 512);
    ok &= rl_task_batch(t, &y, 1, 0) != RL_OK;
    tap_ok(ok,
           "mqar: evaluation at 128, 256, 496 with 8, 16, 31 pairs checked; 512 (32 pairs, 31 "
           "keys) refused -- %s",
           rl_last_error());
    rl_batch_free(&y);
    rl_task_free(t);
}

/* train_queries = dense: training rows ask a key in every query slot (each key at least
 * once, repeats drawn uniformly), still without a value among the inputs after the pairs;
 * evaluation rows keep the layout of each key once. */
static void test_mqar_dense(void)
{
    rl_task        *t = make_mqar(64, 64, 0, RL_MQAR_QUERIES_DENSE, 3);
    rl_task        *u = make_mqar(64, 64, 0, RL_MQAR_QUERIES_ONCE, 3);
    struct rl_batch b, e, f;
    fill(t, &b, 500, 64, 0, 5);
    fill(t, &e, 64, 64, 1, 5);
    fill(u, &f, 64, 64, 1, 5);
    int leaked = 0, nmask = 0, count[64] = {0}, keys = 0;
    for (int i = 0; i < 500 * 64; i++) {
        leaked += i % 64 >= 8 && b.inputs[i] >= 32;
        nmask += b.mask[i];
        if (b.mask[i]) count[b.inputs[i]]++;
    }
    for (int k = 1; k < 32; k++)
        keys += count[k] > 0;
    /* N = 64, D = 4: (64 + 1 - 8) / 2 = 28 slots, all asked */
    tap_ok(mqar_bad(&b, 4, 64, 28, NULL) == 0 && leaked == 0 && nmask == 500 * 28 && keys == 31,
           "mqar train_queries = dense: 500 training rows ask all 28 slots, every key at least "
           "once, no value among the inputs after the pairs (%d seen), all 31 keys used",
           leaked);
    tap_ok(mqar_bad(&e, 4, 64, 4, NULL) == 0 && same_rows(&e, &f, 64),
           "mqar train_queries = dense: evaluation rows are those of the default layout");
    rl_batch_free(&b), rl_batch_free(&e), rl_batch_free(&f);
    rl_task_free(t), rl_task_free(u);
    struct rl_task_opts o;
    rl_task_opts_default(&o);
    o.kind = RL_TASK_MQAR, o.train_queries = 2;
    const char *sec = NULL, *key = NULL;
    TAP_CHECK(rl_task_create(&t, &o) != RL_OK && !t && rl_last_error_key(&sec, &key) &&
                  !strcmp(key, "train_queries"),
              "mqar: an unknown train_queries refused, naming the key -- %s", rl_last_error());
}

/* train_lengths: training row r is a row of length lengths[r mod k] (D = L / 16 pairs)
 * followed by filler without loss; evaluation rows are full length; lengths that do not
 * fit are refused, naming the key. */
static void test_mqar_lengths(void)
{
    static const int    lengths[] = {16, 32, 64}, bad_long[] = {80}, bad_short[] = {14};
    struct rl_task_opts o;
    rl_task_opts_default(&o);
    o.kind = RL_TASK_MQAR, o.length = 64, o.vocab = 64, o.seed = 4;
    o.n_train_lengths = 3, o.train_lengths = lengths;
    rl_task *t = NULL;
    if (rl_task_create(&t, &o) != RL_OK) tap_bail("mqar train_lengths: %s", rl_last_error());
    struct rl_batch b, e;
    fill(t, &b, 300, 64, 0, 1);
    fill(t, &e, 30, 64, 1, 1);
    int bad = 0, scored[3] = {0};
    for (int r = 0; r < 300; r++) {
        const int L = lengths[r % 3], D = L / 16 > 1 ? L / 16 : 1;
        size_t    o0 = (size_t)r * 64;
        bad += !mqar_row_ok(b.inputs + o0, b.targets + o0, b.mask + o0, L, D, 64, D, NULL);
        for (int i = L; i < 64; i++)
            bad += b.inputs[o0 + i] != 0 || b.targets[o0 + i] != 0 || b.mask[o0 + i] != 0;
        for (int i = 0; i < 64; i++)
            scored[r % 3] += b.mask[o0 + i];
    }
    tap_ok(bad == 0 && scored[0] == 100 && scored[1] == 200 && scored[2] == 400,
           "mqar train_lengths = 16, 32, 64 at N = 64: training rows of length 16, 32, 64 in turn "
           "(1, 2, 4 queries), filler after them (%d bad)",
           bad);
    tap_ok(mqar_bad(&e, 4, 64, 4, NULL) == 0,
           "mqar train_lengths: evaluation rows are full length (4 pairs at 64)");
    rl_batch_free(&b), rl_batch_free(&e);
    rl_task_free(t);
    const int *const bads[]  = {bad_long, bad_short};
    int              refused = 1;
    for (int i = 0; i < 2; i++) {
        const char *sec = NULL, *key = NULL;
        o.n_train_lengths = 1, o.train_lengths = bads[i], o.kv_pairs = i ? 4 : 0;
        t = NULL;
        refused &= rl_task_create(&t, &o) != RL_OK && !t && rl_last_error_key(&sec, &key) &&
                   !strcmp(key, "train_lengths");
        tap_diag("%s", rl_last_error());
    }
    tap_ok(refused,
           "mqar train_lengths: 80 > N = 64 and 14 < 4 D - 1 = 15 refused, naming the key");
}

/* ListOps: the answer classes are all used, with depth and args limits honoured. */
static void test_listops_limits(void)
{
    struct rl_task_opts o;
    rl_task_opts_default(&o);
    o.kind = RL_TASK_LISTOPS, o.length = 100, o.depth = 3, o.args = 4;
    rl_task *t = NULL;
    tap_ok(rl_task_create(&t, &o) == RL_OK, "listops: depth 3, args 4, N 100");
    struct rl_batch b;
    fill(t, &b, 200, 100, 0, 0);
    int bad = 0, seen[10] = {0}, classes = 0, longest = 0;
    for (int r = 0; r < 200; r++) {
        int len = 0;
        bad += !listops_row_ok(b.inputs + r * 100, b.mask + r * 100, b.label[r], 100, 3, 4, &len);
        if (b.label[r] >= 0 && b.label[r] < 10) seen[b.label[r]]++;
        if (len > longest) longest = len;
    }
    for (int v = 0; v < 10; v++)
        classes += seen[v] > 0;
    /* depth 3, args 4: at most 2 + 4 (2 + 4 (2 + 4)) = 106 tokens, so N = 100 fits */
    tap_ok(bad == 0 && classes == 10 && longest <= 100,
           "listops: 200 rows match the evaluator within depth 3 / args 4, %d classes seen, "
           "longest %d",
           classes, longest);
    rl_batch_free(&b);
    rl_task_free(t);
}

/* ---- passkey: 0 .. 9 digits, 10 KEY, 11 QUERY, 12 .. V-1 filler ---- */

/* One row checked from its tokens: one KEY followed by k digits, the other tokens before
 * the query block filler (in pattern order when `pattern`, counted over filler tokens),
 * QUERY at N - k, next-token targets, the mask exactly on N-k .. N-1 with the key's
 * digits as targets.  Returns the key's position (its depth), or -1. */
static int passkey_row(const int32_t *in, const int32_t *tg, const uint8_t *m, int N, int k, int V,
                       int pattern)
{
    int p = -1, f = 0;
    for (int i = 0; i < N - k; i++)
        if (in[i] == 10) {
            if (p >= 0) return -1; /* one KEY only */
            p = i;
        }
    if (p < 0 || p > N - 2 * k - 2 || in[N - k] != 11) return -1;
    for (int i = 0; i < N; i++) {
        int key_digit = i > p && i <= p + k;
        if (i + 1 < N && tg[i] != in[i + 1]) return -1;
        if (m[i] != (i >= N - k)) return -1;
        if (m[i] && tg[i] != in[p + 1 + i - (N - k)]) return -1; /* the key's digits */
        if (i < N - k && i != p && (key_digit ? in[i] > 9 || in[i] < 0 : in[i] < 12 || in[i] >= V))
            return -1;
        if (i < N - k && i != p && !key_digit && pattern && in[i] != 12 + f++ % (V - 12)) return -1;
        if (i > N - k && in[i] != in[p + i - (N - k)]) return -1; /* the answer so far */
    }
    return p;
}

static rl_task *make_passkey(int N, int vocab, int digits, int filler, uint64_t seed)
{
    struct rl_task_opts o;
    rl_task_opts_default(&o);
    o.kind = RL_TASK_PASSKEY, o.length = N, o.vocab = vocab, o.digits = digits;
    o.filler = filler, o.seed = seed;
    rl_task *t = NULL;
    if (rl_task_create(&t, &o) != RL_OK) tap_bail("passkey: %s", rl_last_error());
    return t;
}

/* Bad rows of a batch; depth[p]++ for every row's key position p (depth may be NULL). */
static int passkey_bad(const struct rl_batch *b, int k, int V, int pattern, int *depth)
{
    int bad = 0;
    for (int r = 0; r < b->B; r++) {
        size_t o = (size_t)r * b->N;
        int    p = passkey_row(b->inputs + o, b->targets + o, b->mask + o, b->N, k, V, pattern);
        bad += p < 0;
        if (p >= 0 && depth) depth[p]++;
    }
    return bad;
}

static void test_passkey(void)
{
    rl_task *t  = make_passkey(0, 0, 0, RL_PASSKEY_FILLER_PATTERN, 7);
    rl_task *t2 = make_passkey(64, 16, 5, RL_PASSKEY_FILLER_PATTERN, 7);
    rl_task *t3 = make_passkey(64, 16, 5, RL_PASSKEY_FILLER_PATTERN, 8);
    tap_ok(rl_task_vocab(t) == 16 && rl_task_length(t) == 64 && rl_task_causal(t) &&
               rl_task_n_classes(t) == 0 && rl_task_max_length(t) == 0 &&
               rl_task_min_length(t) == 12 &&
               !strcmp(rl_task_kind_name(RL_TASK_PASSKEY), "passkey"),
           "passkey defaults: vocab 16, length 64, 5 digits (lengths from 2*5 + 2 = 12 up)");
    struct rl_batch a, a2, c, d, e, f;
    fill(t, &a, 8, 64, 0, 3);
    fill(t2, &a2, 8, 64, 0, 3);
    fill(t2, &c, 3, 64, 0, 3);
    fill(t, &d, 8, 64, 0, 4);
    fill(t, &e, 8, 64, 1, 3);
    fill(t3, &f, 8, 64, 0, 3);
    tap_ok(same_rows(&a, &a2, 8) && same_rows(&a, &c, 3),
           "passkey: a batch is a function of (seed, split, step); rows do not depend on the "
           "batch size");
    tap_ok(!same_rows(&a, &d, 8) && !same_rows(&a, &e, 8) && !same_rows(&a, &f, 8),
           "passkey: other step, other split, other seed give other data");
    tap_ok(in_vocab(&a, 16) && in_vocab(&e, 16), "passkey: ids in [0, 16), mask 0/1");
    int bad = passkey_bad(&a, 5, 16, 1, NULL) + passkey_bad(&e, 5, 16, 1, NULL);
    tap_ok(bad == 0,
           "passkey N=64: KEY + 5 digits in pattern filler, QUERY at N-5, mask exactly "
           "on the 5 answer positions with the key's digits as targets (%d bad)",
           bad);
    /* the check can fail: a wrong answer digit, a mask bit off the answer */
    a.targets[64 + 62] = (a.targets[64 + 62] + 1) % 10;
    a.mask[2 * 64 + 3] = 1;
    tap_ok(passkey_bad(&a, 5, 16, 1, NULL) == 2, "passkey: a corrupted answer and mask are caught");
    /* depth: uniform over 0 .. N - 2k - 2 = 20 at N = 32, both ends reached */
    rl_task        *u = make_passkey(32, 16, 5, RL_PASSKEY_FILLER_PATTERN, 11);
    struct rl_batch big;
    int             depth[21] = {0}, lo = 99, hi = -1, digit[10] = {0};
    fill(u, &big, 4200, 32, 0, 0);
    bad         = passkey_bad(&big, 5, 16, 1, depth);
    double chi2 = 0;
    for (int p = 0; p < 21; p++) {
        chi2 += (depth[p] - 200.0) * (depth[p] - 200.0) / 200.0;
        if (depth[p]) lo = p < lo ? p : lo, hi = p;
    }
    for (int i = 0; i < 4200 * 32; i++)
        if (big.mask[i]) digit[big.targets[i]]++;
    int digits_ok = 1;
    for (int v = 0; v < 10; v++) /* 2100 each expected, sd ~44 */
        digits_ok &= digit[v] > 1900 && digit[v] < 2300;
    /* chi-square with 20 degrees of freedom: 45.3 is its 0.999 quantile */
    tap_ok(bad == 0 && lo == 0 && hi == 20 && chi2 < 45.3,
           "passkey: key depth over 4200 rows at N = 32 spans 0 .. 20 (seen %d .. %d), uniform "
           "(chi2 %.1f, 20 dof)",
           lo, hi, chi2);
    tap_ok(digits_ok, "passkey: answer digits uniform over 0 .. 9 (counts %d .. %d of 21000)",
           digit[0], digit[9]);
    rl_batch_free(&big);
    /* evaluation lengths: only the filler grows */
    int same = 1;
    for (int M = 12; M <= 1024; M *= 4) {
        struct rl_batch x;
        fill(t, &x, 4, M, 1, 0);
        int nmask = 0;
        for (int i = 0; i < 4 * M; i++)
            nmask += x.mask[i];
        same &= passkey_bad(&x, 5, 16, 1, NULL) == 0 && nmask == 4 * 5 && in_vocab(&x, 16);
        rl_batch_free(&x);
    }
    tap_ok(same, "passkey at M = 12, 48, 192, 768: one KEY, 5 digits, 5 scored positions per row");
    struct rl_batch shorter;
    rl_batch_alloc(&shorter, 1, 11);
    int refused = rl_task_batch(t, &shorter, 1, 0) != RL_OK;
    tap_ok(refused, "passkey: M = 11 < 12 refused -- %s", rl_last_error());
    rl_batch_free(&shorter);
    /* random filler, another vocabulary and key length */
    rl_task        *r = make_passkey(40, 20, 3, RL_PASSKEY_FILLER_RANDOM, 7);
    struct rl_batch g;
    fill(r, &g, 64, 40, 0, 0);
    int seen[20] = {0}, kinds = 0;
    for (int i = 0; i < 64 * 40; i++)
        seen[g.inputs[i]]++;
    for (int v = 12; v < 20; v++)
        kinds += seen[v] > 0;
    tap_ok(passkey_bad(&g, 3, 20, 0, NULL) == 0 && passkey_bad(&g, 3, 20, 1, NULL) == 64 &&
               kinds == 8 && in_vocab(&g, 20),
           "passkey random filler (vocab 20, 3 digits): rows right, all 8 filler tokens used, not "
           "the pattern");
    rl_batch_free(&g);
    struct rl_batch *all[] = {&a, &a2, &c, &d, &e, &f};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        rl_batch_free(all[i]);
    rl_task_free(t), rl_task_free(t2), rl_task_free(t3), rl_task_free(u), rl_task_free(r);
    /* bad options */
    static const int   badopt[][3] = {{64, 12, 5}, {11, 16, 5}, {64, 16, -1}, {64, 16, 40}};
    static const char *why[]       = {"vocab 12 (no filler)", "length 11 < 2*5 + 2", "digits -1",
                                      "digits 40 in length 64"};
    for (int i = 0; i < 4; i++) {
        struct rl_task_opts o;
        rl_task_opts_default(&o);
        o.kind = RL_TASK_PASSKEY, o.length = badopt[i][0], o.vocab = badopt[i][1];
        o.digits    = badopt[i][2];
        rl_task *x  = NULL;
        int      no = rl_task_create(&x, &o) != RL_OK && !x;
        tap_ok(no, "passkey rejected: %s -- %s", why[i], rl_last_error());
        rl_task_free(x);
    }
}

/* ---- charlm ---- */

static char tmpdir[64];

static const char *tmp_path(const char *name)
{
    static char p[128];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    return p;
}

static rl_task *make_charlm(const char *path, int length)
{
    struct rl_task_opts o;
    rl_task_opts_default(&o);
    o.kind = RL_TASK_CHARLM, o.path = path, o.length = length, o.seed = 3;
    rl_task *t = NULL;
    if (rl_task_create(&t, &o) != RL_OK) tap_diag("charlm %s: %s", path, rl_last_error());
    return t;
}

/* Start of the window (N + 1 bytes) of row r in text[lo, hi), or -1. */
static long find_window(const unsigned char *text, size_t lo, size_t hi, const struct rl_batch *b,
                        int r)
{
    int N = b->N;
    for (size_t s = lo; s + (size_t)N + 1 <= hi; s++) {
        int i = 0;
        while (i < N && text[s + i] == b->inputs[(size_t)r * N + i] &&
               text[s + i + 1] == b->targets[(size_t)r * N + i])
            i++;
        if (i == N) return (long)s;
    }
    return -1;
}

static void test_charlm(void)
{
    enum { LEN = 10000, TRAIN = 9000 };
    static unsigned char text[LEN];
    for (int i = 0; i < LEN; i++)
        text[i] = (unsigned char)(tap_uniform() * 256);
    FILE *fp = fopen(tmp_path("text.bin"), "wb");
    if (!fp || fwrite(text, 1, LEN, fp) != LEN || fclose(fp)) tap_bail("cannot write text.bin");
    rl_task *t = make_charlm(tmp_path("text.bin"), 32);
    tap_ok(t && rl_task_vocab(t) == 256 && rl_task_length(t) == 32 && rl_task_causal(t) &&
               rl_task_max_length(t) == LEN - TRAIN - 1,
           "charlm: vocab 256, 90%%/10%% split of 10000 bytes: max length %d",
           t ? rl_task_max_length(t) : -1);
    if (!t) return;
    struct rl_batch b, v, w;
    fill(t, &b, 16, 32, 0, 5);
    int in_train = 0, ones = 1;
    for (int r = 0; r < 16; r++)
        in_train += find_window(text, 0, TRAIN, &b, r) >= 0;
    for (int i = 0; i < 16 * 32; i++)
        ones &= b.mask[i] == 1;
    tap_ok(in_train == 16 && ones, "charlm: 16 training rows are windows of bytes [0, 9000) with "
                                   "next-byte targets, mask all ones");
    /* validation: windows k = (step B + r) mod W at 9000 + 32 k, W = 999 / 32 = 31 */
    fill(t, &v, 16, 32, 1, 2);
    int exact = 1;
    for (int r = 0; r < 16; r++)
        exact &= find_window(text, TRAIN + (size_t)((32 + r) % 31) * 32,
                             TRAIN + (size_t)((32 + r) % 31) * 32 + 33, &v, r) >= 0;
    tap_ok(exact, "charlm: validation rows are the non-overlapping windows of [9000, 10000)");
    fill(t, &w, 7, 128, 1, 0); /* 4N: W = 999 / 128 = 7 windows */
    exact = 1;
    for (int r = 0; r < 7; r++)
        exact &=
            find_window(text, TRAIN + (size_t)r * 128, TRAIN + (size_t)r * 128 + 129, &w, r) >= 0;
    tap_ok(exact, "charlm: evaluation at 4N = 128 reads windows 0 .. 6 of the validation part");
    rl_batch_free(&w);
    int refused =
        rl_batch_alloc(&w, 1, LEN - TRAIN) == RL_OK && rl_task_batch(t, &w, 1, 0) != RL_OK;
    tap_ok(refused, "charlm: a window longer than the validation part is refused -- %s",
           rl_last_error());
    rl_batch_free(&b), rl_batch_free(&v), rl_batch_free(&w);
    rl_task_free(t);
    remove(tmp_path("text.bin"));
}

/* enwik8 (100,000,000 bytes, that name): the 90M / 5M / 5M split.  A sparse file with a
 * marker at the first validation byte stands in for it. */
static void test_enwik8(void)
{
    char p[128], q[128];
    snprintf(p, sizeof p, "%s", tmp_path("enwik8"));
    snprintf(q, sizeof q, "%s", tmp_path("other"));
    int fd = open(p, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0 || ftruncate(fd, 100000000) || pwrite(fd, "B", 1, 90000000) != 1) {
        if (fd >= 0) close(fd);
        tap_skip("cannot make a sparse 100 MB file", "charlm: enwik8 split");
        return;
    }
    close(fd);
    rl_task        *t = make_charlm(p, 64);
    struct rl_batch b;
    int             ok = t && rl_task_max_length(t) == 4999999;
    if (t) {
        fill(t, &b, 2, 64, 1, 0);
        ok = ok && b.inputs[0] == 'B' && b.inputs[64] == 0;
        rl_batch_free(&b);
    }
    tap_ok(ok, "charlm: enwik8 validates on bytes [90M, 95M) (max length %d)",
           t ? rl_task_max_length(t) : -1);
    rl_task_free(t);
    rename(p, q);
    t = make_charlm(q, 64);
    tap_ok(t && rl_task_max_length(t) == 9999999,
           "charlm: the same bytes under another name use the 90%%/10%% split");
    rl_task_free(t);
    remove(q);
}

/* ---- tokens: the dispatcher reaches task_tokens.c ---- */

static void test_tokens(void)
{
    char        path[4096];
    const char *src = getenv("top_srcdir");
    snprintf(path, sizeof path, "%s/tests/data/i32_tokens.npy", src ? src : ".");
    struct rl_task_opts o;
    rl_task_opts_default(&o);
    o.kind = RL_TASK_TOKENS, o.path = path;
    rl_task *t = NULL;
    if (rl_task_create(&t, &o) != RL_OK) {
        tap_ok(0, "tokens: %s", rl_last_error());
        return;
    }
    struct rl_batch b;
    fill(t, &b, 2, 3, 0, 0); /* arange(12).reshape(3, 4) */
    static const int32_t in[] = {0, 1, 2, 4, 5, 6}, tg[] = {1, 2, 3, 5, 6, 7};
    tap_ok(rl_task_vocab(t) == 12 && rl_task_length(t) == 3 && rl_task_max_length(t) == 3 &&
               !memcmp(b.inputs, in, sizeof in) && !memcmp(b.targets, tg, sizeof tg) &&
               b.label[0] == -1 && b.mask[5] == 1,
           "tokens: dispatched (vocab %d, length %d, rows 0 and 1)", rl_task_vocab(t),
           rl_task_length(t));
    rl_batch_free(&b);
    rl_task_free(t);
}

/* ---- bad options and calls ---- */

static void test_bad_options(void)
{
    static const struct {
        enum rl_task_kind kind;
        int               length, vocab, symbols, kv_pairs, depth, args;
        const char       *path, *why, *key; /* key: the [task] key the error names */
    } bad[] = {
        {RL_TASK_COPY, -1, 0, 0, 0, 0, 0, NULL, "negative length", "length"},
        {RL_TASK_COPY, 1, 0, 0, 0, 0, 0, NULL, "copy N = 1", "length"},
        {RL_TASK_COPY, 0, 2, 0, 0, 0, 0, NULL, "copy vocab 2 (no symbols)", "vocab"},
        {RL_TASK_REVERSE, 0, 20, 5, 0, 0, 0, NULL, "vocab 20 with 5 symbols", "vocab"},
        {RL_TASK_SORT, 0, 0, -3, 0, 0, 0, NULL, "negative symbols", "symbols"},
        {RL_TASK_MQAR, 0, 3, 0, 0, 0, 0, NULL, "mqar vocab 3", "vocab"},
        {RL_TASK_MQAR, 64, 0, 0, 20, 0, 0, NULL, "mqar 20 pairs in N = 64", "kv_pairs"},
        {RL_TASK_MQAR, 256, 16, 0, 0, 0, 0, NULL, "mqar 16 pairs, 7 keys", "length"},
        {RL_TASK_LISTOPS, 0, 0, 0, 0, 0, 1, NULL, "listops args 1", "args"},
        {RL_TASK_LISTOPS, 0, 0, 0, 0, 65, 0, NULL, "listops depth 65", "depth"},
        {RL_TASK_LISTOPS, 0, 17, 0, 0, 0, 0, NULL, "listops vocab 17", "vocab"},
        {RL_TASK_LISTOPS, 3, 0, 0, 0, 0, 0, NULL, "listops N = 3", "length"},
        {RL_TASK_CHARLM, 0, 0, 0, 0, 0, 0, NULL, "charlm without path", "path"},
        {RL_TASK_CHARLM, 0, 0, 0, 0, 0, 0, "/nonexistent/t_task.txt", "charlm missing file",
         "path"},
        {RL_TASK_CHARLM, 0, 100, 0, 0, 0, 0, "-", "charlm vocab 100", "vocab"},
        {RL_TASK_CHARLM, 0, 0, 0, 0, 0, 0, "short", "charlm file too short for N = 64", "length"},
        {RL_TASK_TOKENS, 0, 0, 0, 0, 0, 0, NULL, "tokens without path", "path"},
        {(enum rl_task_kind)99, 0, 0, 0, 0, 0, 0, NULL, "unknown kind", "name"},
    };
    FILE *fp = fopen(tmp_path("short"), "wb");
    if (fp) fputs("only a few bytes of text\n", fp), fclose(fp);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct rl_task_opts o;
        rl_task_opts_default(&o);
        o.kind = bad[i].kind, o.length = bad[i].length, o.vocab = bad[i].vocab;
        o.symbols = bad[i].symbols, o.kv_pairs = bad[i].kv_pairs;
        if (bad[i].depth) o.depth = bad[i].depth;
        if (bad[i].args) o.args = bad[i].args;
        if (bad[i].path) o.path = bad[i].path[0] == '/' ? bad[i].path : tmp_path(bad[i].path);
        rl_task    *t   = NULL;
        rl_status   st  = rl_task_create(&t, &o);
        const char *sec = NULL, *key = NULL;
        int         named =
            rl_last_error_key(&sec, &key) && !strcmp(sec, "task") && !strcmp(key, bad[i].key);
        tap_ok(st != RL_OK && !t && named, "rejected: %s, naming [task] %s (as data: %s) -- %s",
               bad[i].why, bad[i].key, key ? key : "none", rl_last_error());
        rl_task_free(t);
    }
    remove(tmp_path("short"));
    enum rl_task_kind k;
    int               ok = rl_task_kind_parse(&k, "listops") == RL_OK && k == RL_TASK_LISTOPS &&
             !strcmp(rl_task_kind_name(RL_TASK_MQAR), "mqar") &&
             rl_task_kind_parse(&k, "lm") != RL_OK;
    tap_ok(ok, "kind names: parse, name, unknown rejected -- %s", rl_last_error());

    struct rl_task_opts o;
    rl_task_opts_default(&o);
    o.kind = RL_TASK_MQAR, o.kv_pairs = 8; /* fits the default N = 64, not N = 16 */
    rl_task        *t = NULL;
    struct rl_batch b, s;
    rl_task_create(&t, &o);
    rl_batch_alloc(&b, 2, 64);
    rl_batch_alloc(&s, 2, 16);
    ok = t && rl_task_length(t) == 64 && rl_task_batch(t, &b, 2, 0) != RL_OK &&
         rl_task_batch(t, &b, 0, -1) != RL_OK && rl_task_batch(t, &b, 1, 0) == RL_OK &&
         rl_task_batch(t, &s, 1, 0) != RL_OK;
    tap_ok(ok, "batch: split 2, step -1 and 8 pairs at N = 16 refused -- %s", rl_last_error());
    rl_batch_free(&b), rl_batch_free(&s);
    rl_task_free(t);
    tap_ok(rl_batch_alloc(&b, 0, 4) != RL_OK && !b.inputs, "rl_batch_alloc(B = 0) refused");
}

int main(void)
{
    tap_seed(5);
    tap_scratch(tmpdir, sizeof tmpdir, "t_task");
    test_generated(RL_TASK_COPY, 64, 12);
    test_generated(RL_TASK_REVERSE, 64, 12);
    test_generated(RL_TASK_SORT, 64, 12);
    test_generated(RL_TASK_MQAR, 64, 1024);
    test_generated(RL_TASK_LISTOPS, 64, 16);
    test_seq_options();
    test_mqar_fixed();
    test_mqar_layout();
    test_mqar_dense();
    test_mqar_lengths();
    test_listops_limits();
    test_passkey();
    test_charlm();
    test_enwik8();
    test_tokens();
    test_bad_options();
    tap_scratch_remove(tmpdir);
    return tap_done();
}
