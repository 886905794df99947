/* peak.h -- the measured single-precision FMA peak of this CPU (GFLOP/s), by vector
 * width and thread count, for benchmarks that report a percentage of it. */
#ifndef RL_PEAK_H
#define RL_PEAK_H

/* 1 when the CPU runs FMA loops of this width (512: AVX-512F; 256: AVX2 + FMA). */
int rl_peak_width_supported(int bits);
/* FMA throughput of `threads` threads running a loop of independent FMAs of `bits`-wide
 * vectors at once, best of four runs of about ms/4 milliseconds each; 0 when the width is
 * not supported.  Run it on an otherwise idle machine: it measures what it gets. */
double rl_peak_gflops(int bits, int threads, double ms);
/* BLIS's own rate on a large square product (rl_sgemm, n x n x n, operands in memory) on
 * the threads in effect (core/threads.h), best of `reps`: what the model's products could
 * reach on this machine.  0 when the memory is not there. */
double rl_peak_sgemm_gflops(int n, int reps);

#endif
