/* train_io.c -- the run directory's files: checkpoints (through checkpoint.h), the latest
 * checkpoint of a run, metrics.jsonl / eval.jsonl records, results.csv and the evaluation
 * table; see train_impl.h. */
#include "config.h"
#include "train_impl.h"
#include "../model/checkpoint.h"
#include "../config/sweep.h"
#include "../report/report_data.h"
#include "../core/json.h"
#include "../core/util.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

rl_status rl_train_path(char *buf, size_t len, const char *dir, const char *name)
{
    if ((size_t)snprintf(buf, len, "%s/%s", dir, name) >= len)
        RL_FAIL(RL_EINVAL, "%s/%s: path too long", dir, name);
    return RL_OK;
}

static rl_status checkpoint_path(char *buf, size_t len, const char *dir, int64_t k)
{
    char name[64];
    snprintf(name, sizeof name, "checkpoints/step-%" PRId64 ".safetensors", k);
    return rl_train_path(buf, len, dir, name);
}

rl_status rl_train_latest_checkpoint(const char *dir, int64_t below, int64_t *k, char *path,
                                     size_t len)
{
    char sub[2300];
    *k = -1;
    RL_TRY(rl_train_path(sub, sizeof sub, dir, "checkpoints"));
    DIR *d = opendir(sub);
    if (!d) {
        if (errno == ENOENT) return RL_OK;
        RL_FAIL(RL_EIO, "%s: cannot open: %s", sub, strerror(errno));
    }
    for (struct dirent *e; (e = readdir(d));) {
        long long v;
        char      tail[32];
        /* step-<k>.safetensors exactly (not the .tmp.<pid> of an interrupted write) */
        if (sscanf(e->d_name, "step-%lld%31s", &v, tail) == 2 && v >= 0 &&
            !strcmp(tail, ".safetensors") && v > *k && v < below)
            *k = v;
    }
    closedir(d);
    return *k >= 0 ? checkpoint_path(path, len, dir, *k) : RL_OK;
}

/* A sweep's run directory: its one point, or an error naming the points. */
static rl_status sweep_point_dir(const char *dir, char *pdir, size_t len)
{
    char            cfg[2300], name[RL_SWEEP_NAME], list[4 * RL_SWEEP_NAME + 16] = "";
    struct rl_cfg  *c = malloc(sizeof *c);
    struct rl_sweep sw;
    if (!c) RL_FAIL(RL_ENOMEM, "out of memory");
    rl_status st = rl_train_path(cfg, sizeof cfg, dir, "config.ini");
    if (st == RL_OK && !rl_path_exists(cfg))
        st = rl_error_report(RL_EIO, __FILE__, __LINE__,
                             "%s: no checkpoints/ and no config.ini: not a ropelab run or point "
                             "directory",
                             dir);
    if (st == RL_OK) rl_cfg_defaults(c), st = rl_cfg_load(c, cfg);
    if (st == RL_OK) st = rl_sweep_init(&sw, c);
    free(c);
    RL_TRY(st);
    if (sw.n_points == 1 && sw.n_keys) {
        rl_sweep_point_name(&sw, 0, name, sizeof name);
        return rl_train_path(pdir, len, dir, name);
    }
    for (long p = 0; p < sw.n_points && p < 4; p++) {
        rl_sweep_point_name(&sw, p, name, sizeof name);
        size_t at = strlen(list);
        snprintf(list + at, sizeof list - at, "%s%s", p ? ", " : "", name);
    }
    RL_FAIL(RL_EINVAL, "%s: a sweep of %ld points: name one, %s/<point> (its points: %s%s)", dir,
            sw.n_points, dir, list, sw.n_points > 4 ? ", ..." : "");
}

rl_status rl_train_dir_checkpoint(const char *dir, char *path, size_t len)
{
    char    sub[2300], pdir[2300];
    int64_t k = -1;
    RL_TRY(rl_train_path(sub, sizeof sub, dir, "checkpoints"));
    if (rl_path_exists(sub))
        snprintf(pdir, sizeof pdir, "%s", dir);
    else
        RL_TRY(sweep_point_dir(dir, pdir, sizeof pdir));
    RL_TRY(rl_train_latest_checkpoint(pdir, INT64_MAX, &k, path, len));
    if (k < 0)
        RL_FAIL(RL_EIO, "%s/checkpoints: no checkpoint step-<k>.safetensors (not trained yet?)",
                pdir);
    return RL_OK;
}

rl_status rl_train_remove_stale(const char *dir, int *removed)
{
    char sub[2300];
    *removed = 0;
    RL_TRY(rl_train_path(sub, sizeof sub, dir, "checkpoints"));
    int n = 0;
    RL_TRY(rl_remove_stale_tmp(dir, &n));
    *removed += n;
    RL_TRY(rl_remove_stale_tmp(sub, &n));
    *removed += n;
    return RL_OK;
}

