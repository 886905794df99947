/* train.h -- the training loop for one model (docs/model.md), its evaluation, and the
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
 * Run directory (docs/experiments.md): config.ini (resolved), metrics.jsonl, checkpoints/step-<k>
 * .safetensors (every checkpoint_every updates, at the end, and step-0 with
 * checkpoint_initial), results.csv, eval.jsonl (with eval.every).  Two more kinds of
 * checkpoint keep an interrupted run's work: one after every checkpoint_minutes of training
 * since the last checkpoint, and one of the last update when the run is stopped (opts->stop,
 * stop_after).  Neither is on the schedule above, so each is removed once a newer
 * checkpoint is written: a finished run holds the scheduled checkpoints alone, whether it
 * was interrupted or not.
 * Resume: the latest checkpoint's config must equal this one (but out/threads); weights,
 * moments, step and generator state are loaded, metrics.jsonl is cut back to the records
 * of updates <= that step, and training continues: the final weights are bit-identical
 * to an uninterrupted run with the same thread count (tests/t_train.c), and so is every
 * file but its timing fields, wherever the run was killed (tests/t_kill.sh).  A damaged
 * latest checkpoint (a checksum mismatch, a non-finite value, a truncated file) is passed
 * over, with a warning, for the newest intact one; temporary files of interrupted writes
 * (NAME.tmp, NAME.tmp.<pid>) are removed.
 *
 * Data parallel (train.data_parallel under MPI, K ranks): every rank builds the whole
 * update's batch and computes rows [k B/K, (k+1) B/K) of it, in `accumulate` micro-batches,
 * scaled by 1 / (targets of the whole update); the gradient buffer, loss sum and counts
 * are then summed over the ranks in a fixed order (core/mpi.h), so every rank takes the
 * same AdamW step and a run is bit-reproducible for a given K and thread count.  Rank 0
 * alone writes the run directory and evaluates; a resumed run loads the checkpoint on
 * rank 0 and broadcasts weights, moments, step and generator. */
#ifndef RL_TRAIN_H
#define RL_TRAIN_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include "../config/cfg.h"
#include "../core/status.h"
#include "../tasks/task.h"

/* What a caller may ask of a long evaluation (NULL members: nothing): stop, when *stop
 * becomes nonzero (a signal handler sets it), at the end of the current forward, with
 * RL_EINTR; and a report of the work done, after every forward. */
struct rl_eval_progress {
    int    length, method;        /* the evaluation length and its rope_extend method */
    int    index, count;          /* this (method, length) among the evaluation's, 0-based */
    double tokens, length_tokens; /* tokens of this length's forwards so far, and in all */
    double done, total;           /* the same over every length (this one's so far included) */
    double ms;                    /* milliseconds spent on this length so far */
};
struct rl_eval_hooks {
    volatile sig_atomic_t *stop;
    void (*progress)(void *ctx, const struct rl_eval_progress *p);
    void *ctx;
};

struct rl_train_opts {
    int     resume;      /* continue from the latest checkpoint in the run directory */
    int64_t stop_after;  /* > 0: stop after this many updates as if interrupted there */
    int64_t max_updates; /* > 0: stop after this many updates in this call (as stop_after) */
    /* Nonzero *stop (a signal handler sets it) stops the run at the end of the current
     * update, or the final evaluation at the end of its current forward.  Stopped for any
     * of these reasons, the run first saves a checkpoint of its last completed update
     * (unless one is there) and says so in rl_train_result. */
    volatile sig_atomic_t *stop;
    /* The evaluations' progress (the final one's; NULL: none). */
    void (*on_eval)(void *ctx, const struct rl_eval_progress *p);
    FILE *log;   /* progress lines; NULL = quiet */
    FILE *table; /* the evaluation table; NULL = none */
    FILE *warn;  /* resume's warnings (a damaged checkpoint passed over, stale
                    temporary files removed); NULL = none */
    /* Called after every update when set (an experiment's progress line): updates done,
     * train.steps, and that update's loss. */
    void (*on_update)(void *ctx, int64_t step, int64_t steps, double loss);
    void *ctx;
};

