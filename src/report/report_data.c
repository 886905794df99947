/* report_data.c -- a run read back from its directory: points, their results.csv,
 * metrics.jsonl, positions.csv and orders.csv, the table rows (seeds grouped) and the statistics
 * over them; see report_data.h. */
#include "config.h"
#include "report_data.h"
#include "../core/json.h"
#include "../core/stats.h"
#include "../tasks/task.h"
#include "../core/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void point_dir(const struct rl_report *r, const struct rl_rep_point *p, char *buf,
                      size_t len)
{
    if (p->name[0])
        snprintf(buf, len, "%s/%s", r->dir, p->name);
    else
        snprintf(buf, len, "%s", r->dir);
}

/* Field i of a CSV line (no quoting: ropelab writes none) into buf; NULL past the end. */
static const char *csv_field(const char *line, int i, char *buf, size_t len)
{
    for (; i > 0; i--) {
        line = strchr(line, ',');
        if (!line) return NULL;
        line++;
    }
    size_t n = strcspn(line, ",\r\n");
    if (n >= len) n = len - 1;
    memcpy(buf, line, n);
    buf[n] = 0;
    return buf;
}

static int csv_col(const char *header, const char *name)
{
    char f[64];
    for (int i = 0; csv_field(header, i, f, sizeof f); i++)
        if (!strcmp(f, name)) return i;
    return -1;
}

/* A number field: NAN when absent or empty; "n/a" sets *na; text that is not a number
 * (a damaged file) sets *bad rather than reading as 0. */
static double csv_num(const char *line, int col, int *na, int *bad)
{
    char f[64], *end;
    if (col < 0 || !csv_field(line, col, f, sizeof f) || !f[0]) return NAN;
    if (!strcmp(f, "n/a")) return *na = 1, NAN;
    double x = strtod(f, &end);
    if (*end) *bad = 1;
    return x;
}

/* The method whose loss-by-position curve the tables and plots show: none when the point
 * has it, else its first. */
static const char *primary_method(const struct rl_rep_point *p)
{
    const char *none = rl_cfg_extend_name(RL_CFG_EXTEND_NONE);
    for (int j = 0; j < p->n_rows; j++)
        if (!strcmp(p->rows[j].method, none)) return none;
    return p->n_rows ? p->rows[0].method : none;
}

/* positions.csv of an LM point: kept as text for the combined file, and the bins of its
 * longest length (of its primary method) parsed for the table and the plot. */
