/* report_plot.c -- an experiment's SVG plots (data and script in RUN/plots/, then
 * `gnuplot plots.gp` there; report_gp.c draws them), and the RoPE long-term-decay figure
 * of RoFormer 3.4.3; see report_plot.h.
 *
 * Every plot of a task has one panel per attention kind, one curve per table row (the
 * points that differ only in their seeds) and RoPE extension method, coloured by its
 * position encoding and dashed by its attention kind or method (report_gp.h), in the
 * order of the encodings (none, sinusoidal, learned, t5, alibi, rope), which is also the
 * legend's.  With seeds a curve is the mean over them. */
#include "config.h"
#include "report_plot.h"
#include "report_gp.h"
#include "../core/stats.h"
#include "../kernels/rope.h"
#include "../core/util.h"

#include <complex.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the curves of a task ---- */

/* A curve: a table row (group g) under RoPE extension method m (NULL: not split). */
struct curve {
    int         g;
    const char *m;
};

/* The colour key of group g: its encoding, or "forget" for a forget-gate model. */
static const char *colour_key(const struct rl_report *r, int g)
{
    for (int c = 2; c < r->n_cols; c++)
        if (!strcmp(r->colname[c], "forget_gate") && !strcmp(r->grp[g].col[c], "true"))
            return "forget";
    return r->grp[g].col[0];
}

/* Curves in the order of their encodings, then of their rows (a stable sort keeps the
 * methods of a row in their order). */
static int by_encoding(const struct rl_report *r, const struct curve *x, const struct curve *y)
{
    int rx = rl_gp_pe_rank(colour_key(r, x->g)), ry = rl_gp_pe_rank(colour_key(r, y->g));
    return rx != ry ? rx - ry : x->g - y->g;
}

/* Does group g have rows under method m? */
static int has_method(const struct rl_report *r, int g, const char *m)
{
    for (long i = 0; i < r->n_points; i++)
        for (int j = 0; r->pt[i].done && r->pt[i].group == g && j < r->pt[i].n_rows; j++)
            if (!strcmp(r->pt[i].rows[j].method, m)) return 1;
    return 0;
}

/* The curves of task t (methods: one per method a group has), in encoding order. */
static int task_curves(const struct rl_report *r, int t, int methods, struct curve *c)
{
    int n = 0, nm = methods && rl_rep_per_method(r) ? r->n_methods : 1;
    for (int g = 0; g < r->n_groups; g++)
        for (int k = 0; k < nm && r->grp[g].task == t; k++) {
            const char *m = nm > 1 || rl_rep_per_method(r) ? r->method[k] : NULL;
            if (!methods) m = NULL;
            if (!m || has_method(r, g, m)) c[n].g = g, c[n].m = m, n++;
        }
    for (int i = 1; i < n; i++) /* insertion: stable */
        for (int k = i; k > 0 && by_encoding(r, &c[k - 1], &c[k]) > 0; k--) {
            struct curve tmp = c[k];
            c[k] = c[k - 1], c[k - 1] = tmp;
        }
    return n;
}

/* Room for every curve: each row under each method. */
static struct curve *curves_alloc(const struct rl_report *r)
{
    return malloc(((size_t)r->n_groups * RL_CFG_EXTEND_MAX + 1) * sizeof(struct curve));
}

/* The panel of an attention kind ("softmax attention"); np when it has none yet. */
static int panel_of(const struct rl_gp_figure *f, const char *attention)
{
    const size_t n = strlen(attention);
    for (int p = 0; p < f->np; p++)
        if (!strncmp(f->panel[p], attention, n) && !strcmp(f->panel[p] + n, " attention")) return p;
    return f->np;
}

/* Panels: the attention kinds of task t in order of appearance. */
static void set_panels(const struct rl_report *r, int t, struct rl_gp_figure *f)
{
    f->np = 0;
    for (int g = 0; g < r->n_groups; g++) {
        if (r->grp[g].task != t) continue;
        int k = 0;
        while (k < f->np && panel_of(f, r->grp[g].col[1]) != k)
            k++;
        if (k == f->np && f->np < RL_GP_MAX_PANELS)
            snprintf(f->panel[f->np++], sizeof f->panel[0], "%.120s attention", r->grp[g].col[1]);
    }
}

/* Style and title of curve c: the colour of its encoding (shaded for the k-th of n groups
 * sharing it), the dashes of its method (or attention kind), its row's columns. */
