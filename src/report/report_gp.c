/* report_gp.c -- gnuplot for the report's plots: styles, figures of panels with one shared
 * legend, running gnuplot; see report_gp.h. */
#include "config.h"
#include "report_gp.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- styles: one table per choice ---- */

static const struct {
    const char *pe, *rgb;
} pe_colour[] = {{"none", "#7f7f7f"},  {"sinusoidal", "#8c564b"}, {"learned", "#9467bd"},
                 {"t5", "#2ca02c"},    {"alibi", "#ff7f0e"},      {"rope", "#1f77b4"},
                 {"forget", "#d62728"}};
enum { N_PE_COLOURS = sizeof pe_colour / sizeof pe_colour[0] };

static const struct {
    const char *name;
    int         dt, pt;
} attention_style[] = {{"softmax", 1, 7}, {"linear", 2, 9}},
  method_style[]    = {{"none", 1, 7}, {"pi", 2, 5}, {"ntk", 3, 9}, {"yarn", 4, 13}};

int rl_gp_pe_rank(const char *pe)
{
    for (int i = 0; i < N_PE_COLOURS; i++)
        if (!strcmp(pe, pe_colour[i].pe)) return i;
    return N_PE_COLOURS;
}

void rl_gp_colour(const char *pe, int v, int n, char rgb[8])
{
    int          k = rl_gp_pe_rank(pe);
    unsigned int c = k < N_PE_COLOURS ? (unsigned)strtoul(pe_colour[k].rgb + 1, NULL, 16) : 0;
    /* variants: alternately darker and lighter, up to 55 % of the way to black or white */
    double t       = n > 1 && v > 0 ? 0.55 * ((v + 1) / 2) / ((n + 1) / 2) : 0;
    int    lighter = v % 2 == 0;
    for (int s = 16; s >= 0; s -= 8) {
        double x = (c >> s) & 0xFF;
        x        = lighter ? x + (255 - x) * t : x * (1 - t);
        c        = (c & ~(0xFFu << s)) | ((unsigned)lround(x) << s);
    }
    snprintf(rgb, 8, "#%06x", c & 0xFFFFFF);
}

void rl_gp_attention_style(const char *attention, int *dt, int *pt)
{
    *dt = 5, *pt = 11;
    for (size_t i = 0; i < sizeof attention_style / sizeof attention_style[0]; i++)
        if (!strcmp(attention, attention_style[i].name))
            *dt = attention_style[i].dt, *pt = attention_style[i].pt;
}

void rl_gp_method_style(const char *method, int *dt, int *pt)
{
    *dt = 5, *pt = 11;
    for (size_t i = 0; i < sizeof method_style / sizeof method_style[0]; i++)
        if (!strcmp(method, method_style[i].name))
            *dt = method_style[i].dt, *pt = method_style[i].pt;
}

/* s inside a gnuplot double-quoted string: quotes and backslashes escaped, a newline as
 * gnuplot's \n. */
static void escaped(FILE *gp, const char *s)
{
    for (; *s; s++) {
        if (*s == '\n') {
            fputs("\\n", gp);
            continue;
        }
        if (*s == '"' || *s == '\\') fputc('\\', gp);
        fputc(*s, gp);
    }
}

void rl_gp_string(FILE *gp, const char *s)
{
    fputc('"', gp);
    escaped(gp, s);
    fputc('"', gp);
}

void rl_gp_header(FILE *gp, const char *svg, int w, int h)
{
    fprintf(gp, "\nreset\nset terminal svg size %d,%d dynamic noenhanced font 'sans,11'\n", w, h);
    fprintf(gp, "set output '%s'\n", svg);
}

/* ---- a figure ---- */

/* Data and ranges: each series a block "x y lo hi"; the y range over every value, band
 * and the reference line, and the x range over the data. */
struct extent {
    double ylo, yhi, xlo, xhi;
    double ybound[2]; /* the figure's (NaN: none) */
    int    ref_off;   /* the reference line lies too far from the data to be drawn */
};

static void widen(double *lo, double *hi, double v, int log)
{
    if (!isfinite(v) || (log && v <= 0)) return;
    if (v < *lo) *lo = v;
    if (v > *hi) *hi = v;
}