static rl_status read_positions(struct rl_rep_point *p, const char *pdir)
{
    char           path[4096], f[64];
    unsigned char *buf;
    size_t         len;
    snprintf(path, sizeof path, "%s/positions.csv", pdir);
    if (!rl_path_exists(path)) return RL_OK;
    RL_TRY(rl_read_file(&buf, &len, path));
    char  *text = (char *)buf, *save = NULL, *hdr = strtok_r(text, "\n", &save);
    size_t n = 0, lines = 1;
    for (size_t i = 0; i < len; i++)
        lines += buf[i] == '\n';
    const char *data = hdr ? hdr + strlen(hdr) + 1 : NULL;
    int cl = hdr ? csv_col(hdr, "length") : -1, c0 = hdr ? csv_col(hdr, "position_start") : -1;
    int c1 = hdr ? csv_col(hdr, "position_end") : -1, cs = hdr ? csv_col(hdr, "loss") : -1;
    int ct = hdr ? csv_col(hdr, "targets") : -1, na = 0, bad = 0;
    int clo = hdr ? csv_col(hdr, "loss_lo") : -1, chi = hdr ? csv_col(hdr, "loss_hi") : -1;
    int cm         = hdr ? csv_col(hdr, "rope_extend") : -1; /* absent in older runs */
    const char *pm = primary_method(p);
    if (cl < 0 || c0 < 0 || c1 < 0 || cs < 0 || ct < 0)
        return free(buf), rl_error_report(RL_EFORMAT, __FILE__, __LINE__,
                                          "%s: no header line with length, position_start, "
                                          "position_end, loss, targets",
                                          path);
    p->pos_method  = cm >= 0;
    p->pos_ci      = clo >= 0 && chi >= 0;
    p->pos_lo      = malloc(lines * sizeof *p->pos_lo);
    p->pos_hi      = malloc(lines * sizeof *p->pos_hi);
    p->pos_text    = strdup(data < text + len ? data : "");
    char **line    = malloc(lines * sizeof *line);
    p->pos0        = malloc(lines * sizeof *p->pos0);
    p->pos1        = malloc(lines * sizeof *p->pos1);
    p->pos_loss    = malloc(lines * sizeof *p->pos_loss);
    p->pos_targets = malloc(lines * sizeof *p->pos_targets);
    if (!p->pos_text || !line || !p->pos0 || !p->pos1 || !p->pos_loss || !p->pos_targets ||
        !p->pos_lo || !p->pos_hi)
        return free(buf), free(line),
               rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "out of memory");
    for (char *l = strtok_r(NULL, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (cm >= 0 && (!csv_field(l, cm, f, sizeof f) || strcmp(f, pm))) continue;
        line[n++] = l;
        if (csv_field(l, cl, f, sizeof f) && atoi(f) > p->pos_len) p->pos_len = atoi(f);
    }
    for (size_t i = 0; i < n; i++) {
        if (!csv_field(line[i], cl, f, sizeof f) || atoi(f) != p->pos_len) continue;
        p->pos0[p->n_pos]        = atoi(csv_field(line[i], c0, f, sizeof f));
        p->pos1[p->n_pos]        = atoi(csv_field(line[i], c1, f, sizeof f));
        p->pos_loss[p->n_pos]    = csv_num(line[i], cs, &na, &bad);
        p->pos_targets[p->n_pos] = csv_num(line[i], ct, &na, &bad);
        p->pos_lo[p->n_pos]      = csv_num(line[i], clo, &na, &bad);
        p->pos_hi[p->n_pos]      = csv_num(line[i], chi, &na, &bad);
        p->n_pos++;
    }
    free(line);
    free(buf);
    if (bad) RL_FAIL(RL_EFORMAT, "%s: a loss or targets field is not a number", path);
    return RL_OK;
}

/* orders.csv of a point of a causal task (not LM): kept as text for the combined file,
 * and the accuracy of every (length, order) of its primary method parsed for the table. */
static rl_status read_orders(struct rl_rep_point *p, const char *pdir)
{
    char           path[4096], f[64];
    unsigned char *buf;
    size_t         len, lines = 1;
    snprintf(path, sizeof path, "%s/orders.csv", pdir);
    if (!rl_path_exists(path)) return RL_OK;
    RL_TRY(rl_read_file(&buf, &len, path));
    char *text = (char *)buf, *save = NULL, *hdr = strtok_r(text, "\n", &save);
    for (size_t i = 0; i < len; i++)
        lines += buf[i] == '\n';
    const char *data = hdr ? hdr + strlen(hdr) + 1 : NULL, *pm = primary_method(p);
    int         cl = hdr ? csv_col(hdr, "length") : -1, ck = hdr ? csv_col(hdr, "order") : -1;
    int         ca = hdr ? csv_col(hdr, "acc") : -1, cm = hdr ? csv_col(hdr, "rope_extend") : -1;
    int         na = 0, bad = 0;
    if (cl < 0 || ck < 0 || ca < 0 || cm < 0)
        return free(buf), rl_error_report(RL_EFORMAT, __FILE__, __LINE__,
                                          "%s: no header line with length, order, acc, "
                                          "rope_extend",
                                          path);
    p->ord_text = strdup(data < text + len ? data : "");
    p->ord_len  = malloc(lines * sizeof *p->ord_len);
    p->ord_k    = malloc(lines * sizeof *p->ord_k);
    p->ord_acc  = malloc(lines * sizeof *p->ord_acc);
    if (!p->ord_text || !p->ord_len || !p->ord_k || !p->ord_acc)
        return free(buf), rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "out of memory");
    for (char *l = strtok_r(NULL, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (!csv_field(l, cm, f, sizeof f) || strcmp(f, pm)) continue;
        p->ord_len[p->n_ord] = atoi(csv_field(l, cl, f, sizeof f) ? f : "0");
        p->ord_k[p->n_ord]   = atoi(csv_field(l, ck, f, sizeof f) ? f : "0");
        p->ord_acc[p->n_ord] = csv_num(l, ca, &na, &bad);
        p->n_ord++;
    }
    free(buf);
    if (bad) RL_FAIL(RL_EFORMAT, "%s: an acc field is not a number", path);
    return RL_OK;
}

