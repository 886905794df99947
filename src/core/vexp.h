/* vexp.h -- a branch-free single-precision exp that GCC vectorises at -O2.
 *
 * Why: softmax attention spends N^2 exps; without -ffast-math glibc's expf is a scalar
 * call, so a loop over a score row cannot be vectorised.  rl_expf_inline is plain
 * arithmetic with selects instead of branches, so `#pragma omp simd` loops that call it
 * become SSE2 (or, with -march, AVX-512) code.
 *
 * Method: x = n ln2 + r, n = nearest integer of x/ln2 (the 1.5*2^23 rounding trick, exact
 * for |x/ln2| < 2^22, no rintf needed), r = x - n*C1 - n*C2 with C1 = 355/512 (9 bits, so
 * n*C1 is exact for |n| <= 2^15) and C2 = ln2 - C1; |r| <= ln2/2.  exp(r) by its Taylor
 * polynomial of degree 7 (truncation < 6e-9 relative).  2^n is applied as 2^n1 * 2^n2,
 * n1 = floor(n/2), n2 = n - n1, each a normal float built from its exponent bits, so
 * results in the subnormal range are rounded (not flushed to zero).
 * Accuracy: <= 2 ulp for normal results, subnormals within one subnormal step (tested
 * against exp() in t_attn_softmax).  Special inputs: x <= -104 (and -inf) -> 0;
 * x > 88.7228 (and +inf) -> +inf; NaN -> NaN.
 * Everything is integer min/max and arithmetic, no selects on floats: with GCC's default
 * -ftrapping-math a float select becomes a branch and the loop stays scalar. */
#ifndef RL_VEXP_H
#define RL_VEXP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Helpers are forced inline so that they are compiled for the ISA of each clone of their
 * caller (GCC will not inline a default-ISA function into an AVX-512 clone otherwise). */
#if defined(__GNUC__)
#define RL_INLINE inline __attribute__((always_inline))
#else
#define RL_INLINE inline
#endif

/* RL_SIMD_CLONES on a hot elementwise loop: GCC compiles it for x86-64-v4 (AVX-512),
 * x86-64-v3 (AVX2 with FMA) and the baseline and picks one at load time by CPUID
 * (function multiversioning, an ifunc), so a portable build (no -march) still runs
 * 16-lane exps where the CPU has them.
 * - x86-64-v3 rather than plain AVX2: GCC's "avx2" target has no FMA, so every a * b + c
 *   (the exp polynomial, GELU, LayerNorm) was a multiply and an add there, where the
 *   AVX-512 clone fuses them.
 * - x86-64-v4 (AVX-512 F, VL, BW, DQ, CD) rather than plain "avx512f", for the same
 *   reason: a loop's last 8-15 elements run as 256-bit code, and "avx512f" alone has
 *   neither VEX FMA nor AVX512VL, so those elements were rounded without FMA while the
 *   16-wide body used it (a softmax row's exps in the forward and the backward could differ
 *   there).  Every AVX-512 CPU but the Xeon Phi has the v4 level; a Xeon Phi takes v3.
 * GCC before 12 knows neither level. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) &&       \
    !defined(RL_NO_CLONES)
#if __GNUC__ >= 12
#define RL_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define RL_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#else
#define RL_SIMD_CLONES
#endif

static RL_INLINE float rl_f32_from_bits_(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static RL_INLINE uint32_t rl_f32_bits_(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

/* An integer key with the order of the floats (negative floats have their magnitude bits
 * flipped), so clamping is an integer min/max: GCC turns a float `x < lo ? lo : x` into a
 * branch under its default -ftrapping-math and then will not vectorise the loop. */
static RL_INLINE int32_t rl_f32_key_(float f)
{
    int32_t b = (int32_t)rl_f32_bits_(f);
    return b ^ (int32_t)((uint32_t)(b >> 31) >> 1);
}

static RL_INLINE float rl_f32_unkey_(int32_t k)
{
    return rl_f32_from_bits_((uint32_t)(k ^ (int32_t)((uint32_t)(k >> 31) >> 1)));
}

/* max(init, x[0..n)) through the integer keys: an int32 max reduction vectorises where a
 * float one stays scalar (GCC keeps the NaN-ordering of the float compare).  A NaN in x
 * may or may not be the result (by its sign bit); the callers' exp(x - max) carries it
 * on either way.  A maximum is the same in any order, so with GCC's vector extensions the
 * 16-wide maxima are folded by shuffles: `omp simd reduction(max)` kept its lanes in a
 * stack array, filled it before the loop and took their maximum by a scalar loop after
 * it -- a fifth of a softmax score row's time at N = 4096 (perf, Zen 4). */