/* Rows of one evaluation: lengths x rope_extend methods. */
#define RL_EVAL_MAX_ROWS (RL_CFG_MAX_LENGTHS * RL_CFG_EXTEND_MAX)

/* Bins of the per-position loss curve of an evaluation length (LM tasks), at most. */
#define RL_EVAL_POS_BINS 96
/* Scored-target orders kept by the accuracy-by-order breakdown (the last pools the rest). */
#define RL_EVAL_ORDERS 64

struct rl_eval_row {
    int                length;
    int                stride;         /* eval.stride it was made with (0: non-overlapping) */
    enum rl_cfg_extend method;         /* RoPE extension at evaluation (none for other PEs) */
    double             factor;         /* its factor s (1 for none) */
    int                na;             /* 1: not applicable (learned PE beyond max_len); see note */
    double             loss, acc, ppl; /* ppl = exp(loss) for LM tasks, NaN for classifiers */
    double             exact;          /* sequences whose every scored target is right (fraction) */
    long               sequences;      /* the sequences counted (those with a scored target) */
    /* 95 % intervals (NaN with fewer than 2 sequences), with a sequence's tokens as one
     * cluster (core/stats.h): loss, the t interval of its mean over the scored tokens; acc,
     * the Wilson interval at their effective sample size; ppl, the exponentials of the
     * loss's ends; exact, the Wilson interval over the sequences */
    double loss_lo, loss_hi, acc_lo, acc_hi, ppl_lo, ppl_hi, exact_lo, exact_hi;
    /* LM tasks (charlm, tokens): the loss by position in pos_bins bins, bin b holding the
     * positions [pos_edge[b], pos_edge[b+1]) (rl_eval_pos_edges): their targets, mean loss
     * and its 95 % interval over the sequences (a sequence's targets one cluster) */
    int    pos_bins;
    int    pos_edge[RL_EVAL_POS_BINS + 1];
    double pos_loss[RL_EVAL_POS_BINS], pos_lo[RL_EVAL_POS_BINS], pos_hi[RL_EVAL_POS_BINS];
    long   pos_targets[RL_EVAL_POS_BINS];
    /* the best guess without context (tasks/task.h: rl_task_reference) */
    double ref_loss, ref_acc;
    /* Causal tasks but LM ones: the accuracy by the order of a scored target within its row
     * (MQAR: the k-th query; passkey: the k-th answer digit).  Order k + 1 has
     * order_targets[k] targets, order_correct[k] of them right, k < n_orders; the last
     * entry, k = RL_EVAL_ORDERS - 1, pools every target from that order on. */
    int    n_orders;
    long   order_targets[RL_EVAL_ORDERS], order_correct[RL_EVAL_ORDERS];
    double ms_per_1k_tokens; /* forward time per 1000 evaluated tokens */
    long   targets;
    long   bad_den;  /* linear attention: rows (x layers x heads) with denominator <= eps */
    long   den_rows; /* the rows counted: eval rows x N x layers x heads */
    char   note[64];
};

/* The bin edges of the loss by position at length M trained at length N into edge (room
 * for RL_EVAL_POS_BINS + 1): 0, then two an octave (round(2^(k/2)): 1, 2, 3, 4, 6, 8, 11,
 * 16, 23, ...), with an edge at every N 2^j below M, and M last -- bins of one width on a
 * log scale of the 1-based position, and the ranges [0, N), [N, 2N), ... exact unions of
 * them.  Returns the number of bins. */
int rl_eval_pos_edges(int M, int N, int *edge);

struct rl_train_result {
    int64_t            steps_done;
    int64_t            updates; /* done by this call (steps_done minus the resumed step) */
    int                stopped; /* stopped before the results (stop, stop_after, max_updates) */
    char               checkpoint[2300]; /* then: the checkpoint of update steps_done */
    double             last_loss, last_acc;
    double             tokens_per_s;                          /* mean over this process's updates */
    double             ms_forward, ms_backward, ms_optimizer; /* per update, same mean */
    int                n_eval;
    struct rl_eval_row eval[RL_EVAL_MAX_ROWS];
};

/* Create the configured task and resolve c's automatic values against it (errors name
 * the configuration file and key).  *task is NULL on failure. */