static double num_field(const struct rl_json *j, const char *key)
{
    const struct rl_json *v = rl_json_get(j, key);
    return v && v->type == RL_JSON_NUMBER ? v->number : NAN;
}

/* Field `name` of a data line, verbatim ("" when the header lacks the column). */
static const char *raw_field(const char *hdr, const char *line, const char *name, char *buf,
                             size_t len)
{
    int c = csv_col(hdr, name);
    if (c < 0 || !csv_field(line, c, buf, len)) buf[0] = 0;
    return buf;
}

/* The row's line as the combined results.csv has it, from its length on; the numbers
 * keep the text they were written with. */
static rl_status row_tail(struct rl_rep_row *w, const char *hdr, const char *line, const char *path)
{
    char a[64], e[64], l[64], p[64], m[64], d[64], f[64], st[64], iv[400];
    if (w->na)
        snprintf(d, sizeof d, "n/a");
    else if (isnan(w->den))
        raw_field(hdr, line, "den_le_eps", d, sizeof d);
    else
        snprintf(d, sizeof d, "%.6g", w->den);
    /* runs written before the evaluation columns: no extension, factor 1, stride 0 */
    if (!*raw_field(hdr, line, "rope_factor", f, sizeof f)) snprintf(f, sizeof f, "1");
    if (!*raw_field(hdr, line, "stride", st, sizeof st)) snprintf(st, sizeof st, "0");
    /* the intervals and their sizes as written (empty in runs written before them) */
    static const char *const ci[] = {"acc_lo",  "acc_hi",    "exact_lo", "exact_hi",
                                     "loss_lo", "loss_hi",   "ppl_lo",   "ppl_hi",
                                     "targets", "sequences", "ref_loss", "ref_acc"};
    size_t                   k    = 0;
    for (int i = 0; i < 12 && k < sizeof iv; i++) {
        char v[64];
        k += (size_t)snprintf(iv + k, sizeof iv - k, ",%s",
                              raw_field(hdr, line, ci[i], v, sizeof v));
    }
    int n = snprintf(
        w->tail, sizeof w->tail, "%d,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s%s", w->length,
        raw_field(hdr, line, "acc", a, sizeof a),
        w->na ? "n/a" : raw_field(hdr, line, "exact", e, sizeof e),
        raw_field(hdr, line, "loss", l, sizeof l), raw_field(hdr, line, "ppl", p, sizeof p),
        raw_field(hdr, line, "ms_per_1k_tokens", m, sizeof m), d, w->note, w->method, f, st, iv);
    if (n < 0 || (size_t)n >= sizeof w->tail) RL_FAIL(RL_EFORMAT, "%s: line too long", path);
    return RL_OK;
}

/* One data line of a point's results.csv (header columns found by name). */
static rl_status parse_result_line(struct rl_rep_row *w, const char *hdr, const char *line,
                                   const char *path)
{
    int  cl = csv_col(hdr, "length"), cn = csv_col(hdr, "note"), na = 0, bad = 0;
    char f[96];
    memset(w, 0, sizeof *w);
    if (cl < 0 || !csv_field(line, cl, f, sizeof f) || (w->length = atoi(f)) <= 0)
        RL_FAIL(RL_EFORMAT, "%s: a line without a length: '%.60s'", path, line);
    w->acc                         = csv_num(line, csv_col(hdr, "acc"), &w->na, &bad);
    w->exact                       = csv_num(line, csv_col(hdr, "exact"), &na, &bad);
    w->loss                        = csv_num(line, csv_col(hdr, "loss"), &w->na, &bad);
    w->ppl                         = csv_num(line, csv_col(hdr, "ppl"), &w->na, &bad);
    w->ms                          = csv_num(line, csv_col(hdr, "ms_per_1k_tokens"), &w->na, &bad);
    w->den                         = csv_num(line, csv_col(hdr, "den_le_eps"), &na, &bad);
    double                  *ci[8] = {&w->acc_lo,  &w->acc_hi,  &w->exact_lo, &w->exact_hi,
                                      &w->loss_lo, &w->loss_hi, &w->ppl_lo,   &w->ppl_hi};
    static const char *const name[8] = {"acc_lo",  "acc_hi",  "exact_lo", "exact_hi",
                                        "loss_lo", "loss_hi", "ppl_lo",   "ppl_hi"};
    for (int i = 0; i < 8; i++)
        *ci[i] = csv_num(line, csv_col(hdr, name[i]), &na, &bad);
    w->ref_loss = csv_num(line, csv_col(hdr, "ref_loss"), &na, &bad);
    w->ref_acc  = csv_num(line, csv_col(hdr, "ref_acc"), &na, &bad);
    if (bad)
        RL_FAIL(RL_EFORMAT, "%s: a line with a field that is not a number: '%.60s'", path, line);
    if (cn >= 0 && csv_field(line, cn, f, sizeof f)) snprintf(w->note, sizeof w->note, "%s", f);
    int cm = csv_col(hdr, "rope_extend");
    if (cm < 0 || !csv_field(line, cm, f, sizeof f) || !f[0])
        snprintf(f, sizeof f, "%s", rl_cfg_extend_name(RL_CFG_EXTEND_NONE));
    snprintf(w->method, sizeof w->method, "%.7s", f);
    return RL_OK;
}

