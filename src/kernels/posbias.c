/* posbias.c -- T5 relative buckets and ALiBi slopes. */
#include "config.h"
#include "posbias.h"

#include <math.h>
#include <stdlib.h>

int rl_t5_bucket(int r, int bidirectional, int num_buckets, int max_distance)
{
    int  ret = 0, nb;
    long a;
    if (bidirectional) {
        nb = num_buckets / 2;
        if (r > 0) ret = nb;
        a = labs((long)r);
    } else {
        nb = num_buckets;
        a  = r < 0 ? -(long)r : 0;
    }
    int max_exact = nb / 2;
    if (a < max_exact) return ret + (int)a;
    /* float arithmetic exactly as the T5 reference (Raffel et al. 2020) */
    long big = max_exact + (long)(logf((float)a / (float)max_exact) /
                                  (float)log((double)max_distance / max_exact) *
                                  (float)(nb - max_exact));
    return ret + (int)(big < nb - 1 ? big : nb - 1);
}

void rl_alibi_slopes(double *slopes, int H)
{
    int P = 1;
    while (P * 2 <= H) P *= 2;
    for (int h = 0; h < P; h++) slopes[h] = pow(2.0, -8.0 * (h + 1) / P);
    /* remaining heads: every other slope of 2P, i.e. 2^(-8(2j+1)/(2P)) */
    for (int j = 0; P + j < H; j++) slopes[P + j] = pow(2.0, -8.0 * (2 * j + 1) / (2.0 * P));
}

void rl_t5_rel(float *rel, const float *B, int h, int N, int nb, int max_distance, int causal)
{
    for (int r = -(N - 1); r <= N - 1; r++)
        rel[r + N - 1] = B[(size_t)h * nb + rl_t5_bucket(r, !causal, nb, max_distance)];
}

void rl_t5_rel_backward(float *dB, const double *drel, int h, int N, int nb, int max_distance,
                        int causal)
{
    for (int r = -(N - 1); r <= N - 1; r++)
        dB[(size_t)h * nb + rl_t5_bucket(r, !causal, nb, max_distance)] += (float)drel[r + N - 1];
}

void rl_alibi_rel(float *rel, double slope, int N)
{
    for (int r = -(N - 1); r <= N - 1; r++) rel[r + N - 1] = (float)(-slope * abs(r));
}
