/* tilemm.c -- small products for attention tiles; see tilemm.h.
 *
 * The kernel keeps an MR x (W NV) block of C in vector registers (W floats per vector)
 * and streams k: per step it loads NV vectors of a row of B and broadcasts MR entries of
 * A, for MR * NV fused multiply-adds (AVX-512F: 8 x 2 of 16 floats, 16 accumulators, 10
 * loads per 16 FMAs; AVX2: 6 x 2 of 8 floats, 12 accumulators, 8 loads per 12 FMAs).  No
 * packing: B's rows are read in place (a tile of 256 x 32 floats stays in L1/L2 between
 * the steps), A's entries through its strides, so A may be a transposed view
 * (dV += P^T dO).  Written once with GCC's vector extensions and compiled for each
 * instruction set; the CPU's best one is chosen at run time, and BLIS does the product
 * on CPUs with neither. */
#include "config.h"
#include "tilemm.h"
#include "gemm.h"
#include "util.h"

#include <string.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define RL_TILE_VECTOR 1
#else
#define RL_TILE_VECTOR 0
#endif

#if RL_TILE_VECTOR
typedef float v16 __attribute__((vector_size(64)));
typedef float v16u __attribute__((vector_size(64), aligned(4))); /* unaligned access */
typedef float v8 __attribute__((vector_size(32)));
typedef float v8u __attribute__((vector_size(32), aligned(4)));

/* C[0..MR) x [0..W NV) = alpha A B + beta C for one block, W-float vectors of type VT
 * (unaligned twin VTU), compiled for TARGET. */
#define TILE_KERNEL(NAME, TARGET, VT, VTU, W, MR, NV)                                              \
    __attribute__((target(TARGET))) static void NAME(int k, float alpha, const float *A,           \
                                                     ptrdiff_t rsa, ptrdiff_t csa, const float *B, \
                                                     int ldb, float beta, float *C, int ldc)       \
    {                                                                                              \
        VT acc[MR][NV];                                                                            \
        _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++)                                       \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[r][v] = (VT){0};              \
        for (int p = 0; p < k; p++) {                                                              \
            const float *b = B + (size_t)p * ldb;                                                  \
            VT           bv[NV];                                                                   \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) bv[v] =                           \
                *(const VTU *)(b + W * v);                                                         \
            _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++)                                   \
            {                                                                                      \
                const float a = A[r * rsa + p * csa];                                              \
                _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[r][v] += a * bv[v];       \
            }                                                                                      \
        }                                                                                          \
        _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++)                                       \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                                   \
        {                                                                                          \
            VTU *c = (VTU *)(C + (size_t)r * ldc + W * v);                                         \
            *c     = beta == 0.0f ? alpha * acc[r][v] : alpha * acc[r][v] + beta * *c;             \
        }                                                                                          \
    }

/* AVX-512F: 8 x 32 blocks (16 of the 32 zmm registers accumulate), 8 x 16 for a last
 * 16-wide column block, single rows for the rest. */
TILE_KERNEL(kernel_8x32, "avx512f", v16, v16u, 16, 8, 2)
TILE_KERNEL(kernel_8x16, "avx512f", v16, v16u, 16, 8, 1)
TILE_KERNEL(kernel_1x32, "avx512f", v16, v16u, 16, 1, 2)
TILE_KERNEL(kernel_1x16, "avx512f", v16, v16u, 16, 1, 1)
/* AVX2 + FMA (16 ymm registers): 6 x 16 blocks, 12 accumulators + 2 rows of B + the
 * broadcast entry of A; 4 x 16 and single rows for the rest. */
TILE_KERNEL(kernel2_6x16, "avx2,fma", v8, v8u, 8, 6, 2)
TILE_KERNEL(kernel2_4x16, "avx2,fma", v8, v8u, 8, 4, 2)
TILE_KERNEL(kernel2_1x16, "avx2,fma", v8, v8u, 8, 1, 2)

enum { ISA_NONE, ISA_AVX2, ISA_AVX512 };

