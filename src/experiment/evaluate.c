/* evaluate.c -- `ropelab eval`: a run's points or one checkpoint evaluated again, with
 * overrides limited to what keeps the trained tensors; see evaluate.h. */
#include "config.h"
#include "evaluate.h"
#include "../config/cfg.h"
#include "../report/report.h"
#include "../config/sweep.h"
#include "train.h"
#include "../model/checkpoint.h"
#include "../core/threads.h"
#include "../core/init.h"
#include "../core/util.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* stem, else stem-2, stem-3, ...: the first that does not exist. */
static void fresh_dir(char *buf, size_t len, const char *stem)
{
    snprintf(buf, len, "%s", stem);
    for (int k = 2; rl_path_exists(buf) && k < 100000; k++)
        snprintf(buf, len, "%s-%d", stem, k);
}

/* Does dir hold a training run: metrics.jsonl or checkpoints/, its own or a point's?  An
 * evaluation writes neither, so an --out there would overwrite the run's config.ini and
 * results.csv with the evaluation's. */
static int holds_training(const char *dir)
{
    char p[4096 + 512];
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
    int found = rl_path_exists(p);
    snprintf(p, sizeof p, "%s/checkpoints", dir);
    found |= rl_path_exists(p);
    DIR *d = found ? NULL : opendir(dir);
    for (struct dirent *e; d && !found && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue; /* ., .. (point names start with a key) */
        snprintf(p, sizeof p, "%s/%s/metrics.jsonl", dir, e->d_name);
        found = rl_path_exists(p);
        snprintf(p, sizeof p, "%s/%s/checkpoints", dir, e->d_name);
        found |= rl_path_exists(p);
    }
    if (d) closedir(d);
    return found;
}

/* The output directory: o->out as given (unless it holds a training run), else stem,
 * stem-2, stem-3, ... */
static rl_status out_dir(char *buf, size_t len, const struct rl_evaluate_opts *o, const char *stem)
{
    if (!o->out) return fresh_dir(buf, len, stem), RL_OK;
    if (holds_training(o->out))
        RL_FAIL(RL_EINVAL,
                "%s holds a training run: the evaluation would overwrite its config.ini and "
                "results.csv; choose another --out",
                o->out);
    snprintf(buf, len, "%s", o->out);
    return RL_OK;
}

/* May [section] key change in an evaluation?  [model] keys are checked against the
 * tensors afterwards (check_shapes). */
static rl_status allowed(const struct rl_eval_override *v)
{
    if (!strcmp(v->section, "eval") || !strcmp(v->section, "model")) return RL_OK;
    if (!strcmp(v->section, "task") && (!strcmp(v->key, "path") || !strcmp(v->key, "valid_path")))
        return RL_OK;
    if (!strcmp(v->section, "experiment") && !strcmp(v->key, "threads")) return RL_OK;
    RL_FAIL(RL_EINVAL,
            "%s: [%s] %s cannot change in an evaluation (the trained model and its task stay "
            "as they were); ropelab eval takes [eval] keys, [model] keys that keep every "
            "tensor's shape (rope_*, xpos*, eps, ...), [task] path and valid_path (data that "
            "moved) and [experiment] threads",
            v->where, v->section, v->key);
}

static rl_status apply(struct rl_cfg *c, const struct rl_evaluate_opts *o)
{
    for (int i = 0; i < o->n_ov; i++) {
        const struct rl_eval_override *v = &o->ov[i];
        RL_TRY(allowed(v));
        RL_TRY(rl_cfg_set_key(c, v->section, v->key, v->value, v->where));
    }
    return RL_OK;
}

/* Do models of a and b (for task) have the same tensors, names and shapes?  If not, why
 * says which tensor differs. */
static int same_tensors(const struct rl_cfg *a, const struct rl_cfg *b, const rl_task *task,
                        char *why, size_t len)
{
    struct rl_model_config ma, mb;
    rl_model              *x = NULL, *y = NULL;
    const int v = rl_task_vocab(task), cz = rl_task_causal(task), nc = rl_task_n_classes(task);
    rl_cfg_model_config(a, v, cz, nc, &ma);
    rl_cfg_model_config(b, v, cz, nc, &mb);
    int same = rl_model_create(&x, &ma) == RL_OK;
    if (same && rl_model_create(&y, &mb) != RL_OK)
        snprintf(why, len, "%s", rl_last_error()), same = 0;
    for (int i = 0; same && i < rl_model_num_tensors(x); i++) {
        const struct rl_tensor_info *t = rl_model_tensor(x, i);
        const struct rl_tensor_info *u = rl_model_tensor_by_name(y, t->name);
        if (!u)
            snprintf(why, len, "no tensor '%s'", t->name), same = 0;
        else if (u->shape[0] != t->shape[0] || u->shape[1] != t->shape[1])
            snprintf(why, len, "tensor '%s' would be %lld x %lld instead of %lld x %lld", t->name,
                     (long long)u->shape[0], (long long)u->shape[1], (long long)t->shape[0],
                     (long long)t->shape[1]),
                same = 0;
    }
    if (same && rl_model_num_tensors(y) != rl_model_num_tensors(x))
        snprintf(why, len, "%d tensors instead of %d", rl_model_num_tensors(y),
                 rl_model_num_tensors(x)),
            same = 0;
    rl_model_free(x);
    rl_model_free(y);
    return same;
}

