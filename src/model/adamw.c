/* adamw.c -- AdamW, schedule, clipping; see adamw.h for the exact update order. */
#include "config.h"
#include "adamw.h"
#include "../core/threads.h"

#include <math.h>

void rl_adamw_opts_default(struct rl_adamw_opts *o)
{
    o->lr           = 1e-3;
    o->beta1        = 0.9;
    o->beta2        = 0.999;
    o->eps          = 1e-8;
    o->weight_decay = 0.01;
}

double rl_lr_schedule(int64_t s, double lr, int warmup, double min_lr_ratio, int64_t total_steps)
{
    const int64_t T = total_steps - 1, W = warmup;
    if (s < W) return lr * (double)(s + 1) / (double)W;
    if (T <= W) return lr;
    if (s > T) s = T;
    const double r = min_lr_ratio;
    return lr * (r + (1.0 - r) * 0.5 *
                         (1.0 + cos(3.14159265358979323846 * (double)(s - W) / (double)(T - W))));
}

double rl_grad_norm(const float *g, size_t n)
{
    double s = 0.0;
#pragma omp simd reduction(+ : s)
    for (size_t i = 0; i < n; i++)
        s += (double)g[i] * (double)g[i];
    return sqrt(s);
}

void rl_clip(float *g, size_t n, double c, double norm)
{
    if (!(c > 0.0)) return;
    const double f = c / (norm + 1e-6);
    if (f >= 1.0) return;
    const float ff = (float)f;
#pragma omp parallel for simd schedule(static) num_threads(rl_threads_get())
    for (size_t i = 0; i < n; i++)
        g[i] *= ff;
}

void rl_adamw_update(float *p, const float *g, float *m, float *v, size_t n, int decay, double lr_t,
                     const struct rl_adamw_opts *o, int64_t t)
{
    const double bc1 = 1.0 - pow(o->beta1, (double)t), bc2 = 1.0 - pow(o->beta2, (double)t);
    const float  keep = (float)(1.0 - lr_t * (decay ? o->weight_decay : 0.0));
    const float  b1 = (float)o->beta1, b2 = (float)o->beta2;
    const float  a1 = (float)(1.0 - o->beta1), a2 = (float)(1.0 - o->beta2);
    const float  step = (float)(lr_t / bc1), sq2 = (float)sqrt(bc2), eps = (float)o->eps;
#pragma omp parallel for simd schedule(static) num_threads(rl_threads_get())
    for (size_t i = 0; i < n; i++) {
        float pi = p[i] * keep;                  /* 1. decoupled decay */
        float mi = b1 * m[i] + a1 * g[i];        /* 2. first moment */
        float vi = b2 * v[i] + a2 * g[i] * g[i]; /* 3. second moment */
        float dn = sqrtf(vi) / sq2 + eps;        /* 4. bias-corrected denominator */
        p[i]     = pi - step * (mi / dn);        /* 5. step (torch addcdiv) */
        m[i]     = mi;
        v[i]     = vi;
    }
}

void rl_adamw_step(float *params, const float *grads, float *m, float *v,
                   const struct rl_tensor_info *tensors, int n_tensors, double lr_t,
                   const struct rl_adamw_opts *o, int64_t t)
{
    for (int i = 0; i < n_tensors; i++) {
        const struct rl_tensor_info *ti = &tensors[i];
        rl_adamw_update(params + ti->offset, grads + ti->offset, m + ti->offset, v + ti->offset,
                        ti->count, ti->decay, lr_t, o, t);
    }
}