static void curve_style(const struct rl_report *r, const struct curve *c, const struct curve *all,
                        int nc, struct rl_gp_series *s)
{
    const char *key = colour_key(r, c->g), *att = r->grp[c->g].col[1];
    int         v = 0, n = 0, last = -1;
    for (int i = 0; i < nc; i++) { /* the rows of this colour in this panel, each once */
        const int g = all[i].g;
        if (g == last || strcmp(colour_key(r, g), key) || strcmp(r->grp[g].col[1], att)) continue;
        if (g == c->g) v = n;
        n++, last = g;
    }
    rl_gp_colour(key, v, n, s->rgb);
    if (c->m)
        rl_gp_method_style(c->m, &s->dt, &s->pt);
    else
        rl_gp_attention_style(r->grp[c->g].col[1], &s->dt, &s->pt);
    s->lw = c->m && !strcmp(c->m, "none") ? 2.4 : 1.8;
    snprintf(s->title, sizeof s->title, "%s%s%s", r->grp[c->g].line, c->m ? " " : "",
             c->m ? c->m : "");
}

/* The task's baseline (the first point's results.csv): loss, or accuracy. */
static double baseline(const struct rl_report *r, int t, char f)
{
    for (long i = 0; i < r->n_points; i++)
        for (int j = 0; r->pt[i].done && r->pt[i].task == t && j < r->pt[i].n_rows; j++) {
            double v = f == 'a' ? r->pt[i].rows[j].ref_acc : r->pt[i].rows[j].ref_loss;
            if (isfinite(v)) return f == 'p' ? exp(v) : v;
        }
    return NAN;
}

static void baseline_line(const struct rl_report *r, int t, char f, struct rl_gp_figure *fig)
{
    fig->ref = baseline(r, t, f);
    if (!isfinite(fig->ref)) return;
    snprintf(fig->ref_label, sizeof fig->ref_label, "%s %.3g",
             r->task_lm[t] ? "unigram model" : "uniform guess", fig->ref);
}

static void training_line(const struct rl_report *r, int t, struct rl_gp_figure *f)
{
    f->vline = r->task_length[t] > 0 ? r->task_length[t] : NAN;
    snprintf(f->vline_label, sizeof f->vline_label, "training length %d", r->task_length[t]);
}

static void figure_init(struct rl_gp_figure *f, const struct rl_report *r, int t, const char *name)
{
    memset(f, 0, sizeof *f);
    snprintf(f->svg, sizeof f->svg, "%s-%s.svg", r->task[t], name);
    f->xmin = f->xmax = f->ref = f->vline = f->ybound[0] = f->ybound[1] = NAN;
    set_panels(r, t, f);
}

static void series_free(struct rl_gp_figure *f)
{
    for (int i = 0; i < f->ns; i++)
        free(f->s[i].x), free(f->s[i].y), free(f->s[i].lo), free(f->s[i].hi);
    free(f->s);
}

static int series_alloc(struct rl_gp_series *s, int n)
{
    s->x = calloc((size_t)n + 1, sizeof *s->x), s->y = calloc((size_t)n + 1, sizeof *s->y);
    s->lo = calloc((size_t)n + 1, sizeof *s->lo), s->hi = calloc((size_t)n + 1, sizeof *s->hi);
    return s->x && s->y && s->lo && s->hi;
}

struct plot_files {
    FILE *gp;
    char  dir[2200];
};

static void emit(struct plot_files *pf, const struct rl_report *r, int t, const char *name,
                 struct rl_gp_figure *f)
{
    char dat[96];
    snprintf(dat, sizeof dat, "%s-%s.dat", r->task[t], name);
    rl_gp_figure_write(pf->gp, pf->dir, dat, f);
    series_free(f);
}

/* ---- metric vs evaluation length ---- */

