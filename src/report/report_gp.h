/* report_gp.h -- gnuplot for the report's plots: the fixed styles (one colour per position
 * encoding, one dash and point type per attention kind or RoPE extension method), and a
 * figure of panels side by side written as data blocks and a script: y range fitted to
 * the data and shared by the panels, readable tics on log axes, the training length and a
 * reference line marked and labelled, bands or error bars, one legend under the panels.
 * Running gnuplot on the script and checking the SVGs it made are here too. */
#ifndef RL_REPORT_GP_H
#define RL_REPORT_GP_H

#include <stddef.h>
#include <stdio.h>

/* The colour of an encoding, the same in every plot of every run (gnuplot "#rrggbb"):
 * none grey, sinusoidal brown, learned purple, t5 green, alibi orange, rope blue, forget
 * (a forget-gate model) red; other names black.  variant v of n (groups of the same
 * encoding that differ in other swept keys) shades it, v = 0 the colour itself. */
void rl_gp_colour(const char *pe, int v, int n, char rgb[8]);
/* Its place in the legend and series order (the list above; others after). */
int rl_gp_pe_rank(const char *pe);
/* The dash and point types of an attention kind (softmax solid with circles, linear
 * dashed with triangles) and of a RoPE extension method (none solid with circles, pi
 * dashed with squares, ntk dotted with triangles, yarn dash-dot with diamonds). */
void rl_gp_attention_style(const char *attention, int *dt, int *pt);
void rl_gp_method_style(const char *method, int *dt, int *pt);

enum rl_gp_band { RL_GP_NONE, RL_GP_BARS, RL_GP_BAND };

struct rl_gp_series {
    int     panel;
    char    title[600]; /* legend text; "" for none */
    char    rgb[8];
    int     dt, pt;
    double  lw;
    int     faint; /* a thin line behind the others (raw data), no points, no legend */
    int     n;
    double *x, *y, *lo, *hi; /* lo, hi (may be NULL): the band or error bar of each point */
};

#define RL_GP_MAX_PANELS 8
#define RL_GP_MAX_TICS 48

struct rl_gp_figure {
    char        svg[96];
    char        title[200], note[240]; /* the figure's title and what bands mean */
    const char *xlabel, *ylabel;
    int         np;
    char        panel[RL_GP_MAX_PANELS][160];
    int         logx, logy; /* 0 linear, else the log base */
    int         nxtics;     /* explicit x tics (0: automatic) */
    double      xtics[RL_GP_MAX_TICS];
    double      xmin, xmax; /* NaN: from the data */
    double      ybound[2];  /* a bounded quantity's range (accuracy [0, 1]): interval
                               ends clamped into it, the axis kept inside it; NaN none */
    enum rl_gp_band      band;
    int                  points; /* point markers on the lines */
    double               ref;    /* a horizontal reference (NaN: none) */
    char                 ref_label[96];
    double               vline; /* the training length (NaN: none) */
    char                 vline_label[64];
    int                  ns;
    struct rl_gp_series *s;
};

/* Write figure f: its data blocks into dir/dat and its commands into gp.  Returns 0, or 1
 * when the data file cannot be written (nothing goes into gp then). */
int rl_gp_figure_write(FILE *gp, const char *dir, const char *dat, const struct rl_gp_figure *f);
/* The terminal and output lines of an SVG of w x h pixels. */
void rl_gp_header(FILE *gp, const char *svg, int w, int h);
/* s as a gnuplot double-quoted string. */
void rl_gp_string(FILE *gp, const char *s);

/* The gnuplot to run: $ROPELAB_GNUPLOT, else RL_GNUPLOT; NULL when none (or "none"). */
const char *rl_gnuplot_path(void);
/* Run `gnuplot script` inside dir, its output in dir/gnuplot.log.  Returns 0 on success,
 * else nonzero with the reason in why. */
int rl_gnuplot_run(const char *dir, const char *script, char *why, size_t len);
/* Every SVG the script names must exist and be complete; a missing or broken one is
 * removed and named in a warning on log.  Returns the number of those. */
int rl_gp_check_svgs(const char *dir, const char *script, int gp_failed, const char *why,
                     FILE *log);

#endif
