/* train.h -- the training loop for one model (SPEC 4 and 6), its evaluation, and the
 * training-throughput benchmark.
 *
 * Update s = 0 .. steps-1:
 *   lr_s from the schedule (warm-up, cosine to min_lr_ratio*lr at s = steps-1);
 *   zero the gradients;
 *   for each of `accumulate` micro-batches (consecutive rows of the update's batch, which
 *   the task makes from (seed, split 0, step s) alone): forward, then backward with
 *   dloss/dlogit scaled by 1 / (targets of the whole update);
 *   the global gradient norm (logged, before clipping), clipping, one AdamW step.
 * The loss of an update is the summed cross-entropy of all its micro-batches over its
 * targets, so `accumulate` changes memory and speed, not the numbers (up to float
 * summation order).
 *
 * Run directory (SPEC 6): config.ini (resolved), metrics.jsonl, checkpoints/step-<k>
 * .safetensors (every checkpoint_every updates, at the end, and step-0 with
 * checkpoint_initial), results.csv, eval.jsonl (with eval.every).
 * Resume: the latest checkpoint's config must equal this one (but out/threads); weights,
 * moments, step and generator state are loaded, metrics.jsonl is cut back to the records
 * of updates <= that step, and training continues: the final weights are bit-identical
 * to an uninterrupted run with the same thread count (tests/t_train.c), and so is every
 * file but its timing fields, wherever the run was killed (tests/t_kill.sh).  A damaged
 * latest checkpoint (a checksum mismatch, a non-finite value, a truncated file) is passed
 * over, with a warning, for the newest intact one; temporary files of interrupted writes
 * (NAME.tmp, NAME.tmp.<pid>) are removed. */
#ifndef RL_TRAIN_H
#define RL_TRAIN_H

#include <stdint.h>
#include <stdio.h>
#include "cfg.h"
#include "../core/status.h"
#include "task.h"

struct rl_train_opts {
    int     resume;      /* continue from the latest checkpoint in the run directory */
    int64_t stop_after;  /* > 0: stop after this many updates as if killed (no checkpoint, no
                            evaluation) -- for tests of resume and for time-boxed runs */
    int64_t max_updates; /* > 0: stop after this many updates in this call (as stop_after) */
    FILE   *log;         /* progress lines; NULL = quiet */
    FILE   *table;       /* the evaluation table; NULL = none */
    FILE   *warn;        /* resume's warnings (a damaged checkpoint passed over, stale
                            temporary files removed); NULL = none */
    /* Called after every update when set (an experiment's progress line): updates done,
     * train.steps, and that update's loss. */
    void (*on_update)(void *ctx, int64_t step, int64_t steps, double loss);
    void *ctx;
};

/* Bins of the per-position loss curve of an evaluation length (LM tasks). */
#define RL_EVAL_POS_BINS 64

struct rl_eval_row {
    int    length;
    int    na;             /* 1: not applicable (learned PE beyond max_len); see note */
    double loss, acc, ppl; /* ppl = exp(loss) for LM tasks, NaN for classifiers */
    double exact;          /* sequences whose every scored target is right (fraction) */
    long   sequences;      /* the sequences counted (those with a scored target) */
    /* LM tasks (charlm, tokens): mean loss of positions [b w, (b+1) w), b < pos_bins */
    int    pos_width, pos_bins;
    double pos_loss[RL_EVAL_POS_BINS];
    long   pos_targets[RL_EVAL_POS_BINS];
    double ms_per_1k_tokens; /* forward time per 1000 evaluated tokens */
    long   targets;
    long   bad_den;  /* linear attention: rows (x layers x heads) with denominator <= eps */
    long   den_rows; /* the rows counted: eval rows x N x layers x heads */
    char   note[64];
};

struct rl_train_result {
    int64_t            steps_done;
    int64_t            updates; /* done by this call (steps_done minus the resumed step) */
    double             last_loss, last_acc;
    double             tokens_per_s;                          /* mean over this process's updates */
    double             ms_forward, ms_backward, ms_optimizer; /* per update, same mean */
    int                n_eval;
    struct rl_eval_row eval[RL_CFG_MAX_LENGTHS];
};

/* Create the configured task and resolve c's automatic values against it (errors name
 * the configuration file and key).  *task is NULL on failure. */
rl_status rl_train_prepare(struct rl_cfg *c, rl_task **task);

/* Train and evaluate one model: c resolved by rl_train_prepare, run_dir created if needed.
 * Without opts->resume an existing run (metrics.jsonl or checkpoints) in run_dir is an
 * error.  r may be NULL. */
rl_status rl_train_run(const struct rl_cfg *c, rl_task *task, const char *run_dir,
                       const struct rl_train_opts *opts, struct rl_train_result *r);

/* Training throughput (`ropelab bench --train`): the SPEC model of issue 4 -- vocab 64,
 * D 128, 4 heads, 2 layers, causal LM, RoPE, 4096 tokens per update -- at N = 256
 * (batch 16) and N = 4096 (batch 1), softmax and causal linear (elu1) attention, on the
 * current thread count (rl_init).  Each cell: `warmup` untimed updates, then `steps`
 * timed ones; prints a table (tokens/s and forward / backward / optimizer ms per
 * update, median over the timed updates) to out and, when csv_path is not NULL, writes
 * the same numbers as CSV.  Returns 0 on success, nonzero after printing the error. */
int rl_bench_train(FILE *out, int warmup, int steps, const char *csv_path);

struct rl_bench_train_cell {
    enum rl_attn_kind kind;
    int               N, B;
    double            tokens_per_s, ms_forward, ms_backward, ms_optimizer, ms_step;
};
/* One cell of that benchmark (the same model), for callers that format themselves. */
rl_status rl_bench_train_cell(struct rl_bench_train_cell *cell, int warmup, int steps);

#endif
