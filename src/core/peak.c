/* peak.c -- the single-precision FMA peak of this CPU, measured: the reference that
 * `ropelab bench --train` divides its achieved GFLOP/s by, so a percentage means the
 * same on any machine (clock, vector width and FMA units all show in the measurement).
 *
 * The loop keeps 12 independent accumulator vectors (more than the FMA latency times
 * the FMA ports of current x86 cores needs), each updated by acc = acc * x + y, so
 * nothing but FMA throughput limits it.  One width per call: 512-bit (AVX-512F), 256-bit
 * (AVX2 + FMA), or the compiler's plain scalar code otherwise.  With threads > 1 every
 * OpenMP thread runs the loop at once and the rates add up. */
#include "config.h"
#include "peak.h"
#include "gemm.h"
#include "util.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define ACCS 12

static volatile float peak_sink; /* the loops' results end here, so none is optimised away */

#if defined(__x86_64__) && defined(__GNUC__)
typedef float v16 __attribute__((vector_size(64)));
typedef float v8 __attribute__((vector_size(32)));

/* The 12 accumulators are named variables, not an array: an array indexed in a loop is
 * kept in memory by the compiler, and the loop then measures loads and stores instead of
 * FMAs (a load, an FMA and a store per step: a third of the peak on Zen 3). */
#define PEAK_STEP(V)                                                                               \
    a0 = a0 * x + y, a1 = a1 * x + y, a2 = a2 * x + y, a3 = a3 * x + y, a4 = a4 * x + y,           \
    a5 = a5 * x + y, a6 = a6 * x + y, a7 = a7 * x + y, a8 = a8 * x + y, a9 = a9 * x + y,           \
    a10 = a10 * x + y, a11 = a11 * x + y

#define PEAK_LOOP(V, LANES)                                                                        \
    V x, y, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11;                                      \
    for (int l = 0; l < LANES; l++) {                                                              \
        x[l] = 0.999999f, y[l] = 1e-7f;                                                            \
        a0[l] = (float)l, a1[l] = a0[l] + 1, a2[l] = a0[l] + 2, a3[l] = a0[l] + 3;                 \
        a4[l] = a0[l] + 4, a5[l] = a0[l] + 5, a6[l] = a0[l] + 6, a7[l] = a0[l] + 7;                \
        a8[l] = a0[l] + 8, a9[l] = a0[l] + 9, a10[l] = a0[l] + 10, a11[l] = a0[l] + 11;            \
    }                                                                                              \
    for (long i = 0; i < iters; i++)                                                               \
        PEAK_STEP(V);                                                                              \
    V    t = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) + ((a8 + a9) + (a10 + a11));       \
    float s = 0;                                                                                   \
    for (int l = 0; l < LANES; l++)                                                                \
        s += t[l];                                                                                 \
    *sink += s;                                                                                    \
    return 2.0 * LANES * ACCS * (double)iters

/* Each returns the flop count it performed (2 per lane per FMA); sink defeats dead-code
 * elimination. */
__attribute__((target("avx512f"), noinline)) static double loop512(long iters, float *sink)
{
    PEAK_LOOP(v16, 16);
}

__attribute__((target("avx2,fma"), noinline)) static double loop256(long iters, float *sink)
{
    PEAK_LOOP(v8, 8);
}
#endif

int rl_peak_width_supported(int bits)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (bits == 512) return __builtin_cpu_supports("avx512f");
    if (bits == 256) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    (void)bits;
    return 0;
}

static double run_loop(int bits, long iters, float *sink)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (bits == 512) return loop512(iters, sink);
    if (bits == 256) return loop256(iters, sink);
#endif
    (void)bits, (void)iters, (void)sink;
    return 0;
}

double rl_peak_gflops(int bits, int threads, double ms)
{
    if (!rl_peak_width_supported(bits) || threads < 1) return 0;
    /* calibrate on one thread: iterations for ~ms/4, then the best of 4 timed runs */
    float  sink  = 0;
    long   iters = 1 << 14;
    double t0, t;
    for (;;) {
        t0 = rl_now_ms();
        run_loop(bits, iters, &sink);
        t = rl_now_ms() - t0;
        if (t > ms / 4 || iters > (1L << 40)) break;
        iters *= 2;
    }
    double best = 0;
    for (int rep = 0; rep < 4; rep++) {
        double flops = 0;
        float  sum   = 0;
        t0           = rl_now_ms();
#pragma omp parallel num_threads(threads) reduction(+ : flops, sum)
        {
            float s = 0;
            flops += run_loop(bits, iters, &s);
            sum += s;
        }
        t        = rl_now_ms() - t0;
        double g = flops / (t * 1e6);
        if (g > best) best = g;
        sink += sum;
    }
    peak_sink = sink;
    return best;
}

double rl_peak_sgemm_gflops(int n, int reps)
{
    const size_t nn = (size_t)n * n;
    float       *a = rl_alloc(3 * nn * sizeof(float)), *b = a + nn, *c = b + nn;
    double       best = 0;
    if (!a) return 0;
    for (size_t i = 0; i < 3 * nn; i++) /* small values that keep every float normal */
        a[i] = (float)((i * 2654435761u >> 20) & 255) / 256.0f - 0.5f;
    for (int r = 0; r < reps; r++) {
        double t0 = rl_now_ms();
        rl_sgemm(RL_TRANS_N, RL_TRANS_N, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        double ms = rl_now_ms() - t0, g = ms > 0 ? 2.0 * n * nn / (ms * 1e6) : 0;
        if (g > best) best = g;
    }
    peak_sink = c[nn / 2];
    rl_free(a);
    return best;
}
