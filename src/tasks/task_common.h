/* task_common.h -- private to the tasks: the task object, the per-row generator and
 * the scratch buffer, shared by the dispatcher (task.c) and every generator family
 * (task_seq.c, task_mqar.c, task_listops.c, task_charlm.c, task_tokens.c, task_passkey.c).  Not
 * installed; docs/tasks.md describes every layout.
 *
 * A family's setup resolves and validates its options into t (vocab, length, its own
 * parameters) and its batch fills b->B rows of b->N tokens.  Every row draws from its
 * own generator, seeded by rl_task_row_rng from (seed, split, step, N, row), so a row
 * never depends on the rows or batches before it. */
#ifndef RL_TASK_COMMON_H
#define RL_TASK_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include "../core/rng.h"
#include "../model/batch.h"
#include "task_opts.h"

struct rl_task_tokens;

#define RL_TASK_DEFAULT_LENGTH 64 /* default task.length of the generated tasks */

struct rl_task {
    enum rl_task_kind kind;
    uint64_t          seed;
    int               length, vocab;
    int               symbols;       /* copy/reverse/sort: content symbols */
    int               kv_pairs;      /* mqar: 0 = max(1, N / 16) at each length N */
    int               train_queries; /* mqar: enum rl_mqar_queries */
    int               n_train_lengths, train_lengths[RL_TASK_MAX_TRAIN_LENGTHS]; /* mqar */
    int               depth, args;   /* listops limits */
    int               digits;        /* passkey: digits of the key */
    int               filler;        /* passkey: enum rl_passkey_filler */
    /* charlm: the whole file and its split ([0, train_end) train, [valid_lo, valid_hi)
     * validation) */
    unsigned char         *text;
    size_t                 text_len, train_end, valid_lo, valid_hi;
    struct rl_task_tokens *tokens;  /* tokens task */
    int32_t               *scratch; /* per-row work space of the generators */
    size_t                 scratch_len;
};

/* The generator of one row: splitmix64 hash of (seed, split, step, N, row). */
void rl_task_row_rng(struct rl_rng *r, const struct rl_task *t, int split, int64_t step, int N,
                     int row);
/* Row `row` of b from a sequence s[0 .. N] of N + 1 tokens: inputs s[0 .. N), targets
 * s[1 .. N]; returns the row's loss mask, cleared, for the caller to mark. */
uint8_t *rl_task_put_row(struct rl_batch *b, int row, const int32_t *s, int N);
/* The unigram baseline: the mean cross-entropy and the accuracy of predicting targets
 * whose ids occur `seen` times each from the add-one smoothed frequencies `count` of the
 * training data, p(v) = (count[v] + 1) / (sum count + V); the argmax is the guess. */
void rl_task_unigram(const double *count, const double *seen, int V, double *loss, double *acc);
/* Make t->scratch hold at least n int32 (kept between calls). */
rl_status rl_task_scratch(struct rl_task *t, size_t n);

#endif
