/* experiment.c -- the points of an experiment: expansion and checks before anything runs,
 * the experiment directory, skipping finished points on --resume, a progress line with
 * ETA, and the outputs at the end; see experiment.h. */
#include "config.h"
#include "experiment.h"
#include "../report/report.h"
#include "../config/sweep.h"
#include "train.h"
#include "../core/mpi.h"
#include "../core/util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

struct rl_experiment {
    struct rl_cfg   base;
    struct rl_sweep sw;
    char            dir[2 * RL_CFG_PATH + 8];
    double         *tokens; /* per point: training tokens (steps x batch x length) */
};

/* The resolved configuration of point p and its task; errors name the point. */
static rl_status point_prepare(const rl_experiment *e, long p, struct rl_cfg *pc, rl_task **task)
{
    char name[RL_SWEEP_NAME], msg[1024];
    *task = NULL;
    if (!e->sw.n_keys) {
        *pc          = e->base;
        rl_status st = rl_train_prepare(pc, task);
        if (st == RL_OK) st = rl_train_check_init_from(pc, *task);
        if (st != RL_OK) rl_task_free(*task), *task = NULL;
        return st;
    }
    rl_sweep_point_name(&e->sw, p, name, sizeof name);
    rl_status st = rl_sweep_point_cfg(&e->sw, &e->base, p, pc);
    if (st == RL_OK) st = rl_train_prepare(pc, task);
    if (st == RL_OK) st = rl_train_check_init_from(pc, *task);
    if (st == RL_OK && strlen(name) > 255)
        st = rl_error_report(RL_EINVAL, __FILE__, __LINE__,
                             "%s: [sweep] the point directory name '%.40s...' is longer than "
                             "255 characters: sweep fewer keys",
                             e->sw.where[0], name);
    if (st == RL_OK) return RL_OK;
    rl_task_free(*task);
    *task = NULL;
    snprintf(msg, sizeof msg, "%s", rl_last_error());
    RL_FAIL(st, "%s (sweep point %s)", msg, name);
}

void rl_experiment_free(rl_experiment *e)
{
    if (!e) return;
    free(e->tokens);
    free(e);
}

rl_status rl_experiment_prepare(rl_experiment **out, const struct rl_cfg *c)
{
    rl_experiment *e  = calloc(1, sizeof *e);
    struct rl_cfg *pc = malloc(sizeof *pc);
    rl_status      st =
        e && pc ? RL_OK : rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "out of memory");
    *out = NULL;
    if (st == RL_OK) {
        e->base = *c;
        snprintf(e->dir, sizeof e->dir, "%s/%s", c->experiment.out, c->experiment.name);
        st = rl_sweep_init(&e->sw, c);
    }
    if (st == RL_OK) st = rl_cfg_check_lines(c); /* the experiment's config.ini, with [sweep] */
    if (st == RL_OK && rl_sweep_find(&e->sw, "train", "data_parallel") >= 0)
        st = rl_error_report(RL_EINVAL, __FILE__, __LINE__,
                             "%s: [sweep] train.data_parallel: cannot be swept (it decides "
                             "how the ranks share the whole experiment)",
                             e->sw.where[rl_sweep_find(&e->sw, "train", "data_parallel")]);
    if (st == RL_OK && !(e->tokens = calloc((size_t)e->sw.n_points, sizeof *e->tokens)))
        st = rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "out of memory");
    for (long p = 0; st == RL_OK && p < e->sw.n_points; p++) {
        rl_task *task;
        st = point_prepare(e, p, pc, &task);
        if (st == RL_OK) e->tokens[p] = (double)pc->train.steps * pc->train.batch * pc->task.length;
        rl_task_free(task);
    }
    free(pc);
    if (st != RL_OK) return rl_experiment_free(e), st;
    *out = e;
    return RL_OK;
}

long rl_experiment_points(const rl_experiment *e) { return e->sw.n_points; }

/* ---- progress ---- */

enum { PROGRESS_BAR = 24 }; /* characters of the bar on a terminal */

struct progress {
    FILE       *f;
    int         tty, point_no, n_points;
    const char *name;
    double      t_all, t_point, last; /* ms */
    double      tokens_done;          /* this process */
    double      tokens_after;         /* later points still to train */
    double      tokens_per_update;
    int64_t     first_step;     /* the point's step before this process's first update */
    int         shown;          /* a progress line of this point is on the terminal */
    int         show;           /* print progress lines */
    int         rank, ranks;    /* under MPI, lines name the rank and leave out the total ETA */
    struct rl_mpi_queue *queue; /* rank 0 of a shared sweep answers requests after updates */
};

