/* t_stats.c -- the 95 % intervals of core/stats.h: Student's t quantile against printed
 * table values (both sides of the switch from the table to the expansion at 30), the
 * clustered interval of a mean over tokens against a direct two-pass float64 evaluation
 * of its formula on random clusters, the textbook t interval it must equal when every
 * cluster is one token, and that clustering widens the interval of correlated tokens;
 * the Wilson interval against published values and at a clustered sample's effective
 * size, and the t interval of a mean over seeds. */
#include "config.h"
#include "core/rng.h"
#include "core/stats.h"
#include "tap.h"

#include <math.h>
#include <stdio.h>

static void test_t975(void)
{
    /* t(0.975, df), as printed in statistics tables */
    static const double df[]   = {1, 2, 5, 10, 30, 31, 40, 60, 120};
    static const double want[] = {12.7062, 4.3027, 2.5706, 2.2281, 2.0423,
                                  2.0395,  2.0211, 2.0003, 1.9799};
    double              worst  = 0;
    for (int i = 0; i < 9; i++)
        worst = fmax(worst, fabs(rl_t975(df[i]) - want[i]));
    tap_ok(worst < 1e-4, "t(0.975, df) for df 1 ... 120 within 1e-4 of the tables (worst %.2g)",
           worst);
    int down = 1;
    for (int d = 1; d < 2000; d++)
        down &= rl_t975(d + 1) < rl_t975(d);
    tap_ok(down && fabs(rl_t975(1e7) - 1.959964) < 1e-5 && isnan(rl_t975(0)),
           "it falls with df to the normal 1.959964; df < 1 has none");
}

/* The clustered half-width computed here in two passes (the mean first, then the squared
 * deviations of the cluster sums), float64. */
static double direct(const double *n, const double *y, int C)
{
    double N = 0, Y = 0, ss = 0;
    for (int c = 0; c < C; c++)
        N += n[c], Y += y[c];
    for (int c = 0; c < C; c++)
        ss += (y[c] - Y / N * n[c]) * (y[c] - Y / N * n[c]);
    return rl_t975(C - 1) * sqrt((double)C / (C - 1) * ss) / N;
}

static void test_clusters(void)
{
    enum { C = 200 };
    struct rl_rng          r;
    struct rl_cluster_sums s = {0}, one = {0}, tok = {0};
    double                 n[C], y[C], sx = 0, sxx = 0;
    rl_rng_seed(&r, 7);
    for (int c = 0; c < C; c++) { /* sequences of 1 ... 64 tokens, losses around 2 */
        n[c] = 1 + (double)rl_rng_below(&r, 64), y[c] = 0;
        for (int k = 0; k < (int)n[c]; k++)
            y[c] += 2 + rl_rng_normal(&r);
        rl_cluster_add(&s, n[c], y[c]);
    }
    double h = rl_cluster_halfwidth(&s), ref = direct(n, y, C);
    tap_ok(fabs(h - ref) <= 1e-12 * ref,
           "clustered half-width = its formula evaluated directly "
           "(%.9g vs %.9g)",
           h, ref);
    for (int c = 0; c < C; c++) { /* one token per cluster: the textbook t interval */
        double x = y[c] / n[c];
        rl_cluster_add(&one, 1, x);
        sx += x, sxx += x * x;
    }
    double sd = sqrt((sxx - sx * sx / C) / (C - 1)), want = rl_t975(C - 1) * sd / sqrt(C);
    tap_ok(fabs(rl_cluster_halfwidth(&one) - want) <= 1e-9 * want,
           "one token per cluster: t(0.975, C-1) sd / sqrt(C) (%.9g vs %.9g)",
           rl_cluster_halfwidth(&one), want);
    /* tokens that share their sequence's value: as clusters the interval is that of C
     * values; taken one by one (as if independent) it would be about sqrt(32) narrower */
    for (int c = 0; c < C; c++)
        for (int k = 0; k < 32; k++)
            rl_cluster_add(&tok, 1, y[c] / n[c]);
    struct rl_cluster_sums seq = {0};
    for (int c = 0; c < C; c++)
        rl_cluster_add(&seq, 32, 32 * y[c] / n[c]);
    double ratio = rl_cluster_halfwidth(&seq) / rl_cluster_halfwidth(&tok);
    tap_ok(ratio > 5.4 && ratio < 5.9,
           "correlated tokens: clustering widens the interval "
           "sqrt(32)-fold (%.3f)",
           ratio);
    struct rl_cluster_sums few = {0};
    rl_cluster_add(&few, 10, 20);
    rl_cluster_add(&few, 0, 0);
    tap_ok(isnan(rl_cluster_halfwidth(&few)) && few.clusters == 1,
           "one cluster (an empty one is not counted): no interval");
}

