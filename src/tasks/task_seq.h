/* task_seq.h -- the copy, reverse and sort generator family: setup validates and resolves its
 * options into the task object, batch fills b->B rows of b->N tokens (docs/tasks.md). */
#ifndef RL_TASK_SEQ_H
#define RL_TASK_SEQ_H

#include "task_common.h"

rl_status rl_task_seq_setup(struct rl_task *t, const struct rl_task_opts *o);
rl_status rl_task_seq_batch(struct rl_task *t, struct rl_batch *b, int split, int64_t step);

#endif