static void fmt_time(char *buf, size_t len, double s)
{
    if (!isfinite(s) || s < 0) s = 0;
    snprintf(buf, len, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
}

static void on_update(void *ctx, int64_t step, int64_t steps, double loss)
{
    struct progress *pr = ctx;
    if (pr->queue) (void)rl_mpi_queue_serve(pr->queue); /* MPI errors abort by themselves */
    if (!pr->show) return;
    double now = rl_now_ms();
    if (pr->first_step < 0) pr->first_step = step - 1;
    pr->tokens_done += pr->tokens_per_update;
    if (now - pr->last < (pr->tty ? 200 : 10000) && step < steps) return;
    pr->last         = now;
    pr->shown        = 1;
    double upd_ms    = (now - pr->t_point) / (double)(step - pr->first_step);
    double rate      = pr->tokens_done / (now - pr->t_all); /* tokens per ms, all points */
    double remaining = (double)(steps - step) * pr->tokens_per_update + pr->tokens_after;
    char   a[32], b[32] = "", r[32] = "";
    fmt_time(a, sizeof a, upd_ms * (double)(steps - step) / 1000);
    if (pr->ranks == 1) { /* under MPI each rank knows its own points only */
        char t[24];
        fmt_time(t, sizeof t, remaining / rate / 1000);
        snprintf(b, sizeof b, " (all %s)", t);
    } else {
        snprintf(r, sizeof r, " [rank %d]", pr->rank);
    }
    /* On a terminal one line redrawn in place with a bar of this point's updates;
     * otherwise (a log file, a pipe) a plain line every 10 s. */
    char bar[PROGRESS_BAR + 4] = "";
    if (pr->tty) {
        int fill = (int)((double)PROGRESS_BAR * (double)step / (double)steps);
        bar[0]   = '|';
        for (int i = 0; i < PROGRESS_BAR; i++)
            bar[1 + i] = i < fill ? '#' : '.';
        bar[PROGRESS_BAR + 1] = '|', bar[PROGRESS_BAR + 2] = ' ', bar[PROGRESS_BAR + 3] = 0;
    }
    fprintf(pr->f, "%s[%*d/%d] %s  %sstep %lld/%lld  loss %.4f  eta %s%s%s%s", pr->tty ? "\r" : "",
            (int)snprintf(NULL, 0, "%d", pr->n_points), pr->point_no, pr->n_points, pr->name, bar,
            (long long)step, (long long)steps, loss, a, b, r, pr->tty ? "\033[K" : "\n");
    fflush(pr->f);
}

/* A diverged point (its results' note) gets a warning line: it does not stop a sweep. */
static void warn_diverged(FILE *f, const struct rl_train_result *res, const char *name)
{
    if (!f || res->n_eval < 1 || !strstr(res->eval[0].note, "diverged")) return;
    fprintf(f,
            "warning: %s diverged (evaluation loss %.4g, more than twice that of a uniform "
            "guess): lower train.lr, add train.warmup or keep train.clip > 0\n",
            name, res->eval[0].loss);
    fflush(f);
}

/* ---- the experiment directory ---- */

/* The configuration in `path` (a config.ini written before) against the one rendered now:
 * any key but the runtime ones (threads, output) that differs is an error naming it. */
static rl_status same_config(const char *path, const char *now, const char *whose)
{
    unsigned char *then;
    size_t         len;
    char           msg[1024];
    RL_TRY(rl_read_file(&then, &len, path));
    int diff = rl_cfg_text_diff((const char *)then, now, msg, sizeof msg);
    free(then);
    if (diff)
        RL_FAIL(RL_EINVAL,
                "%s: the configuration differs from the %s (%s; then vs now): resume with the "
                "same configuration, or start a new run with another name or --out",
                path, whose, msg);
    return RL_OK;
}

/* The experiment's directory and its config.ini; on --resume the configuration must be the
 * one the run was started with (a sweep's keys and lists included: a single run resumed
 * as a sweep, or a sweep with other values, would write its results over the run's). */
static rl_status open_dir(const rl_experiment *e, int resume)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/config.ini", e->dir);
    if (!resume && rl_path_exists(path))
        RL_FAIL(RL_EINVAL,
                "%s already holds a run; continue it with --resume, or choose another --out "
                "or [experiment] name",
                e->dir);
    RL_TRY(rl_mkdir_p(e->dir));
    char *text = malloc(1 << 16);
    if (!text) RL_FAIL(RL_ENOMEM, "out of memory");
    int       n  = rl_cfg_render(&e->base, text, 1 << 16, 0);
    rl_status st = n < (1 << 16)
                       ? RL_OK
                       : rl_error_report(RL_EINVAL, __FILE__, __LINE__, "configuration too long");
    if (st == RL_OK && resume && rl_path_exists(path)) st = same_config(path, text, "run's");
    if (st == RL_OK) st = rl_write_file_atomic(path, text, (size_t)n, NULL, 0);
    free(text);
    return st;
}

