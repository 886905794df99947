/* report.h -- an experiment's outputs (docs/experiments.md), from the run directory's files alone:
 * the combined results.csv, summary.md, the SVG plots, and the accuracy table printed at
 * the end of `ropelab run` (and by `ropelab report`).
 *
 * What is read: RUN/config.ini (with a sweep: the experiment's configuration, holding its
 * [sweep] section; without one: the run's resolved configuration), and for every point
 * (RUN/<point>/, or RUN itself without a sweep) its results.csv and metrics.jsonl.  A
 * point without results.csv is "not finished": listed in summary.md, left out of the
 * tables.  So `ropelab run` and `ropelab report` give byte-identical results.csv and
 * summary.md: run writes them through this same code, after its last point.
 *
 * summary.md: one table per task (rows: PE x attention x the other swept keys but the
 * seeds, train.seed and train.data_seed; columns: evaluation lengths; the cell is the
 * accuracy, or the perplexity for charlm/tokens; with swept seeds "mean +- sample std
 * (n)", marked against the best row of its attention kind: best, within the seeds'
 * spread of it (not significant), or not judged; then a table of the differences from
 * that best), a loss table per task, and a timing table (training tokens/s; forward,
 * backward, optimizer ms per update -- means over metrics.jsonl's records weighted by the
 * updates each covers; evaluation ms per 1k tokens at each length).
 *
 * Plots (RUN/plots/): <task>-<metric>.svg (metric vs evaluation length, one panel per
 * attention kind, one line per PE and other swept values; with seeds the mean, with
 * error bars of one sample std), <task>-loss.svg (training
 * loss curves from metrics.jsonl, same panels, seeds averaged), throughput.svg (training
 * tokens/s bars), each with its gnuplot script (.gp) and data (.dat) beside it.  gnuplot
 * is the one configure found (RL_GNUPLOT), or $ROPELAB_GNUPLOT ("none" = no plots); when
 * there is none or it fails, the outputs are still written and the plots are skipped
 * with a message. */
#ifndef RL_REPORT_H
#define RL_REPORT_H

#include <stdio.h>
#include "../core/status.h"

/* Write results.csv (with a sweep), summary.md and the plots of the run directory dir.
 * table: where to print the accuracy table (NULL = nowhere); log: one line each for
 * what was written and whether plots were made (NULL = quiet). */
rl_status rl_report_write(const char *dir, FILE *table, FILE *log);

#endif