/* Each [model] override, applied in order to the trained configuration, must keep every
 * tensor's name and shape. */
static rl_status check_shapes(const struct rl_cfg *trained, const struct rl_evaluate_opts *o,
                              const rl_task *task)
{
    struct rl_cfg *t = malloc(sizeof *t);
    char           why[256];
    rl_status      st = t ? RL_OK : rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "out of memory");
    if (t) *t = *trained;
    for (int i = 0; st == RL_OK && i < o->n_ov; i++) {
        const struct rl_eval_override *v = &o->ov[i];
        st = rl_cfg_set_key(t, v->section, v->key, v->value, v->where);
        if (st == RL_OK && !strcmp(v->section, "model") &&
            !same_tensors(trained, t, task, why, sizeof why))
            st = rl_error_report(RL_EINVAL, __FILE__, __LINE__,
                                 "%s: [model] %s changes the trained tensors (%s): ropelab eval "
                                 "may change only keys that keep every tensor's shape",
                                 v->where, v->key, why);
    }
    free(t);
    return st;
}

/* A data file of the configuration that is not there: say which key and how to point to
 * its new place. */
static rl_status check_data(const struct rl_cfg *c)
{
    const char *key[2] = {"path", "valid_path"}, *val[2] = {c->task.path, c->task.valid_path};
    for (int i = 0; i < 2; i++)
        if (val[i][0] && !rl_path_exists(val[i]))
            RL_FAIL(RL_EIO,
                    "%s: [task] %s: the data file '%s' is not there (%s): if it moved, give its "
                    "new place with --set task.%s=FILE",
                    c->file, key[i], val[i], strerror(errno), key[i]);
    return RL_OK;
}

/* The progress of one point's evaluation, named, for the caller. */
struct named_progress {
    const struct rl_evaluate_opts *o;
    const char                    *label;
};

static void point_progress(void *ctx, const struct rl_eval_progress *p)
{
    const struct named_progress *np = ctx;
    np->o->progress(np->o->ctx, np->label, p);
}

/* One point: c its trained configuration (loaded), ckpt its weights; results into odir. */
static rl_status eval_point(struct rl_cfg *c, const char *ckpt, const char *odir,
                            const struct rl_evaluate_opts *o, const char *label)
{
    struct rl_cfg          *trained = malloc(sizeof *trained);
    struct rl_train_result *res     = malloc(sizeof *res);
    rl_task                *task    = NULL;
    int64_t                 step    = -1;
    char                    path[4096], *text = malloc(1 << 16);
    rl_status               st = trained && res && text
                                     ? RL_OK
                                     : rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "out of memory");
    if (st == RL_OK) *trained = *c, st = apply(c, o);
    if (st == RL_OK) st = check_data(c);
    if (st == RL_OK)
        rl_init(c->experiment.threads), rl_threads_fit(), st = rl_train_prepare(c, &task);
    if (st == RL_OK) st = check_shapes(trained, o, task);
    double                t0 = rl_now_ms();
    struct named_progress np = {o, label};
    struct rl_eval_hooks  h  = {o->stop, o->progress ? point_progress : NULL, &np};
    if (st == RL_OK) st = rl_train_evaluate_checkpoint(c, task, ckpt, &h, res, &step);
    if (st == RL_OK) st = rl_mkdir_p(odir);
    if (st == RL_OK) {
        int n = rl_cfg_render(c, text, 1 << 16, 0);
        snprintf(path, sizeof path, "%s/config.ini", odir);
        st = n < (1 << 16) ? rl_write_file_atomic(path, text, (size_t)n, NULL, 0)
                           : rl_error_report(RL_EINVAL, __FILE__, __LINE__, "config too long");
    }
    if (st == RL_OK) st = rl_write_results_csv(odir, c, res->eval, res->n_eval);
    if (st == RL_OK && o->log) {
        fprintf(o->log, "%s%s%s: %s (update %lld of %d), %d rows in %.1f s\n", label,
                *label ? " " : "", "evaluated", ckpt, (long long)step, c->train.steps, res->n_eval,
                (rl_now_ms() - t0) / 1000.0);
        fflush(o->log);
    }
    rl_task_free(task);
    free(trained), free(res), free(text);
    return st;
}

static rl_status write_config(const struct rl_cfg *c, const char *dir)
{
    char *text = malloc(1 << 16), path[4096];
    if (!text) RL_FAIL(RL_ENOMEM, "out of memory");
    int n = rl_cfg_render(c, text, 1 << 16, 0);
    snprintf(path, sizeof path, "%s/config.ini", dir);
    rl_status st = n < (1 << 16) ? rl_write_file_atomic(path, text, (size_t)n, NULL, 0)
                                 : rl_error_report(RL_EINVAL, __FILE__, __LINE__, "too long");
    free(text);
    return st;
}