static int write_data(const char *dir, const char *dat, const struct rl_gp_figure *f,
                      struct extent *e)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, dat);
    FILE *d = fopen(path, "w");
    if (!d) return 1;
    e->ylo = e->xlo = INFINITY, e->yhi = e->xhi = -INFINITY;
    for (int i = 0; i < f->ns; i++) {
        const struct rl_gp_series *s = &f->s[i];
        fprintf(d, "# %s\n", s->title[0] ? s->title : "(no title)");
        if (s->n == 0) fputs("NaN NaN NaN NaN\n", d); /* an empty block would shift the next */
        for (int k = 0; k < s->n; k++) {
            double lo = s->lo ? s->lo[k] : NAN, hi = s->hi ? s->hi[k] : NAN;
            if (isfinite(f->ybound[0]) && lo < f->ybound[0]) lo = f->ybound[0];
            if (isfinite(f->ybound[1]) && hi > f->ybound[1]) hi = f->ybound[1];
            fprintf(d, "%.9g %.9g %.9g %.9g\n", s->x[k], s->y[k], lo, hi);
            widen(&e->ylo, &e->yhi, s->y[k], f->logy);
            if (f->band != RL_GP_NONE) {
                widen(&e->ylo, &e->yhi, lo, f->logy);
                widen(&e->ylo, &e->yhi, hi, f->logy);
            }
            widen(&e->xlo, &e->xhi, s->x[k], f->logx);
        }
        fputs("\n\n", d);
    }
    /* the reference line joins the range unless that would squeeze the data into less
     * than 40 % of the height: then the legend gives its value instead */
    double lo = e->ylo, hi = e->yhi;
    widen(&lo, &hi, f->ref, f->logy);
    double span = f->logy ? log(e->yhi / e->ylo) : e->yhi - e->ylo;
    double with = f->logy ? log(hi / lo) : hi - lo;
    e->ref_off  = isfinite(f->ref) && span > 0 && with > 2.5 * span;
    if (!e->ref_off) e->ylo = lo, e->yhi = hi;
    if (isfinite(f->xmin)) e->xlo = f->xmin;
    if (isfinite(f->xmax)) e->xhi = f->xmax;
    e->ybound[0] = f->ybound[0], e->ybound[1] = f->ybound[1];
    return fclose(d) != 0;
}

/* Tics of a log axis over [lo, hi]: 1-2-5, or finer steps when the range is narrow, so
 * that 3 to 10 of them fall inside. */
static void log_tics(FILE *gp, double lo, double hi)
{
    static const double ladder[3][12] = {
        {1, 2, 5}, {1, 1.5, 2, 3, 4, 5, 6, 8}, {1, 1.2, 1.4, 1.6, 1.8, 2, 2.5, 3, 4, 5, 6, 8}};
    static const int len[3] = {3, 8, 12};
    double           v[64];
    int              n = 0;
    for (int l = 0; l < 3 && n < 4; l++) {
        n = 0;
        for (int p = (int)floor(log10(lo)); p <= (int)ceil(log10(hi)) && n < 64; p++)
            for (int k = 0; k < len[l] && n < 64; k++) {
                double x = ladder[l][k] * pow(10, p);
                if (x >= lo && x <= hi) v[n++] = x;
            }
    }
    if (n < 3) { /* a narrow range: evenly spaced tics, as on a linear axis */
        double raw = (hi - lo) / 5, mag = pow(10, floor(log10(raw)));
        double d = raw <= 1.5 * mag   ? mag /* the 1-2-5 step nearest a fifth of the range */
                   : raw <= 3.5 * mag ? 2 * mag
                   : raw <= 7.5 * mag ? 5 * mag
                                      : 10 * mag;
        n        = 0;
        for (double x = ceil(lo / d) * d; x <= hi && n < 64; x += d)
            v[n++] = x;
    }
    int step = n > 10 ? (n + 9) / 10 : 1;
    fputs("set ytics (", gp);
    for (int i = 0; i < n; i += step)
        fprintf(gp, "%s%.6g", i ? ", " : "", v[i]);
    fputs(")\nset mytics 1\n", gp);
}

