/* report_plot.c -- an experiment's SVG plots through gnuplot (data files and one script in
 * RUN/plots/, then `gnuplot plots.gp` there), and the RoPE long-term-decay figure of
 * RoFormer 3.4.3; see report.h. */
#include "config.h"
#include "report_plot.h"
#include "../kernels/rope.h"
#include "../core/util.h"

#include <complex.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const char *rl_gnuplot_path(void)
{
    const char *e = getenv("ROPELAB_GNUPLOT");
    if (e) return *e && strcmp(e, "none") ? e : NULL;
#ifdef RL_GNUPLOT
    return RL_GNUPLOT;
#else
    return NULL;
#endif
}

int rl_gnuplot_run(const char *dir, const char *script, char *why, size_t len)
{
    const char *gp = rl_gnuplot_path();
    if (!gp) return snprintf(why, len, "no gnuplot (configure found none)"), 1;
    if (access(gp, X_OK)) return snprintf(why, len, "%s: %s", gp, strerror(errno)), 1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return snprintf(why, len, "fork: %s", strerror(errno)), 1;
    if (pid == 0) { /* the child only redirects and execs */
        if (chdir(dir)) _exit(126);
        int fd = open("gnuplot.log", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) dup2(fd, 1), dup2(fd, 2), close(fd);
        execl(gp, "gnuplot", script, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return snprintf(why, len, "waitpid: %s", strerror(errno)), 1;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
    snprintf(why, len, "%s failed (status %d; see %s/gnuplot.log)", gp,
             WIFEXITED(status) ? WEXITSTATUS(status) : -1, dir);
    return 1;
}

/* Every SVG the script names ("set output 'x.svg'") must exist and be complete (end with
 * "</svg>"): gnuplot exits 0 on a full disk, leaving empty files.  A missing or broken one
 * is removed (never a 0-byte file presented as a plot) and named in a warning; returns
 * the number of those. */
static int check_svgs(const char *dir, const char *script, int gp_failed, const char *why,
                      FILE *log)
{
    char  path[4096], line[512];
    int   bad = 0;
    FILE *f   = (snprintf(path, sizeof path, "%s/%s", dir, script), fopen(path, "r"));
    while (f && fgets(line, sizeof line, f)) {
        char name[256], tail[16] = "";
        if (sscanf(line, "set output '%255[^']'", name) != 1) continue;
        snprintf(path, sizeof path, "%s/%s", dir, name);
        FILE *svg = fopen(path, "rb");
        if (svg && fseek(svg, -8, SEEK_END) == 0) tail[fread(tail, 1, 8, svg)] = 0;
        if (svg) fclose(svg);
        if (strstr(tail, "</svg>")) continue;
        remove(path);
        bad++;
        if (log)
            fprintf(log, "warning: plot %s not made (%s; see %s/gnuplot.log)\n", path,
                    gp_failed ? why : "an empty or incomplete SVG: a full disk?", dir);
    }
    if (f) fclose(f);
    return bad;
}

/* ---- data and script ---- */

struct plot_files {
    FILE *gp;
    char  dir[2200];
};

static FILE *open_dat(const struct plot_files *pf, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", pf->dir, name);
    return fopen(path, "w");
}

/* Single quotes would end a gnuplot string. */
static void gp_label(char *dst, size_t cap, const char *s)
{
    size_t n = 0;
    for (; *s && n + 1 < cap; s++)
        dst[n++] = *s == '\'' ? '"' : *s;
    dst[n] = 0;
}

static void gp_header(FILE *gp, const char *svg, int w, int h)
{
    fprintf(gp, "\nreset\nset terminal svg size %d,%d dynamic noenhanced font 'sans,11'\n", w, h);
    fprintf(gp, "set output '%s'\nset grid\nset key below horizontal\n", svg);
    /* ten distinct colours (matplotlib's tab10) and point shapes, cycling */
    static const char *const colour[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                         "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
    for (int i = 0; i < 10; i++)
        fprintf(gp, "set linetype %d lc rgb '%s' lw 2 pt %d\n", i + 1, colour[i], i % 7 + 1);
    fputs("set linetype cycle 10\n", gp);
}

/* Attention kinds among the groups of task t, in order of appearance. */
static int panels(const struct rl_report *r, int t, const char **att, int max)
{
    int n = 0;
    for (int g = 0; g < r->n_groups; g++) {
        if (r->grp[g].task != t) continue;
        int k = 0;
        while (k < n && strcmp(att[k], r->grp[g].col[1]))
            k++;
        if (k == n && n < max) att[n++] = r->grp[g].col[1];
    }
    return n;
}

/* The line plots of a task: one panel per attention kind, one curve per group (a row of
 * the tables) and variant (the metric plot: per rope_extend method).  begin_plot opens
 * DIR/<task>-<name>.dat and starts the SVG's multiplot; plot_groups writes each curve's
 * data block through `data` (which returns the lines it wrote; a curve with none is left
 * out), plots it `using` the given columns and style ("1:2 with lines"), and closes both. */
typedef int (*group_data)(const struct rl_report *r, int g, int v, FILE *f, const void *ctx);

struct variants {
    int         n;
    const char *label[RL_CFG_EXTEND_MAX]; /* appended to the group's label; NULL: nothing */
};

struct line_plot {
    FILE       *f;
    char        dat[96];
    const char *att[8];
    int         np;
};

static int begin_plot(struct line_plot *lp, const struct rl_report *r, int t, struct plot_files *pf,
                      const char *name, const char *title)
{
    char svg[96];
    lp->np = panels(r, t, lp->att, 8);
    snprintf(lp->dat, sizeof lp->dat, "%s-%s.dat", r->task[t], name);
    snprintf(svg, sizeof svg, "%s-%s.svg", r->task[t], name);
    if (!(lp->f = open_dat(pf, lp->dat))) return 0;
    gp_header(pf->gp, svg, 480 * lp->np, 420);
    fprintf(pf->gp, "set multiplot layout 1,%d title '%s: %s'\n", lp->np, r->task[t], title);
    return 1;
}

static void plot_groups(struct line_plot *lp, const struct rl_report *r, int t,
                        struct plot_files *pf, const char *using, const struct variants *vs,
                        group_data data, const void *ctx)
{
    char lab[600], full[640];
    int  block = 0;
    for (int p = 0; p < lp->np; p++) {
        int first = 1;
        fprintf(pf->gp, "set title '%s'\nplot", lp->att[p]);
        for (int g = 0; g < r->n_groups; g++)
            for (int v = 0; v < (vs ? vs->n : 1); v++) {
                if (r->grp[g].task != t || strcmp(r->grp[g].col[1], lp->att[p])) continue;
                if (!data(r, g, v, lp->f, ctx)) continue;
                fputs("\n\n", lp->f);
                snprintf(full, sizeof full, "%s%s%s", r->grp[g].line, vs && vs->label[v] ? " " : "",
                         vs && vs->label[v] ? vs->label[v] : "");
                gp_label(lab, sizeof lab, full);
                fprintf(pf->gp, "%s '%s' index %d using %s title '%s'", first ? "" : ",", lp->dat,
                        block++, using, lab);
                first = 0;
            }
        fputs(first ? " [1:2] [1:2] NaN notitle\n" : "\n", pf->gp); /* an empty panel */
    }
    fputs("unset multiplot\n", pf->gp);
    fclose(lp->f);
}

/* metric vs evaluation length: the group's mean at each length, one curve per rope_extend
 * method when there are several */
struct metric_ctx {
    char       field;
    const int *L;
    int        nl;
};

static int metric_data(const struct rl_report *r, int g, int v, FILE *f, const void *ctx)
{
    const struct metric_ctx *c    = ctx;
    const char              *m    = rl_rep_per_method(r) ? r->method[v] : NULL;
    int                      rows = 0;
    for (int j = 0; j < c->nl; j++) {
        double mean, sd;
        if (rl_rep_stat(r, g, m, c->field, c->L[j], &mean, &sd) > 0)
            fprintf(f, "%d %.9g %.9g\n", c->L[j], mean, sd), rows++;
    }
    return rows;
}

static void plot_metric(const struct rl_report *r, int t, struct plot_files *pf)
{
    const char *what = r->task_lm[t] ? "perplexity" : "accuracy",
               *m    = r->task_lm[t] ? "ppl" : "acc";
    int               L[RL_CFG_MAX_LENGTHS];
    struct metric_ctx c = {m[0], L, rl_rep_lengths(r, t, L, RL_CFG_MAX_LENGTHS)};
    struct line_plot  lp;
    char              title[64];
    snprintf(title, sizeof title, "%s vs evaluation length", what);
    if (!begin_plot(&lp, r, t, pf, m, title)) return;
    fprintf(pf->gp, "set logscale x 2\nset xlabel 'evaluation length'\nset ylabel '%s'\n", what);
    fputs(r->task_lm[t] ? "set logscale y\n" : "set yrange [0:1.05]\n", pf->gp);
    struct variants vs = {1, {NULL}};
    if (rl_rep_per_method(r)) {
        vs.n = r->n_methods;
        for (int k = 0; k < vs.n; k++)
            vs.label[k] = r->method[k];
    }
    /* with seeds: the mean, and error bars of one sample standard deviation */
    plot_groups(&lp, r, t, pf, rl_rep_seeded(r) ? "1:2:3 with yerrorlines" : "1:2 with linespoints",
                &vs, metric_data, &c);
}

/* Training loss: the mean over the group's points of each record (same steps). */
static int loss_data(const struct rl_report *r, int g, int v, FILE *f, const void *ctx)
{
    (void)v;
    const struct rl_rep_point *p0   = NULL;
    int                        nrec = 1 << 30, npts = 0;
    (void)ctx;
    for (long i = 0; i < r->n_points; i++)
        if (r->pt[i].done && r->pt[i].group == g) {
            if (!p0) p0 = &r->pt[i];
            if (r->pt[i].n_rec < nrec) nrec = r->pt[i].n_rec;
            npts++;
        }
    if (!p0) return 0;
    for (int k = 0; k < nrec; k++) {
        double s = 0;
        for (long i = 0; i < r->n_points; i++)
            if (r->pt[i].done && r->pt[i].group == g) s += r->pt[i].loss[k];
        fprintf(f, "%lld %.9g\n", (long long)p0->step[k], s / npts);
    }
    return nrec;
}

static void plot_loss(const struct rl_report *r, int t, struct plot_files *pf)
{
    struct line_plot lp;
    if (!rl_rep_has_training(r, t)) return; /* an evaluation directory */
    if (!begin_plot(&lp, r, t, pf, "loss", "training loss")) return;
    fputs("set logscale y\nset xlabel 'update'\nset ylabel 'loss'\n", pf->gp);
    plot_groups(&lp, r, t, pf, "1:2 with lines", NULL, loss_data, NULL);
}

/* LM tasks: loss vs position at the longest evaluation length M (positions.csv), each bin
 * the mean over the group's points */
static int position_data(const struct rl_report *r, int g, int v, FILE *f, const void *ctx)
{
    (void)v;
    const int                  M  = *(const int *)ctx;
    const struct rl_rep_point *p0 = NULL;
    for (long i = 0; i < r->n_points && !p0; i++)
        if (r->pt[i].done && r->pt[i].group == g && r->pt[i].pos_len == M) p0 = &r->pt[i];
    if (!p0) return 0;
    int rows = 0;
    for (int k = 0; k < p0->n_pos; k++) {
        double s = 0;
        int    n = 0;
        for (long i = 0; i < r->n_points; i++) {
            const struct rl_rep_point *q = &r->pt[i];
            if (q->done && q->group == g && q->pos_len == M && k < q->n_pos &&
                !isnan(q->pos_loss[k]))
                s += q->pos_loss[k], n++;
        }
        if (n) fprintf(f, "%.1f %.9g\n", 0.5 * (p0->pos0[k] + p0->pos1[k]), s / n), rows++;
    }
    return rows;
}

static void plot_positions(const struct rl_report *r, int t, struct plot_files *pf)
{
    const int        M = rl_rep_position_length(r, t);
    struct line_plot lp;
    char             title[64];
    if (M == 0) return;
    snprintf(title, sizeof title, "loss by position at length %d", M);
    if (!begin_plot(&lp, r, t, pf, "position", title)) return;
    fputs("set xlabel 'position'\nset ylabel 'loss (nats)'\n", pf->gp);
    if (r->task_length[t] > 0)
        fprintf(pf->gp, "set arrow 1 from %d, graph 0 to %d, graph 1 nohead dt 2 lc rgb 'gray'\n",
                r->task_length[t], r->task_length[t]);
    plot_groups(&lp, r, t, pf, "1:2 with lines", NULL, position_data, &M);
}

static double group_tok_s(const struct rl_report *r, int g)
{
    double s = 0;
    int    n = 0;
    for (long i = 0; i < r->n_points; i++)
        if (r->pt[i].done && r->pt[i].group == g && !isnan(r->pt[i].tok_s))
            s += r->pt[i].tok_s, n++;
    return n ? s / n : NAN;
}

static void plot_throughput(const struct rl_report *r, struct plot_files *pf)
{
    int any = 0;
    for (int g = 0; g < r->n_groups && !any; g++)
        any = !isnan(group_tok_s(r, g));
    FILE *f = any ? open_dat(pf, "throughput.dat") : NULL; /* none: an evaluation directory */
    if (!f) return;
    for (int g = 0; g < r->n_groups; g++) {
        double x = group_tok_s(r, g);
        if (isnan(x)) continue;
        fputc('"', f);
        if (r->n_tasks > 1) fprintf(f, "%s ", r->task[r->grp[g].task]);
        for (int c = 0; c < r->n_cols; c++)
            fprintf(f, "%s%s", c ? " " : "", r->grp[g].col[c]);
        fprintf(f, "\" %.6g\n", x);
    }
    fclose(f);
    gp_header(pf->gp, "throughput.svg", 200 + 40 * r->n_groups, 480);
    fputs("set title 'training throughput'\nset ylabel 'tokens / s'\nset yrange [0:*]\n"
          "set style data histograms\nset style fill solid 0.7 border -1\nset boxwidth 0.8\n"
          "set xtics rotate by 45 right scale 0\nset bmargin 10\nunset key\n"
          "plot 'throughput.dat' using 2:xtic(1)\n",
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
        int bad    = check_svgs(pf.dir, "plots.gp", failed, why, log);
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
    gp_header(f, "rope_decay.svg", 720, 440);
    fprintf(f,
            "set datafile separator ','\nset key top right\n"
            "set title 'RoPE long-term decay (RoFormer 3.4.3), d = %d'\n"
            "set xlabel 'relative distance m - n'\nset xrange [0:%d]\n"
            "set ylabel 'mean_j |sum_{i<j} exp(i (m-n) theta_i)|'\nplot",
            d, max_distance);
    for (int b = 0; b < n_bases; b++)
        fprintf(f, "%s 'rope_decay.csv' using 1:%d with lines title 'base %g'", b ? "," : "", b + 2,
                bases[b]);
    fputc('\n', f);
    if (fclose(f)) RL_FAIL(RL_EIO, "%s: write failed", path);
    if (log) fprintf(log, "%s/rope_decay.csv written\n", dir);
    if (!rl_gnuplot_path()) {
        if (log) fprintf(log, "plot skipped: no gnuplot\n");
        return RL_OK;
    }
    int failed = rl_gnuplot_run(dir, "rope_decay.gp", why, sizeof why);
    if (!check_svgs(dir, "rope_decay.gp", failed, why, log) && log)
        fprintf(log, "%s/rope_decay.svg written\n", dir);
    return RL_OK;
}
