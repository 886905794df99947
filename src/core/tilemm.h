/* tilemm.h -- products of the small tiles inside attention kernels, where BLIS's per-call
 * packing costs more than the arithmetic (one side is the head dimension, e.g. 32).
 *
 *   rl_tile_gemm:    C (m x n) = alpha * A * B + beta * C
 *                    A (m x k) with general strides (rsa, csa): A or a transposed tile;
 *                    B (k x n) and C (m x n) row-major (ldb, ldc).
 *   rl_tile_pack_t:  the transpose of B (n x k, row-major) packed for rl_tile_gemm as a
 *                    k x ldp matrix (ldp = roundup(n, 16)), zero past column n: then
 *                    A B^T = rl_tile_gemm(A, packed) over any prefix of the n columns.
 *
 * When n is a multiple of 16 and the CPU has AVX-512F or AVX2 with FMA (checked once at
 * run time), a register-blocked kernel written in GCC vector extensions runs; any other
 * shape or CPU goes to BLIS.  Both instruction sets sum every entry over k in order with
 * fused multiply-adds, so they give the same bits.  With beta = 0, C is not read.  The
 * results equal a float GEMM up to summation order. */
#ifndef RL_TILEMM_H
#define RL_TILEMM_H

#include <stddef.h>

void rl_tile_gemm(int m, int n, int k, float alpha, const float *A, ptrdiff_t rsa, ptrdiff_t csa,
                  const float *B, int ldb, float beta, float *C, int ldc);

/* What runs the products on this CPU, e.g. "AVX2 + FMA, 6 x 16 blocks" or "BLIS". */
const char *rl_tile_kernel(void);

/* pack[c * ldp + j] = B[j * ldb + c] for c < k, j < n; 0 for n <= j < ldp. */
void rl_tile_pack_t(float *pack, int ldp, const float *B, int ldb, int n, int k);

#endif