static void axes(FILE *gp, const struct rl_gp_figure *f, const struct extent *e)
{
    double ylo = e->ylo, yhi = e->yhi;
    if (!(ylo < yhi)) ylo = ylo - 0.5, yhi = ylo + 1; /* one value: a unit around it */
    if (f->logy) {
        double pad = pow(yhi / ylo, 0.06);
        ylo /= pad, yhi *= pad;
        fprintf(gp, "set logscale y %d\nset yrange [%.9g:%.9g]\n", f->logy, ylo, yhi);
        log_tics(gp, ylo, yhi);
    } else {
        double pad = 0.06 * (yhi - ylo), a = ylo - pad, b = yhi + pad;
        /* a bounded quantity: no room drawn far outside its bounds */
        if (isfinite(e->ybound[0]) && a < e->ybound[0] - pad / 2) a = e->ybound[0] - pad / 2;
        if (isfinite(e->ybound[1]) && b > e->ybound[1] + pad / 2) b = e->ybound[1] + pad / 2;
        fprintf(gp, "set yrange [%.9g:%.9g]\n", a, b);
    }
    if (f->logx) fprintf(gp, "set logscale x %d\n", f->logx);
    if (isfinite(e->xlo) && e->xlo < e->xhi) {
        double a = e->xlo, b = e->xhi;
        if (!isfinite(f->xmin)) a = f->logx ? a / 1.2 : a - 0.02 * (b - a);
        if (!isfinite(f->xmax)) b = f->logx ? b * 1.2 : b + 0.02 * (b - e->xlo);
        fprintf(gp, "set xrange [%.9g:%.9g]\n", a, b);
    }
    if (f->nxtics) {
        fputs("set xtics (", gp);
        for (int i = 0; i < f->nxtics; i++)
            fprintf(gp, "%s\"%.6g\" %.9g", i ? ", " : "", f->xtics[i], f->xtics[i]);
        fputs(")\n", gp);
    }
}

/* The training length and the reference line (the legend names them). */
static void marks(FILE *gp, const struct rl_gp_figure *f, const struct extent *e)
{
    if (isfinite(f->vline))
        fprintf(gp,
                "set arrow from %.9g, graph 0 to %.9g, graph 1 nohead dt 2 lw 1.2 "
                "lc rgb '#444444' back\n",
                f->vline, f->vline);
    if (isfinite(f->ref) && !e->ref_off)
        fprintf(gp,
                "set arrow from graph 0, first %.9g to graph 1, first %.9g nohead dt 3 "
                "lw 1.5 lc rgb '#222222' back\n",
                f->ref, f->ref);
}

static void style(FILE *gp, const struct rl_gp_series *s, int points)
{
    fprintf(gp, " lc rgb '%s' dt %d lw %.2g", s->rgb, s->faint ? 1 : s->dt, s->faint ? 0.6 : s->lw);
    if (points && !s->faint) fprintf(gp, " pt %d ps 0.7", s->pt);
}

/* Does series s have a band or error bar anywhere? */
static int has_band(const struct rl_gp_series *s)
{
    for (int k = 0; s->lo && s->hi && k < s->n; k++)
        if (isfinite(s->lo[k]) && isfinite(s->hi[k])) return 1;
    return 0;
}

/* One panel: bands first (under every line), then faint lines, then the curves. */
static void panel_plot(FILE *gp, const char *dat, const struct rl_gp_figure *f, int p)
{
    int first = 1;
    fputs("plot", gp);
    for (int pass = 0; pass < 3; pass++)
        for (int i = 0; i < f->ns; i++) {
            const struct rl_gp_series *s = &f->s[i];
            if (s->panel != p || s->n == 0) continue;
            if (pass == 0 && (f->band == RL_GP_NONE || !has_band(s) || s->faint)) continue;
            if (pass == 1 && !s->faint) continue;
            if (pass == 2 && s->faint) continue;
            fprintf(gp, "%s '%s' index %d", first ? "" : ",", dat, i);
            first = 0;
            if (pass == 0 && f->band == RL_GP_BAND) {
                fprintf(gp,
                        " using 1:3:4 with filledcurves fs transparent solid 0.13 noborder "
                        "lc rgb '%s' notitle",
                        s->rgb);
                continue;
            }
            if (pass == 0) { /* error bars drawn solid, whatever the curve's dashes */
                fprintf(gp, " using 1:2:3:4 with yerrorbars lc rgb '%s' dt 1 lw 1.2 pt 0 notitle",
                        s->rgb);
                continue;
            }
            fprintf(gp, " using 1:2 with %s", f->points && !s->faint ? "linespoints" : "lines");
            style(gp, s, f->points);
            fputs(" notitle", gp);
        }
    fputs(first ? " [0:1][0:1] NaN notitle\n" : "\n", gp); /* an empty panel */
}

/* The legend under the panels: every titled series once, in series order. */
static int legend_entries(const struct rl_gp_figure *f, int *idx)
{
    int n = 0;
    for (int i = 0; i < f->ns; i++) {
        int seen = !f->s[i].title[0] || f->s[i].faint;
        for (int k = 0; k < n && !seen; k++)
            seen = !strcmp(f->s[idx[k]].title, f->s[i].title);
        if (!seen) idx[n++] = i;
    }
    return n;
}

