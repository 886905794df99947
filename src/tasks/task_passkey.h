/* task_passkey.h -- the passkey retrieval generator family (Mohtashami & Jaggi 2023): setup
 * validates and resolves its options into the task object, batch fills b->B rows of b->N
 * tokens (docs/tasks.md). */
#ifndef RL_TASK_PASSKEY_H
#define RL_TASK_PASSKEY_H

#include "task_common.h"

rl_status rl_task_passkey_setup(struct rl_task *t, const struct rl_task_opts *o);
rl_status rl_task_passkey_batch(struct rl_task *t, struct rl_batch *b, int split, int64_t step);
/* Shortest row: the key block and the query block, no filler (2 digits + 2). */
int rl_task_passkey_min_length(const struct rl_task *t);

#endif