static void plot_metric(const struct rl_report *r, int t, struct plot_files *pf)
{
    const char          fm = r->task_lm[t] ? 'p' : 'a';
    int                 L[RL_CFG_MAX_LENGTHS], nl = rl_rep_lengths(r, t, L, RL_CFG_MAX_LENGTHS);
    struct curve       *c  = curves_alloc(r);
    int                 nc = c ? task_curves(r, t, 1, c) : 0;
    struct rl_gp_figure f;
    figure_init(&f, r, t, r->task_lm[t] ? "ppl" : "acc");
    snprintf(f.title, sizeof f.title, "%s: %s vs evaluation length", r->task[t],
             r->task_lm[t] ? "perplexity" : "accuracy");
    snprintf(f.note, sizeof f.note, "error bars: 95 %% intervals %s%s",
             rl_rep_seeded(r) ? "of the mean over the seeds" : "over the evaluated tokens",
             rl_rep_per_method(r) ? "; RoPE extension: none solid, pi dashed, ntk dotted, yarn "
                                    "dash-dot"
                                  : "");
    f.xlabel = "evaluation length (tokens, log scale)";
    f.ylabel = r->task_lm[t] ? "perplexity (log scale)" : "accuracy";
    f.logx = 2, f.logy = r->task_lm[t] ? 10 : 0, f.band = RL_GP_BARS, f.points = 1;
    if (!r->task_lm[t]) f.ybound[0] = 0, f.ybound[1] = 1; /* accuracy */
    for (int j = 0; j < nl && j < RL_GP_MAX_TICS; j++)
        f.xtics[f.nxtics++] = L[j];
    training_line(r, t, &f);
    if (nl && isfinite(f.vline) && f.vline < L[0]) f.xmin = f.vline / 1.2;
    baseline_line(r, t, fm, &f);
    f.s = calloc((size_t)nc + 1, sizeof *f.s);
    for (int i = 0; f.s && i < nc; i++) {
        struct rl_gp_series *s = &f.s[f.ns++];
        curve_style(r, &c[i], c, nc, s);
        s->panel = panel_of(&f, r->grp[c[i].g].col[1]);
        if (!series_alloc(s, nl)) continue;
        for (int j = 0; j < nl; j++) {
            double mean, sd, lo = NAN, hi = NAN;
            if (rl_rep_stat(r, c[i].g, c[i].m, fm, L[j], &mean, &sd) <= 0) continue;
            rl_rep_interval(r, c[i].g, c[i].m, fm, L[j], &lo, &hi);
            s->x[s->n] = L[j], s->y[s->n] = mean, s->lo[s->n] = lo, s->hi[s->n++] = hi;
        }
    }
    if (f.s) emit(pf, r, t, r->task_lm[t] ? "ppl" : "acc", &f);
    free(c);
}

/* ---- training loss ---- */

/* A centred moving average of y[0 .. n) over w (odd) records; near the ends the window
 * narrows symmetrically (a one-sided window would bend the steep start of training). */
static void smooth(const double *y, int n, int w, double *out)
{
    for (int i = 0; i < n; i++) {
        int    h = w / 2, k = i < h ? i : h;
        double s = 0;
        if (n - 1 - i < k) k = n - 1 - i;
        for (int j = i - k; j <= i + k; j++)
            s += y[j];
        out[i] = s / (2 * k + 1);
    }
}

/* The finished points of group g with records, and the fewest records among them. */
static int group_records(const struct rl_report *r, int g, long *pts, int *nrec)
{
    int np = 0;
    *nrec  = 1 << 30;
    for (long i = 0; i < r->n_points; i++)
        if (r->pt[i].done && r->pt[i].group == g && r->pt[i].n_rec > 0) {
            pts[np++] = i;
            if (r->pt[i].n_rec < *nrec) *nrec = r->pt[i].n_rec;
        }
    return np;
}

/* Curve i of the loss plot: the seeds' smoothed curves, their mean and range. */
static void loss_curve(const struct rl_report *r, int g, struct rl_gp_series *s,
                       struct rl_gp_series *raw)
{
    long *pts = malloc((size_t)r->n_points * sizeof *pts);
    int   nrec, np = pts ? group_records(r, g, pts, &nrec) : 0;
    if (!np || !series_alloc(s, nrec)) return free(pts);
    double *sm = malloc((size_t)nrec * sizeof *sm);
    int     w  = 2 * (nrec / 20) + 1; /* about a tenth of the run */
    for (int k = 0; sm && k < nrec; k++)
        s->x[k] = (double)r->pt[pts[0]].step[k], s->lo[k] = INFINITY, s->hi[k] = -INFINITY;
    for (int q = 0; sm && q < np; q++) {
        smooth(r->pt[pts[q]].loss, nrec, w, sm);
        for (int k = 0; k < nrec; k++) {
            s->y[k] += sm[k] / np;
            s->lo[k] = fmin(s->lo[k], sm[k]), s->hi[k] = fmax(s->hi[k], sm[k]);
        }
    }
    s->n = sm ? nrec : 0;
    if (np == 1 && raw && series_alloc(raw, nrec)) { /* one seed: the records themselves */
        memcpy(raw->rgb, s->rgb, sizeof raw->rgb);
        raw->faint = 1, raw->n = nrec, raw->title[0] = 0;
        for (int k = 0; k < nrec; k++)
            raw->x[k] = s->x[k], raw->y[k] = r->pt[pts[0]].loss[k];
        free(raw->lo), free(raw->hi), raw->lo = raw->hi = NULL;
    }
    if (np == 1) free(s->lo), free(s->hi), s->lo = s->hi = NULL;
    free(sm), free(pts);
}

