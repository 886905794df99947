/* vexp.c -- the out-of-line, vectorised form of rl_expf_inline (see vexp.h). */
#include "config.h"
#include "vexp.h"

RL_SIMD_CLONES void rl_vexpf(float *y, const float *x, size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++)
        y[i] = rl_expf_inline(x[i]);
}
