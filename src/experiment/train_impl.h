/* train_impl.h -- private to train.c, train_eval.c, train_run.c, train_io.c and train_bench.c: the
 * trainer object and the pieces of one run (updates, files, evaluation). */
#ifndef RL_TRAIN_IMPL_H
#define RL_TRAIN_IMPL_H

#include <stdint.h>
#include <stdio.h>
#include "../model/adamw.h"
#include "../config/cfg.h"
#include "../model/model.h"
#include "../core/rng.h"
#include "../tasks/task.h"
#include "train.h"

/* One update's numbers (a metrics.jsonl record holds the loss/acc/lr/grad_norm of its
 * update and the mean timings since the previous record). */
struct rl_update_stats {
    double loss, acc, lr, grad_norm;
    double ms_forward, ms_backward, ms_optimizer, ms_total;
    long   targets;
};

struct rl_trainer {
    const struct rl_cfg *c;
    rl_task             *task;
    rl_model            *m;
    float               *mom_m, *mom_v; /* AdamW moments, the layout of the parameters */
    size_t               n_params;
    struct rl_adamw_opts ao;
    struct rl_batch      batch;     /* train.batch rows of the training length */
    struct rl_rng        rng;       /* checkpointed; data order depends on (seed, step) only */
    int64_t              step;      /* updates done */
    char                 dir[2200]; /* run directory */
    int                  ranks;     /* data_parallel: the job's ranks, which share each
                                       update's rows; 1 otherwise */
    float                      *dp_scratch; /* ranks > 1: the gradient sum's receive buffer */
    const struct rl_eval_hooks *hooks;      /* the evaluations' stop flag and progress (or NULL) */
};

rl_status rl_trainer_init(struct rl_trainer *t, const struct rl_cfg *c, rl_task *task);
void      rl_trainer_free(struct rl_trainer *t);
/* Update number t->step (0-based), then t->step++. */
rl_status rl_trainer_update(struct rl_trainer *t, struct rl_update_stats *s);
/* Evaluate at every eval length, under every rope_extend method (RoPE points; once for
 * the others), into rows: *n_rows of them, method-major (train_eval.c). */
rl_status rl_trainer_evaluate(struct rl_trainer *t, struct rl_eval_row *rows, int *n_rows);
/* "diverged" appended to every row's note when the loss at the training length (or the
 * shortest length) exceeds twice ln(classes), or a loss or perplexity is not finite. */
void rl_trainer_mark_diverged(const struct rl_cfg *c, rl_task *task, struct rl_eval_row *rows,
                              int n);
/* Data parallel: 1 on the rank that writes the run's files and evaluates (rank 0), 0 on
 * the others; 1 without data parallelism (every rank writes its own points). */
int rl_trainer_writer(const struct rl_trainer *t);
/* Data parallel: copy rank 0's step, generator, weights and moments to every rank (after
 * rank 0 loaded a checkpoint to resume). */
rl_status rl_trainer_share(struct rl_trainer *t);

/* train_io.c: the run directory's files. */
rl_status rl_train_path(char *buf, size_t len, const char *dir, const char *name);
/* checkpoints/step-<step>, then the unscheduled ones below it removed; path (may be NULL,
 * else 2300 bytes) gets the file's name. */
rl_status rl_trainer_save(struct rl_trainer *t, char *path);
rl_status rl_trainer_load(struct rl_trainer *t, const char *path); /* weights, moments, step, rng */
/* Remove the temporary files of interrupted writes (NAME.tmp and NAME.tmp.<pid>) in dir
 * and dir/checkpoints; *removed counts them. */
rl_status rl_train_remove_stale(const char *dir, int *removed);
/* Is checkpoint k one that c's schedule asks for (checkpoint_every, checkpoint_initial,
 * the last update)?  The others are the safety checkpoints of an interrupted run. */
int rl_train_scheduled(const struct rl_cfg *c, int64_t k);
/* Remove dir's checkpoints below k that are not scheduled: a newer one holds their work. */
rl_status rl_train_prune_checkpoints(const char *dir, const struct rl_cfg *c, int64_t k);
/* Keep the records of a .jsonl file whose "step" <= k (a missing file is fine). */
rl_status rl_jsonl_truncate(const char *path, int64_t k);
rl_status rl_jsonl_append(const char *path, const char *line);
void rl_print_eval_table(FILE *f, const struct rl_cfg *c, const struct rl_eval_row *rows, int n,
                         int causal);

#endif