static void plot_loss(const struct rl_report *r, int t, struct plot_files *pf)
{
    if (!rl_rep_has_training(r, t)) return; /* an evaluation directory */
    struct curve       *c  = curves_alloc(r);
    int                 nc = c ? task_curves(r, t, 0, c) : 0;
    struct rl_gp_figure f;
    figure_init(&f, r, t, "loss");
    snprintf(f.title, sizeof f.title, "%s: training loss", r->task[t]);
    snprintf(f.note, sizeof f.note, "%s",
             rl_rep_seeded(r) ? "the mean over the seeds, smoothed; band: their "
                                "range"
                              : "smoothed (moving average); thin: each logged "
                                "update's loss");
    f.xlabel = "update", f.ylabel = "loss (nats, log scale)";
    f.logy = 10, f.band = rl_rep_seeded(r) ? RL_GP_BAND : RL_GP_NONE, f.xmin = 0;
    baseline_line(r, t, 'l', &f);
    f.s = calloc(2 * (size_t)nc + 1, sizeof *f.s);
    for (int i = 0; f.s && i < nc; i++) {
        struct rl_gp_series *raw = &f.s[f.ns++], *s = &f.s[f.ns++];
        curve_style(r, &c[i], c, nc, s);
        s->panel = raw->panel = panel_of(&f, r->grp[c[i].g].col[1]);
        loss_curve(r, c[i].g, s, raw);
    }
    if (f.s) emit(pf, r, t, "loss", &f);
    free(c);
}

/* ---- loss by position ---- */

/* Curve of group g at length M: each bin's mean over the group's points, with the 95 %
 * interval of one point's bin, or of the mean over the seeds. */
static void position_curve(const struct rl_report *r, int g, int M, struct rl_gp_series *s)
{
    const struct rl_rep_point *p0 = NULL;
    for (long i = 0; i < r->n_points && !p0; i++)
        if (r->pt[i].done && r->pt[i].group == g && r->pt[i].pos_len == M) p0 = &r->pt[i];
    if (!p0 || !series_alloc(s, p0->n_pos)) return;
    for (int k = 0; k < p0->n_pos; k++) {
        double sum = 0, s2 = 0, lo = NAN, hi = NAN;
        int    n = 0;
        for (int pass = 0; pass < 2; pass++)
            for (long i = 0; i < r->n_points; i++) {
                const struct rl_rep_point *q = &r->pt[i];
                if (!q->done || q->group != g || q->pos_len != M || k >= q->n_pos ||
                    isnan(q->pos_loss[k]))
                    continue;
                if (pass == 0)
                    sum += q->pos_loss[k], n++, lo = q->pos_lo[k], hi = q->pos_hi[k];
                else
                    s2 += (q->pos_loss[k] - sum / n) * (q->pos_loss[k] - sum / n);
            }
        if (!n) continue;
        if (n > 1) {
            double h = rl_mean_halfwidth(n, sqrt(s2 / (n - 1)));
            lo = sum / n - h, hi = sum / n + h;
        }
        s->x[s->n] = sqrt((p0->pos0[k] + 1.0) * p0->pos1[k]); /* 1-based, geometric centre */
        s->y[s->n] = sum / n, s->lo[s->n] = lo, s->hi[s->n++] = hi;
    }
}