/* Point p of a run: its name and directory; 1 when it finished (it has results.csv). */
static int point_dir(const char *dir, const struct rl_sweep *sw, long p, char *pdir, size_t plen,
                     char *name, size_t nlen)
{
    char path[4200];
    name[0] = 0;
    if (sw->n_keys) rl_sweep_point_name(sw, p, name, nlen);
    snprintf(pdir, plen, "%s%s%s", dir, *name ? "/" : "", name);
    snprintf(path, sizeof path, "%s/results.csv", pdir);
    return rl_path_exists(path);
}

/* A finished point's configuration and latest checkpoint. */
static rl_status run_point(const char *pdir, struct rl_cfg *pc, char *ck, size_t clen)
{
    char    path[4200];
    int64_t k = -1;
    snprintf(path, sizeof path, "%s/config.ini", pdir);
    if (!rl_path_exists(path)) RL_FAIL(RL_EIO, "%s: no config.ini: not a ropelab run point", pdir);
    rl_cfg_defaults(pc);
    RL_TRY(rl_cfg_load(pc, path));
    RL_TRY(rl_train_latest_checkpoint(pdir, INT64_MAX, &k, ck, clen));
    if (k < 0)
        RL_FAIL(RL_EIO,
                "%s/checkpoints: no checkpoint step-<k>.safetensors: nothing to evaluate "
                "(deleted?)",
                pdir);
    return RL_OK;
}

static rl_status eval_run(const char *dir, const struct rl_evaluate_opts *o, char *out, size_t len)
{
    struct rl_cfg  *base = malloc(sizeof *base), *pc = malloc(sizeof *pc);
    struct rl_sweep sw;
    char      path[4096], pdir[4096], name[RL_SWEEP_NAME], ck[4300], odir[4096 + RL_SWEEP_NAME];
    rl_status st =
        base && pc ? RL_OK : rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "out of memory");
    snprintf(path, sizeof path, "%s/config.ini", dir);
    if (st == RL_OK && !rl_path_exists(path))
        st = rl_error_report(RL_EIO, __FILE__, __LINE__,
                             "%s: no config.ini: not a ropelab run directory", dir);
    if (st == RL_OK) rl_cfg_defaults(base), st = rl_cfg_load(base, path);
    if (st == RL_OK) st = rl_sweep_init(&sw, base);
    if (st == RL_OK) {
        snprintf(path, sizeof path, "%s/eval", dir);
        st = out_dir(out, len, o, path);
    }
    long done = 0; /* points evaluated; an unfinished point of the run is skipped */
    for (long p = 0; st == RL_OK && p < sw.n_points; p++) {
        if (!point_dir(dir, &sw, p, pdir, sizeof pdir, name, sizeof name)) {
            if (o->log)
                fprintf(o->log, "%s: not finished in the run (no results.csv): skipped\n", pdir);
            continue;
        }
        st = run_point(pdir, pc, ck, sizeof ck);
        snprintf(odir, sizeof odir, "%s%s%s", out, *name ? "/" : "", name);
        if (st == RL_OK) st = eval_point(pc, ck, odir, o, name), done++;
    }
    if (st == RL_OK && done == 0)
        st = rl_error_report(RL_EIO, __FILE__, __LINE__,
                             "%s: no point of the run has finished (no results.csv): nothing to "
                             "evaluate (finish it with ropelab run ... --resume)",
                             dir);
    /* the experiment's configuration with the overrides: the report's view of OUT */
    if (st == RL_OK) st = apply(base, o);
    if (st == RL_OK) st = write_config(base, out);
    if (st == RL_OK) st = rl_report_write(out, o->table, o->log);
    free(base), free(pc);
    return st;
}

static rl_status eval_file(const char *path, const struct rl_evaluate_opts *o, char *out,
                           size_t len)
{
    struct rl_cfg *c = malloc(sizeof *c);
    char           stem[RL_CFG_NAME + 8];
    if (!c) RL_FAIL(RL_ENOMEM, "out of memory");
    rl_status st = rl_cfg_from_checkpoint(c, path, NULL);
    if (st == RL_OK) {
        snprintf(stem, sizeof stem, "eval-%s", c->experiment.name);
        st = out_dir(out, len, o, stem);
    }
    if (st == RL_OK) st = eval_point(c, path, out, o, "");
    if (st == RL_OK) st = rl_report_write(out, o->table, o->log);
    free(c);
    return st;
}

rl_status rl_evaluate(const char *path, const struct rl_evaluate_opts *o, char *out_dir, size_t len)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        RL_FAIL(RL_EIO, "%s: %s (expected a run directory or a .safetensors checkpoint)", path,
                strerror(errno));
    return S_ISDIR(sb.st_mode) ? eval_run(path, o, out_dir, len) : eval_file(path, o, out_dir, len);
}
