/* report.c -- an experiment's outputs from its run directory: the combined results.csv
 * positions.csv and orders.csv of a sweep, summary.md, the printed table and the plots; see
 * report.h.  Reading is in report_data.c, tables in report_table.c, plots in
 * report_plot.c. */
#include "config.h"
#include "report.h"
#include "report_data.h"
#include "report_table.h"
#include "report_plot.h"
#include "../core/json.h"
#include "../core/util.h"

#include <stdio.h>
#include <string.h>

/* ---- combined results.csv ---- */

/* The combined files of a sweep: a point's line gets the swept values, then pe and
 * attention where they are not swept (the point files always have them). */
static void combined_prefix(struct rl_json_buf *b, const struct rl_report *r, long i)
{
    for (int k = 0; k < r->sw.n_keys; k++)
        rl_json_buf_printf(b, "%s,", i < 0 ? r->sw.column[k] : rl_sweep_value(&r->sw, i, k));
    if (rl_sweep_find(&r->sw, "model", "pe") < 0)
        rl_json_buf_printf(b, "%s,", i < 0 ? "pe" : r->pt[i].pe);
    if (rl_sweep_find(&r->sw, "model", "attention") < 0)
        rl_json_buf_printf(b, "%s,", i < 0 ? "attention" : r->pt[i].attention);
}

static rl_status write_combined(const struct rl_report *r, const char *name, struct rl_json_buf *b)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", r->dir, name);
    rl_status st = b->failed ? rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "out of memory")
                             : rl_write_file_atomic(path, b->p, b->len, NULL, 0);
    rl_json_buf_free(b);
    return st;
}

static rl_status write_results(const struct rl_report *r)
{
    struct rl_json_buf b;
    rl_json_buf_init(&b);
    combined_prefix(&b, r, -1);
    rl_json_buf_puts(&b, RL_REP_RESULT_COLUMNS "\n");
    for (long i = 0; i < r->n_points; i++)
        for (int j = 0; r->pt[i].done && j < r->pt[i].n_rows; j++) {
            combined_prefix(&b, r, i);
            rl_json_buf_printf(&b, "%s\n", r->pt[i].rows[j].tail);
        }
    return write_combined(r, "results.csv", &b);
}

/* A per-point curve file combined: positions.csv of the LM points (orders = 0) or
 * orders.csv of the other causal points (orders = 1); none when no point has one.  The
 * points' lines lose their pe and attention fields to the combined prefix. */
static rl_status write_curves(const struct rl_report *r, int orders)
{
    long any = 0;
    for (long i = 0; i < r->n_points; i++)
        any += (orders ? r->pt[i].ord_text : r->pt[i].pos_text) != NULL;
    if (!any) return RL_OK;
    struct rl_json_buf b;
    rl_json_buf_init(&b);
    combined_prefix(&b, r, -1);
    rl_json_buf_puts(&b, orders ? "length,order,acc,targets,rope_extend\n"
                                : "length,position_start,position_end,loss,targets,rope_extend,"
                                  "loss_lo,loss_hi\n");
    for (long i = 0; i < r->n_points; i++) {
        const int old = !orders && !r->pt[i].pos_method; /* older runs: no rope_extend */
        const int nci = !orders && !r->pt[i].pos_ci;     /* older runs: no interval */
        for (const char *l = orders ? r->pt[i].ord_text : r->pt[i].pos_text; l && *l;) {
            const char *e = strchr(l, '\n'), *t = strchr(l, ',');
            t        = t ? strchr(t + 1, ',') : NULL; /* past the point's pe, attention */
            size_t n = e ? (size_t)(e - l) : strlen(l);
            if (t && t < l + n) {
                combined_prefix(&b, r, i);
                rl_json_buf_printf(&b, "%.*s%s%s\n", (int)(n - (size_t)(t + 1 - l)), t + 1,
                                   old ? ",none" : "", nci ? ",," : "");
            }
            l += n + (e != NULL);
        }
    }
    return write_combined(r, orders ? "orders.csv" : "positions.csv", &b);
}

rl_status rl_report_write(const char *dir, FILE *table, FILE *log)
{
    struct rl_report *r;
    RL_TRY(rl_rep_load(&r, dir));
    rl_status st = RL_OK;
    if (r->sw.n_keys) st = write_results(r);
    if (r->sw.n_keys && st == RL_OK) st = write_curves(r, 0);
    if (r->sw.n_keys && st == RL_OK) st = write_curves(r, 1);
    struct rl_json_buf b;
    rl_json_buf_init(&b);
    if (st == RL_OK) st = rl_rep_summary(r, &b);
    if (st == RL_OK) {
        char path[4096];
        snprintf(path, sizeof path, "%s/summary.md", r->dir);
        st = rl_write_file_atomic(path, b.p, b.len, NULL, 0);
    }
    rl_json_buf_free(&b);
    if (st == RL_OK && table) rl_rep_print_table(r, table);
    if (st == RL_OK && log) {
        fprintf(log, "wrote %s/summary.md%s (%ld of %ld points finished)\n", r->dir,
                r->sw.n_keys ? " and results.csv" : "", r->n_done, r->n_points);
        fflush(log);
    }
    if (st == RL_OK) rl_rep_plots(r, log);
    rl_rep_free(r);
    return st;
}