/* Runs written before results.csv had den_le_eps: the denominator counts of the last
 * record of eval.jsonl (absent in still older runs: the column stays empty). */
static void den_from_evals(struct rl_rep_point *p, const char *pdir)
{
    char           path[4096];
    unsigned char *buf;
    size_t         len;
    snprintf(path, sizeof path, "%s/eval.jsonl", pdir);
    if (!rl_path_exists(path) || rl_read_file(&buf, &len, path) != RL_OK) return;
    size_t end = len;
    while (end > 0 && (buf[end - 1] == '\n' || buf[end - 1] == '\r'))
        end--;
    size_t start = end;
    while (start > 0 && buf[start - 1] != '\n')
        start--;
    struct rl_json *j = NULL;
    if (end > start && rl_json_parse(&j, (const char *)buf + start, end - start) == RL_OK) {
        const struct rl_json *ev = rl_json_get(j, "eval");
        for (int i = 0; ev && ev->type == RL_JSON_ARRAY && i < ev->n; i++) {
            double L = num_field(&ev->items[i], "length");
            double b = num_field(&ev->items[i], "rows_denominator_le_eps");
            double n = num_field(&ev->items[i], "denominator_rows");
            for (int k = 0; k < p->n_rows; k++)
                if (p->rows[k].length == L && !p->rows[k].na && n > 0) p->rows[k].den = b / n;
        }
    }
    rl_json_free(j);
    free(buf);
}

static rl_status read_results(struct rl_rep_point *p, const char *pdir)
{
    char           path[4096], *hdr = NULL;
    unsigned char *buf;
    size_t         len;
    snprintf(path, sizeof path, "%s/results.csv", pdir);
    if (!rl_path_exists(path)) return RL_OK; /* not finished */
    RL_TRY(rl_read_file(&buf, &len, path));
    char     *text = (char *)buf, *save = NULL, *lines[RL_REP_MAX_ROWS];
    rl_status st = RL_OK;
    for (char *line = strtok_r(text, "\n", &save); line && st == RL_OK;
         line       = strtok_r(NULL, "\n", &save)) {
        if (!hdr) {
            hdr = line;
            continue;
        }
        if (p->n_rows == RL_REP_MAX_ROWS) {
            st = rl_error_report(RL_EFORMAT, __FILE__, __LINE__, "%s: too many lines", path);
            break;
        }
        lines[p->n_rows] = line;
        st               = parse_result_line(&p->rows[p->n_rows++], hdr, line, path);
    }
    if (st == RL_OK && (!hdr || csv_col(hdr, "length") < 0))
        st = rl_error_report(RL_EFORMAT, __FILE__, __LINE__, "%s: no header line", path);
    if (st == RL_OK && !p->n_rows) /* every point evaluates at least one length */
        st = rl_error_report(RL_EFORMAT, __FILE__, __LINE__, "%s: no result lines", path);
    if (st == RL_OK && csv_col(hdr, "den_le_eps") < 0 &&
        !strcmp(p->attention, rl_cfg_attention_name(RL_ATTN_LINEAR)))
        den_from_evals(p, pdir);
    /* the tails once every row is known (the lines are still in buf) */
    for (int k = 0; st == RL_OK && k < p->n_rows; k++)
        st = row_tail(&p->rows[k], hdr, lines[k], path);
    free(buf);
    p->done = st == RL_OK;
    return st;
}

