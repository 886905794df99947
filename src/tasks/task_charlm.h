/* task_charlm.h -- the character-level language modelling on a text file generator family: setup validates and resolves its
 * options into the task object, batch fills b->B rows of b->N tokens (docs/tasks.md). */
#ifndef RL_TASK_CHARLM_H
#define RL_TASK_CHARLM_H

#include "task_common.h"

rl_status rl_task_charlm_setup(struct rl_task *t, const struct rl_task_opts *o);
rl_status rl_task_charlm_batch(struct rl_task *t, struct rl_batch *b, int split, int64_t step);
int       rl_task_charlm_max_length(const struct rl_task *t);

#endif
