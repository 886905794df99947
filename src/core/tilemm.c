/* tilemm.c -- small products for attention tiles; see tilemm.h.
 *
 * The kernel keeps an MR x (16 NV) block of C in vector registers and streams k: per step
 * it loads NV vectors of a row of B and broadcasts MR entries of A, for MR * NV fused
 * multiply-adds (8 x 2: 16 accumulators, 10 loads per 16 FMAs).  No packing: B's rows are
 * read in place (a tile of 256 x 32 floats stays in L1/L2 between the steps), A's entries
 * through its strides, so A may be a transposed view (dV += P^T dO).  Written with GCC's
 * vector extensions and compiled for AVX-512F only; it runs where the CPU has AVX-512F,
 * and BLIS does the product everywhere else. */
#include "config.h"
#include "tilemm.h"
#include "gemm.h"

#include <string.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define RL_TILE_VECTOR 1
#else
#define RL_TILE_VECTOR 0
#endif

#if RL_TILE_VECTOR
typedef float v16 __attribute__((vector_size(64)));
typedef float v16u __attribute__((vector_size(64), aligned(4))); /* unaligned access */

#define VLOAD(p) (*(const v16u *)(p))
#define VSTORE(p, x) (*(v16u *)(p) = (x))

/* C[0..MR) x [0..16 NV) = alpha A B + beta C for one block. */
#define TILE_KERNEL(NAME, MR, NV)                                                                  \
    __attribute__((target("avx512f"))) static void NAME(                                           \
        int k, float alpha, const float *A, ptrdiff_t rsa, ptrdiff_t csa, const float *B, int ldb, \
        float beta, float *C, int ldc)                                                             \
    {                                                                                              \
        v16 acc[MR][NV];                                                                           \
        _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++)                                       \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[r][v] = (v16){0};             \
        for (int p = 0; p < k; p++) {                                                              \
            const float *b = B + (size_t)p * ldb;                                                  \
            v16          bv[NV];                                                                   \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) bv[v] = VLOAD(b + 16 * v);        \
            _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++)                                   \
            {                                                                                      \
                const float a = A[r * rsa + p * csa];                                              \
                _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[r][v] += a * bv[v];       \
            }                                                                                      \
        }                                                                                          \
        _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++)                                       \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                                   \
        {                                                                                          \
            float *c = C + (size_t)r * ldc + 16 * v;                                               \
            VSTORE(c, beta == 0.0f ? alpha * acc[r][v] : alpha * acc[r][v] + beta * VLOAD(c));     \
        }                                                                                          \
    }

TILE_KERNEL(kernel_8x32, 8, 2)
TILE_KERNEL(kernel_8x16, 8, 1)
TILE_KERNEL(kernel_1x32, 1, 2)
TILE_KERNEL(kernel_1x16, 1, 1)

static int have_avx512f(void)
{
    static int known = -1;
    if (known < 0) known = __builtin_cpu_supports("avx512f") ? 1 : 0;
    return known;
}

typedef void (*tile_kernel)(int, float, const float *, ptrdiff_t, ptrdiff_t, const float *, int,
                            float, float *, int);

static void vector_gemm(int m, int n, int k, float alpha, const float *A, ptrdiff_t rsa,
                        ptrdiff_t csa, const float *B, int ldb, float beta, float *C, int ldc)
{
    for (int j = 0; j < n; j += 32) { /* 32-wide column blocks, a 16-wide one last */
        const int   wide  = n - j >= 32;
        tile_kernel rows8 = wide ? kernel_8x32 : kernel_8x16,
                    row1  = wide ? kernel_1x32 : kernel_1x16;
        int i             = 0;
        for (; i + 8 <= m; i += 8)
            rows8(k, alpha, A + i * rsa, rsa, csa, B + j, ldb, beta, C + (size_t)i * ldc + j, ldc);
        for (; i < m; i++)
            row1(k, alpha, A + i * rsa, rsa, csa, B + j, ldb, beta, C + (size_t)i * ldc + j, ldc);
    }
}
#endif

void rl_tile_gemm(int m, int n, int k, float alpha, const float *A, ptrdiff_t rsa, ptrdiff_t csa,
                  const float *B, int ldb, float beta, float *C, int ldc)
{
    if (m <= 0 || n <= 0) return;
#if RL_TILE_VECTOR
    if (n % 16 == 0 && have_avx512f()) {
        if (k <= 0) { /* C = beta C */
            for (int i = 0; i < m; i++)
                for (int j = 0; j < n; j++)
                    C[(size_t)i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[(size_t)i * ldc + j];
            return;
        }
        vector_gemm(m, n, k, alpha, A, rsa, csa, B, ldb, beta, C, ldc);
        return;
    }
#endif
    rl_sgemm_strided(m, n, k, alpha, A, rsa, csa, B, ldb, 1, beta, C, ldc, 1);
}

void rl_tile_pack_t(float *pack, int ldp, const float *B, int ldb, int n, int k)
{
    for (int c = 0; c < k; c++) {
        float *row = pack + (size_t)c * ldp;
        for (int j = 0; j < n; j++)
            row[j] = B[(size_t)j * ldb + c];
        for (int j = n; j < ldp; j++)
            row[j] = 0.0f;
    }
}
