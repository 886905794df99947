/* task_listops.h -- the ListOps (Long Range Arena rules) generator family: setup validates and resolves its
 * options into the task object, batch fills b->B rows of b->N tokens (docs/tasks.md). */
#ifndef RL_TASK_LISTOPS_H
#define RL_TASK_LISTOPS_H

#include "task_common.h"

rl_status rl_task_listops_setup(struct rl_task *t, const struct rl_task_opts *o);
rl_status rl_task_listops_batch(struct rl_task *t, struct rl_batch *b, int split, int64_t step);

#endif
