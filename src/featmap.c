/* featmap.c -- linear-attention feature maps and their elementwise backward (featmap.h). */
#include "config.h"
#include "featmap.h"

#include <math.h>

static void softmax_row(float *p, const float *x, int d)
{
    float mx = x[0];
    for (int j = 1; j < d; j++) mx = x[j] > mx ? x[j] : mx;
    double s = 0.0;
    for (int j = 0; j < d; j++) {
        p[j] = expf(x[j] - mx);
        s += p[j];
    }
    float inv = (float)(1.0 / s);
    for (int j = 0; j < d; j++) p[j] *= inv;
}

void rl_fmap_q_forward(float *phi, const float *x, int N, int d, enum rl_fmap f)
{
    for (int n = 0; n < N; n++) {
        const float *xr = x + (size_t)n * d;
        float       *pr = phi + (size_t)n * d;
        if (f == RL_FMAP_ELU1)
            for (int j = 0; j < d; j++) pr[j] = xr[j] > 0 ? xr[j] + 1.0f : expf(xr[j]);
        else
            softmax_row(pr, xr, d);
    }
}

void rl_fmap_q_backward(float *dx, const float *dphi, const float *x, const float *phi, int N,
                        int d, enum rl_fmap f)
{
    for (int n = 0; n < N; n++) {
        const float *g = dphi + (size_t)n * d, *xr = x + (size_t)n * d, *pr = phi + (size_t)n * d;
        float       *o = dx + (size_t)n * d;
        if (f == RL_FMAP_ELU1) {
            /* phi = x + 1 (x > 0), exp(x) otherwise: phi' = 1 or exp(x) = phi */
            for (int j = 0; j < d; j++) o[j] = xr[j] > 0 ? g[j] : g[j] * pr[j];
        } else {
            /* softmax: dx_j = p_j (g_j - sum_i g_i p_i) */
            double dot = 0.0;
            for (int j = 0; j < d; j++) dot += (double)g[j] * pr[j];
            for (int j = 0; j < d; j++) o[j] = pr[j] * (g[j] - (float)dot);
        }
    }
}

void rl_fmap_k_forward(float *phi, float *colmax, const float *x, int N, int d, enum rl_fmap f)
{
    if (f == RL_FMAP_SOFTMAX) {
        for (int j = 0; j < d; j++) colmax[j] = -INFINITY;
        for (int n = 0; n < N; n++)
            for (int j = 0; j < d; j++) {
                float v   = x[(size_t)n * d + j];
                colmax[j] = v > colmax[j] ? v : colmax[j];
            }
        for (int n = 0; n < N; n++)
            for (int j = 0; j < d; j++)
                phi[(size_t)n * d + j] = expf(x[(size_t)n * d + j] - colmax[j]);
        return;
    }
    size_t total = (size_t)N * d;
    for (size_t i = 0; i < total; i++) {
        float v = x[i];
        phi[i]  = f == RL_FMAP_EXP ? expf(v) : (v > 0 ? v + 1.0f : expf(v));
    }
}

void rl_fmap_k_backward(float *dx, const float *dphi, const float *x, const float *phi, int N,
                        int d, enum rl_fmap f)
{
    size_t total = (size_t)N * d;
    for (size_t i = 0; i < total; i++)
        dx[i] = (f == RL_FMAP_ELU1 && x[i] > 0) ? dphi[i] : dphi[i] * phi[i];
}
