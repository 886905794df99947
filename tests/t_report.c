/* t_report.c -- summary.md over seeds (docs/experiments.md), on run directories written
 * here with known numbers (no training): the mean and sample standard deviation of each
 * row against float64 sums in this file, the significance marks (best of each attention
 * kind; |mean - best mean| <= std + best std is not significant; fewer than 2 seeds is not
 * judged) against hand-worked cases and the rule applied here, lower-is-better fields
 * marked like their higher-is-better mirror, the cells and the comparison table of
 * summary.md and of the printed table, error bars in the plot data, and a single-seed run
 * whose summary.md has the shape it has always had (no ±, no counts, no marks),
 * train.data_seed aggregated like train.seed, a character-LM run (perplexity marked
 * lowest-best; the loss-by-position table over seeds against float64), the 95 % intervals
 * over seeds and of a single run's rows, and RoPE extension methods as rows of one table. */
#include "config.h"
#include "config/cfg.h"
#include "report/report.h"
#include "report/report_data.h"
#include "config/sweep.h"
#include "core/util.h"
#include "tap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { NPE = 3, NATT = 2, NL = 2, NSEED = 3 };
static const char *const pe_name[NPE]   = {"none", "rope", "alibi"};
static const char *const att_name[NATT] = {"softmax", "linear"};
static const int         length[NL]     = {8, 16};

/* accuracy[attention][pe][length][seed]; NAN: that point has no results.csv */
static const double acc[NATT][NPE][NL][NSEED] = {{/* softmax */
                                                  {{0.50, 0.52, 0.48}, {0.30, 0.31, 0.32}},
                                                  {{0.90, 0.92, 0.91}, {0.40, 0.60, 0.50}},
                                                  {{0.89, 0.86, 0.92}, {0.70, 0.71, 0.72}}},
                                                 {/* linear: alibi has only seed 1 */
                                                  {{0.59, 0.59, 0.59}, {0.20, 0.25, 0.30}},
                                                  {{0.62, 0.64, 0.60}, {0.22, 0.23, 0.24}},
                                                  {{0.55, NAN, NAN}, {0.10, NAN, NAN}}}};

/* The marks worked out by hand (accuracy: higher is better). */
static const int want_mark[NATT][NPE][NL] = {
    {/* softmax: L 8 rope best (0.91 +- 0.01), alibi 0.89 +- 0.03 within 0.04, none far;
        L 16 alibi best (0.71 +- 0.01), rope 0.50 +- 0.10: 0.21 > 0.11 */
     {RL_REP_SIG, RL_REP_SIG},
     {RL_REP_BEST, RL_REP_SIG},
     {RL_REP_NS, RL_REP_BEST}},
    {/* linear: L 8 rope best (0.62 +- 0.02), none 0.59 +- 0: 0.03 > 0.02; L 16 none best
        (0.25 +- 0.05), rope 0.23 +- 0.01 within 0.06; alibi one seed: not judged */
     {RL_REP_SIG, RL_REP_BEST},
     {RL_REP_BEST, RL_REP_NS},
     {RL_REP_FEW, RL_REP_FEW}}};

static char tmp[256];

static void write_text(const char *path, const char *text)
{
    if (rl_write_file_atomic(path, text, strlen(text), NULL, 0) != RL_OK)
        tap_bail("%s: %s", path, rl_last_error());
}

/* A run directory: config.ini with the sweep, and each point's results.csv.  seeds: the
 * sweep line of the seeds ("train.seed = 1, 2, 3\n"), "" for one run with the seed-1
 * numbers. */