int rl_train_scheduled(const struct rl_cfg *c, int64_t k)
{
    const int every = c->train.checkpoint_every;
    return k == c->train.steps || (k == 0 && c->train.checkpoint_initial) ||
           (every > 0 && k % every == 0);
}

rl_status rl_train_prune_checkpoints(const char *dir, const struct rl_cfg *c, int64_t k)
{
    char    path[2300];
    int64_t j = k;
    for (;;) { /* newest first, each found below the previous */
        RL_TRY(rl_train_latest_checkpoint(dir, j, &j, path, sizeof path));
        if (j < 0) return RL_OK;
        if (!rl_train_scheduled(c, j) && remove(path) != 0 && errno != ENOENT)
            RL_FAIL(RL_EIO, "%s: cannot remove: %s", path, strerror(errno));
    }
}

rl_status rl_trainer_save(struct rl_trainer *t, char *out)
{
    char path[2300], rng[RL_RNG_STRING_LEN];
    RL_TRY(checkpoint_path(path, sizeof path, t->dir, t->step));
    char *text = malloc(1 << 16);
    if (!text) RL_FAIL(RL_ENOMEM, "out of memory");
    rl_cfg_render(t->c, text, 1 << 16, 0);
    rl_status st = rl_checkpoint_save(path, t->m, t->mom_m, t->mom_v, t->step, text,
                                      rl_rng_to_string(&t->rng, rng, sizeof rng));
    free(text);
    /* the new file is complete (written and renamed) before the older extras go */
    if (st == RL_OK) st = rl_train_prune_checkpoints(t->dir, t->c, t->step);
    if (st == RL_OK && out) memcpy(out, path, sizeof path);
    return st;
}

/* The configuration is compared before any tensor is read, so a changed model reports
 * the key that changed rather than the first tensor whose shape no longer fits. */
rl_status rl_trainer_load(struct rl_trainer *t, const char *path)
{
    char   *now = malloc(1 << 16), *then = NULL, *rng = NULL, msg[1024];
    int64_t step = -1;
    if (!now) RL_FAIL(RL_ENOMEM, "out of memory");
    rl_cfg_render(t->c, now, 1 << 16, 0);
    rl_status st = rl_checkpoint_read_meta(path, &step, &then, &rng);
    if (st == RL_OK && rl_cfg_text_diff(then ? then : "", now, msg, sizeof msg))
        st = rl_error_report(RL_EINVAL, __FILE__, __LINE__,
                             "%s: the configuration differs from "
                             "the checkpoint's (%s; checkpoint vs now): resume with the same "
                             "configuration, or start a new run with another name or --out",
                             path, msg);
    if (st == RL_OK && (step < 0 || step > t->c->train.steps))
        st = rl_error_report(RL_EFORMAT, __FILE__, __LINE__, "%s: step %lld outside [0, %d]", path,
                             (long long)step, t->c->train.steps);
    struct rl_rng gen; /* the trainer changes only when the whole checkpoint is accepted */
    if (st == RL_OK) st = rl_rng_from_string(&gen, rng ? rng : "");
    if (st == RL_OK) st = rl_checkpoint_load(path, t->m, t->mom_m, t->mom_v, NULL, NULL, NULL);
    if (st == RL_OK) t->step = step, t->rng = gen;
    free(now), free(then), free(rng);
    return st;
}

rl_status rl_jsonl_append(const char *path, const char *line)
{
    FILE *f = fopen(path, "a");
    if (!f) RL_FAIL(RL_EIO, "%s: cannot open for appending: %s", path, strerror(errno));
    size_t n  = strlen(line);
    int    ok = fwrite(line, 1, n, f) == n;
    ok        = (fclose(f) == 0) && ok;
    if (!ok) RL_FAIL(RL_EIO, "%s: write failed", path);
    return RL_OK;
}

/* The "step" of one record; -1 if the line is not a JSON object with an integer step
 * (a line cut short by a crash), which truncation drops. */
static int64_t record_step(const char *line, size_t n)
{
    struct rl_json *j = NULL;
    int64_t         s = -1;
    if (rl_json_parse(&j, line, n) == RL_OK) {
        const struct rl_json *v = rl_json_get(j, "step");
        if (v && v->type == RL_JSON_NUMBER && v->is_int) s = v->integer;
    }
    rl_json_free(j);
    return s;
}