static void test_cluster_wilson(void)
{
    struct rl_cluster_sums all = {0}, one = {0}, half = {0};
    double                 lo, hi, wl, wh;
    for (int c = 0; c < 128; c++) {
        rl_cluster_add(&all, 16, 16);              /* every token of 128 sequences right */
        rl_cluster_add(&one, 1, c % 4 == 0);       /* one token each: 32 of 128 */
        rl_cluster_add(&half, 16, c % 2 ? 16 : 0); /* whole sequences right or wrong */
    }
    rl_cluster_wilson(&all, &lo, &hi);
    rl_wilson95(128, 128, &wl, &wh);
    tap_ok(fabs(lo - wl) < 1e-12 && hi == 1 && lo < 0.98,
           "no miss in 128 sequences: [%.4f, 1], the Wilson interval of 128 of 128, not [1, 1]",
           lo);
    rl_cluster_wilson(&one, &lo, &hi);
    rl_wilson95(32 * 127.0 / 128, 127, &wl, &wh); /* the sample variance's n - 1 */
    tap_ok(fabs(lo - wl) < 1e-9 && fabs(hi - wh) < 1e-9,
           "one token per sequence: the Wilson interval of 32 of 128 at n - 1 = 127");
    rl_cluster_wilson(&half, &lo, &hi);
    rl_wilson95(64, 128, &wl, &wh);
    tap_ok(fabs(lo - wl) < 1e-3 && fabs(hi - wh) < 1e-3,
           "sequences wholly right or wrong: as many trials as sequences ([%.4f, %.4f] vs "
           "[%.4f, %.4f])",
           lo, hi, wl, wh);
}

static void test_wilson(void)
{
    double lo, hi, lo5, hi5, lo9, hi9;
    rl_wilson95(0, 10, &lo, &hi);
    rl_wilson95(5, 10, &lo5, &hi5);
    rl_wilson95(9, 10, &lo9, &hi9);
    tap_ok(lo == 0 && fabs(hi - 0.27753) < 1e-5 && fabs(lo5 - 0.23659) < 1e-5 &&
               fabs(hi5 - 0.76341) < 1e-5 && fabs(lo9 - 0.59585) < 1e-5 &&
               fabs(hi9 - 0.98212) < 1e-5,
           "Wilson intervals of 0, 5 and 9 of 10 as published ([0, 0.2775], [0.2366, 0.7634], "
           "[0.5958, 0.9821])");
    rl_wilson95(0, 0, &lo, &hi);
    tap_ok(isnan(lo) && isnan(hi), "no trials: no interval");
    tap_ok(fabs(rl_mean_halfwidth(3, 0.01) - 4.3027 * 0.01 / sqrt(3)) < 1e-6 &&
               isnan(rl_mean_halfwidth(1, 0.5)),
           "three seeds: t(0.975, 2) std / sqrt(3); one seed: none");
}

int main(void)
{
    test_t975();
    test_clusters();
    test_wilson();
    test_cluster_wilson();
    return tap_done();
}
