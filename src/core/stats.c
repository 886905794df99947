/* stats.c -- 95 % intervals: t quantile, clustered means, Wilson; see stats.h. */
#include "config.h"
#include "stats.h"

#include <math.h>

double rl_t975(double df)
{
    static const double table[30] = {
        12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
        2.2010,  2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
        2.0796,  2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423};
    if (!(df >= 1)) return NAN;
    if (df <= 30 && df == floor(df)) return table[(int)df - 1];
    const double z = 1.959963984540054, z2 = z * z, d = df;
    return z + (z2 + 1) * z / (4 * d) + ((5 * z2 + 16) * z2 + 3) * z / (96 * d * d) +
           (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / (384 * d * d * d);
}

void rl_cluster_add(struct rl_cluster_sums *s, double n_c, double y_c)
{
    if (n_c <= 0) return;
    s->clusters += 1;
    s->n += n_c, s->y += y_c;
    s->n2 += n_c * n_c, s->ny += n_c * y_c, s->y2 += y_c * y_c;
}

double rl_cluster_halfwidth(const struct rl_cluster_sums *s)
{
    const double C = s->clusters;
    if (C < 2 || s->n <= 0) return NAN;
    const double m  = s->y / s->n;
    double       ss = s->y2 - 2 * m * s->ny + m * m * s->n2; /* sum (y_c - m n_c)^2 */
    if (ss < 0) ss = 0;                                      /* rounding of an exact 0 */
    return rl_t975(C - 1) * sqrt(C / (C - 1) * ss) / s->n;
}

void rl_cluster_wilson(const struct rl_cluster_sums *s, double *lo, double *hi)
{
    const double C = s->clusters;
    if (C < 2 || s->n <= 0) {
        *lo = *hi = NAN;
        return;
    }
    const double p  = s->y / s->n;
    double       ss = s->y2 - 2 * p * s->ny + p * p * s->n2;
    double       v = (ss > 0 ? ss : 0) * C / (C - 1) / (s->n * s->n), neff = C;
    if (p > 0 && p < 1 && v > 0) neff = fmin(s->n, fmax(1, p * (1 - p) / v));
    rl_wilson95(p * neff, neff, lo, hi);
}

void rl_wilson95(double k, double n, double *lo, double *hi)
{
    if (!(n > 0)) {
        *lo = *hi = NAN;
        return;
    }
    const double z = 1.959963984540054, p = k / n, z2n = z * z / n;
    const double mid = (p + z2n / 2) / (1 + z2n);
    const double h   = z * sqrt(p * (1 - p) / n + z2n / (4 * n)) / (1 + z2n);
    *lo = fmax(0, mid - h), *hi = fmin(1, mid + h);
}

double rl_mean_halfwidth(int n, double sd)
{
    return n < 2 ? NAN : rl_t975(n - 1) * sd / sqrt((double)n);
}
