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
#include "util.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define ACCS 12

static volatile float peak_sink; /* the loops' results end here, so none is optimised away */

#if defined(__x86_64__) && defined(__GNUC__)
typedef float v16 __attribute__((vector_size(64)));
typedef float v8 __attribute__((vector_size(32)));

/* Each returns the flop count it performed (2 per lane per FMA); sink defeats dead-code
 * elimination. */
__attribute__((target("avx512f"), noinline)) static double loop512(long iters, float *sink)
{
    v16 acc[ACCS], x = {0}, y = {0};
    for (int l = 0; l < 16; l++)
        x[l] = 0.999999f, y[l] = 1e-7f;
    for (int a = 0; a < ACCS; a++)
        for (int l = 0; l < 16; l++)
            acc[a][l] = (float)(a + l);
    for (long i = 0; i < iters; i++)
        for (int a = 0; a < ACCS; a++)
            acc[a] = acc[a] * x + y;
    float s = 0;
    for (int a = 0; a < ACCS; a++)
        for (int l = 0; l < 16; l++)
            s += acc[a][l];
    *sink += s;
    return 2.0 * 16 * ACCS * (double)iters;
}

__attribute__((target("avx2,fma"), noinline)) static double loop256(long iters, float *sink)
{
    v8 acc[ACCS], x = {0}, y = {0};
    for (int l = 0; l < 8; l++)
        x[l] = 0.999999f, y[l] = 1e-7f;
    for (int a = 0; a < ACCS; a++)
        for (int l = 0; l < 8; l++)
            acc[a][l] = (float)(a + l);
    for (long i = 0; i < iters; i++)
        for (int a = 0; a < ACCS; a++)
            acc[a] = acc[a] * x + y;
    float s = 0;
    for (int a = 0; a < ACCS; a++)
        for (int l = 0; l < 8; l++)
            s += acc[a][l];
    *sink += s;
    return 2.0 * 8 * ACCS * (double)iters;
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