static void make_run(const char *dir, const char *seeds)
{
    char path[1600], text[2048];
    snprintf(text, sizeof text,
             "[experiment]\nname = seeds\n[model]\nd_model = 16\nheads = 2\nlayers = 1\n"
             "[task]\nname = copy\nlength = 8\n[eval]\nlengths = 8, 16\n[sweep]\n"
             "model.pe = none, rope, alibi\nmodel.attention = softmax, linear\n%s",
             seeds);
    if (rl_mkdir_p(dir) != RL_OK) tap_bail("mkdir %s", dir);
    snprintf(path, sizeof path, "%s/config.ini", dir);
    write_text(path, text);
    static struct rl_cfg c;
    struct rl_sweep     *s = malloc(sizeof *s);
    rl_cfg_defaults(&c);
    if (!s || rl_cfg_load(&c, path) != RL_OK || rl_sweep_init(s, &c) != RL_OK)
        tap_bail("%s: %s", path, rl_last_error());
    for (long p = 0; p < s->n_points; p++) {
        int  pe = rl_sweep_value_index(s, p, 0), att = rl_sweep_value_index(s, p, 1);
        int  seed = *seeds ? rl_sweep_value_index(s, p, 2) : 0;
        char name[RL_SWEEP_NAME];
        if (isnan(acc[att][pe][0][seed])) continue; /* not finished */
        rl_sweep_point_name(s, p, name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (rl_mkdir_p(path) != RL_OK) tap_bail("mkdir %s", path);
        size_t n = (size_t)snprintf(text, sizeof text,
                                    "pe,attention,length,acc,exact,loss,ppl,ms_per_1k_tokens,"
                                    "den_le_eps,note,rope_extend,rope_factor,stride\n");
        for (int j = 0; j < NL; j++) {
            double a = acc[att][pe][j][seed], loss = 3 - 2 * a; /* loss: lower is better */
            n += (size_t)snprintf(text + n, sizeof text - n,
                                  "%s,%s,%d,%.6g,0,%.6g,%.6g,1.5,%s,,none,1,0\n", pe_name[pe],
                                  att_name[att], length[j], a, loss, exp(loss), att ? "0" : "");
        }
        snprintf(path, sizeof path, "%s/%s/results.csv", dir, name);
        write_text(path, text);
    }
    free(s);
}

static char *slurp(const char *path)
{
    unsigned char *buf;
    size_t         len;
    if (rl_read_file(&buf, &len, path) != RL_OK) tap_bail("%s: %s", path, rl_last_error());
    char *s = realloc(buf, len + 1);
    s[len]  = 0;
    return s;
}

/* Writes the report of the run in dir without plots (the table to table, if not NULL) and
 * returns its summary.md. */
static char *report_summary(const char *dir, FILE *table)
{
    char path[400];
    setenv("ROPELAB_GNUPLOT", "none", 1);
    if (rl_report_write(dir, table, NULL) != RL_OK) tap_bail("report: %s", rl_last_error());
    snprintf(path, sizeof path, "%s/summary.md", dir);
    return slurp(path);
}

/* The group of (pe, attention) in r, -1 if none. */
static int group_of(const struct rl_report *r, int pe, int att)
{
    for (int g = 0; g < r->n_groups; g++)
        if (!strcmp(r->grp[g].col[0], pe_name[pe]) && !strcmp(r->grp[g].col[1], att_name[att]))
            return g;
    return -1;
}

/* Mean and sample std of the finished seeds, by Welford's recurrence in float64. */
static int ref_stat(int att, int pe, int j, double *mean, double *sd)
{
    double m = 0, m2 = 0;
    int    n = 0;
    for (int s = 0; s < NSEED; s++) {
        double x = acc[att][pe][j][s];
        if (isnan(x)) continue;
        double d = x - m;
        m += d / ++n;
        m2 += d * (x - m);
    }
    *mean = m, *sd = n > 1 ? sqrt(m2 / (n - 1)) : 0;
    return n;
}

/* The rule applied to the float64 statistics of this file. */
static int ref_mark(int att, int pe, int j)
{
    double bm = 0, bs = 0, m, s, mm, ss;
    int    best = -1, bn = 0, n = ref_stat(att, pe, j, &m, &s);
    for (int q = 0; q < NPE; q++) {
        int nq = ref_stat(att, q, j, &mm, &ss);
        if (best < 0 || mm > bm) best = q, bm = mm, bs = ss, bn = nq;
    }
    if (best == pe) return RL_REP_BEST;
    if (n < 2 || bn < 2) return RL_REP_FEW;
    return fabs(m - bm) <= s + bs ? RL_REP_NS : RL_REP_SIG;
}

static void test_statistics(void)
{
    char dir[300];
    snprintf(dir, sizeof dir, "%s/seeds", tmp);
    make_run(dir, "train.seed = 1, 2, 3\n");
    struct rl_report *r;
    if (rl_rep_load(&r, dir) != RL_OK) tap_bail("load: %s", rl_last_error());
    tap_ok(r->n_points == 18 && r->n_done == 16 && r->n_groups == 6 && rl_rep_seeded(r),
           "18 points, 16 finished, 6 rows (seeds grouped): %ld %ld %d", r->n_points, r->n_done,
           r->n_groups);
    int stat_ok = 1, mark_ok = 1, ref_ok = 1, mirror_ok = 1;
    for (int att = 0; att < NATT; att++)
        for (int pe = 0; pe < NPE; pe++)
            for (int j = 0; j < NL; j++) {
                int    g = group_of(r, pe, att);
                double m = 0, s = 0, rm, rs;
                int    n  = g < 0 ? 0 : rl_rep_stat(r, g, NULL, 'a', length[j], &m, &s);
                int    rn = ref_stat(att, pe, j, &rm, &rs);
                if (n != rn || fabs(m - rm) > 1e-12 || fabs(s - rs) > 1e-12) {
                    stat_ok = 0;
                    tap_diag("%s %s %d: n %d/%d mean %.17g/%.17g std %.17g/%.17g", pe_name[pe],
                             att_name[att], length[j], n, rn, m, rm, s, rs);
                }
                struct rl_rep_cmp c, cl;
                rl_rep_compare(r, g, NULL, 'a', length[j], &c);
                rl_rep_compare(r, g, NULL, 'l', length[j], &cl);
                if (c.mark != want_mark[att][pe][j]) {
                    mark_ok = 0;
                    tap_diag("%s %s %d: mark %d, want %d", pe_name[pe], att_name[att], length[j],
                             c.mark, want_mark[att][pe][j]);
                }
                ref_ok &= c.mark == ref_mark(att, pe, j);
                /* loss = 3 - 2 acc: the same best row, twice the difference and spread */
                mirror_ok &= cl.mark == c.mark && cl.best == c.best &&
                             fabs(cl.diff + 2 * c.diff) < 1e-9 &&
                             fabs(cl.spread - 2 * c.spread) < 1e-9;
            }
    tap_ok(stat_ok, "mean and sample std (n - 1) of every row and length match float64 "
                    "(Welford), with the count of finished seeds");
    tap_ok(mark_ok, "significance marks as worked out by hand");
    tap_ok(ref_ok, "significance marks as the rule |mean - best| <= std + best std gives here");
    tap_ok(mirror_ok, "loss (lower is better) = 3 - 2 accuracy: the same marks and best rows, "
                      "differences and spreads doubled");
    rl_rep_free(r);
}

static void test_summary(void)
{
    char dir[300], path[400];
    snprintf(dir, sizeof dir, "%s/seeds", tmp);
    FILE *table = tmpfile();
    if (!table) tap_bail("tmpfile failed");
    char *s = report_summary(dir, table);
    tap_ok(strstr(s, "\n| pe | attention | 8 | 16 |\n") &&
               strstr(s, "\n| rope | softmax | 0.910 ± 0.010 (3) * | 0.500 ± 0.100 (3) |\n") &&
               strstr(s, "\n| alibi | softmax | 0.890 ± 0.030 (3) ≈ | 0.710 ± 0.010 (3) * |\n") &&
               strstr(s, "\n| none | linear | 0.590 ± 0.000 (3) | 0.250 ± 0.050 (3) * |\n") &&
               strstr(s, "\n| alibi | linear | 0.550 (1) ? | 0.100 (1) ? |\n"),
           "summary.md: accuracy cells mean ± std (n) with marks");
    tap_ok(strstr(s, "|mean − best mean| ≤ std + best std") &&
               strstr(s, "over train.seed = 1, 2, 3"),
           "summary.md states the seeds and the rule under the table");
    tap_ok(strstr(s, "\n## copy: accuracy compared with the best of each attention kind\n") &&
               strstr(s, "\n| rope | softmax | best | -0.210 |\n") &&
               strstr(s, "\n| alibi | softmax | -0.020 n.s. | best |\n") &&
               strstr(s, "\n| none | softmax | -0.410 | -0.400 |\n") &&
               strstr(s, "\n| rope | linear | best | -0.020 n.s. |\n") &&
               strstr(s, "\n| alibi | linear | -0.070 ? | -0.150 ? |\n"),
           "summary.md: the comparison table (difference from the best, n.s., ?)");
    tap_ok(strstr(s, "\n| rope | softmax | 1.1800 ± 0.0200 (3) | 2.0000 ± 0.2000 (3) |\n") != NULL,
           "summary.md: the loss table has mean ± std (n) and no marks");
    free(s);
    char line[512];
    int  head = 0, cells = 0, legend = 0;
    rewind(table);
    while (fgets(line, sizeof line, table)) {
        head |=
            !strcmp(line, "copy: accuracy by evaluation length, mean ± std (number of seeds)\n");
        cells |= !strncmp(line, "rope   softmax  ", 16) && strstr(line, "0.910 ± 0.010 (3) *") &&
                 strstr(line, "0.500 ± 0.100 (3)");
        legend |= line[0] == '*' && strstr(line, "not significant") != NULL;
    }
    if (!(head && cells && legend)) {
        rewind(table);
        while (fgets(line, sizeof line, table))
            tap_diag("%s", line);
    }
    fclose(table);
    tap_ok(head && cells && legend, "the printed table: the same cells and marks, and a legend");
    snprintf(path, sizeof path, "%s/plots/copy-acc.dat", dir);
    s = slurp(path);
    char *gp;
    snprintf(path, sizeof path, "%s/plots/plots.gp", dir);
    gp = slurp(path);
    /* the first curve is none, softmax (the encodings' order): 0.50, 0.52, 0.48 at 8 */
    double x = 0, y = 0, lo = 0, hi = 0, h = 4.3027 * 0.02 / sqrt(3);
    tap_ok(sscanf(strchr(s, '\n') + 1, "%lf %lf %lf %lf", &x, &y, &lo, &hi) == 4 && x == 8 &&
               fabs(y - 0.5) < 1e-9 && fabs(lo - (0.5 - h)) < 1e-5 && fabs(hi - (0.5 + h)) < 1e-5 &&
               !strncmp(s, "# none\n", 7) && strstr(gp, "using 1:2:3:4 with yerrorbars"),
           "the accuracy plot: the mean with error bars of its 95 %% interval over the seeds "
           "(data and script)");
    free(s), free(gp);
}

static void test_single_seed(void)
{
    char dir[300], path[400];
    snprintf(dir, sizeof dir, "%s/one", tmp);
    make_run(dir, "");
    char *s = report_summary(dir, NULL);
    tap_ok(strstr(s, "\n| rope | softmax | 0.900 | 0.400 |\n") &&
               strstr(s, "\n| alibi | linear | 0.550 | 0.100 |\n") &&
               strstr(s, "\n| rope | softmax | 1.2000 | 2.2000 |\n"),
           "one seed: plain numbers in the cells");
    tap_ok(!strstr(s, "±") && !strstr(s, "(1)") && !strstr(s, "Marks") &&
               !strstr(s, "compared with the best") && !strstr(s, " * |"),
           "one seed: no ±, no counts, no marks, no comparison table");
    /* the sections, in order, as before seeds were aggregated */
    static const char *const want[] = {"# seeds",
                                       "## copy: accuracy by evaluation length",
                                       "## copy: loss by evaluation length",
                                       "## copy: exact match by evaluation length",
                                       "## copy: linear-attention denominators <= eps",
                                       "## Timing",
                                       "## Plots"};
    int                      k = 0, ok = 1;
    for (char *l = s; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (*l == '#') {
            size_t n = strcspn(l, "\n");
            ok &= k < 7 && n == strlen(want[k]) && !strncmp(l, want[k], n);
            k++;
        }
    tap_ok(ok && k == 7, "one seed: the same sections in the same order (%d headings)", k);
    free(s);
    snprintf(path, sizeof path, "%s/plots/plots.gp", dir);
    s = slurp(path);
    tap_ok(strstr(s, "using 1:2 with linespoints") && !strstr(s, "yerror"),
           "one seed without intervals in its results: lines and points, no error bars");
    free(s);
}

/* train.data_seed swept instead: the same rows, means and marks. */
static void test_data_seed(void)
{
    char dir[300];
    snprintf(dir, sizeof dir, "%s/data_seed", tmp);
    make_run(dir, "train.data_seed = 1, 2, 3\n");
    struct rl_report *r;
    if (rl_rep_load(&r, dir) != RL_OK) tap_bail("load: %s", rl_last_error());
    int ok = r->n_groups == 6 && rl_rep_seeds(r) == 3 && r->n_cols == 2;
    for (int att = 0; att < NATT; att++)
        for (int pe = 0; pe < NPE; pe++)
            for (int j = 0; j < NL; j++) {
                struct rl_rep_cmp c;
                rl_rep_compare(r, group_of(r, pe, att), NULL, 'a', length[j], &c);
                ok &= c.mark == want_mark[att][pe][j];
            }
    rl_rep_free(r);
    char *s = report_summary(dir, NULL);
    tap_ok(ok && strstr(s, "over train.data_seed = 1, 2, 3,") &&
               strstr(s, "\n| rope | softmax | 0.910 ± 0.010 (3) * | 0.500 ± 0.100 (3) |\n"),
           "a swept train.data_seed is aggregated like train.seed (rows, marks, summary.md)");
    free(s);
}

/* A character-LM run (perplexity: lower is better) with positions.csv: the marks of the
 * headline table go to the lowest perplexity, the std takes the mean's decimals, and the
 * loss-by-position table is mean ± std (n) over the seeds of each point's target-weighted
 * range means. */
static const double lm_ppl[2][NL][NSEED] = {{{9.8, 9.9, 10.0}, {10.5, 10.6, 10.7}},
                                            {{7.3, 7.2, 7.4}, {10.4, 10.9, 10.9}}};
/* bins of length 16: [0,4) [4,8) [8,16), their targets, and loss = base + seed step */
static const int    bin0[3] = {0, 4, 8}, bin1[3] = {4, 8, 16}, bin_t[3] = {10, 30, 40};
static const double bin_loss[2][3] = {{2.0, 2.2, 2.5}, {1.8, 1.9, 3.1}};

static double lm_bin(int pe, int k, int seed) { return bin_loss[pe][k] + 0.05 * seed * (k + 1); }

static void test_lm(void)
{
    char dir[300], path[1600], text[2048], name[RL_SWEEP_NAME];
    snprintf(dir, sizeof dir, "%s/lm", tmp);
    if (rl_mkdir_p(dir) != RL_OK) tap_bail("mkdir %s", dir);
    snprintf(path, sizeof path, "%s/config.ini", dir);
    write_text(path, "[experiment]\nname = lm\n[model]\nd_model = 16\nheads = 2\nlayers = 1\n"
                     "[task]\nname = charlm\nlength = 8\npath = corpus.txt\n[eval]\n"
                     "lengths = 8, 16\n[sweep]\nmodel.pe = none, rope\ntrain.seed = 1, 2, 3\n");
    static struct rl_cfg c;
    struct rl_sweep     *sw = malloc(sizeof *sw);
    rl_cfg_defaults(&c);
    if (!sw || rl_cfg_load(&c, path) != RL_OK || rl_sweep_init(sw, &c) != RL_OK)
        tap_bail("%s: %s", path, rl_last_error());
    for (long p = 0; p < sw->n_points; p++) {
        int pe = rl_sweep_value_index(sw, p, 0), seed = rl_sweep_value_index(sw, p, 1);
        rl_sweep_point_name(sw, p, name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (rl_mkdir_p(path) != RL_OK) tap_bail("mkdir %s", path);
        snprintf(path, sizeof path, "%s/%s/config.ini", dir, name);
        write_text(path, "[task]\nname = charlm\nlength = 8\npath = corpus.txt\n");
        size_t n = (size_t)snprintf(text, sizeof text,
                                    "pe,attention,length,acc,exact,loss,ppl,ms_per_1k_tokens,"
                                    "den_le_eps,note,rope_extend,rope_factor,stride\n");
        for (int j = 0; j < NL; j++)
            n += (size_t)snprintf(text + n, sizeof text - n,
                                  "%s,softmax,%d,0.5,,%.9g,%.9g,1.5,,,none,1,0\n", pe_name[pe],
                                  length[j], log(lm_ppl[pe][j][seed]), lm_ppl[pe][j][seed]);
        snprintf(path, sizeof path, "%s/%s/results.csv", dir, name);
        write_text(path, text);
        n = (size_t)snprintf(text, sizeof text,
                             "pe,attention,length,position_start,"
                             "position_end,loss,targets,rope_extend\n");
        for (int k = 0; k < 3; k++)
            n += (size_t)snprintf(text + n, sizeof text - n, "%s,softmax,16,%d,%d,%.9g,%d,none\n",
                                  pe_name[pe], bin0[k], bin1[k], lm_bin(pe, k, seed), bin_t[k]);
        snprintf(path, sizeof path, "%s/%s/positions.csv", dir, name);
        write_text(path, text);
    }
    free(sw);
    char *s = report_summary(dir, NULL);
    /* none 9.9 +- 0.1, rope 7.3 +- 0.1 at 8; none 10.6 +- 0.1, rope 10.733 +- 0.289 at 16 */
    tap_ok(strstr(s, "\n| none | softmax | 9.900 ± 0.100 (3) | 10.60 ± 0.10 (3) * |\n") &&
               strstr(s, "\n| rope | softmax | 7.300 ± 0.100 (3) * | 10.73 ± 0.29 (3) ≈ |\n") &&
               strstr(s, "the lowest perplexity"),
           "perplexity: the lowest marked best, a difference within the spread marked ≈");
    /* position ranges 0-8 (bins 0, 1) and 8-16 (bin 2), target-weighted per point */
    char want[2][160];
    for (int pe = 0; pe < 2; pe++) {
        double m[2] = {0, 0}, q[2] = {0, 0}, v[2][NSEED];
        for (int seed = 0; seed < NSEED; seed++) {
            v[0][seed] = (lm_bin(pe, 0, seed) * bin_t[0] + lm_bin(pe, 1, seed) * bin_t[1]) /
                         (bin_t[0] + bin_t[1]);
            v[1][seed] = lm_bin(pe, 2, seed);
            for (int k = 0; k < 2; k++)
                m[k] += v[k][seed] / NSEED;
        }
        for (int k = 0; k < 2; k++)
            for (int seed = 0; seed < NSEED; seed++)
                q[k] += (v[k][seed] - m[k]) * (v[k][seed] - m[k]) / (NSEED - 1);
        snprintf(want[pe], sizeof want[pe],
                 "\n| %s | softmax | %.4f ± %.4f (3) | %.4f ± %.4f (3) |\n", pe_name[pe], m[0],
                 sqrt(q[0]), m[1], sqrt(q[1]));
    }
    tap_ok(strstr(s, "\n| pe | attention | 0–8 | 8–16 |\n") && strstr(s, want[0]) &&
               strstr(s, want[1]),
           "loss by position over seeds: mean ± std (n) of the target-weighted ranges%s",
           strstr(s, want[1]) ? "" : want[1]);
    free(s);
}

/* The 95 % intervals: over seeds, mean -+ t(0.975, n-1) std / sqrt(n) of this file's
 * float64 statistics; for one seed, the interval of the point's results.csv row, in the
 * cells of summary.md and of the printed table as "value ± half its width". */
static void test_intervals(void)
{
    char              dir[300], path[400], text[1024];
    struct rl_report *r;
    snprintf(dir, sizeof dir, "%s/seeds", tmp);
    if (rl_rep_load(&r, dir) != RL_OK) tap_bail("load: %s", rl_last_error());
    int ok = 1, checked = 0;
    for (int att = 0; att < NATT; att++)
        for (int pe = 0; pe < NPE; pe++)
            for (int j = 0; j < NL; j++) {
                double m, s, lo = 0, hi = 0;
                int    n = ref_stat(att, pe, j, &m, &s), g = group_of(r, pe, att);
                int    k = rl_rep_interval(r, g, NULL, 'a', length[j], &lo, &hi);
                double h = n == 3 ? 4.3027 * s / sqrt(3) : NAN;
                if (n == 3)
                    ok &= k == 3 && fabs(lo - (m - h)) < 1e-4 * s + 1e-12 &&
                          fabs(hi - (m + h)) < 1e-4 * s + 1e-12;
                else
                    ok &= k == 0; /* one seed, no interval in its results.csv */
                checked += n == 3;
            }
    rl_rep_free(r);
    tap_ok(ok && checked == 10, "over 3 seeds: mean -+ 4.3027 std / sqrt(3) (%d rows x lengths)",
           checked);
    snprintf(dir, sizeof dir, "%s/ci", tmp);
    if (rl_mkdir_p(dir) != RL_OK) tap_bail("mkdir %s", dir);
    snprintf(path, sizeof path, "%s/config.ini", dir);
    write_text(path, "[experiment]\nname = ci\n[model]\nattention = linear\n[task]\nname = "
                     "copy\nlength = 8\n[eval]\nlengths = 8, 16\n");
    snprintf(text, sizeof text,
             "pe,attention,length,acc,exact,loss,ppl,ms_per_1k_tokens,den_le_eps,note,"
             "rope_extend,rope_factor,stride,acc_lo,acc_hi,exact_lo,exact_hi,loss_lo,loss_hi,"
             "ppl_lo,ppl_hi,targets,sequences\n"
             "rope,linear,8,0.9,0.5,1.2,%.9g,1,0,,none,1,0,0.85,0.95,0.3,0.7,1.15,1.25,%.9g,%.9g,"
             "400,100\n"
             "rope,linear,16,0.4,0.1,2.2,%.9g,1,0,,none,1,0,0.38,0.42,0.05,0.2,2.1,2.3,%.9g,%.9g,"
             "400,50\n",
             exp(1.2), exp(1.15), exp(1.25), exp(2.2), exp(2.1), exp(2.3));
    snprintf(path, sizeof path, "%s/results.csv", dir);
    write_text(path, text);
    FILE *table = tmpfile();
    char *s     = report_summary(dir, table), line[512];
    tap_ok(strstr(s, "\n| rope | linear | 0.900 ± 0.050 | 0.400 ± 0.020 |\n") &&
               strstr(s, "\n| rope | linear | 1.2000 ± 0.0500 | 2.2000 ± 0.1000 |\n") &&
               strstr(s, "\n| rope | linear | 0.500 ± 0.200 | 0.100 [0.050, 0.200] |\n") &&
               strstr(s, "half its 95 % interval over the evaluated tokens"),
           "one seed: accuracy, loss and exact match ± half their intervals ([low, high] when "
           "far from symmetric), explained");
    free(s);
    int head = 0, row = 0;
    rewind(table);
    while (fgets(line, sizeof line, table)) {
        head |= strstr(line, "(training length 8), ± half the 95 % interval\n") != NULL;
        row |=
            !strncmp(line, "rope  linear ", 13) && strstr(line, " 0.900 ± 0.050  0.400 ± 0.020\n");
    }
    fclose(table);
    tap_ok(head && row, "the printed table: the same cells, the heading says what ± is");
}

/* rope_extend: one table with the method as a row key beside the encodings without RoPE,
 * the marks and the best per length over every row of an attention kind. */
static void test_methods(void)
{
    /* acc[pe][method][length][seed]: rope under none and pi, alibi under none only */
    static const double a[2][2][NL][2] = {
        {{{0.80, 0.82}, {0.30, 0.32}}, {{0.70, 0.72}, {0.60, 0.62}}},
        {{{0.90, 0.92}, {0.50, 0.40}}, {{NAN}}}};
    static const char *const pes[2] = {"rope", "alibi"}, *const ms[2] = {"none", "pi"};
    char dir[300], path[500], text[1024];
    snprintf(dir, sizeof dir, "%s/methods", tmp);
    for (int pe = 0; pe < 2; pe++)
        for (int seed = 1; seed <= 2; seed++) {
            snprintf(path, sizeof path, "%s/pe=%s,seed=%d", dir, pes[pe], seed);
            if (rl_mkdir_p(path) != RL_OK) tap_bail("mkdir %s", path);
            size_t n = (size_t)snprintf(text, sizeof text,
                                        "pe,attention,length,acc,exact,loss,ppl,ms_per_1k_"
                                        "tokens,den_le_eps,note,rope_extend,rope_factor,stride\n");
            for (int m = 0; m < 2 - pe; m++)
                for (int j = 0; j < NL; j++)
                    n += (size_t)snprintf(text + n, sizeof text - n,
                                          "%s,softmax,%d,%.6g,0,1,2.7,1,,,%s,%d,0\n", pes[pe],
                                          length[j], a[pe][m][j][seed - 1], ms[m], m ? 2 : 1);
            snprintf(path, sizeof path, "%s/pe=%s,seed=%d/results.csv", dir, pes[pe], seed);
            write_text(path, text);
        }
    snprintf(path, sizeof path, "%s/config.ini", dir);
    write_text(path, "[experiment]\nname = methods\n[task]\nname = copy\nlength = 8\n[eval]\n"
                     "lengths = 8, 16\nrope_extend = none, pi\n[sweep]\nmodel.pe = rope, alibi\n"
                     "train.seed = 1, 2\n");
    char *s = report_summary(dir, NULL);
    tap_ok(
        strstr(s, "\n| pe | attention | rope_extend | 8 | 16 |\n") &&
            strstr(s, "\n| rope | softmax | none | 0.810 ± 0.014 (2) | 0.310 ± 0.014 (2) |\n") &&
            strstr(s, "\n| rope | softmax | pi | 0.710 ± 0.014 (2) | 0.610 ± 0.014 (2) * |\n") &&
            strstr(s, "\n| alibi | softmax | none | 0.910 ± 0.014 (2) * | 0.450 ± 0.071 (2) |\n") &&
            !strstr(s, "| alibi | softmax | pi |") && !strstr(s, "rope_extend = "),
        "one table: a row per RoPE method, ALiBi once; marks over all rows of the kind");
    tap_ok(strstr(s, "\nBest per length (the highest accuracy): softmax — 8: alibi/none 0.910, "
                     "16: rope/pi 0.610.\n") != NULL,
           "the best per length, named with its method");
    free(s);
}

int main(void)
{
    tap_scratch(tmp, sizeof tmp, "t_report");
    test_statistics();
    test_summary();
    test_single_seed();
    test_data_seed();
    test_lm();
    test_intervals();
    test_methods();
    tap_scratch_remove(tmp);
    return tap_done();
}
