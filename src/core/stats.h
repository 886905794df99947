/* stats.h -- the 95 % intervals ropelab reports: Student's t quantile, the interval of a
 * mean over tokens that come in clusters (the tokens of one sequence are not independent),
 * the Wilson interval of a proportion, and the t interval of a mean over seeds.
 *
 * A mean over tokens m = sum_c y_c / sum_c n_c (cluster c: a sequence or window with n_c
 * scored tokens whose values sum to y_c) has the cluster-robust variance
 *     Var(m) = C/(C-1) * sum_c (y_c - m n_c)^2 / (sum_c n_c)^2
 * (the ratio estimator of survey sampling; with one token per cluster it is the sample
 * variance of the tokens over their number), and the interval m +- t(0.975, C-1) sqrt(Var).
 * The sums are accumulated one cluster at a time in struct rl_cluster_sums. */
#ifndef RL_STATS_H
#define RL_STATS_H

/* The 0.975 quantile of Student's t with df >= 1 degrees of freedom (1.96 as df grows):
 * a table to 30, the Cornish-Fisher expansion beyond (error < 1e-5). */
double rl_t975(double df);

struct rl_cluster_sums {
    double clusters;   /* C */
    double n, y;       /* sum n_c, sum y_c */
    double n2, ny, y2; /* sum n_c^2, sum n_c y_c, sum y_c^2 */
};

/* Add cluster (n_c tokens, values summing to y_c); n_c = 0 adds nothing. */
void rl_cluster_add(struct rl_cluster_sums *s, double n_c, double y_c);
/* The half-width of the 95 % interval of the mean y / n; NAN with fewer than 2 clusters. */
double rl_cluster_halfwidth(const struct rl_cluster_sums *s);

/* The 95 % interval of a proportion over tokens in clusters (y_c: the cluster's hits):
 * the Wilson score interval at the effective sample size n_eff = p (1 - p) / Var(p), Var
 * the clustered variance above (at most the number of tokens; the number of clusters when
 * p is 0 or 1, where that variance is 0) -- inside [0, 1] and never of zero width, where
 * mean +- t SE would claim [1, 1] for a sample without a miss.  NAN ends with fewer than 2
 * clusters. */
void rl_cluster_wilson(const struct rl_cluster_sums *s, double *lo, double *hi);

/* The Wilson score interval (95 %) of k successes in n trials; NAN ends for n = 0. */
void rl_wilson95(double k, double n, double *lo, double *hi);

/* The half-width of the 95 % t interval of a mean of n values with sample standard
 * deviation sd: t(0.975, n-1) sd / sqrt(n); NAN for n < 2. */
double rl_mean_halfwidth(int n, double sd);

#endif
