/* vexp512.h -- exp of 16 floats at once with AVX-512, for the loops written by hand around
 * it (vexp.c's softmax score rows, layers.c's GELU).
 *
 * rl_expf16 is rl_expf_inline's arithmetic (vexp.h), operation for operation: the same
 * clamp to [-104, 88.8], reduction and polynomial (GCC contracts a * b + c into one FMA
 * there, as here).  Two steps differ in form only:
 * - 2^n is applied by one vscalefps instead of rl_expf_inline's two multiplies by 2^n1
 *   and 2^n2 (n1 = floor(n/2)).  p 2^n1 is exact (a normal float), so both round p 2^n
 *   once: the same float, subnormal results included, and under flush-to-zero the same 0
 *   as rl_expf_ftz_inline's exponent clamp.
 * - The clamp is a float max and min, which pass a NaN on, so no mask restores it at the
 *   end (a NaN stays NaN; its sign and payload may differ).
 * Checked for all 2^32 inputs once; the tests compare the loops that use it with the
 * compiler's vectorised loops bit for bit (t_attn_softmax, t_layers).
 *
 * RL_VEXP512 says whether the build has it (GCC on x86-64, not -DRL_NO_CLONES); callers
 * still ask rl_vexp_wide() whether the CPU has AVX-512 before they run it. */
#ifndef RL_VEXP512_H
#define RL_VEXP512_H

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(RL_NO_CLONES)
#include <immintrin.h>
#define RL_VEXP512 1

__attribute__((target("avx512f"))) static inline __m512 rl_expf16(__m512 x)
{
    const __m512 shift = _mm512_set1_ps(12582912.0f); /* 1.5 * 2^23 */
    __m512 xc = _mm512_min_ps(_mm512_set1_ps(88.8f), _mm512_max_ps(_mm512_set1_ps(-104.0f), x));
    __m512 n =
        _mm512_sub_ps(_mm512_fmadd_ps(xc, _mm512_set1_ps(1.44269504088896341f), shift), shift);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xc);
    r        = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440054690583e-4f), r);
    __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
    p        = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
    p        = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p        = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p        = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p        = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p        = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p        = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

/* the first n of 16 lanes (0 <= n < 16): a loop's last, partial vector */
static inline __mmask16 rl_mask16(int n) { return (__mmask16)((1u << n) - 1); }
#else
#define RL_VEXP512 0
#endif

#endif
