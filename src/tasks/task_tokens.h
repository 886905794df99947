/* task_tokens.h -- the `tokens` task (docs/tasks.md): a user's own token ids.
 *
 * task.path (required) and task.valid_path (optional) name .npy arrays of shape
 * S x (N+1), int32 or int64.  Update s (0-based) of a batch of B rows uses rows
 * (s*B + j) mod S, j < B; inputs = row[0 .. N-1], targets = row[1 .. N], mask all ones
 * (loss on every position).  A batch shorter than the data (evaluation at n < N) takes
 * the first n+1 ids of each row.  Split 1 (evaluation) reads valid_path, or the training
 * array when there is none.
 *
 * vocab defaults to the largest id + 1 over both arrays and length to the training N;
 * explicit values must agree (vocab > every id, length = N).  Negative ids, ids >= vocab,
 * ranks other than 2, rows shorter than 2 ids and float dtypes are rejected with a
 * message naming the file (and the offending row and column). */
#ifndef RL_TASK_TOKENS_H
#define RL_TASK_TOKENS_H

#include <stdint.h>
#include "../core/status.h"
#include "../model/batch.h"
#include "task_opts.h"

struct rl_task_tokens;

rl_status rl_task_tokens_open(struct rl_task_tokens **t, const struct rl_task_opts *o);
void      rl_task_tokens_free(struct rl_task_tokens *t);
int       rl_task_tokens_vocab(const struct rl_task_tokens *t);
int       rl_task_tokens_length(const struct rl_task_tokens *t); /* training N */
/* Longest evaluation length: the validation array's N (the training N without one). */
int rl_task_tokens_max_length(const struct rl_task_tokens *t);
/* Rows of the array a split reads. */
int64_t   rl_task_tokens_rows(const struct rl_task_tokens *t, int split);
/* The training ids' unigram (add-one) scored on the validation targets (task.h). */
rl_status rl_task_tokens_unigram(const struct rl_task_tokens *t, double *loss, double *acc);
rl_status rl_task_tokens_batch(struct rl_task_tokens *t, struct rl_batch *b, int split,
                               int64_t step);

#endif
