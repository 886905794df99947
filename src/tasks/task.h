/* task.h -- training and evaluation data (docs/tasks.md): seeded synthetic generators and
 * user token arrays, behind one interface the trainer calls.
 *
 * A batch is B rows of N tokens:
 *   inputs  (B, N) int32 token ids in [0, vocab)
 *   targets (B, N) int32; for LM-style tasks the next-token target of each position
 *   mask    (B, N) uint8; 1 where the loss is taken (e.g. the copied half of copy)
 *   label   (B)    int32; classification tasks only (ListOps): class in [0, n_classes);
 *                  rl_batch_alloc always allocates it and causal tasks set it to -1
 * Causal tasks (copy, reverse, sort, mqar, passkey, charlm, tokens) train a decoder with
 * loss on the masked positions; non-causal ones (listops) a mean-pooled classifier.
 *
 * Determinism: a batch is a pure function of (task options, seed, split, step, N), so a
 * resumed run sees the same data as an uninterrupted one; rl_task_batch never depends on
 * earlier calls.  split: 0 = train, 1 = validation/evaluation (disjoint streams). */
#ifndef RL_TASK_H
#define RL_TASK_H

#include <stdint.h>
#include "../core/status.h"
#include "../model/batch.h"
#include "task_opts.h"

rl_status rl_task_create(rl_task **t, const struct rl_task_opts *o);
void      rl_task_free(rl_task *t);

int rl_task_vocab(const rl_task *t);
int rl_task_length(const rl_task *t);    /* training length N */
int rl_task_causal(const rl_task *t);    /* 1: decoder/LM loss; 0: classifier */
int rl_task_n_classes(const rl_task *t); /* 0 for causal tasks */
/* Largest N this task can generate (e.g. tokens: the array's N; mqar: the pairs a
 * length asks for must have distinct keys); 0 = unlimited. */
int rl_task_max_length(const rl_task *t);
/* Smallest N it can generate (mqar with a fixed kv_pairs D: 4D - 1; passkey with k digits:
 * 2k + 2); 1 for the others. */
int rl_task_min_length(const rl_task *t);

/* The baseline a model has to beat, the best guess without context: the mean
 * cross-entropy and the accuracy, on the validation targets, of the training data's
 * unigram (charlm, tokens: add-one smoothed, its most frequent token as the guess), or of
 * a uniform guess over the answers of a generator (copy, reverse, sort: the symbols; mqar:
 * the values; passkey: the 10 digits; listops: the 10 classes). */
rl_status rl_task_reference(const rl_task *t, double *loss, double *acc);

/* The distinct rows of the validation split at length N, when it is finite (charlm: the
 * non-overlapping windows of the validation text; tokens: the validation array's rows);
 * 0 for the generators, whose validation stream has no end.  Validation batch i of B rows
 * holds rows (i B + j) mod this count, so ceil(count / B) batches read each row once. */
int64_t rl_task_valid_rows(const rl_task *t, int N);

/* Fill b (b->B rows of b->N tokens) for the given split and step. */
rl_status rl_task_batch(rl_task *t, struct rl_batch *b, int split, int64_t step);

#endif
