/* tilemm.h -- products of the small tiles inside attention kernels, where BLIS's per-call
 * packing costs more than the arithmetic (one side is the head dimension, e.g. 32).
 *
 *   rl_tile_gemm:    C (m x n) = alpha * A * B + beta * C
 *                    A (m x k) with general strides (rsa, csa): A or a transposed tile;
 *                    B (k x n) and C (m x n) row-major (ldb, ldc).
 *   rl_tile_gemm_nt: C (m x n) = alpha * A * B^T  (A m x k, B n x k, both row-major),
 *                    through B^T packed into pack (k x roundup(n, 16) floats).
 *
 * When n (the packed width for _nt) is a multiple of 16, a register-blocked kernel in
 * GCC vector extensions runs (compiled for AVX-512F, AVX2 and the baseline, chosen at
 * load time like the exps of vexp.h); any other shape goes to BLIS (rl_sgemm).  With
 * beta = 0, C is not read.  The results equal a float GEMM up to summation order. */
#ifndef RL_TILEMM_H
#define RL_TILEMM_H

#include <stddef.h>

void rl_tile_gemm(int m, int n, int k, float alpha, const float *A, ptrdiff_t rsa, ptrdiff_t csa,
                  const float *B, int ldb, float beta, float *C, int ldc);

/* ldc >= roundup(n, 16) when n is not a multiple of 16: the kernel then also writes the
 * padding columns n .. roundup(n, 16) - 1 of C (as zeros' products). */
void rl_tile_gemm_nt(int m, int n, int k, float alpha, const float *A, int lda, const float *B,
                     int ldb, float *C, int ldc, float *pack);

/* Floats of pack that rl_tile_gemm_nt needs for k x n. */
size_t rl_tile_pack_floats(int n, int k);

#endif