static int vector_isa(void)
{
    static int known = -1;
    if (known < 0)
        known = __builtin_cpu_supports("avx512f")                                 ? ISA_AVX512
                : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? ISA_AVX2
                                                                                  : ISA_NONE;
    return known;
}

typedef void (*tile_kernel)(int, float, const float *, ptrdiff_t, ptrdiff_t, const float *, int,
                            float, float *, int);

/* Rows [i, m) of one column block: blocks of `big` rows, then of `mid` rows, then single. */
static void column_block(tile_kernel kbig, int big, tile_kernel kmid, int mid, tile_kernel k1,
                         int m, int k, float alpha, const float *A, ptrdiff_t rsa, ptrdiff_t csa,
                         const float *B, int ldb, float beta, float *C, int ldc)
{
    int i = 0;
    for (; i + big <= m; i += big)
        kbig(k, alpha, A + i * rsa, rsa, csa, B, ldb, beta, C + (size_t)i * ldc, ldc);
    for (; kmid && i + mid <= m; i += mid)
        kmid(k, alpha, A + i * rsa, rsa, csa, B, ldb, beta, C + (size_t)i * ldc, ldc);
    for (; i < m; i++)
        k1(k, alpha, A + i * rsa, rsa, csa, B, ldb, beta, C + (size_t)i * ldc, ldc);
}

/* Every kernel accumulates each entry of C over p = 0 .. k-1 in order with fused
 * multiply-adds, so both instruction sets give the same bits. */
static void vector_gemm(int isa, int m, int n, int k, float alpha, const float *A, ptrdiff_t rsa,
                        ptrdiff_t csa, const float *B, int ldb, float beta, float *C, int ldc)
{
    if (isa == ISA_AVX2) {
        for (int j = 0; j < n; j += 16)
            column_block(kernel2_6x16, 6, kernel2_4x16, 4, kernel2_1x16, m, k, alpha, A, rsa, csa,
                         B + j, ldb, beta, C + j, ldc);
        return;
    }
    for (int j = 0; j < n; j += 32) { /* 32-wide column blocks, a 16-wide one last */
        const int wide = n - j >= 32;
        column_block(wide ? kernel_8x32 : kernel_8x16, 8, NULL, 0, wide ? kernel_1x32 : kernel_1x16,
                     m, k, alpha, A, rsa, csa, B + j, ldb, beta, C + j, ldc);
    }
}
#endif