static void legend(FILE *gp, const struct rl_gp_figure *f, const struct extent *e, const int *idx,
                   int n, int rows, double top)
{
    fprintf(gp,
            "set lmargin at screen 0.02\nset rmargin at screen 0.98\n"
            "set tmargin at screen %.6f\nset bmargin at screen 0.01\n",
            top);
    fputs("unset title\nunset xlabel\nunset ylabel\nunset arrow\nunset label\nunset tics\n"
          "unset border\nunset grid\nunset logscale\nset xrange [0:1]\nset yrange [0:1]\n",
          gp);
    fprintf(gp, "set key center center horizontal maxrows %d samplen 3.5 width 2 spacing 1.1\n",
            rows);
    fputs("plot", gp);
    for (int k = 0; k < n; k++) {
        const struct rl_gp_series *s = &f->s[idx[k]];
        fprintf(gp, "%s NaN with %s", k ? "," : "", f->points ? "linespoints" : "lines");
        style(gp, s, f->points);
        fputs(" title ", gp);
        rl_gp_string(gp, s->title);
    }
    if (isfinite(f->vline)) {
        fprintf(gp, "%s NaN with lines dt 2 lw 1.2 lc rgb '#444444' title ", n++ ? "," : "");
        rl_gp_string(gp, f->vline_label);
    }
    if (isfinite(f->ref)) {
        char t[160];
        snprintf(t, sizeof t, "%s%s", f->ref_label,
                 !e->ref_off       ? ""
                 : f->ref > e->yhi ? " (above)"
                                   : " (below)");
        fprintf(gp, "%s NaN with lines dt 3 lw 1.5 lc rgb '#222222' title ", n++ ? "," : "");
        rl_gp_string(gp, t);
    }
    fputs(n ? "\n" : " NaN notitle\n", gp);
}

int rl_gp_figure_write(FILE *gp, const char *dir, const char *dat, const struct rl_gp_figure *f)
{
    struct extent e;
    int          *idx = malloc(((size_t)f->ns + 1) * sizeof *idx);
    if (!idx || write_data(dir, dat, f, &e)) return free(idx), 1;
    const int n = legend_entries(f, idx) + isfinite(f->vline) + isfinite(f->ref), pw = 440;
    const int W    = 80 + pw * f->np < 660 ? 660 : 80 + pw * f->np;
    const int cols = (W - 40) / 200 > 0 ? (W - 40) / 200 : 1, rows = (n + cols - 1) / cols;
    const int top = 86, ph = 340, below = 58, lh = 16 + 21 * rows, H = top + ph + below + lh;
    const int left = (W - pw * f->np) / 2 + 20;
    rl_gp_header(gp, f->svg, W, H);
    fputs("set multiplot title ", gp), rl_gp_string(gp, f->title), fputs(" font ',13'\n", gp);
    for (int p = 0; p < f->np; p++) {
        const double l = (double)(left + p * pw) / W, r = (double)(left + (p + 1) * pw - 40) / W;
        fprintf(gp, "set lmargin at screen %.6f\nset rmargin at screen %.6f\n", l, r);
        fprintf(gp, "set tmargin at screen %.6f\nset bmargin at screen %.6f\n", 1 - (double)top / H,
                (double)(lh + below) / H);
        fputs("unset arrow\nunset label\nunset key\nunset logscale\nset grid lc rgb '#dddddd'\n",
              gp);
        fputs("set title ", gp), rl_gp_string(gp, f->panel[p]), fputc('\n', gp);
        fputs("set xlabel ", gp), rl_gp_string(gp, f->xlabel), fputc('\n', gp);
        fputs("set ylabel ", gp), rl_gp_string(gp, p == 0 ? f->ylabel : ""), fputc('\n', gp);
        axes(gp, f, &e);
        marks(gp, f, &e);
        if (p == 0 && f->note[0]) { /* under the title, smaller, drawn with the first panel */
            fputs("set label ", gp), rl_gp_string(gp, f->note);
            fprintf(gp, " at screen 0.5, screen %.6f center font ',10' tc rgb '#333333'\n",
                    1 - 46.0 / H);
        }
        panel_plot(gp, dat, f, p);
    }
    legend(gp, f, &e, idx, n - isfinite(f->vline) - isfinite(f->ref), rows, (double)lh / H);
    fputs("unset multiplot\n", gp);
    free(idx);
    return 0;
}

/* ---- running gnuplot ---- */

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
 * is removed (never a 0-byte file presented as a plot) and named in a warning. */
int rl_gp_check_svgs(const char *dir, const char *script, int gp_failed, const char *why, FILE *log)
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