rl_status rl_train_prepare(struct rl_cfg *c, rl_task **task);

/* Train and evaluate one model: c resolved by rl_train_prepare, run_dir created if needed.
 * Without opts->resume an existing run (metrics.jsonl or checkpoints) in run_dir is an
 * error.  r may be NULL. */
rl_status rl_train_run(const struct rl_cfg *c, rl_task *task, const char *run_dir,
                       const struct rl_train_opts *opts, struct rl_train_result *r);

/* Evaluate the weights of checkpoint `path` (its other tensors and metadata ignored) under
 * c (resolved by rl_train_prepare): r->eval as at the end of a run.  hooks (may be NULL):
 * progress and stop (RL_EINTR).  step (may be NULL):
 * the checkpoint's update count.  A tensor missing or of another shape is an error naming
 * it. */
rl_status rl_train_evaluate_checkpoint(const struct rl_cfg *c, rl_task *task, const char *path,
                                       const struct rl_eval_hooks *hooks, struct rl_train_result *r,
                                       int64_t *step);

/* The checkpoint a directory stands for (ropelab generate): the latest of a point's
 * directory, or of a run's without a sweep; a sweep's run directory stands for its point
 * when it has one, else the error names its points.  An error when there is none. */
rl_status rl_train_dir_checkpoint(const char *dir, char *path, size_t len);
/* A run directory's latest checkpoints/step-<k>.safetensors with k < below into path;
 * *k = -1 when there is none (train_io.c). */
rl_status rl_train_latest_checkpoint(const char *dir, int64_t below, int64_t *k, char *path,
                                     size_t len);
/* DIR/results.csv (and positions.csv for LM tasks) of the n rows of an evaluation. */
rl_status rl_write_results_csv(const char *dir, const struct rl_cfg *c,
                               const struct rl_eval_row *rows, int n);

/* [train] init_from: load that checkpoint's parameters into m (no-op without it); an error
 * names the file, the key and the tensor that does not match. */
rl_status rl_train_init_from(rl_model *m, const struct rl_cfg *c);
/* The same check on a model of c made for it (before anything trains). */
rl_status rl_train_check_init_from(const struct rl_cfg *c, rl_task *task);

/* Training throughput (`ropelab bench --train`): the benchmark model -- vocab 64, D 128,
 * 4 heads, 2 layers, causal LM, RoPE, 4096 tokens per update -- at a cell's N, batch and
 * attention kind, on the current thread count (rl_init).  `warmup` untimed updates, then
 * `steps` timed ones; the cell gets tokens/s and forward / backward / optimizer ms per
 * update (medians over the timed updates).  The table is printed by the program. */
struct rl_bench_train_cell {
    enum rl_attn_kind kind;
    enum rl_attn_pe   pe;     /* the attention-level PE (linear ALiBi: its decayed scan) */
    int               forget; /* the forget gate */
    int               N, B;
    double            tokens_per_s, ms_forward, ms_backward, ms_optimizer, ms_step;
    double            flops_per_token; /* forward + backward, model/flops.h */
    /* the matrix products of the timed updates (BLIS and attention tiles, recomputation
     * included): their share of the threads' time and their FLOPs per thread-second */
    double products_time_share, products_gflops_per_thread;
    /* the serial fraction: the share of a 1-thread update that cannot spread over 16 (64)
     * threads -- the time outside the parallel regions plus, in a region of p < 16 (64)
     * pieces, the part that p threads cannot spread (core/threads.h, rl_regions_count) --
     * measured on 3 extra 1-thread updates after the timed ones; and the bound
     * on the speed-up it implies, 1 / (s + (1 - s) / n) (Amdahl's law) */
    double serial16, serial64, amdahl16, amdahl64;
    int    serial_updates; /* updates the serial fraction was measured on */
    /* regions != 0: the timed updates are booked in the region profile (core/threads.h,
     * rl_region_sites), and ms_timed is their summed wall time */
    int    regions;
    double ms_timed;
};
/* One cell of that benchmark (the same model), for callers that format themselves. */
rl_status rl_bench_train_cell(struct rl_bench_train_cell *cell, int warmup, int steps);

#endif