/* metrics.jsonl: the loss curve and the timing means (weighted by the updates each record
 * covers; tokens/s as total tokens over total time, tokens per update being constant). */
static rl_status read_metrics(struct rl_rep_point *p, const char *pdir)
{
    char           path[4096];
    unsigned char *buf;
    size_t         len;
    p->tok_s = p->ms_fwd = p->ms_bwd = p->ms_opt = p->cpu_per_wall = NAN;
    snprintf(path, sizeof path, "%s/metrics.jsonl", pdir);
    if (!rl_path_exists(path)) return RL_OK;
    RL_TRY(rl_read_file(&buf, &len, path));
    size_t lines = 1;
    for (size_t i = 0; i < len; i++)
        lines += buf[i] == '\n';
    p->step = malloc(lines * sizeof *p->step);
    p->loss = malloc(lines * sizeof *p->loss);
    if (!p->step || !p->loss)
        return free(buf), rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "out of memory");
    double  w = 0, inv = 0, f = 0, b = 0, o = 0, cpu = 0, wall = 0;
    int64_t prev = 0;
    for (size_t i = 0; i < len;) {
        const char     *s = (const char *)buf + i, *nl = memchr(s, '\n', len - i);
        size_t          n = nl ? (size_t)(nl - s) : len - i;
        struct rl_json *j = NULL;
        i += n + 1;
        if (rl_json_parse(&j, s, n) != RL_OK) continue; /* a line cut short by a kill */
        const struct rl_json *st = rl_json_get(j, "step");
        if (st && st->type == RL_JSON_NUMBER && st->is_int && st->integer > prev) {
            double dw = (double)(st->integer - prev), tps = num_field(j, "tokens_per_s");
            p->step[p->n_rec]   = st->integer;
            p->loss[p->n_rec++] = num_field(j, "loss");
            w += dw, inv += dw / tps;
            f += dw * num_field(j, "ms_forward"), b += dw * num_field(j, "ms_backward");
            o += dw * num_field(j, "ms_optimizer");
            double cw = num_field(j, "ms_cpu"), ww = num_field(j, "ms_update");
            if (!isnan(cw) && !isnan(ww)) cpu += dw * cw, wall += dw * ww;
            prev = st->integer;
        }
        rl_json_free(j);
    }
    free(buf);
    if (w > 0) p->tok_s = w / inv, p->ms_fwd = f / w, p->ms_bwd = b / w, p->ms_opt = o / w;
    if (wall > 0) p->cpu_per_wall = cpu / wall;
    return RL_OK;
}

static int task_index(struct rl_report *r, const char *name, int lm)
{
    for (int t = 0; t < r->n_tasks; t++)
        if (!strcmp(r->task[t], name)) return t;
    RL_ASSERT(r->n_tasks < RL_REP_MAX_TASKS);
    snprintf(r->task[r->n_tasks], sizeof r->task[0], "%s", name);
    r->task_lm[r->n_tasks] = lm;
    return r->n_tasks++;
}

/* Row columns: pe, attention, then every other swept key except train.seed,
 * train.data_seed and task.name (a table per task, seeds aggregated). */
static void set_columns(struct rl_report *r)
{
    const struct rl_sweep *s = &r->sw;
    r->seed_key              = rl_sweep_find(s, "train", "seed");
    r->data_seed_key         = rl_sweep_find(s, "train", "data_seed");
    snprintf(r->colname[0], sizeof r->colname[0], "pe");
    snprintf(r->colname[1], sizeof r->colname[1], "attention");
    r->colkey[0] = -1, r->colkey[1] = -2, r->n_cols = 2;
    for (int k = 0; k < s->n_keys; k++) {
        if (k == r->seed_key || k == r->data_seed_key ||
            (!strcmp(s->section[k], "model") &&
             (!strcmp(s->key[k], "pe") || !strcmp(s->key[k], "attention"))))
            continue;
        if (!strcmp(s->section[k], "task") && !strcmp(s->key[k], "name")) continue;
        snprintf(r->colname[r->n_cols], sizeof r->colname[0], "%s", s->column[k]);
        r->colkey[r->n_cols++] = k;
    }
}

