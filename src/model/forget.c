/* forget.c -- the forget gate's projection and its backward; see forget.h. */
#include "config.h"
#include "forget.h"
#include "heads.h"

#include <math.h>
#include <stddef.h>

/* log sigmoid(a) = -softplus(-a) = -(max(-a, 0) + log1p(exp(-|a|))): no overflow for any a,
 * and exactly 0 only where sigmoid(a) rounds to 1 in double */
static double log_sigmoid(double a) { return -(fmax(-a, 0.0) + log1p(exp(-fabs(a)))); }

void rl_forget_forward_rows(float *logf, const float *x, const float *w, const float *b,
                            const struct rl_forget_rows *r)
{
    const int N = r->N, H = r->H, D = r->D;
    for (long t = r->t0; t < r->t0 + r->n; t++) {
        const float *xr = x + (size_t)t * D;
        for (int h = 0; h < H; h++) {
            const float *wh = w + (size_t)h * D;
            double       a  = (double)b[h];
            for (int c = 0; c < D; c++)
                a += (double)wh[c] * (double)xr[c];
            logf[rl_heads_offset(t, h, N, H, 1)] = (float)log_sigmoid(a);
        }
    }
}

void rl_forget_backward_rows(float *dx, float *dw, float *db, float *dlogf, const float *logf,
                             const float *x, const float *w, const struct rl_forget_rows *r)
{
    const int N = r->N, H = r->H, D = r->D;
    for (long t = r->t0; t < r->t0 + r->n; t++) {
        const float *xr  = x + (size_t)t * D;
        float       *dxr = dx + (size_t)(t - r->t0) * D;
        for (int h = 0; h < H; h++) {
            /* lambda = log sigmoid(a): d lambda / d a = sigmoid(-a) = 1 - exp(lambda) */
            const size_t i   = rl_heads_offset(t, h, N, H, 1);
            const float  g   = (float)((double)dlogf[i] * -expm1((double)logf[i]));
            const float *wh  = w + (size_t)h * D;
            float       *dwh = dw + (size_t)h * D;
            dlogf[i]         = g;
            /* a_h[m] = wf_h . x_m + bf_h */
            for (int c = 0; c < D; c++)
                dxr[c] += g * wh[c];
            for (int c = 0; c < D; c++)
                dwh[c] += g * xr[c];
            db[h] += g;
        }
    }
}
