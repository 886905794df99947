/* attn_decay.c -- causal ALiBi linear attention by the decayed scan.
 *
 * With exp(rel[(n-m)+N-1]) = gamma^(m-n) for n <= m (gamma = exp(-slope)):
 *   S_m = gamma S_{m-1} + B_m v_m^T   (d x dv),   z_m = gamma z_{m-1} + B_m   (d)
 *   o_m = A_m^T S_m / (A_m . z_m + eps)
 * with A, B the feature maps of attn_toeplitz.c (for softmax, A = phi_q / Z_m with the
 * unweighted prefix normaliser Z_m: the decay acts on the sums, not on Z).  The states
 * are double; O(N d dv) per pass.  The same sums as the FFT path, without its rounding
 * spread: each row is a sum of positive terms. */
#include "config.h"
#include "attn_toeplitz_impl.h"

#include <string.h>

/* t->vT holds v as row-major doubles on the scan path (the FFT path keeps v^T there) */
static const double *v_double(rl_toeplitz *t, const float *v)
{
    for (size_t i = 0; i < (size_t)t->N * t->dv; i++)
        t->vT[i] = v[i];
    return t->vT;
}

void rl_attn_decay_forward(rl_toeplitz *t, float *out, float *den, long *n_bad,
                           const struct rl_lin_head *h, double gamma, const struct rl_attn_opts *o)
{
    const int N = h->N, d = h->d, dv = h->dv;
    RL_ASSERT(N == t->N && d == t->d && dv == t->dv);
    rl_toeplitz_features(t, h->q, h->k, o->fmap, 1);
    const double *vd = v_double(t, h->v);
    memset(t->S, 0, (size_t)d * dv * sizeof(double));
    memset(t->z, 0, (size_t)d * sizeof(double));
    for (int m = 0; m < N; m++) {
        const double *a = t->A + (size_t)m * d, *b = t->B + (size_t)m * d;
        const double *vr = vd + (size_t)m * dv;
        double       *nr = t->num + (size_t)m * dv, dn = 0.0;
        memset(nr, 0, (size_t)dv * sizeof(double));
        for (int f = 0; f < d; f++) { /* decay_step fused with num_m = A_m^T S_m */
            double *s = t->S + (size_t)f * dv, af = a[f], bf = b[f];
#pragma omp simd
            for (int j = 0; j < dv; j++) {
                s[j] = gamma * s[j] + bf * vr[j];
                nr[j] += af * s[j];
            }
            t->z[f] = gamma * t->z[f] + bf;
            dn += af * t->z[f];
        }
        t->den[m] = dn;
    }
    rl_toeplitz_finish(t, out, den, n_bad, o->eps);
}

/* Pass 1 (forward in m): recompute S_m, z_m and take
 * dA[m,f] = sum_j dnum[m,j] S_m[f,j] + dden[m] z_m[f]
 * (differentiates num_m = A_m^T S_m, den_m = A_m . z_m). */
static void decay_dA(rl_toeplitz *t, const double *v, double gamma)
{
    int N = t->N, d = t->d, dv = t->dv;
    memset(t->S, 0, (size_t)d * dv * sizeof(double));
    memset(t->z, 0, (size_t)d * sizeof(double));
    for (int m = 0; m < N; m++) {
        const double *g = t->dnum + (size_t)m * dv, *b = t->B + (size_t)m * d;
        const double *vr = v + (size_t)m * dv;
        for (int f = 0; f < d; f++) {
            double *s = t->S + (size_t)f * dv, bf = b[f], acc;
            t->z[f] = gamma * t->z[f] + bf;
            acc     = t->dden[m] * t->z[f];
#pragma omp simd reduction(+ : acc)
            for (int j = 0; j < dv; j++) {
                s[j] = gamma * s[j] + bf * vr[j];
                acc += g[j] * s[j];
            }
            t->dA[(size_t)m * d + f] = acc;
        }
    }
}

/* Pass 2 (reverse): G_m = dL/dS_m = A_m dnum_m^T + gamma G_{m+1} (S_m feeds num_m and
 * S_{m+1}), g_m = A_m dden_m + gamma g_{m+1} likewise for z; then from
 * S_m = gamma S_{m-1} + B_m v_m^T:  dB_m = G_m v_m + g_m,  dv_m = G_m^T B_m. */
static void decay_reverse(rl_toeplitz *t, float *dv_out, const double *v, double gamma)
{
    int N = t->N, d = t->d, dv = t->dv;
    memset(t->dS, 0, (size_t)d * dv * sizeof(double));
    memset(t->dz, 0, (size_t)d * sizeof(double));
    for (int m = N - 1; m >= 0; m--) {
        const double *a = t->A + (size_t)m * d, *g = t->dnum + (size_t)m * dv;
        const double *b   = t->B + (size_t)m * d;
        const double *vr  = v + (size_t)m * dv;
        double       *dvr = t->num + (size_t)m * dv; /* dv accumulates in num */
        memset(dvr, 0, (size_t)dv * sizeof(double));
        for (int f = 0; f < d; f++) {
            double *G = t->dS + (size_t)f * dv, acc;
            t->dz[f]  = gamma * t->dz[f] + a[f] * t->dden[m];
            acc       = t->dz[f];
#pragma omp simd reduction(+ : acc)
            for (int j = 0; j < dv; j++) {
                G[j] = gamma * G[j] + a[f] * g[j];
                acc += G[j] * vr[j];
                dvr[j] += G[j] * b[f];
            }
            t->dB[(size_t)m * d + f] = acc;
        }
        for (int j = 0; j < dv; j++)
            dv_out[(size_t)m * dv + j] = (float)dvr[j];
    }
}

void rl_attn_decay_backward(rl_toeplitz *t, const struct rl_lin_grads *g, const float *dout,
                            const float *out, const float *den, const struct rl_lin_head *h,
                            double gamma, const struct rl_attn_opts *o)
{
    RL_ASSERT(h->N == t->N && h->d == t->d && h->dv == t->dv);
    rl_toeplitz_features(t, h->q, h->k, o->fmap, 1);
    rl_toeplitz_dout(t, dout, out, den);
    const double *vd = v_double(t, h->v);
    decay_dA(t, vd, gamma);
    decay_reverse(t, g->dv, vd, gamma);
    rl_toeplitz_features_backward(t, g->dq, g->dk, h->q, h->k, o->fmap, 1);
}