static void group_point(struct rl_report *r, long i)
{
    struct rl_rep_point *p = &r->pt[i];
    struct rl_rep_group  g;
    memset(&g, 0, sizeof g);
    g.task = p->task;
    for (int c = 0; c < r->n_cols; c++) {
        const char *v = r->colkey[c] == -1   ? p->pe
                        : r->colkey[c] == -2 ? p->attention
                                             : rl_sweep_value(&r->sw, i, r->colkey[c]);
        snprintf(g.col[c], sizeof g.col[c], "%s", v);
    }
    for (int k = 0; k < r->n_groups; k++) {
        int same = r->grp[k].task == g.task;
        for (int c = 0; c < r->n_cols && same; c++)
            same = !strcmp(r->grp[k].col[c], g.col[c]);
        if (same) {
            p->group = k, r->grp[k].n_points++;
            return;
        }
    }
    size_t n = 0;
    for (int c = 0; c < r->n_cols && n < sizeof g.line; c++)
        if (c != 1)
            n += (size_t)snprintf(g.line + n, sizeof g.line - n, "%s%s%s%s", n ? " " : "",
                                  c ? r->colname[c] : "", c ? "=" : "", g.col[c]);
    g.n_points            = 1;
    p->group              = r->n_groups;
    r->grp[r->n_groups++] = g;
}

static rl_status load_point(struct rl_report *r, long i, struct rl_cfg *pc)
{
    struct rl_rep_point *p = &r->pt[i];
    char                 pdir[3200], path[4096];
    rl_sweep_point_name(&r->sw, i, p->name, sizeof p->name);
    if (r->sw.n_keys)
        RL_TRY(rl_sweep_point_cfg(&r->sw, &r->base, i, pc));
    else
        *pc = r->base;
    snprintf(p->pe, sizeof p->pe, "%s", rl_cfg_pe_name(pc->model.pe));
    snprintf(p->attention, sizeof p->attention, "%s", rl_cfg_attention_name(pc->model.attention));
    p->lm   = rl_task_kind_lm(pc->task.name);
    p->task = task_index(r, rl_task_kind_name(pc->task.name), p->lm);
    point_dir(r, p, pdir, sizeof pdir);
    RL_TRY(read_results(p, pdir));
    RL_TRY(read_metrics(p, pdir));
    if (p->done) RL_TRY(read_positions(p, pdir));
    if (p->done) RL_TRY(read_orders(p, pdir));
    if (!p->done) return RL_OK;
    r->n_done++;
    group_point(r, i);
    /* the training length, from the point's resolved configuration */
    snprintf(path, sizeof path, "%s/config.ini", pdir);
    rl_cfg_defaults(pc);
    if (!r->task_length[p->task] && rl_path_exists(path) && rl_cfg_load(pc, path) == RL_OK)
        r->task_length[p->task] = pc->task.length;
    return RL_OK;
}

/* The rope_extend methods of the finished points' rows: the known ones in their order,
 * then any other name in order of appearance. */
static void collect_methods(struct rl_report *r)
{
    const struct rl_choice *known = rl_cfg_extends;
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < (pass ? 1 : rl_choice_count(known)); k++)
            for (long i = 0; i < r->n_points; i++)
                for (int j = 0; r->pt[i].done && j < r->pt[i].n_rows; j++) {
                    const char *m  = r->pt[i].rows[j].method;
                    int         ok = pass ? 1 : !strcmp(m, known[k].name), have = 0;
                    for (int q = 0; q < r->n_methods; q++)
                        have |= !strcmp(r->method[q], m);
                    if (ok && !have && r->n_methods < RL_CFG_EXTEND_MAX)
                        snprintf(r->method[r->n_methods++], sizeof r->method[0], "%s", m);
                }
}

int rl_rep_per_method(const struct rl_report *r)
{
    return r->n_methods > 1 ||
           (r->n_methods == 1 && strcmp(r->method[0], rl_cfg_extend_name(RL_CFG_EXTEND_NONE)));
}