void rl_tile_gemm(int m, int n, int k, float alpha, const float *A, ptrdiff_t rsa, ptrdiff_t csa,
                  const float *B, int ldb, float beta, float *C, int ldc)
{
    if (m <= 0 || n <= 0) return;
#if RL_TILE_VECTOR
    const int isa = n % 16 == 0 ? vector_isa() : ISA_NONE;
    if (isa != ISA_NONE) {
        if (k <= 0) { /* C = beta C */
            for (int i = 0; i < m; i++)
                for (int j = 0; j < n; j++)
                    C[(size_t)i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[(size_t)i * ldc + j];
            return;
        }
        const int    count = rl_products_counting();
        const double t0    = count ? rl_now_ms() : 0;
        vector_gemm(isa, m, n, k, alpha, A, rsa, csa, B, ldb, beta, C, ldc);
        if (count) rl_products_add(2.0 * m * n * k, rl_now_ms() - t0);
        return;
    }
#endif
    rl_sgemm_strided(m, n, k, alpha, A, rsa, csa, B, ldb, 1, beta, C, ldc, 1);
}

const char *rl_tile_kernel(void)
{
#if RL_TILE_VECTOR
    switch (vector_isa()) {
    case ISA_AVX512:
        return "AVX-512F, 8 x 32 blocks";
    case ISA_AVX2:
        return "AVX2 + FMA, 6 x 16 blocks";
    default:
        break;
    }
#endif
    return "BLIS (no AVX2 + FMA or AVX-512F, or not built with GCC on x86-64)";
}

#if RL_TILE_VECTOR
typedef int v8i __attribute__((vector_size(32)));

/* The 8 x 8 block of B at (j, c) transposed into the pack: eight rows of 8 floats in, 24
 * two-vector shuffles (the unpack-and-interleave transpose), eight rows of 8 out. */
__attribute__((target("avx2"), always_inline)) static inline void
pack8x8(float *pack, int ldp, const float *B, int ldb, int j, int c)
{
    const float *b = B + (size_t)j * ldb + c;
    v8           r[8], t[8], u[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
        r[i] = *(const v8u *)(b + (size_t)i * ldb);
#pragma GCC unroll 4
    for (int i = 0; i < 8; i += 2) { /* t[i] = (r[i]0 r[i+1]0 r[i]1 r[i+1]1 | same at 4..5) */
        t[i]     = __builtin_shuffle(r[i], r[i + 1], (v8i){0, 8, 1, 9, 4, 12, 5, 13});
        t[i + 1] = __builtin_shuffle(r[i], r[i + 1], (v8i){2, 10, 3, 11, 6, 14, 7, 15});
    }
#pragma GCC unroll 2
    for (int i = 0; i < 8; i += 4) /* u: columns (0,4) (1,5) (2,6) (3,7) of 4 rows */
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            u[i + 2 * h] =
                __builtin_shuffle(t[i + h], t[i + h + 2], (v8i){0, 1, 8, 9, 4, 5, 12, 13});
            u[i + 2 * h + 1] =
                __builtin_shuffle(t[i + h], t[i + h + 2], (v8i){2, 3, 10, 11, 6, 7, 14, 15});
        }
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++) { /* columns q and q + 4 of the 8 rows */
        *(v8u *)(pack + (size_t)(c + q) * ldp + j) =
            __builtin_shuffle(u[q], u[q + 4], (v8i){0, 1, 2, 3, 8, 9, 10, 11});
        *(v8u *)(pack + (size_t)(c + q + 4) * ldp + j) =
            __builtin_shuffle(u[q], u[q + 4], (v8i){4, 5, 6, 7, 12, 13, 14, 15});
    }
}

/* Rows [0, n8) x columns [0, k8) of the pack (both multiples of 8) by 8 x 8 blocks.  AVX2
 * (AVX-512 CPUs run it too): a scalar transpose moves every float alone, and packing the
 * key tiles took 1.6 % of a softmax training step at N = 256 (perf, Zen 4). */
__attribute__((target("avx2"))) static void pack_blocks(float *pack, int ldp, const float *B,
                                                        int ldb, int n8, int k8)
{
    for (int j = 0; j < n8; j += 8)
        for (int c = 0; c < k8; c += 8)
            pack8x8(pack, ldp, B, ldb, j, c);
}
#endif

void rl_tile_pack_t(float *pack, int ldp, const float *B, int ldb, int n, int k)
{
    /* eight rows of B at a time, each column of them written as 8 contiguous floats of one
     * pack row: the reads stay within 8 lines of B and the writes go out whole (column by
     * column over all n rows measured ~3x slower per element on Zen 3: one strided read
     * per write); the whole 8 x 8 blocks by vector shuffles where the CPU has AVX2 */
    int k8 = 0;
#if RL_TILE_VECTOR
    if (vector_isa() != ISA_NONE) k8 = k & ~7, pack_blocks(pack, ldp, B, ldb, n & ~7, k8);
#endif
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        const float *b = B + (size_t)j * ldb;
        for (int c = k8; c < k; c++) {
            float *o = pack + (size_t)c * ldp + j;
#pragma GCC unroll 8
            for (int r = 0; r < 8; r++)
                o[r] = b[(size_t)r * ldb + c];
        }
    }
    for (; j < n; j++)
        for (int c = 0; c < k; c++)
            pack[(size_t)c * ldp + j] = B[(size_t)j * ldb + c];
    for (int c = 0; c < k; c++)
        for (int r = n; r < ldp; r++)
            pack[(size_t)c * ldp + r] = 0.0f;
}