/* A finished point is skipped only if it was made with the configuration it gets now. */
static rl_status check_finished(const struct rl_cfg *pc, const char *pdir)
{
    char  path[4096];
    char *now = malloc(1 << 16);
    if (!now) RL_FAIL(RL_ENOMEM, "out of memory");
    snprintf(path, sizeof path, "%s/config.ini", pdir);
    rl_cfg_render(pc, now, 1 << 16, 0);
    rl_status st = same_config(path, now, "finished point's");
    free(now);
    return st;
}

struct run_state {
    const struct rl_experiment_opts *o;
    struct progress                  pr;
    int64_t                          budget; /* updates left under stop_after */
    int                             *finished;
    int                             *stopped;
};

/* Record where the run stopped (the first stop only). */
static void stopped_at(const struct rl_experiment_opts *o, const char *name,
                       const struct rl_train_result *res, int64_t steps)
{
    struct rl_experiment_stop *w = o->where;
    if (!w || w->step || w->between) return;
    snprintf(w->point, sizeof w->point, "%s", name);
    if (!res) {
        w->between = 1;
        return;
    }
    w->step = res->steps_done, w->steps = steps;
    snprintf(w->checkpoint, sizeof w->checkpoint, "%s", res->checkpoint);
}

static rl_status train_point(const rl_experiment *e, long p, struct run_state *rs,
                             struct rl_cfg *pc, rl_task *task, const char *pdir, const char *name)
{
    const struct rl_experiment_opts *o  = rs->o;
    struct progress                 *pr = &rs->pr;
    if ((o->stop_after && rs->budget <= 0) || (o->stop && *o->stop)) {
        stopped_at(o, name, NULL, 0);
        return *rs->stopped = 1, RL_OK;
    }
    pr->point_no = (int)p + 1, pr->name = name;
    pr->t_point = pr->last = rl_now_ms(), pr->first_step = -1, pr->shown = 0;
    pr->tokens_per_update = (double)pc->train.batch * pc->task.length;
    pr->tokens_after      = 0;
    for (long q = p + 1; q < e->sw.n_points; q++)
        pr->tokens_after += rs->finished[q] ? 0 : e->tokens[q];
    struct rl_train_opts to = {.resume      = o->resume,
                               .max_updates = o->stop_after ? rs->budget : 0,
                               .warn        = o->out,
                               .stop        = o->stop};
    if (pr->show || pr->queue) to.on_update = on_update, to.ctx = pr;
    struct rl_train_result res;
    rl_status              st = rl_train_run(pc, task, pdir, &to, &res);
    if (st != RL_OK) { /* name the point: under MPI the ranks' lines interleave */
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", rl_last_error());
        RL_FAIL(st, "%s (sweep point %s)", msg, name);
    }
    if (o->stop_after) rs->budget -= res.updates;
    if (res.steps_done == pc->train.steps) warn_diverged(o->out, &res, name);
    if (res.stopped) *rs->stopped = 1, stopped_at(o, name, &res, pc->train.steps);
    if (*rs->stopped && pr->tty && pr->shown) fputc('\n', o->out); /* end the \r line */
    if (pr->show && !*rs->stopped) {
        char t[32], r[32] = "";
        fmt_time(t, sizeof t, (rl_now_ms() - pr->t_point) / 1000);
        if (pr->ranks > 1) snprintf(r, sizeof r, " [rank %d]", pr->rank);
        fprintf(o->out, "%s[%d/%d] %s  done in %s: %lld updates%s, final loss %.4f%s%s\n",
                pr->tty ? "\r" : "", pr->point_no, pr->n_points, name, t, (long long)res.updates,
                res.steps_done > res.updates ? " (resumed)" : "", res.last_loss, r,
                pr->tty ? "\033[K" : "");
        fflush(o->out);
    }
    return RL_OK;
}