void rl_rep_free(struct rl_report *r)
{
    if (!r) return;
    for (long i = 0; r->pt && i < r->n_points; i++) {
        struct rl_rep_point *p = &r->pt[i];
        free(p->step), free(p->loss), free(p->pos_text), free(p->pos0), free(p->pos1);
        free(p->pos_loss), free(p->pos_targets), free(p->pos_lo), free(p->pos_hi);
        free(p->ord_text), free(p->ord_len), free(p->ord_k), free(p->ord_acc);
    }
    free(r->pt);
    free(r->grp);
    free(r);
}

rl_status rl_rep_load(struct rl_report **out, const char *dir)
{
    char              path[4096];
    struct rl_report *r  = calloc(1, sizeof *r);
    struct rl_cfg    *pc = malloc(sizeof *pc);
    rl_status         st =
        r && pc ? RL_OK : rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "out of memory");
    *out = NULL;
    if (st == RL_OK && strlen(dir) >= sizeof r->dir)
        st = rl_error_report(RL_EINVAL, __FILE__, __LINE__, "%s: path too long", dir);
    if (st == RL_OK) {
        snprintf(r->dir, sizeof r->dir, "%s", dir);
        snprintf(path, sizeof path, "%s/config.ini", dir);
        if (!rl_path_exists(path))
            st = rl_error_report(RL_EIO, __FILE__, __LINE__,
                                 "%s: no config.ini: not a ropelab run directory", dir);
    }
    if (st == RL_OK) rl_cfg_defaults(&r->base), st = rl_cfg_load(&r->base, path);
    if (st == RL_OK) st = rl_sweep_init(&r->sw, &r->base);
    if (st == RL_OK) {
        r->n_points = r->sw.n_points;
        r->pt       = calloc((size_t)r->n_points, sizeof *r->pt);
        r->grp      = calloc((size_t)r->n_points, sizeof *r->grp);
        if (!r->pt || !r->grp) st = rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "out of memory");
    }
    if (st == RL_OK) set_columns(r);
    for (long i = 0; st == RL_OK && i < r->n_points; i++)
        st = load_point(r, i, pc);
    if (st == RL_OK) collect_methods(r);
    free(pc);
    if (st != RL_OK) return rl_rep_free(r), st;
    *out = r;
    return RL_OK;
}

/* ---- statistics ---- */

