/* report_table.c -- summary.md and the accuracy table of an experiment read back by
 * report.c; see report.h for what each table holds. */
#include "config.h"
#include "report_table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A grid of short strings, rendered as a Markdown table or as aligned text. */
#define CELL 64
struct table {
    int rows, cols, labels; /* labels: the leading columns of names (left-aligned as text) */
    char (*cell)[CELL];
};

static int table_init(struct table *t, int rows, int cols)
{
    t->rows = rows, t->cols = cols, t->labels = 2;
    t->cell = calloc((size_t)rows * (size_t)cols, CELL);
    return t->cell != NULL;
}

static char *cell(struct table *t, int r, int c) { return t->cell[(size_t)r * t->cols + c]; }

static void table_markdown(struct table *t, struct rl_json_buf *b)
{
    for (int r = 0; r < t->rows; r++) {
        for (int c = 0; c < t->cols; c++)
            rl_json_buf_printf(b, "| %s ", cell(t, r, c));
        rl_json_buf_puts(b, "|\n");
        for (int c = 0; r == 0 && c < t->cols; c++)
            rl_json_buf_puts(b, c == t->cols - 1 ? "|---|\n" : "|---");
    }
}

/* Display width of UTF-8 text (continuation bytes take no column). */
static int width(const char *s)
{
    int w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

static void table_text(struct table *t, FILE *f)
{
    int w[64] = {0};
    for (int c = 0; c < t->cols && c < 64; c++)
        for (int r = 0; r < t->rows; r++)
            if (width(cell(t, r, c)) > w[c]) w[c] = width(cell(t, r, c));
    for (int r = 0; r < t->rows; r++) {
        for (int c = 0; c < t->cols && c < 64; c++) {
            const char *s   = cell(t, r, c);
            int         pad = w[c] - width(s);
            /* label columns left-aligned, numbers right-aligned */
            fprintf(f, "%s%*s%s%*s", c ? "  " : "", c >= t->labels ? pad : 0, "", s,
                    c < t->labels ? pad : 0, "");
        }
        fputc('\n', f);
    }
}

static void fmt_value(char *buf, size_t len, char f, double x)
{
    if (f == 'a' || f == 'e')
        snprintf(buf, len, "%.3f", x);
    else if (f == 'l')
        snprintf(buf, len, "%.4f", x);
    else if (f == 'p') { /* 4 digits, trailing zeros kept (10.00, not 10) */
        snprintf(buf, len, "%#.4g", x);
        size_t n = strlen(buf);
        if (n && buf[n - 1] == '.') buf[n - 1] = 0;
    } else if (f == 'd')
        snprintf(buf, len, "%.4g", x);
    else
        snprintf(buf, len, "%.2f", x);
}

/* "m ± h" with h given the decimals of m (9.889 ± 0.064, not 9.889 ± 0.06438). */
static void fmt_pm(char *buf, size_t len, char f, double m, double h)
{
    char a[28], b[28];
    fmt_value(a, sizeof a, f, m);
    const char *dot = strchr(a, '.');
    if (dot && !strpbrk(a, "eE"))
        snprintf(b, sizeof b, "%.*f", (int)strlen(dot + 1), h);
    else
        fmt_value(b, sizeof b, f, h);
    snprintf(buf, len, "%s ± %s", a, b);
}

/* A value and its interval: "v ± h" (h half its width), or "v [lo, hi]" when the interval
 * is far from symmetric about v (an accuracy near 0 or 1). */
static void fmt_interval(char *buf, char f, double v, double lo, double hi)
{
    const double h = (hi - lo) / 2;
    if (fabs((lo + hi) / 2 - v) <= 0.25 * h) {
        fmt_pm(buf, CELL, f, v, h);
        return;
    }
    char a[20], l[20], u[20];
    fmt_value(a, sizeof a, f, v), fmt_value(l, sizeof l, f, lo), fmt_value(u, sizeof u, f, hi);
    snprintf(buf, CELL, "%.19s [%.19s, %.19s]", a, l, u);
}

/* A cell: "-" (no value), "n/a", the value, or with seeds "mean ± std (n)". */
static void fmt_cell(char *buf, int n, char f, double mean, double sd, int seeds)
{
    if (n == 0) {
        snprintf(buf, CELL, "-");
        return;
    }
    if (n < 0) {
        snprintf(buf, CELL, "n/a");
        return;
    }
    if (n == 1) {
        char a[28];
        fmt_value(a, sizeof a, f, mean);
        snprintf(buf, CELL, seeds ? "%s (1)" : "%s", a);
        return;
    }
    fmt_pm(buf, CELL, f, mean, sd);
    if (seeds) snprintf(buf + strlen(buf), CELL - strlen(buf), " (%d)", n);
}

/* The mark of a headline cell (see mark_text). */
static const char *mark_suffix(int mark)
{
    return mark == RL_REP_BEST ? " *" : mark == RL_REP_NS ? " ≈" : mark == RL_REP_FEW ? " ?" : "";
}

/* Is group g a row of task t's table of field f and rope_extend method m (NULL: any)?
 * The denominator and exact-match tables have the groups whose points measured them
 * (linear attention; runs that recorded it); a method's rows, the groups evaluated under
 * it. */
static int in_table(const struct rl_report *r, int g, int t, char f, const char *m)
{
    if (r->grp[g].task != t) return 0;
    for (long i = 0; i < r->n_points; i++)
        for (int j = 0; r->pt[i].done && r->pt[i].group == g && j < r->pt[i].n_rows; j++) {
            const struct rl_rep_row *w = &r->pt[i].rows[j];
            if (m && strcmp(w->method, m)) continue;
            if ((f != 'd' && f != 'e') || !isnan(f == 'd' ? w->den : w->exact)) return 1;
        }
    return 0;
}

/* A row of a table: a group, and where some point was evaluated under RoPE extension
 * methods, the method (one row per method the group has; the others' rows are "none"). */
struct trow {
    int         g;
    const char *m;
};

/* The rows of task t's table of field f into rows (room for n_groups x methods); returns
 * their number. */
static int table_rows(const struct rl_report *r, int t, char f, struct trow *rows)
{
    const int pm = rl_rep_per_method(r), nm = pm ? r->n_methods : 1;
    int       n = 0;
    for (int g = 0; g < r->n_groups; g++)
        for (int k = 0; k < nm; k++)
            if (in_table(r, g, t, f, pm ? r->method[k] : NULL))
                rows[n].g = g, rows[n].m = pm ? r->method[k] : NULL, n++;
    return n;
}

/* The label columns: the row columns, and rope_extend with extension methods. */
static int label_cols(const struct rl_report *r) { return r->n_cols + rl_rep_per_method(r); }

static void label_cells(const struct rl_report *r, struct table *tb, int row, const struct trow *w)
{
    for (int c = 0; c < r->n_cols; c++)
        snprintf(cell(tb, row, c), CELL, "%s", w ? r->grp[w->g].col[c] : r->colname[c]);
    if (rl_rep_per_method(r))
        snprintf(cell(tb, row, r->n_cols), CELL, "%s", w ? w->m : "rope_extend");
}

/* What a table's cells hold: the metric (with seeds "mean ± std (n)", else "value ± half
 * the 95 % interval" where the run has it), its marks, or the 95 % interval over seeds. */
enum cells { CELLS_VALUE, CELLS_MARKED, CELLS_SEED_INTERVAL, CELLS_COMPARE };

/* The difference of a row from the best row of its attention kind: "best", "+0.012 n.s."
 * (within the seeds' spread), "-0.301" (beyond it), "-0.050 ?" (fewer than 2 seeds on a
 * side); c keeps the "-" or "n/a" of a row without a value. */
static void compare_cell(const struct rl_report *r, const struct trow *w, char f, int L, char *c)
{
    struct rl_rep_cmp cmp;
    char              v[28];
    rl_rep_compare(r, w->g, w->m, f, L, &cmp);
    if (cmp.mark == RL_REP_NONE) return;
    if (cmp.mark == RL_REP_BEST) {
        snprintf(c, CELL, "best");
        return;
    }
    fmt_value(v, sizeof v, f, fabs(cmp.diff));
    snprintf(c, CELL, "%s%s%s",
             cmp.diff < 0   ? "-"
             : cmp.diff > 0 ? "+"
                            : "",
             v,
             cmp.mark == RL_REP_NS    ? " n.s."
             : cmp.mark == RL_REP_FEW ? " ?"
                                      : "");
}

static void fill_cell(const struct rl_report *r, const struct trow *w, char f, int L,
                      enum cells what, char *c)
{
    double mean = 0, sd = 0, lo, hi;
    int    n = rl_rep_stat(r, w->g, w->m, f, L, &mean, &sd);
    if (what == CELLS_SEED_INTERVAL) {
        if (n > 1 && rl_rep_interval(r, w->g, w->m, f, L, &lo, &hi) > 1) {
            fmt_pm(c, CELL, f, mean, (hi - lo) / 2);
            snprintf(c + strlen(c), CELL - strlen(c), " (%d)", n);
        } else {
            fmt_cell(c, n, f, mean, sd, 1);
        }
        return;
    }
    fmt_cell(c, n, f, mean, sd, rl_rep_seeded(r));
    if (what == CELLS_COMPARE) {
        compare_cell(r, w, f, L, c);
        return;
    }
    if (!rl_rep_seeded(r) && n == 1 && rl_rep_interval(r, w->g, w->m, f, L, &lo, &hi) == 1)
        fmt_interval(c, f, mean, lo, hi);
    if (what == CELLS_MARKED && rl_rep_seeded(r)) {
        struct rl_rep_cmp cmp;
        rl_rep_compare(r, w->g, w->m, f, L, &cmp);
        snprintf(c + strlen(c), CELL - strlen(c), "%s", mark_suffix(cmp.mark));
    }
}

/* Rows: table_rows; columns: the label columns, then the lengths.  Returns the number of
 * rows but the header, -1 without memory. */
static int metric_table(const struct rl_report *r, int t, char f, enum cells what, struct table *tb)
{
    int          L[RL_CFG_MAX_LENGTHS], nl = rl_rep_lengths(r, t, L, RL_CFG_MAX_LENGTHS);
    struct trow *rows = malloc(((size_t)r->n_groups * RL_CFG_EXTEND_MAX + 1) * sizeof *rows);
    int          n = rows ? table_rows(r, t, f, rows) : 0, lc = label_cols(r);
    if (!rows || !table_init(tb, n + 1, lc + nl)) return free(rows), -1;
    tb->labels = lc;
    label_cells(r, tb, 0, NULL);
    for (int j = 0; j < nl; j++)
        snprintf(cell(tb, 0, lc + j), CELL, "%d", L[j]);
    for (int i = 0; i < n; i++) {
        label_cells(r, tb, i + 1, &rows[i]);
        for (int j = 0; j < nl; j++)
            fill_cell(r, &rows[i], f, L[j], what, cell(tb, i + 1, lc + j));
    }
    free(rows);
    return n;
}

static double group_mean(const struct rl_report *r, int g, int which)
{
    double s = 0;
    int    n = 0;
    for (long i = 0; i < r->n_points; i++) {
        const struct rl_rep_point *p = &r->pt[i];
        double                     x = which == 0   ? p->tok_s
                                       : which == 1 ? p->ms_fwd
                                       : which == 2 ? p->ms_bwd
                                       : which == 3 ? p->ms_opt
                                                    : p->cpu_per_wall;
        if (p->done && p->group == g && !isnan(x)) s += x, n++;
    }
    return n ? s / n : NAN;
}

static int timing_table(const struct rl_report *r, struct table *tb)
{
    static const char *const head[] = {"train tok/s", "fwd ms/update", "bwd ms/update",
                                       "opt ms/update", "CPU/wall"};
    enum { K = 5 };
    int L[RL_CFG_MAX_LENGTHS], nl = rl_rep_lengths(r, -1, L, RL_CFG_MAX_LENGTHS);
    int task_col = r->n_tasks > 1, c0 = r->n_cols + task_col;
    if (!table_init(tb, 1 + r->n_groups, c0 + K + nl)) return 0;
    for (int c = 0; c < r->n_cols; c++)
        snprintf(cell(tb, 0, c), CELL, "%s", r->colname[c]);
    if (task_col) snprintf(cell(tb, 0, r->n_cols), CELL, "task");
    for (int k = 0; k < K; k++)
        snprintf(cell(tb, 0, c0 + k), CELL, "%s", head[k]);
    for (int j = 0; j < nl; j++)
        snprintf(cell(tb, 0, c0 + K + j), CELL, "eval ms/1k tok @%d", L[j]);
    for (int g = 0; g < r->n_groups; g++) {
        for (int c = 0; c < r->n_cols; c++)
            snprintf(cell(tb, g + 1, c), CELL, "%s", r->grp[g].col[c]);
        if (task_col) snprintf(cell(tb, g + 1, r->n_cols), CELL, "%s", r->task[r->grp[g].task]);
        for (int k = 0; k < K; k++) {
            double x = group_mean(r, g, k);
            snprintf(cell(tb, g + 1, c0 + k), CELL, isnan(x) ? "-" : k ? "%.2f" : "%.0f", x);
        }
        for (int j = 0; j < nl; j++) {
            double m = 0, sd = 0;
            int    n = rl_rep_stat(r, g, NULL, 'm', L[j], &m, &sd);
            fmt_cell(cell(tb, g + 1, c0 + K + j), n > 0 ? 1 : n, 'm', m, sd, 0);
        }
    }
    return 1;
}

static const char *metric_name(char f)
{
    return f == 'a' ? "accuracy" : f == 'p' ? "perplexity" : f == 'l' ? "loss" : "ms";
}

static const char *na_note(const struct rl_report *r, int t)
{
    for (long i = 0; i < r->n_points; i++)
        for (int j = 0; r->pt[i].done && r->pt[i].task == t && j < r->pt[i].n_rows; j++)
            if (r->pt[i].rows[j].na) return r->pt[i].rows[j].note;
    return NULL;
}

static void summary_head(const struct rl_report *r, struct rl_json_buf *b)
{
    rl_json_buf_printf(b, "# %s\n\n", r->base.experiment.name);
    rl_json_buf_printf(b,
                       "Written by `ropelab run` at its end and by `ropelab report`, from the "
                       "files of this directory alone: %ld point%s, %ld finished.\n",
                       r->n_points, r->n_points == 1 ? "" : "s", r->n_done);
    if (!r->sw.n_keys) rl_json_buf_puts(b, "Nothing is swept: one run.\n");
    for (int k = 0; k < r->sw.n_keys; k++) {
        rl_json_buf_printf(b, "%s`%s.%s` = ", k ? "; " : "Swept: ", r->sw.section[k], r->sw.key[k]);
        for (int v = 0; v < r->sw.n_values[k]; v++)
            rl_json_buf_printf(b, "%s%s", v ? ", " : "", r->sw.values[k][v]);
        if (k == r->sw.n_keys - 1) rl_json_buf_puts(b, ".\n");
    }
}

/* The mean and sample std over group g's points of their loss at positions [lo, hi) of
 * length M (each point's bins assigned by their first position, weighted by their
 * targets); returns the number of points that have such bins. */
static int range_loss(const struct rl_report *r, int g, int M, int lo, int hi, double *mean,
                      double *sd)
{
    double sum = 0, s2 = 0;
    int    n = 0;
    for (int pass = 0; pass < 2; pass++) /* the mean, then the squared deviations */
        for (long i = 0; i < r->n_points; i++) {
            const struct rl_rep_point *p = &r->pt[i];
            double                     s = 0, w = 0;
            if (!p->done || p->group != g || p->pos_len != M) continue;
            for (int j = 0; j < p->n_pos; j++)
                if (p->pos0[j] >= lo && p->pos0[j] < hi && !isnan(p->pos_loss[j]))
                    s += p->pos_loss[j] * p->pos_targets[j], w += p->pos_targets[j];
            if (w <= 0) continue;
            if (pass == 0)
                sum += s / w, n++;
            else
                s2 += (s / w - sum / n) * (s / w - sum / n);
        }
    if (n) *mean = sum / n, *sd = n > 1 ? sqrt(s2 / (n - 1)) : 0;
    return n;
}

/* LM tasks: the mean loss over position ranges [0, L), [L, 2L), [2L, 4L), ... at the
 * longest evaluation length (L = training length; from positions.csv, bins assigned by
 * their first position, weighted by their targets; over seeds, mean ± std (n)). */
static rl_status position_table(const struct rl_report *r, int t, struct rl_json_buf *b)
{
    const int M = rl_rep_position_length(r, t), L = r->task_length[t];
    if (M == 0 || L <= 0) return RL_OK;
    int edge[40], ne = 0; /* range k = [edge[k], edge[k+1]) */
    edge[ne++] = 0;
    for (int e = L; e < M && ne < 38; e *= 2)
        edge[ne++] = e;
    edge[ne] = M;
    struct table tb;
    int          rows = 1;
    for (int g = 0; g < r->n_groups; g++)
        rows += r->grp[g].task == t;
    if (!table_init(&tb, rows, r->n_cols + ne)) RL_FAIL(RL_ENOMEM, "out of memory");
    for (int c = 0; c < r->n_cols; c++)
        snprintf(cell(&tb, 0, c), CELL, "%s", r->colname[c]);
    for (int k = 0; k < ne; k++)
        snprintf(cell(&tb, 0, r->n_cols + k), CELL, "%d–%d", edge[k], edge[k + 1]);
    for (int g = 0, row = 1; g < r->n_groups; g++) {
        if (r->grp[g].task != t) continue;
        for (int c = 0; c < r->n_cols; c++)
            snprintf(cell(&tb, row, c), CELL, "%s", r->grp[g].col[c]);
        for (int k = 0; k < ne; k++) {
            double mean = 0, sd = 0;
            int    n = range_loss(r, g, M, edge[k], edge[k + 1], &mean, &sd);
            fmt_cell(cell(&tb, row, r->n_cols + k), n, 'l', mean, sd, rl_rep_seeded(r));
        }
        row++;
    }
    rl_json_buf_printf(b, "\n## %s: loss by position at evaluation length %d\n\n", r->task[t], M);
    rl_json_buf_printf(b,
                       "Mean loss (nats) of the positions in each range, training length %d: "
                       "the first column is what training saw, the others are beyond it "
                       "(from each point's positions.csv; plot `%s-position.svg`)%s.\n\n",
                       L, r->task[t], rl_rep_seeded(r) ? "; over the seeds, mean ± std (n)" : "");
    table_markdown(&tb, b);
    free(tb.cell);
    return RL_OK;
}

/* The mean and sample std over group g's points of their accuracy at order k of length L
 * (orders.csv, primary method); returns the number of points that have it. */
static int order_acc(const struct rl_report *r, int g, int L, int k, double *mean, double *sd)
{
    double sum = 0, s2 = 0;
    int    n = 0;
    for (int pass = 0; pass < 2; pass++) /* the mean, then the squared deviations */
        for (long i = 0; i < r->n_points; i++) {
            const struct rl_rep_point *p = &r->pt[i];
            if (!p->done || p->group != g) continue;
            for (int j = 0; j < p->n_ord; j++) {
                if (p->ord_len[j] != L || p->ord_k[j] != k || isnan(p->ord_acc[j])) continue;
                if (pass == 0)
                    sum += p->ord_acc[j], n++;
                else
                    s2 += (p->ord_acc[j] - sum / n) * (p->ord_acc[j] - sum / n);
            }
        }
    if (n) *mean = sum / n, *sd = n > 1 ? sqrt(s2 / (n - 1)) : 0;
    return n;
}

/* Causal tasks but LM ones: the accuracy by the order of a scored target within its row
 * at the training length L (MQAR: 1st ... last query; passkey: the answer digits), from
 * orders.csv, when the rows there have at most 16 scored targets. */
static rl_status order_table(const struct rl_report *r, int t, struct rl_json_buf *b)
{
    const int L = r->task_length[t];
    int       K = 0, rows = 1;
    for (long i = 0; i < r->n_points; i++)
        for (int j = 0; r->pt[i].done && r->pt[i].task == t && j < r->pt[i].n_ord; j++)
            if (r->pt[i].ord_len[j] == L && r->pt[i].ord_k[j] > K) K = r->pt[i].ord_k[j];
    if (L <= 0 || K == 0 || K > 16) return RL_OK;
    for (int g = 0; g < r->n_groups; g++)
        rows += r->grp[g].task == t;
    struct table tb;
    if (!table_init(&tb, rows, r->n_cols + K)) RL_FAIL(RL_ENOMEM, "out of memory");
    for (int c = 0; c < r->n_cols; c++)
        snprintf(cell(&tb, 0, c), CELL, "%s", r->colname[c]);
    for (int k = 0; k < K; k++)
        snprintf(cell(&tb, 0, r->n_cols + k), CELL, "%d", k + 1);
    for (int g = 0, row = 1; g < r->n_groups; g++) {
        if (r->grp[g].task != t) continue;
        for (int c = 0; c < r->n_cols; c++)
            snprintf(cell(&tb, row, c), CELL, "%s", r->grp[g].col[c]);
        for (int k = 0; k < K; k++) {
            double mean = 0, sd = 0;
            int    n = order_acc(r, g, L, k + 1, &mean, &sd);
            fmt_cell(cell(&tb, row, r->n_cols + k), n, 'a', mean, sd, rl_rep_seeded(r));
        }
        row++;
    }
    rl_json_buf_printf(b, "\n## %s: accuracy by order in the row at the training length %d\n\n",
                       r->task[t], L);
    rl_json_buf_printf(
        b,
        "Column k: the accuracy of the k-th scored target of a row (mqar: the k-th "
        "query; passkey: the k-th answer digit), from each point's orders.csv%s.\n\n",
        rl_rep_seeded(r) ? "; over the seeds, mean ± std (n)" : "");
    table_markdown(&tb, b);
    free(tb.cell);
    return RL_OK;
}

/* The significance rule, under a headline table with seeds (docs/experiments.md). */
static void mark_text(const struct rl_report *r, char f, struct rl_json_buf *b)
{
    rl_json_buf_printf(
        b,
        "\nMarks: `*` the best mean of its attention kind at that length (the %s %s); "
        "`≈` not significantly different from it: the difference of the means "
        "is within the seeds' spread, |mean − best mean| ≤ std + best std; "
        "no mark: the difference is larger than that spread; `?` not judged "
        "(fewer than 2 finished seeds on one side). With %d seeds this is a "
        "rough screen, not a test at a stated error rate: a standard "
        "deviation from so few values is itself uncertain.\n",
        rl_rep_higher_better(f) ? "highest" : "lowest", metric_name(f), rl_rep_seeds(r));
}

/* A section: a heading, a text and the table of task t's field f with the given cells
 * (nothing when the table has no row). */
static rl_status table_section(const struct rl_report *r, int t, char f, enum cells what,
                               const char *title, const char *text, struct rl_json_buf *b)
{
    struct table tb;
    int          rows = metric_table(r, t, f, what, &tb);
    if (rows < 0) RL_FAIL(RL_ENOMEM, "out of memory");
    if (rows > 0) {
        rl_json_buf_printf(b, "\n## %s: %s\n\n%s\n\n", r->task[t], title, text);
        table_markdown(&tb, b);
    }
    free(tb.cell);
    return RL_OK;
}

static void method_text(const struct rl_report *r, struct rl_json_buf *b)
{
    if (!rl_rep_per_method(r)) return;
    rl_json_buf_puts(b, "\nEach RoPE point is evaluated under every method of [eval] rope_extend "
                        "without retraining, with factor s = rope_factor (auto: max(1, M/N) at "
                        "evaluation length M, training length N): none; pi, position "
                        "interpolation (rope_scale = s); ntk, NTK-aware base scaling "
                        "(rope_ntk = s); yarn (rope_yarn = s, rope_yarn_orig = N). Points "
                        "without RoPE are evaluated once, under none. The tables have a row "
                        "per point and method (the `rope_extend` column).\n");
}

/* Does any cell of task t's field f have a 95 % interval (runs written before them have
 * none)? */
static int has_intervals(const struct rl_report *r, int t, char f)
{
    int L[RL_CFG_MAX_LENGTHS], nl = rl_rep_lengths(r, t, L, RL_CFG_MAX_LENGTHS);
    for (int g = 0; g < r->n_groups; g++)
        for (int k = 0; k < (rl_rep_per_method(r) ? r->n_methods : 1); k++)
            for (int j = 0; j < nl; j++) {
                double      lo, hi;
                const char *m = rl_rep_per_method(r) ? r->method[k] : NULL;
                if (r->grp[g].task == t && rl_rep_interval(r, g, m, f, L[j], &lo, &hi) > 0)
                    return 1;
            }
    return 0;
}

/* What the cells of a table hold: with seeds, which seeds; else the interval (when the run
 * has them). */
static void cells_text(const struct rl_report *r, int t, char f, struct rl_json_buf *b)
{
    if (!rl_rep_seeded(r)) {
        if (!has_intervals(r, t, f)) return;
        rl_json_buf_puts(b, " Cells: the value ± half its 95 % interval over the evaluated "
                            "tokens, a sequence's tokens counted as one cluster (perplexity: "
                            "exp of the loss's interval, slightly asymmetric; accuracy: a "
                            "Wilson interval, given as [low, high] where it is far from "
                            "symmetric, as near 0 or 1; the exact ends are in results.csv).");
        return;
    }
    rl_json_buf_puts(b, " Cells: mean ± sample standard deviation (n − 1) over ");
    for (int k = 0; k < 2; k++) {
        int key = k ? r->data_seed_key : r->seed_key;
        if (key >= 0)
            rl_json_buf_printf(b, "%s%s.%s = %s", k && r->seed_key >= 0 ? " × " : "",
                               r->sw.section[key], r->sw.key[key], r->base.sweep.keys[key].values);
    }
    rl_json_buf_puts(b, ", and in parentheses the number of seeds that finished.");
}

/* The label of table row w in running text: its columns but attention, and its method. */
static void row_label(const struct rl_report *r, const struct trow *w, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s", r->grp[w->g].line, w->m ? "/" : "", w->m ? w->m : "");
}

/* "Best per length": for each attention kind, the best row at every length (the highest
 * accuracy or lowest perplexity; with seeds the best mean), on one line. */
static void best_line(const struct rl_report *r, int t, char f, struct rl_json_buf *b)
{
    int          L[RL_CFG_MAX_LENGTHS], nl = rl_rep_lengths(r, t, L, RL_CFG_MAX_LENGTHS), any = 0;
    struct trow *rows = malloc(((size_t)r->n_groups * RL_CFG_EXTEND_MAX + 1) * sizeof *rows);
    int          n    = rows ? table_rows(r, t, f, rows) : 0;
    for (int i = 0; i < n; i++) {
        const char *att   = r->grp[rows[i].g].col[1];
        int         first = 1; /* each attention kind once, at its first row */
        for (int k = 0; k < i && first; k++)
            first = strcmp(r->grp[rows[k].g].col[1], att) != 0;
        if (!first) continue;
        if (!any++)
            rl_json_buf_printf(b, "\nBest per length (the %s %s): ",
                               rl_rep_higher_better(f) ? "highest" : "lowest", metric_name(f));
        else
            rl_json_buf_puts(b, "; ");
        rl_json_buf_printf(b, "%s —", att);
        for (int j = 0, sep = 0; j < nl; j++) {
            struct rl_rep_cmp c;
            rl_rep_compare(r, rows[i].g, rows[i].m, f, L[j], &c);
            for (int k = 0; k < n && c.best >= 0; k++) { /* the best row of att */
                if (rows[k].g != c.best || (c.best_method && strcmp(rows[k].m, c.best_method)))
                    continue;
                double m, sd;
                char   lab[600], v[28];
                row_label(r, &rows[k], lab, sizeof lab);
                rl_rep_stat(r, rows[k].g, rows[k].m, f, L[j], &m, &sd);
                fmt_value(v, sizeof v, f, m);
                rl_json_buf_printf(b, "%s %d: %s %s", sep++ ? "," : "", L[j], lab, v);
                break;
            }
        }
    }
    if (any) rl_json_buf_puts(b, ".\n");
    free(rows);
}

/* With seeds, under a metric's table: the intervals of its means and, for the headline
 * metric (first), the comparison with the best of each attention kind. */
static rl_status seed_sections(const struct rl_report *r, int t, char f, int first,
                               struct rl_json_buf *b)
{
    char title[96];
    snprintf(title, sizeof title, "%s, 95 %% intervals over the seeds", metric_name(f));
    RL_TRY(table_section(r, t, f, CELLS_SEED_INTERVAL, title,
                         "The mean over the seeds ± half its 95 % interval, t(0.975, n − 1) "
                         "std / √n (n seeds, in parentheses): the uncertainty of the mean "
                         "itself, not the spread of single runs.",
                         b));
    if (!first) return RL_OK;
    snprintf(title, sizeof title, "%s compared with the best of each attention kind",
             metric_name(f));
    return table_section(r, t, f, CELLS_COMPARE, title,
                         "Mean minus the best mean among the rows of the same attention "
                         "kind at that length. `n.s.`: not significant, the difference "
                         "is at most the sum of the two rows' standard deviations over "
                         "the seeds; `?`: fewer than 2 finished seeds on one side.",
                         b);
}

/* One metric's table with its heading, text, notes and (headline) best-per-length line. */
static rl_status metric_section(const struct rl_report *r, int t, char f, int first,
                                struct rl_json_buf *b)
{
    struct table tb;
    rl_json_buf_printf(b, "\n## %s: %s by evaluation length\n\n", r->task[t], metric_name(f));
    if (r->task_length[t]) rl_json_buf_printf(b, "Training length %d. ", r->task_length[t]);
    rl_json_buf_puts(b, f == 'a'   ? "Accuracy: the fraction of scored target tokens "
                                     "whose argmax prediction is right."
                        : f == 'p' ? "Perplexity: exp(mean cross-entropy per token)."
                                   : "Loss: mean cross-entropy per scored target (nats).");
    cells_text(r, t, f, b);
    rl_json_buf_puts(b, "\n\n");
    if (metric_table(r, t, f, first ? CELLS_MARKED : CELLS_VALUE, &tb) < 0)
        RL_FAIL(RL_ENOMEM, "out of memory");
    table_markdown(&tb, b);
    free(tb.cell);
    const char *na = na_note(r, t);
    if (na) rl_json_buf_printf(b, "\nn/a (%s).\n", na);
    if (first) best_line(r, t, f, b);
    if (first && rl_rep_seeded(r)) mark_text(r, f, b);
    return rl_rep_seeded(r) ? seed_sections(r, t, f, first, b) : RL_OK;
}

static rl_status summary_task(const struct rl_report *r, int t, struct rl_json_buf *b)
{
    RL_TRY(metric_section(r, t, r->task_lm[t] ? 'p' : 'a', 1, b));
    RL_TRY(metric_section(r, t, 'l', 0, b));
    if (r->task_lm[t])
        RL_TRY(position_table(r, t, b));
    else
        RL_TRY(table_section(r, t, 'e', CELLS_VALUE, "exact match by evaluation length",
                             rl_rep_seeded(r) ? "The fraction of sequences whose every scored "
                                                "target is predicted right (ListOps: one target "
                                                "per sequence, the accuracy). Cells: mean ± std "
                                                "over the seeds (n)."
                             : has_intervals(r, t, 'e')
                                 ? "The fraction of sequences whose every scored target is "
                                   "predicted right (ListOps: one target per sequence, the "
                                   "accuracy) ± half its 95 % Wilson interval over the "
                                   "sequences (the exact ends are in results.csv)."
                                 : "The fraction of sequences whose every scored target is "
                                   "predicted right (ListOps: one target per sequence, the "
                                   "accuracy).",
                             b));
    if (!r->task_lm[t]) RL_TRY(order_table(r, t, b));
    char den[320];
    snprintf(den, sizeof den,
             "The fraction of denominators, before eps = %g is added, that are <= eps, over "
             "every evaluated row, layer and head (0 for a positive feature map with an "
             "unrotated denominator; a rotated denominator can reach or cross 0).",
             r->base.model.eps);
    return table_section(r, t, 'd', CELLS_VALUE, "linear-attention denominators <= eps", den, b);
}

/* Points whose results say "diverged" (train_run.c: the loss at the training length is
 * above twice a uniform guess's, or not finite). */
static void summary_diverged(const struct rl_report *r, struct rl_json_buf *b)
{
    int any = 0;
    for (long i = 0; i < r->n_points; i++) {
        int bad = 0;
        for (int j = 0; r->pt[i].done && j < r->pt[i].n_rows; j++)
            bad |= strstr(r->pt[i].rows[j].note, "diverged") != NULL;
        if (!bad) continue;
        if (!any++)
            rl_json_buf_puts(b, "\n## Diverged\n\nThese points' evaluation loss at the "
                                "training length is more than twice that of a uniform guess "
                                "(ln V), or not finite: their numbers above describe a broken "
                                "model (lower train.lr, add train.warmup or keep train.clip > "
                                "0).\n\n");
        rl_json_buf_printf(b, "- `%s`\n",
                           r->pt[i].name[0] ? r->pt[i].name : r->base.experiment.name);
    }
}

rl_status rl_rep_summary(const struct rl_report *r, struct rl_json_buf *b)
{
    struct table tb;
    summary_head(r, b);
    method_text(r, b);
    for (int t = 0; t < r->n_tasks; t++)
        RL_TRY(summary_task(r, t, b));
    summary_diverged(r, b);
    rl_json_buf_puts(b, "\n## Timing\n\nTraining: tokens per second and milliseconds per "
                        "update in the forward, backward and optimizer phases (means over "
                        "metrics.jsonl's records, weighted by the updates each covers; "
                        "over seeds, their mean). CPU/wall: the process's CPU time over the "
                        "wall time of the updates, close to the thread count when the point "
                        "had its cores to itself and lower when other processes took them "
                        "(compare such points' timings with care). Evaluation: forward "
                        "milliseconds per 1000 tokens at each length.\n\n");
    if (!timing_table(r, &tb)) RL_FAIL(RL_ENOMEM, "out of memory");
    table_markdown(&tb, b);
    free(tb.cell);
    rl_json_buf_puts(b, "\n## Plots\n\nIn plots/ when gnuplot is available (`ropelab report` "
                        "remakes them):");
    const char *sep = " ";
    for (int t = 0; t < r->n_tasks; t++) {
        rl_json_buf_printf(b, "%s`%s-%s.svg` (%s vs evaluation length)", sep, r->task[t],
                           r->task_lm[t] ? "ppl" : "acc",
                           r->task_lm[t] ? "perplexity" : "accuracy");
        sep = ", ";
        if (rl_rep_has_training(r, t))
            rl_json_buf_printf(b, ", `%s-loss.svg` (training loss)", r->task[t]);
        if (r->task_lm[t] && rl_rep_position_length(r, t))
            rl_json_buf_printf(b, ", `%s-position.svg` (loss by position)", r->task[t]);
    }
    if (rl_rep_has_training(r, -1)) rl_json_buf_puts(b, ", `throughput.svg` (training tokens/s)");
    rl_json_buf_puts(b, ".\n");
    if (r->n_done < r->n_points) {
        rl_json_buf_puts(b, "\n## Not finished\n\nNo results.csv yet (continue with "
                            "`ropelab run ... --resume`):\n\n");
        for (long i = 0; i < r->n_points; i++)
            if (!r->pt[i].done) rl_json_buf_printf(b, "- `%s`\n", r->pt[i].name);
    }
    return b->failed ? rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "out of memory") : RL_OK;
}