static void plot_positions(const struct rl_report *r, int t, struct plot_files *pf)
{
    const int M = rl_rep_position_length(r, t);
    if (M == 0) return;
    struct curve       *c  = curves_alloc(r);
    int                 nc = c ? task_curves(r, t, 0, c) : 0;
    struct rl_gp_figure f;
    figure_init(&f, r, t, "position");
    snprintf(f.title, sizeof f.title, "%s: loss by position at evaluation length %d", r->task[t],
             M);
    snprintf(f.note, sizeof f.note, "band: 95 %% interval %s; two bins an octave",
             rl_rep_seeded(r) ? "of the mean over the seeds" : "over the evaluated sequences");
    f.xlabel = "position in the sequence (log scale)", f.ylabel = "loss (nats)";
    f.logx = 2, f.band = RL_GP_BAND, f.xmin = 1, f.xmax = M;
    for (int x = 1; x <= M && f.nxtics<RL_GP_MAX_TICS; x *= M> 4096 ? 4 : 2)
        f.xtics[f.nxtics++] = x;
    training_line(r, t, &f);
    baseline_line(r, t, 'l', &f);
    f.s = calloc((size_t)nc + 1, sizeof *f.s);
    for (int i = 0; f.s && i < nc; i++) {
        struct rl_gp_series *s = &f.s[f.ns++];
        curve_style(r, &c[i], c, nc, s);
        s->panel = panel_of(&f, r->grp[c[i].g].col[1]);
        position_curve(r, c[i].g, M, s);
    }
    if (f.s) emit(pf, r, t, "position", &f);
    free(c);
}

/* ---- training throughput ---- */

static double group_tok_s(const struct rl_report *r, int g)
{
    double s = 0;
    int    n = 0;
    for (long i = 0; i < r->n_points; i++)
        if (r->pt[i].done && r->pt[i].group == g && !isnan(r->pt[i].tok_s))
            s += r->pt[i].tok_s, n++;
    return n ? s / n : NAN;
}

/* One bar per row, coloured by its encoding, solid for softmax and hatched for linear
 * attention, in the curves' order. */
static void plot_throughput(const struct rl_report *r, struct plot_files *pf)
{
    struct curve *c  = curves_alloc(r);
    int           nc = 0, nb = 0, maxlen = 0;
    for (int t = 0; c && t < r->n_tasks; t++)
        nc += task_curves(r, t, 0, c + nc);
    char  path[4096];
    FILE *f = (snprintf(path, sizeof path, "%s/throughput.dat", pf->dir), NULL);
    for (int i = 0; i < nc; i++) {
        double x = group_tok_s(r, c[i].g);
        if (isnan(x)) continue;
        if (!f && !(f = fopen(path, "w"))) break;
        struct rl_gp_series s;
        curve_style(r, &c[i], c, nc, &s);
        int len = (int)(strlen(r->grp[c[i].g].line) + strlen(r->grp[c[i].g].col[1])) + 1;
        if (r->n_tasks > 1) len += (int)strlen(r->task[r->grp[c[i].g].task]) + 1;
        if (len > maxlen) maxlen = len;
        fprintf(f, "%d \"%s%s%s %s\" %.6g %ld %d\n", nb++,
                r->n_tasks > 1 ? r->task[r->grp[c[i].g].task] : "", r->n_tasks > 1 ? " " : "",
                r->grp[c[i].g].line, r->grp[c[i].g].col[1], x, strtol(s.rgb + 1, NULL, 16),
                strcmp(r->grp[c[i].g].col[1], "linear") ? 0 : 1);
    }
    free(c);
    if (!f) return; /* an evaluation directory, or no file */
    fclose(f);
    rl_gp_header(pf->gp, "throughput.svg", nb * 46 + 200 < 480 ? 480 : nb * 46 + 200,
                 340 + 3 * maxlen);
    fprintf(pf->gp, "set bmargin %d\nset xrange [-0.6:%.1f]\n", maxlen / 3 + 2, nb - 0.4);
    fputs("set title \"training throughput\\n(solid: softmax attention, hatched: linear)\"\n"
          "set ylabel 'tokens / s'\nset yrange [0:*]\nset grid ytics lc rgb '#dddddd'\n"
          "set xtics rotate by 40 right scale 0 noenhanced\nunset key\n"
          "set boxwidth 0.75\n"
          "plot 'throughput.dat' using 1:($5 == 0 ? $3 : NaN):4:xtic(2) with boxes "
          "fs solid 0.8 border lc rgb '#333333' lc rgb variable, \\\n"
          "     '' using 1:($5 == 1 ? $3 : NaN):4 with boxes fs pattern 4 border "
          "lc rgb '#333333' lc rgb variable\n",
          pf->gp);
}

