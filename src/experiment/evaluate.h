/* evaluate.h -- `ropelab eval`: a finished run (every point, from its last checkpoint) or
 * one checkpoint (its configuration from the file's __metadata__ "config") evaluated again
 * without training, with [eval] options and RoPE settings changed, through the training
 * code's own evaluation (train.h).
 *
 * Overrides ("section.key=value", applied in order on top of the trained configuration):
 * any [eval] key; [model] keys that leave every tensor's shape as it is (rope_*, xpos*,
 * eps, feature_map, ...: checked by building the model with and without the change);
 * [task] path and valid_path (data that moved); [experiment] threads.  Anything else is
 * an error naming the key.
 *
 * Output directory (made if needed): o->out, or by default RUN_DIR/eval for a run and
 * ./eval-<experiment name> for a checkpoint, with -2, -3, ... appended when that exists.
 * It is laid out as a run directory -- config.ini (the configuration evaluated, with the
 * run's [sweep]), per point <point>/config.ini, results.csv, positions.csv -- and gets the
 * report's results.csv, summary.md and plots (report.h), so `ropelab report` reads it too.
 * The thread count is the configuration's experiment.threads (the run's own, so the
 * numbers repeat the run's bit for bit). */
#ifndef RL_EVALUATE_H
#define RL_EVALUATE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "../core/status.h"
#include "train.h"

struct rl_eval_override {
    const char *section, *key, *value;
    const char *where; /* for messages: "--set model.rope_base=5e5", "--lengths" */
};

struct rl_evaluate_opts {
    const struct rl_eval_override *ov;
    int                            n_ov;
    const char                    *out;   /* NULL: the default above */
    FILE                          *table; /* the printed table (NULL: none) */
    FILE                          *log;   /* one line per point and the files written */
    /* After every forward (NULL: none): the point's name ("" for a checkpoint) and the
     * work done (train.h); a nonzero *stop ends the evaluation with RL_EINTR. */
    void (*progress)(void *ctx, const char *point, const struct rl_eval_progress *p);
    void                  *ctx;
    volatile sig_atomic_t *stop;
};

/* Evaluate path (a run directory or a .safetensors checkpoint); the output directory is
 * written into out_dir. */

rl_status rl_evaluate(const char *path, const struct rl_evaluate_opts *o, char *out_dir,
                      size_t len);

#endif
