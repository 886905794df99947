/* report_plot.h -- the plots of a run (SVG through gnuplot when it is installed: metric vs
 * evaluation length, training loss, loss by position, throughput; docs/experiments.md) and
 * the RoPE long-term decay curve of RoFormer 3.4.3. */
#ifndef RL_REPORT_PLOT_H
#define RL_REPORT_PLOT_H

#include <stddef.h>
#include <stdio.h>
#include "../core/status.h"
#include "report_data.h"
#include "report_gp.h"

/* The plots of the run directory (returns after printing a line to log). */
void rl_rep_plots(const struct rl_report *r, FILE *log);

/* RoFormer 3.4.3: the relative upper bound (1/(d/2)) sum_{j=1}^{d/2} |S_j| with
 * S_j = sum_{i<j} e^{i r theta_i}, theta_i = base^(-2i/d), at relative distance r.
 * It is d/4 + 1/2 at r = 0 and decays (with oscillation) as r grows. */
double rl_rope_decay_bound(int d, double base, double r);
/* Write dir/rope_decay.csv (distance and one column per base) for r = 0 .. max_distance
 * and, with gnuplot, dir/rope_decay.svg. */
rl_status rl_rope_decay_write(const char *dir, int d, const double *bases, int n_bases,
                              int max_distance, FILE *log);

#endif