void rl_rep_plots(const struct rl_report *r, FILE *log)
{
    struct plot_files pf;
    char              path[4096], why[512];
    if (r->n_done == 0) {
        if (log) fprintf(log, "no finished points: no plots\n");
        return;
    }
    snprintf(pf.dir, sizeof pf.dir, "%s/plots", r->dir);
    snprintf(path, sizeof path, "%s/plots.gp", pf.dir);
    if (rl_mkdir_p(pf.dir) != RL_OK || !(pf.gp = fopen(path, "w"))) {
        if (log) fprintf(log, "plots skipped: cannot write %s\n", path);
        return;
    }
    fputs("# plots.gp -- written by ropelab report; run `gnuplot plots.gp` in this directory\n",
          pf.gp);
    for (int t = 0; t < r->n_tasks; t++) {
        plot_metric(r, t, &pf);
        plot_loss(r, t, &pf);
        if (r->task_lm[t]) plot_positions(r, t, &pf);
    }
    plot_throughput(r, &pf);
    fclose(pf.gp);
    const char *gp = rl_gnuplot_path();
    if (!gp || access(gp, X_OK)) {
        if (log) fprintf(log, "plots skipped: no gnuplot (data and script are in %s)\n", pf.dir);
    } else {
        int failed = rl_gnuplot_run(pf.dir, "plots.gp", why, sizeof why);
        int bad    = rl_gp_check_svgs(pf.dir, "plots.gp", failed, why, log);
        if (failed && log && !bad) fprintf(log, "warning: plots: %s\n", why);
        if (!failed && !bad && log) fprintf(log, "plots written to %s/\n", pf.dir);
    }
    if (log) fflush(log);
}

/* ---- RoPE long-term decay (RoFormer 3.4.3) ---- */

double rl_rope_decay_bound(int d, double base, double r)
{
    struct rl_rope_opts o;
    rl_rope_opts_default(&o);
    o.base             = base;
    double complex S   = 0;
    double         sum = 0;
    for (int i = 0; i < d / 2; i++) {
        double a = r * rl_rope_theta(&o, d, i);
        S += cos(a) + I * sin(a); /* S_{i+1} = sum_{k <= i} e^{i r theta_k} */
        sum += cabs(S);
    }
    return sum / (d / 2);
}

rl_status rl_rope_decay_write(const char *dir, int d, const double *bases, int n_bases,
                              int max_distance, FILE *log)
{
    char path[4096], why[512];
    RL_TRY(rl_mkdir_p(dir));
    snprintf(path, sizeof path, "%s/rope_decay.csv", dir);
    FILE *f = fopen(path, "w");
    if (!f) RL_FAIL(RL_EIO, "%s: cannot create: %s", path, strerror(errno));
    fputs("distance", f);
    for (int b = 0; b < n_bases; b++)
        fprintf(f, ",base=%g", bases[b]);
    fputc('\n', f);
    for (int r = 0; r <= max_distance; r++) {
        fprintf(f, "%d", r);
        for (int b = 0; b < n_bases; b++)
            fprintf(f, ",%.6f", rl_rope_decay_bound(d, bases[b], r));
        fputc('\n', f);
    }
    if (fclose(f)) RL_FAIL(RL_EIO, "%s: write failed", path);
    snprintf(path, sizeof path, "%s/rope_decay.gp", dir);
    if (!(f = fopen(path, "w"))) RL_FAIL(RL_EIO, "%s: cannot create: %s", path, strerror(errno));
    rl_gp_header(f, "rope_decay.svg", 720, 440);
    fprintf(f,
            "set grid lc rgb '#dddddd'\nset datafile separator ','\nset key top right\n"
            "set title 'RoPE long-term decay (RoFormer 3.4.3), d = %d'\n"
            "set xlabel 'relative distance m - n'\nset xrange [0:%d]\n"
            "set ylabel 'mean_j |sum_{i<j} exp(i (m-n) theta_i)|'\nplot",
            d, max_distance);
    for (int b = 0; b < n_bases; b++) {
        char rgb[8];
        rl_gp_colour("rope", b, n_bases, rgb);
        fprintf(f, "%s 'rope_decay.csv' using 1:%d with lines lw 2 lc rgb '%s' title 'base %g'",
                b ? "," : "", b + 2, rgb, bases[b]);
    }
    fputc('\n', f);
    if (fclose(f)) RL_FAIL(RL_EIO, "%s: write failed", path);
    if (log) fprintf(log, "%s/rope_decay.csv written\n", dir);
    if (!rl_gnuplot_path()) {
        if (log) fprintf(log, "plot skipped: no gnuplot\n");
        return RL_OK;
    }
    int failed = rl_gnuplot_run(dir, "rope_decay.gp", why, sizeof why);
    if (!rl_gp_check_svgs(dir, "rope_decay.gp", failed, why, log) && log)
        fprintf(log, "%s/rope_decay.svg written\n", dir);
    return RL_OK;
}