static int cmp_int(const void *a, const void *b)
{
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

int rl_rep_lengths(const struct rl_report *r, int t, int *lengths, int max)
{
    int n = 0;
    for (long i = 0; i < r->n_points; i++) {
        const struct rl_rep_point *p = &r->pt[i];
        if (!p->done || (t >= 0 && p->task != t)) continue;
        for (int j = 0; j < p->n_rows; j++) {
            int k = 0;
            while (k < n && lengths[k] != p->rows[j].length)
                k++;
            if (k == n && n < max) lengths[n++] = p->rows[j].length;
        }
    }
    qsort(lengths, (size_t)n, sizeof *lengths, cmp_int);
    return n;
}

int rl_rep_position_length(const struct rl_report *r, int t)
{
    int M = 0;
    for (long i = 0; i < r->n_points; i++)
        if (r->pt[i].done && r->pt[i].task == t && r->pt[i].pos_len > M) M = r->pt[i].pos_len;
    return M;
}

int rl_rep_has_training(const struct rl_report *r, int t)
{
    for (long i = 0; i < r->n_points; i++)
        if (r->pt[i].done && (t < 0 || r->pt[i].task == t) && r->pt[i].n_rec > 0) return 1;
    return 0;
}

static double row_value(const struct rl_rep_row *w, char f)
{
    return f == 'a'   ? w->acc
           : f == 'e' ? w->exact
           : f == 'l' ? w->loss
           : f == 'p' ? w->ppl
           : f == 'd' ? w->den
                      : w->ms;
}

int rl_rep_stat(const struct rl_report *r, int g, const char *method, char f, int L, double *mean,
                double *sd)
{
    double s = 0, s2 = 0;
    int    n = 0, na = 0;
    for (long i = 0; i < r->n_points; i++) {
        const struct rl_rep_point *p = &r->pt[i];
        if (!p->done || p->group != g) continue;
        for (int j = 0; j < p->n_rows; j++) {
            const struct rl_rep_row *w = &p->rows[j];
            if (w->length != L || (method && strcmp(w->method, method))) continue;
            double x = row_value(w, f);
            if (w->na) na++;
            if (isnan(x)) continue;
            s += x, n++;
        }
    }
    if (n == 0) return na ? -1 : 0;
    *mean = s / n;
    for (long i = 0; i < r->n_points; i++) { /* two passes: no cancellation in the variance */
        const struct rl_rep_point *p = &r->pt[i];
        if (!p->done || p->group != g) continue;
        for (int j = 0; j < p->n_rows; j++) {
            const struct rl_rep_row *w = &p->rows[j];
            double                   x = row_value(w, f);
            if (w->length == L && !isnan(x) && (!method || !strcmp(w->method, method)))
                s2 += (x - *mean) * (x - *mean);
        }
    }
    *sd = n > 1 ? sqrt(s2 / (n - 1)) : 0;
    return n;
}

/* The interval ends of field f in a row (NaN where it has none). */
static void row_interval(const struct rl_rep_row *w, char f, double *lo, double *hi)
{
    *lo = f == 'a' ? w->acc_lo : f == 'e' ? w->exact_lo : f == 'l' ? w->loss_lo : w->ppl_lo;
    *hi = f == 'a' ? w->acc_hi : f == 'e' ? w->exact_hi : f == 'l' ? w->loss_hi : w->ppl_hi;
    if (!strchr("aelp", f)) *lo = *hi = NAN;
}

int rl_rep_interval(const struct rl_report *r, int g, const char *method, char f, int L, double *lo,
                    double *hi)
{
    double mean, sd;
    int    n = rl_rep_stat(r, g, method, f, L, &mean, &sd);
    if (n <= 0) return 0;
    if (n > 1) {
        const double h = rl_mean_halfwidth(n, sd);
        *lo = mean - h, *hi = mean + h;
        return n;
    }
    for (long i = 0; i < r->n_points; i++)
        for (int j = 0; r->pt[i].done && r->pt[i].group == g && j < r->pt[i].n_rows; j++) {
            const struct rl_rep_row *w = &r->pt[i].rows[j];
            if (w->length != L || (method && strcmp(w->method, method)) || isnan(row_value(w, f)))
                continue;
            row_interval(w, f, lo, hi);
            return isnan(*lo) || isnan(*hi) ? 0 : 1;
        }
    return 0;
}

int rl_rep_seeds(const struct rl_report *r)
{
    return (r->seed_key >= 0 ? r->sw.n_values[r->seed_key] : 1) *
           (r->data_seed_key >= 0 ? r->sw.n_values[r->data_seed_key] : 1);
}

int rl_rep_seeded(const struct rl_report *r) { return rl_rep_seeds(r) > 1; }

int rl_rep_higher_better(char f) { return f == 'a' || f == 'e'; }

void rl_rep_compare(const struct rl_report *r, int g, const char *method, char f, int L,
                    struct rl_rep_cmp *c)
{
    double    mean = 0, sd = 0, bm = 0, bsd = 0;
    int       n = rl_rep_stat(r, g, method, f, L, &mean, &sd), bn = 0;
    const int nm = method ? r->n_methods : 1;
    c->mark = RL_REP_NONE, c->best = -1, c->best_method = NULL, c->diff = c->spread = NAN;
    if (n <= 0) return;
    for (int k = 0; k < r->n_groups; k++)
        for (int q = 0; q < nm; q++) {
            const char *mq = method ? r->method[q] : NULL;
            double      m = 0, s = 0;
            int         nk;
            if (r->grp[k].task != r->grp[g].task || strcmp(r->grp[k].col[1], r->grp[g].col[1]))
                continue;
            if ((nk = rl_rep_stat(r, k, mq, f, L, &m, &s)) <= 0) continue;
            if (c->best < 0 || (rl_rep_higher_better(f) ? m > bm : m < bm))
                c->best = k, c->best_method = mq, bm = m, bsd = s, bn = nk;
        }
    c->diff        = mean - bm;
    c->spread      = sd + bsd;
    const int same = c->best == g && (!method || !strcmp(c->best_method, method));
    c->mark        = same                         ? RL_REP_BEST
                     : n < 2 || bn < 2            ? RL_REP_FEW
                     : fabs(c->diff) <= c->spread ? RL_REP_NS
                                                  : RL_REP_SIG;
}