static rl_status run_point(const rl_experiment *e, long p, struct run_state *rs, struct rl_cfg *pc)
{
    char     name[RL_SWEEP_NAME], pdir[3200];
    rl_task *task;
    rl_sweep_point_name(&e->sw, p, name, sizeof name);
    snprintf(pdir, sizeof pdir, "%s/%s", e->dir, name);
    RL_TRY(point_prepare(e, p, pc, &task));
    rl_status st = RL_OK;
    if (rs->finished[p]) {
        if (rl_mpi_rank() == 0) st = check_finished(pc, pdir); /* data parallel: rank 0's */
        if (st == RL_OK && rs->o->out && !rs->o->quiet)
            fprintf(rs->o->out, "[%ld/%ld] %s  finished before: skipped\n", p + 1, e->sw.n_points,
                    name);
    } else {
        st = train_point(e, p, rs, pc, task, pdir, name);
    }
    rl_task_free(task);
    return st;
}

static rl_status run_single(rl_experiment *e, const struct rl_experiment_opts *o, int *stopped)
{
    struct rl_cfg *pc = malloc(sizeof *pc);
    rl_task       *task;
    if (!pc) RL_FAIL(RL_ENOMEM, "out of memory");
    rl_status              st = point_prepare(e, 0, pc, &task);
    struct rl_train_opts   to = {.resume      = o->resume,
                                 .max_updates = o->stop_after,
                                 .log         = o->quiet ? NULL : o->out,
                                 .table       = o->out,
                                 .warn        = o->out,
                                 .stop        = o->stop};
    struct rl_train_result res;
    if (st == RL_OK) st = rl_train_run(pc, task, e->dir, &to, &res);
    if (st == RL_OK && res.stopped) *stopped = 1, stopped_at(o, "", &res, pc->train.steps);
    if (st == RL_OK && !*stopped) warn_diverged(o->out, &res, e->base.experiment.name);
    if (st == RL_OK && !*stopped && rl_mpi_rank() == 0)
        st = rl_report_write(e->dir, NULL, o->quiet ? NULL : o->out);
    rl_task_free(task);
    free(pc);
    return st;
}

/* Rank 0 of a shared sweep: check the points finished before (resume) up front, since
 * they are never handed out. */
static rl_status check_all_finished(const rl_experiment *e, struct run_state *rs, struct rl_cfg *pc)
{
    for (long p = 0; p < e->sw.n_points; p++)
        if (rs->finished[p]) RL_TRY(run_point(e, p, rs, pc));
    return RL_OK;
}

/* The points shared out over the ranks (core/mpi.h's queue): rank r starts with the
 * r-th unfinished point; a rank that finishes one takes the next unstarted one. */
static rl_status run_shared(const rl_experiment *e, struct run_state *rs, struct rl_cfg *pc)
{
    long *pending = malloc((size_t)e->sw.n_points * sizeof *pending), n = 0, i;
    if (!pending) RL_FAIL(RL_ENOMEM, "out of memory");
    for (long p = 0; p < e->sw.n_points; p++)
        if (!rs->finished[p]) pending[n++] = p;
    struct rl_mpi_queue q;
    rl_mpi_queue_init(&q, n);
    rs->pr.queue = rl_mpi_rank() == 0 ? &q : NULL;
    rl_status st = RL_OK;
    while (st == RL_OK && (st = rl_mpi_queue_take(&q, !*rs->stopped, &i)) == RL_OK && i >= 0)
        st = run_point(e, pending[i], rs, pc);
    if (st == RL_OK) st = rl_mpi_queue_finish(&q);
    rs->pr.queue = NULL;
    free(pending);
    return st;
}

/* The sweep's points: in order on one process, and on every rank with data parallelism;
 * shared out over the ranks otherwise.  Rank 0 owns the experiment directory. */
/* --resume: the temporary files of an interrupted write of the report's files */
static rl_status remove_stale(const rl_experiment *e, const struct rl_experiment_opts *o)
{
    char plots[sizeof e->dir + 8];
    int  n1 = 0, n2 = 0;
    snprintf(plots, sizeof plots, "%s/plots", e->dir);
    RL_TRY(rl_remove_stale_tmp(e->dir, &n1));
    RL_TRY(rl_remove_stale_tmp(plots, &n2));
    if (n1 + n2 && o->out)
        fprintf(o->out, "warning: %s: removed %d temporary file%s of an interrupted write\n",
                e->dir, n1 + n2, n1 + n2 == 1 ? "" : "s");
    return RL_OK;
}

