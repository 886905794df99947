/* experiment.h -- `ropelab run` as an experiment (docs/experiments.md): every point of the [sweep]
 * cross product trained and evaluated in its own sub-run, then the experiment's outputs
 * (report.h) written from the files.
 *
 * Layout: OUT/<name>/config.ini (the experiment's configuration with its [sweep]
 * section: `ropelab run OUT/<name>/config.ini` repeats the experiment), results.csv,
 * summary.md, plots/, and one directory per point (sweep.h names them) holding the
 * point's resolved config.ini, metrics.jsonl, checkpoints/ and results.csv.  Without a
 * sweep the run directory is the one point (train.h's layout) plus summary.md and plots/.
 *
 * Before anything trains, every point's configuration is built, its task created and its
 * automatic values resolved: an impossible combination is an error naming the file, line
 * and key and the point ("(sweep point pe=rope)").
 *
 * Resume: a point is finished when its results.csv exists; --resume skips finished points
 * (after checking that their config.ini equals the configuration they would get now) and
 * continues an interrupted one from its latest checkpoint (train.h).
 *
 * Under MPI (core/mpi.h, several ranks), rank 0 owns the experiment directory: it checks
 * the finished points and writes the combined outputs once every point is done.  With
 * train.data_parallel = false the points are shared out over the ranks (rank r starts
 * with the r-th unfinished point, then each rank that finishes one takes the next
 * unstarted one from rank 0, which answers after each of its own updates); every point's
 * files are those of a one-process run with the same thread count.  With
 * train.data_parallel = true every rank trains every point, in order (train.h); without
 * a sweep and without it, rank 0 trains the one point alone.  stop_after counts each
 * rank's own updates. */
#ifndef RL_EXPERIMENT_H
#define RL_EXPERIMENT_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include "../config/cfg.h"
#include "../core/status.h"

/* Where a stopped experiment stopped. */
struct rl_experiment_stop {
    char    point[256];       /* the point's directory name ("" without a sweep) */
    int64_t step, steps;      /* its updates done, and train.steps */
    char    checkpoint[2300]; /* the checkpoint of update `step` ("" when none: no update) */
    int     between;          /* 1: before a point started (the earlier ones are complete) */
};

struct rl_experiment_opts {
    int     resume;
    int64_t stop_after; /* > 0: stop after this many updates in all, as if interrupted */
    FILE   *out;        /* progress lines and the headline table (NULL = quiet) */
    int     quiet;      /* no progress lines (the table is still printed) */
    /* Nonzero *stop (a signal handler sets it) stops the experiment as stop_after does, at
     * the end of the current update (train.h): the point's checkpoint is saved first. */
    volatile sig_atomic_t     *stop;
    struct rl_experiment_stop *where; /* filled when the run stops early (may be NULL) */
};

typedef struct rl_experiment rl_experiment;

/* Expand and check every point of the experiment c describes (loaded and checked, thread
 * count set); nothing is written.  Errors here are configuration errors. */
rl_status rl_experiment_prepare(rl_experiment **e, const struct rl_cfg *c);
/* Train and evaluate the points, then write the outputs.  *stopped is set when
 * stop_after or *stop cut the run short (then the outputs wait for the resumed run, and
 * o->where says where it stopped). */
rl_status rl_experiment_run(rl_experiment *e, const struct rl_experiment_opts *o, int *stopped);
void      rl_experiment_free(rl_experiment *e);
/* Points of the experiment (1 without a sweep). */
long rl_experiment_points(const rl_experiment *e);

#endif
