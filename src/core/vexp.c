/* vexp.c -- the out-of-line, vectorised forms of rl_expf_inline and rl_expf_ftz_inline
 * (see vexp.h). */
#include "config.h"
#include "vexp.h"
#include "peak.h"
#include "vexp512.h"

#include <math.h>
#include <stdatomic.h>

RL_SIMD_CLONES void rl_vexpf(float *y, const float *x, size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++)
        y[i] = rl_expf_inline(x[i]);
}

/* asked once: the score rows ask at every row (a call into peak.c and a CPUID-model
 * load each time was 0.3 % of a softmax N = 4096 step) */
int rl_vexp_wide(void)
{
    static _Atomic int wide = -1;
    int                w    = atomic_load_explicit(&wide, memory_order_relaxed);
    if (w < 0) {
        w = RL_VEXP512 && rl_peak_width_supported(512);
        atomic_store_explicit(&wide, w, memory_order_relaxed);
    }
    return w;
}

/* The same results and sum by rl_expf_ftz_inline, for CPUs without AVX-512 (their
 * callers keep their own loops, vectorised for the CPU, and use this only in tests). */
RL_SIMD_CLONES static float vexpf_ftz_shift_portable(float *s, int n, float c)
{
    float lane[16] = {0.0f}, sum = 0.0f;
    int   i = 0;
    for (; i + 16 <= n; i += 16)
        for (int l = 0; l < 16; l++)
            lane[l] += s[i + l] = rl_expf_ftz_inline(s[i + l] - c);
    for (; i < n; i++)
        lane[0] += s[i] = rl_expf_ftz_inline(s[i] - c);
    for (int l = 0; l < 16; l++)
        sum += lane[l];
    return sum;
}

#if RL_VEXP512
__attribute__((target("avx512f"))) static float vexpf_ftz_shift_wide(float *s, int n, float c)
{
    const __m512 cv  = _mm512_set1_ps(c);
    __m512       acc = _mm512_setzero_ps();
    int          i   = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 p = rl_expf16(_mm512_sub_ps(_mm512_loadu_ps(s + i), cv));
        _mm512_storeu_ps(s + i, p);
        acc = _mm512_add_ps(acc, p);
    }
    float lane[16];
    _mm512_storeu_ps(lane, acc);
    if (i < n) { /* the last n mod 16, into lane 0 one by one */
        const __mmask16 k = rl_mask16(n - i);
        float           tail[16];
        __m512          p = rl_expf16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, s + i), cv));
        _mm512_mask_storeu_ps(s + i, k, p);
        _mm512_storeu_ps(tail, p);
        for (int j = 0; j < n - i; j++)
            lane[0] += tail[j];
    }
    float sum = 0.0f;
    for (int l = 0; l < 16; l++)
        sum += lane[l];
    return sum;
}
#endif

float rl_vexpf_ftz_shift(float *s, int n, float c)
{
#if RL_VEXP512
    if (rl_vexp_wide()) return vexpf_ftz_shift_wide(s, n, c);
#endif
    return vexpf_ftz_shift_portable(s, n, c);
}

#if RL_VEXP512
/* rl_f32_key_ of 16 floats' bits */
__attribute__((target("avx512f"))) static inline __m512i key16(__m512i b)
{
    return _mm512_xor_si512(b, _mm512_srli_epi32(_mm512_srai_epi32(b, 31), 1));
}

/* rl_maxf_inline's maximum (the largest key; a maximum is the same in any order) by
 * vpmaxsd on two accumulators: GCC compiles rl_maxf_inline's lanewise maximum to a compare
 * and a masked move, two dependent operations per vector on one chain, which took most of
 * a score row's maximum at N = 4096 (perf, Zen 4). */
__attribute__((target("avx512f"))) static float max_wide(const float *s, int n, float init)
{
    __m512i m0 = _mm512_set1_epi32(rl_f32_key_(init)), m1 = m0;
    int     i = 0;
    for (; i + 32 <= n; i += 32) {
        m0 = _mm512_max_epi32(m0, key16(_mm512_loadu_si512(s + i)));
        m1 = _mm512_max_epi32(m1, key16(_mm512_loadu_si512(s + i + 16)));
    }
    if (i + 16 <= n) {
        m0 = _mm512_max_epi32(m0, key16(_mm512_loadu_si512(s + i)));
        i += 16;
    }
    if (i < n) {
        const __mmask16 k = rl_mask16(n - i);
        m1 = _mm512_mask_max_epi32(m1, k, m1, key16(_mm512_maskz_loadu_epi32(k, s + i)));
    }
    return rl_f32_unkey_(_mm512_reduce_max_epi32(_mm512_max_epi32(m0, m1)));
}

/* p = exp(p - c) as vexpf_ftz_shift_wide makes it, and dp = p (dp - D), 16 at a time */
__attribute__((target("avx512f"))) static void vexpf_ftz_grad_wide(float *p, float *dp, int n,
                                                                   float c, float D)
{
    const __m512 cv = _mm512_set1_ps(c), Dv = _mm512_set1_ps(D);
    int          i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 e = rl_expf16(_mm512_sub_ps(_mm512_loadu_ps(p + i), cv));
        _mm512_storeu_ps(p + i, e);
        _mm512_storeu_ps(dp + i, _mm512_mul_ps(e, _mm512_sub_ps(_mm512_loadu_ps(dp + i), Dv)));
    }
    if (i < n) {
        const __mmask16 k = rl_mask16(n - i);
        __m512          e = rl_expf16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, p + i), cv));
        _mm512_mask_storeu_ps(p + i, k, e);
        _mm512_mask_storeu_ps(
            dp + i, k, _mm512_mul_ps(e, _mm512_sub_ps(_mm512_maskz_loadu_ps(k, dp + i), Dv)));
    }
}
#endif

/* rl_maxf_inline's maximum, by max_wide where the CPU has AVX-512 */
static float row_max(const float *s, int n, float init)
{
#if RL_VEXP512
    if (rl_vexp_wide()) return max_wide(s, n, init);
#endif
    return rl_maxf_inline(s, n, init);
}

float rl_vexpf_ftz_online(float *s, int nc, int nv, float m_old, float *m_new)
{
    const float mx = row_max(s, nc, m_old);
    for (int b = nc; b < nv; b++)
        s[b] = -INFINITY; /* exp gives 0 */
    *m_new = mx;
    return rl_vexpf_ftz_shift(s, nv, mx);
}

void rl_vexpf_ftz_grad(float *p, float *dp, int n, float c, float D)
{
#if RL_VEXP512
    if (rl_vexp_wide()) {
        vexpf_ftz_grad_wide(p, dp, n, c, D);
        return;
    }
#endif
    (void)vexpf_ftz_shift_portable(p, n, c);
    for (int i = 0; i < n; i++)
        dp[i] = p[i] * (dp[i] - D);
}