#if defined(__GNUC__) && !defined(__clang__)
typedef int32_t  rl_v16i_ __attribute__((vector_size(64)));
typedef int32_t  rl_v16iu_ __attribute__((vector_size(64), aligned(4)));
typedef uint32_t rl_v16u_ __attribute__((vector_size(64)));

/* the keys of 16 floats' bits b, and the lanewise maximum of m and v (written into m) */
#define RL_KEY16_(b) ((b) ^ (rl_v16i_)((rl_v16u_)((b) >> 31) >> 1))
#define RL_MAX16_(m, v)                                                                            \
    do {                                                                                           \
        rl_v16i_ v_ = (v), gt_ = v_ > (m);                                                         \
        (m) = (v_ & gt_) | ((m) & ~gt_);                                                           \
    } while (0)

static RL_INLINE float rl_maxf_inline(const float *x, int n, float init)
{
    int32_t k = rl_f32_key_(init);
    int     i = 0;
    if (n >= 16) {
        rl_v16i_ b = *(const rl_v16iu_ *)x, m = RL_KEY16_(b);
        for (i = 16; i + 16 <= n; i += 16) {
            b = *(const rl_v16iu_ *)(x + i);
            RL_MAX16_(m, RL_KEY16_(b));
        }
        RL_MAX16_(m, __builtin_shuffle(
                         m, (rl_v16i_){8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7}));
        RL_MAX16_(m,
                  __builtin_shuffle(m, (rl_v16i_){4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3}));
        RL_MAX16_(m,
                  __builtin_shuffle(m, (rl_v16i_){2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1}));
        RL_MAX16_(m,
                  __builtin_shuffle(m, (rl_v16i_){1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0}));
        k = m[0] > k ? m[0] : k;
    }
    for (; i < n; i++) {
        int32_t v = rl_f32_key_(x[i]);
        k         = v > k ? v : k;
    }
    return rl_f32_unkey_(k);
}
#else
static RL_INLINE float rl_maxf_inline(const float *x, int n, float init)
{
    int32_t k = rl_f32_key_(init);
#pragma omp simd reduction(max : k)
    for (int i = 0; i < n; i++) {
        int32_t v = rl_f32_key_(x[i]);
        k         = v > k ? v : k;
    }
    return rl_f32_unkey_(k);
}
#endif

/* exp's argument reduction and polynomial, shared by the two exps below: x clamped to
 * [-104, 88.8] is n ln2 + r with n an integer (returned in *n) and |r| <= ln2/2; returns
 * exp(r). */
static RL_INLINE float rl_expf_reduced_(float x, int32_t *n_out)
{
    const float log2e = 1.44269504088896341f, c1 = 0.693359375f, c2 = -2.12194440054690583e-4f;
    const float shift = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    /* clamp to [-104, 88.8]: exp(-104) rounds to 0 and exp(88.8) overflows to +inf by
     * plain arithmetic below, so no select on the result is needed (a select lets GCC
     * fold the clamped ends into constants and branch).  Two integer minima on the bits:
     * as unsigned, every float below -104 (-inf included) has larger bits than -104 and
     * every other non-NaN float smaller ones; then, as signed, the floats above 88.8 are
     * the only ones with larger bits than 88.8.  (Checked against a clamp on order keys
     * for all 2^32 bit patterns: the same float for every non-NaN x.)  NaNs clamp too;
     * the callers restore the NaN at the end. */
    const uint32_t blo = rl_f32_bits_(-104.0f);
    const int32_t  bhi = (int32_t)rl_f32_bits_(88.8f);
    uint32_t       bx  = rl_f32_bits_(x);
    bx                 = bx < blo ? bx : blo;
    int32_t sx         = (int32_t)bx;
    sx                 = sx < bhi ? sx : bhi;
    float xc           = rl_f32_from_bits_((uint32_t)sx);
    float n            = (xc * log2e + shift) - shift;
    float r            = (xc - n * c1) - n * c2;
    float p            = 1.0f / 5040.0f;
    p                  = p * r + 1.0f / 720.0f;
    p                  = p * r + 1.0f / 120.0f;
    p                  = p * r + 1.0f / 24.0f;
    p                  = p * r + 1.0f / 6.0f;
    p                  = p * r + 0.5f;
    p                  = p * r + 1.0f;
    *n_out             = (int32_t)n; /* -150 <= n <= 128 */
    return p * r + 1.0f;
}

/* y, or a quiet NaN when x is NaN (|x| bits above inf's): the NaN bits OR-ed into y (+inf
 * or 0 after the clamp) under an all-ones mask -- a compare and two bit ops */