static rl_status run_points(const rl_experiment *e, struct run_state *rs, struct rl_cfg *pc)
{
    const struct rl_experiment_opts *o      = rs->o;
    const int                        shared = rl_mpi_size() > 1 && !e->base.train.data_parallel;
    if (rl_mpi_rank() == 0) {
        RL_TRY(open_dir(e, o->resume));
        if (o->resume) RL_TRY(remove_stale(e, o));
        for (long p = 0; o->resume && p < e->sw.n_points; p++) {
            char name[RL_SWEEP_NAME], path[4096];
            rl_sweep_point_name(&e->sw, p, name, sizeof name);
            snprintf(path, sizeof path, "%s/%s/results.csv", e->dir, name);
            rs->finished[p] = rl_path_exists(path);
        }
        if (o->out && !o->quiet)
            fprintf(o->out, "experiment %s: %ld points in %s%s\n", e->base.experiment.name,
                    e->sw.n_points, e->dir,
                    shared              ? " (shared over the ranks)"
                    : rl_mpi_size() > 1 ? " (data parallel over the ranks)"
                                        : "");
        if (shared) RL_TRY(check_all_finished(e, rs, pc));
    }
    /* rank 0's view of the finished points; also keeps the others waiting until the
     * experiment directory exists */
    RL_TRY(rl_mpi_bcast(rs->finished, (size_t)e->sw.n_points * sizeof *rs->finished));
    if (shared) return run_shared(e, rs, pc);
    for (long p = 0; !*rs->stopped && p < e->sw.n_points; p++)
        RL_TRY(run_point(e, p, rs, pc));
    return RL_OK;
}

static rl_status experiment_run(rl_experiment *e, const struct rl_experiment_opts *opts,
                                int *stopped);

/* One process at a time in an experiment directory: two runs (or a run and its --resume)
 * would both train and write the same checkpoints, metrics.jsonl and results.  Rank 0
 * holds an flock on the empty file DIR/.lock (the file stays; the lock goes with the
 * process, also when it is killed). */
static rl_status lock_dir(const char *dir, int *fd)
{
    char path[4096];
    RL_TRY(rl_mkdir_p(dir));
    snprintf(path, sizeof path, "%s/.lock", dir);
    *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (*fd < 0) RL_FAIL(RL_EIO, "%s: cannot create: %s", path, strerror(errno));
    if (flock(*fd, LOCK_EX | LOCK_NB) == 0) return RL_OK;
    int busy = errno == EWOULDBLOCK, err = errno;
    close(*fd), *fd                      = -1;
    if (busy)
        RL_FAIL(RL_EINVAL,
                "%s is in use by another ropelab process: wait for it to end, or choose "
                "another --out",
                dir);
    RL_FAIL(RL_EIO, "%s: cannot lock: %s", path, strerror(err));
}

rl_status rl_experiment_run(rl_experiment *e, const struct rl_experiment_opts *opts, int *stopped)
{
    int lock = -1;
    if (rl_mpi_rank() == 0) RL_TRY(lock_dir(e->dir, &lock));
    rl_status st = experiment_run(e, opts, stopped);
    if (lock >= 0) close(lock);
    return st;
}

static rl_status experiment_run(rl_experiment *e, const struct rl_experiment_opts *opts,
                                int *stopped)
{
    const int                 dp = e->base.train.data_parallel, rank = rl_mpi_rank();
    struct rl_experiment_opts mine = *opts, *o = &mine;
    *stopped = 0;
    if (rank > 0 && dp) mine.out = NULL; /* data parallel: rank 0 reports for everyone */
    if (!e->sw.n_keys) return rank > 0 && !dp ? RL_OK : run_single(e, o, stopped);
    struct rl_cfg   *pc = malloc(sizeof *pc);
    struct run_state rs = {.o = o, .budget = o->stop_after, .stopped = stopped};
    rs.pr.f             = o->out;
    rs.pr.show          = o->out && !o->quiet;
    rs.pr.rank = rank, rs.pr.ranks = rl_mpi_size();
    rs.pr.tty      = o->out && rs.pr.ranks == 1 && isatty(fileno(o->out));
    rs.pr.n_points = (int)e->sw.n_points;
    rs.pr.t_all    = rl_now_ms();
    rs.finished    = calloc((size_t)e->sw.n_points, sizeof *rs.finished);
    if (!pc || !rs.finished)
        return free(pc), free(rs.finished),
               rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "out of memory");
    rl_status st = run_points(e, &rs, pc);
    double    v  = *stopped; /* stopped anywhere: the outputs wait for the resumed run */
    if (st == RL_OK) st = rl_mpi_sum_doubles(&v, 1);
    *stopped = v > 0;
    if (st == RL_OK && !*stopped && rank == 0)
        st = rl_report_write(e->dir, o->out, o->quiet ? NULL : o->out);
    free(pc);
    free(rs.finished);
    return st;
}