rl_status rl_jsonl_truncate(const char *path, int64_t k)
{
    unsigned char *buf;
    size_t         len;
    FILE          *probe = fopen(path, "rb");
    if (!probe) return RL_OK; /* nothing logged yet */
    fclose(probe);
    RL_TRY(rl_read_file(&buf, &len, path));
    size_t out = 0;
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(buf + i, '\n', len - i);
        size_t      n  = nl ? (size_t)((const unsigned char *)nl - (buf + i)) : len - i;
        int64_t     s  = nl ? record_step((const char *)buf + i, n) : -1;
        if (s >= 0 && s <= k) { /* keep the line with its newline */
            memmove(buf + out, buf + i, n + 1);
            out += n + 1;
        }
        i += n + 1;
    }
    rl_status st = rl_write_file_atomic(path, buf, out, NULL, 0);
    free(buf);
    return st;
}

static void csv_num(FILE *f, double x, int na)
{
    if (na)
        fputs(",n/a", f);
    else if (isnan(x))
        fputs(",", f);
    else
        fprintf(f, ",%.6g", x);
}

/* The results files are written to DIR/name.tmp and renamed over DIR/name when complete. */
static rl_status open_tmp(FILE **f, char *path, size_t plen, char *tmp, size_t tlen,
                          const char *dir, const char *name)
{
    RL_TRY(rl_train_path(path, plen, dir, name));
    snprintf(tmp, tlen, "%s.tmp", path);
    if (!(*f = fopen(tmp, "w"))) RL_FAIL(RL_EIO, "%s: cannot create: %s", tmp, strerror(errno));
    return RL_OK;
}

static rl_status commit_tmp(FILE *f, const char *path, const char *tmp)
{
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        remove(tmp);
        RL_FAIL(RL_EIO, "%s: write failed", path);
    }
    return RL_OK;
}

/* LM tasks: positions.csv, the per-position loss curve of every evaluation length (one
 * line per bin, with its 95 % interval).  Other tasks write none. */
static rl_status write_positions_csv(const char *dir, const struct rl_cfg *c,
                                     const struct rl_eval_row *rows, int n)
{
    int any = 0;
    for (int i = 0; i < n; i++)
        any |= rows[i].pos_bins > 0;
    if (!any) return RL_OK;
    char  path[2300], tmp[2400];
    FILE *f;
    RL_TRY(open_tmp(&f, path, sizeof path, tmp, sizeof tmp, dir, "positions.csv"));
    fprintf(f, "pe,attention,length,position_start,position_end,loss,targets,rope_extend,"
               "loss_lo,loss_hi\n");
    for (int i = 0; i < n; i++)
        for (int k = 0; k < rows[i].pos_bins; k++) {
            fprintf(f, "%s,%s,%d,%d,%d", rl_cfg_pe_name(c->model.pe),
                    rl_cfg_attention_name(c->model.attention), rows[i].length,
                    rows[i].pos_edge[k], rows[i].pos_edge[k + 1]);
            csv_num(f, rows[i].pos_loss[k], 0);
            fprintf(f, ",%ld,%s", rows[i].pos_targets[k], rl_cfg_extend_name(rows[i].method));
            csv_num(f, rows[i].pos_lo[k], 0);
            csv_num(f, rows[i].pos_hi[k], 0);
            fputc('\n', f);
        }
    return commit_tmp(f, path, tmp);
}

/* Causal tasks but LM ones: orders.csv, the accuracy by the order of a scored target
 * within its row at every evaluation length (order 1 .. n_orders; the line of order
 * RL_EVAL_ORDERS pools the targets from that order on).  Other tasks write none. */
static rl_status write_orders_csv(const char *dir, const struct rl_cfg *c,
                                  const struct rl_eval_row *rows, int n)
{
    int any = 0;
    for (int i = 0; i < n; i++)
        any |= rows[i].n_orders > 0;
    if (!any) return RL_OK;
    char  path[2300], tmp[2400];
    FILE *f;
    RL_TRY(open_tmp(&f, path, sizeof path, tmp, sizeof tmp, dir, "orders.csv"));
    fprintf(f, "pe,attention,length,order,acc,targets,rope_extend\n");
    for (int i = 0; i < n; i++)
        for (int k = 0; k < rows[i].n_orders; k++) {
            const long nt = rows[i].order_targets[k];
            fprintf(f, "%s,%s,%d,%d", rl_cfg_pe_name(c->model.pe),
                    rl_cfg_attention_name(c->model.attention), rows[i].length, k + 1);
            csv_num(f, nt ? (double)rows[i].order_correct[k] / (double)nt : NAN, 0);
            fprintf(f, ",%ld,%s\n", nt, rl_cfg_extend_name(rows[i].method));
        }
    return commit_tmp(f, path, tmp);
}