static RL_INLINE float rl_expf_nan_(float y, float x)
{
    uint32_t nan_mask = -(uint32_t)((int32_t)(rl_f32_bits_(x) & 0x7fffffffu) > 0x7f800000);
    return rl_f32_from_bits_(rl_f32_bits_(y) | (nan_mask & 0x7fc00000u));
}

static RL_INLINE float rl_expf_inline(float x)
{
    int32_t ni;
    float   p  = rl_expf_reduced_(x, &ni);
    int32_t n1 = ni >> 1, n2 = ni - n1;
    float   y = (p * rl_f32_from_bits_((uint32_t)(n1 + 127) << 23)) *
              rl_f32_from_bits_((uint32_t)(n2 + 127) << 23);
    return rl_expf_nan_(y, x);
}

/* rl_expf_inline for a thread that runs with flush-to-zero (softmax attention's kernels):
 * 2^n is applied in one multiply, its exponent bits clamped at 0 below 2^-126, so results
 * under FLT_MIN become 0 where rl_expf_inline rounds them to subnormals -- which
 * flush-to-zero turns into 0 as well.  Every other result is the same float (p 2^n1 2^n2
 * is exact when p 2^n is normal) up to x = 88.37, where n reaches 128 and the result is
 * +inf rather than exp(x) < FLT_MAX (up to 88.72): the kernels pass scores less their row
 * maximum, x <= 0.  One multiply and two integer operations fewer, on the exp that the
 * score rows spend on every score. */
static RL_INLINE float rl_expf_ftz_inline(float x)
{
    int32_t ni;
    float   p = rl_expf_reduced_(x, &ni);
    int32_t e = ni + 127; /* -23 .. 255 */
    e         = e > 0 ? e : 0;
    return rl_expf_nan_(p * rl_f32_from_bits_((uint32_t)e << 23), x);
}

/* y[i] = exp(x[i]) for i < n; y may equal x. */
void rl_vexpf(float *y, const float *x, size_t n);

/* Whether rl_vexpf_ftz_shift runs its AVX-512 form: the CPU has AVX-512F and the build
 * knows it (GCC on x86-64, not -DRL_NO_CLONES). */
int rl_vexp_wide(void);

/* s[i] = exp(s[i] - c) for i < n, for a thread that runs with flush-to-zero; returns the
 * sum of the results.  rl_expf_ftz_inline's arithmetic on 16 floats at a time, with two
 * savings that AVX-512 offers and GCC does not take by itself: 2^n is applied by one
 * vscalefps instead of a conversion, three integer operations and a multiply (the product
 * p 2^n is exact where it is normal, and flush-to-zero makes the rest 0, as the exponent
 * clamp does), and a NaN is carried through the arithmetic (the clamp's min and max pass
 * it on) instead of being masked in at the end.
 * - Every result is rl_expf_ftz_inline's float for s[i] - c <= 88.37 (all 2^32 inputs
 *   were compared once; t_attn_softmax compares 600 001); from there to 88.72 it is exp's
 *   float instead of +inf; a NaN stays NaN, though its sign and payload may differ.
 * - The sum is added in the order of GCC's 16-lane `omp simd reduction(+)`: lane l sums
 *   elements l, l+16, ... of the whole 16-float vectors, the last n mod 16 are added into
 *   lane 0 in order, then 0 + lane 0 + ... + lane 15.  So the loop it replaces gives the
 *   same bits.
 * - A fifth less time than that loop on rows of 256 (Zen 4); 2-3 % of the softmax
 *   forward at N = 4096 (docs/performance.md).
 * Without AVX-512 it runs rl_expf_ftz_inline element by element with the same sum;
 * callers compiled per instruction set keep their own vectorised loops there
 * (rl_vexp_wide()). */
float rl_vexpf_ftz_shift(float *s, int n, float c);

/* A score row's online-softmax step, for a thread that runs with flush-to-zero: m =
 * rl_maxf_inline(s, nc, m_old) into *m_new, s[nc .. nv) = -inf (masked columns, exp 0),
 * then rl_vexpf_ftz_shift(s, nv, m), whose sum it returns.  The same bits as those three
 * steps; with AVX-512 the maximum is taken by vpmaxsd on the order keys. */
float rl_vexpf_ftz_online(float *s, int nc, int nv, float m_old, float *m_new);

/* The softmax backward's row, for a thread that runs with flush-to-zero: p[i] = exp(p[i] -
 * c) as rl_vexpf_ftz_shift makes it, then dp[i] = p[i] (dp[i] - D), for i < n, in one pass
 * (the probabilities are not read back).  The same bits as those two loops. */
void rl_vexpf_ftz_grad(float *p, float *dp, int n, float c, float D);

#endif