void rl_rep_print_table(const struct rl_report *r, FILE *f)
{
    struct table tb;
    for (int t = 0; t < r->n_tasks; t++) {
        char fm = r->task_lm[t] ? 'p' : 'a';
        fprintf(f, "\n%s: %s by evaluation length", r->task[t], metric_name(fm));
        if (r->task_length[t]) fprintf(f, " (training length %d)", r->task_length[t]);
        if (rl_rep_seeded(r))
            fputs(", mean ± std (number of seeds)", f);
        else if (has_intervals(r, t, fm))
            fputs(", ± half the 95 % interval", f);
        fputs("\n", f);
        if (metric_table(r, t, fm, CELLS_MARKED, &tb) < 0) return;
        table_text(&tb, f);
        free(tb.cell);
        const char *na = na_note(r, t);
        if (na) fprintf(f, "n/a (%s)\n", na);
        if (rl_rep_seeded(r))
            fprintf(f,
                    "* %s %s of its attention kind; ≈ within the seeds' spread of it "
                    "(|mean − best| <= std + best std): not significant; ? fewer than "
                    "2 seeds\n",
                    rl_rep_higher_better(fm) ? "highest" : "lowest", metric_name(fm));
    }
    if (!r->n_tasks) fputs("\nno finished points yet\n", f);
    fflush(f);
}
