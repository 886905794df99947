/* task_mqar.h -- the multi-query associative recall (Zoology) generator family: setup validates and resolves its
 * options into the task object, batch fills b->B rows of b->N tokens (docs/tasks.md). */
#ifndef RL_TASK_MQAR_H
#define RL_TASK_MQAR_H

#include "task_common.h"

rl_status rl_task_mqar_setup(struct rl_task *t, const struct rl_task_opts *o);
rl_status rl_task_mqar_batch(struct rl_task *t, struct rl_batch *b, int split, int64_t step);

#endif