rl_status rl_write_results_csv(const char *dir, const struct rl_cfg *c,
                               const struct rl_eval_row *rows, int n)
{
    char  path[2300], tmp[2400];
    FILE *f;
    /* results.csv last: its presence marks a finished point (--resume skips it) */
    RL_TRY(write_positions_csv(dir, c, rows, n));
    RL_TRY(write_orders_csv(dir, c, rows, n));
    RL_TRY(open_tmp(&f, path, sizeof path, tmp, sizeof tmp, dir, "results.csv"));
    fprintf(f, "pe,attention," RL_REP_RESULT_COLUMNS "\n");
    for (int i = 0; i < n; i++) {
        const struct rl_eval_row *r = &rows[i];
        fprintf(f, "%s,%s,%d", rl_cfg_pe_name(c->model.pe),
                rl_cfg_attention_name(c->model.attention), r->length);
        csv_num(f, r->acc, r->na);
        csv_num(f, r->exact, r->na);
        csv_num(f, r->loss, r->na);
        csv_num(f, r->ppl, r->na);
        csv_num(f, r->ms_per_1k_tokens, r->na);
        csv_num(f, r->den_rows > 0 ? (double)r->bad_den / (double)r->den_rows : NAN, r->na);
        fprintf(f, ",%s,%s,%.6g,%d", r->note, rl_cfg_extend_name(r->method), r->factor, r->stride);
        const double ci[8] = {r->acc_lo,  r->acc_hi,  r->exact_lo, r->exact_hi,
                              r->loss_lo, r->loss_hi, r->ppl_lo,   r->ppl_hi};
        for (int k = 0; k < 8; k++)
            csv_num(f, ci[k], r->na);
        if (r->na)
            fputs(",n/a,n/a", f);
        else
            fprintf(f, ",%ld,%ld", r->targets, r->sequences);
        csv_num(f, r->ref_loss, 0); /* the baseline is the task's: n/a rows have it too */
        csv_num(f, r->ref_acc, 0);
        fputc('\n', f);
    }
    return commit_tmp(f, path, tmp);
}

/* The accuracy by order of the scored targets of every length whose rows have at most 16
 * (MQAR: by query order), one line per length. */
static void print_orders(FILE *f, const struct rl_eval_row *rows, int n)
{
    int any = 0;
    for (int i = 0; i < n; i++) {
        const struct rl_eval_row *r = &rows[i];
        if (r->na || !r->n_orders || r->n_orders > 16) continue;
        if (!any++)
            fprintf(f, "accuracy by order of the scored target in its row (1st, 2nd, ...):\n");
        if (r->method != RL_CFG_EXTEND_NONE)
            fprintf(f, "%-6s  %6.3g  ", rl_cfg_extend_name(r->method), r->factor);
        fprintf(f, "%8d ", r->length);
        for (int k = 0; k < r->n_orders; k++)
            fprintf(f, " %6.4f",
                    r->order_targets[k] ? (double)r->order_correct[k] / (double)r->order_targets[k]
                                        : NAN);
        fputc('\n', f);
    }
}

void rl_print_eval_table(FILE *f, const struct rl_cfg *c, const struct rl_eval_row *rows, int n,
                         int causal)
{
    int ext = 0; /* a method column when any row is extended */
    for (int i = 0; i < n; i++)
        ext |= rows[i].method != RL_CFG_EXTEND_NONE;
    fprintf(f, "\nevaluation (%s, %s attention, %d batches per length", rl_cfg_pe_name(c->model.pe),
            rl_cfg_attention_name(c->model.attention), c->eval.batches);
    if (c->eval.stride) fprintf(f, ", sliding windows, stride %d", c->eval.stride);
    fprintf(f, "):\n%s%8s  %9s  %7s  %7s  %10s  %12s\n", ext ? "method  factor  " : "", "length",
            "loss", "acc", "exact", causal ? "ppl" : "", "ms/1k tok");
    for (int i = 0; i < n; i++) {
        const struct rl_eval_row *r = &rows[i];
        if (ext) fprintf(f, "%-6s  %6.3g  ", rl_cfg_extend_name(r->method), r->factor);
        if (r->na) {
            fprintf(f, "%8d  n/a (%s)\n", r->length, r->note);
            continue;
        }
        fprintf(f, "%8d  %9.4f  %7.4f  %7.4f  ", r->length, r->loss, r->acc, r->exact);
        if (causal)
            fprintf(f, "%10.4g", r->ppl);
        else
            fprintf(f, "%10s", "");
        fprintf(f, "  %12.3f\n", r->ms_per_1k_tokens);
    }
    print_orders(f, rows, n);
    fflush(f);
}
