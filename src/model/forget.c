/* forget.c -- the forget gate's projection and its backward; see forget.h. */
#include "config.h"
#include "forget.h"

#include <math.h>
#include <stddef.h>

/* log sigmoid(a) = -softplus(-a) = -(max(-a, 0) + log1p(exp(-|a|))): no overflow for any a,
 * and exactly 0 only where sigmoid(a) rounds to 1 in double */
static double log_sigmoid(double a) { return -(fmax(-a, 0.0) + log1p(exp(-fabs(a)))); }

void rl_forget_forward(float *logf, const float *x, const float *w, const float *b, int B, int N,
                       int H, int D)
{
    for (int bi = 0; bi < B; bi++)
        for (int n = 0; n < N; n++) {
            const float *xr = x + ((size_t)bi * N + n) * D;
            for (int h = 0; h < H; h++) {
                const float *wh = w + (size_t)h * D;
                double       a  = (double)b[h];
                for (int c = 0; c < D; c++)
                    a += (double)wh[c] * (double)xr[c];
                logf[((size_t)bi * H + h) * N + n] = (float)log_sigmoid(a);
            }
        }
}

void rl_forget_backward_act(float *dlogf, const float *logf, int B, int N, int H)
{
    /* lambda = log sigmoid(a): d lambda / d a = sigmoid(-a) = 1 - exp(lambda) */
    const size_t n = (size_t)B * H * N;
    for (size_t i = 0; i < n; i++)
        dlogf[i] = (float)((double)dlogf[i] * -expm1((double)logf[i]));
}

void rl_forget_backward_dx(float *dx, const float *da, const float *w, int B, int N, int H, int D)
{
    /* a_h[m] = wf_h . x_m + bf_h */
    for (int bi = 0; bi < B; bi++)
        for (int n = 0; n < N; n++) {
            float *dxr = dx + ((size_t)bi * N + n) * D;
            for (int h = 0; h < H; h++) {
                const float  g  = da[((size_t)bi * H + h) * N + n];
                const float *wh = w + (size_t)h * D;
                for (int c = 0; c < D; c++)
                    dxr[c] += g * wh[c];
            }
        }
}

void rl_forget_backward_dw(float *dw, float *db, const float *da, const float *x, int B, int N,
                           int H, int D)
{
    for (int bi = 0; bi < B; bi++)
        for (int n = 0; n < N; n++) {
            const float *xr = x + ((size_t)bi * N + n) * D;
            for (int h = 0; h < H; h++) {
                const float g  = da[((size_t)bi * H + h) * N + n];
                float      *wh = dw + (size_t)h * D;
                for (int c = 0; c < D; c++)
                    wh[c] += g * xr[c];
                db[h] += g;
            }
        }
}
