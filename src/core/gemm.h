/* gemm.h -- the only door to BLIS: row-major single-precision GEMM.
 *
 *   C (m x n) = alpha * op(A) * op(B) + beta * C
 *
 * Matrices are row-major with leading dimensions (lda, ldb, ldc >= columns of the
 * stored matrix), op(X) = X or X^T chosen by trans flags (no copies: BLIS takes
 * row/column strides).  rl_sgemm_strided takes BLIS-style general strides.
 *
 * Threads: ropelab has one owner of threads at a time.  Outside an OpenMP
 * parallel region a GEMM uses rl_threads_get() (threads.h) BLIS threads; inside one it runs on
 * the calling thread only (no nested parallelism). */
#ifndef RL_GEMM_H
#define RL_GEMM_H

#include <stddef.h>

enum rl_trans { RL_TRANS_N = 0, RL_TRANS_T = 1 };

void rl_sgemm(enum rl_trans ta, enum rl_trans tb, int m, int n, int k, float alpha,
              const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);

void rl_sgemm_strided(int m, int n, int k, float alpha, const float *A, ptrdiff_t rsa,
                      ptrdiff_t csa, const float *B, ptrdiff_t rsb, ptrdiff_t csb, float beta,
                      float *C, ptrdiff_t rsc, ptrdiff_t csc);

/* Batched: for i < count, C_i = alpha op(A_i) op(B_i) + beta C_i with A_i = A + i*strideA ... .
 * Outside a parallel region the items are the pieces of one (rl_team(count) threads, each
 * product on its thread); a single item runs on BLIS's threads. */
void rl_sgemm_batched(enum rl_trans ta, enum rl_trans tb, int m, int n, int k, float alpha,
                      const float *A, int lda, ptrdiff_t stride_a, const float *B, int ldb,
                      ptrdiff_t stride_b, float beta, float *C, int ldc, ptrdiff_t stride_c,
                      int count);

/* Product accounting, for benchmarks: between rl_products_count(1) (which zeroes the
 * sums) and rl_products_count(0), every BLIS product (rl_sgemm*) and every vector attention
 * tile product (rl_tile_gemm) adds its 2 m n k FLOPs and its wall time times the threads
 * it ran on.  Off by default (then a product costs one branch more); switch it only
 * outside parallel regions. */
struct rl_products {
    double flops;     /* 2 m n k summed */
    double thread_ms; /* wall ms x threads of each product, summed */
    long   calls;
};
void               rl_products_count(int on);
struct rl_products rl_products_counted(void);
/* Adds one product when counting is on (for product kernels outside gemm.c). */
void rl_products_add(double flops, double thread_ms);
int  rl_products_counting(void);

/* The naive triple loop (double accumulation), the reference the tests compare against. */
void rl_sgemm_ref(enum rl_trans ta, enum rl_trans tb, int m, int n, int k, float alpha,
                  const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);

/* Chooses the BLIS kernel set (see rl_blis_arch) and initialises BLIS, once; rl_init
 * (threads.h) calls it. */
void rl_gemm_init(void);
/* Name of the BLIS kernel set in use ("skx", "haswell", ...) and how it was chosen. */
const char *rl_blis_arch(void);
const char *rl_blis_arch_reason(void);
/* What rl_init ignored of the user's BLIS settings and why (a BLIS_ARCH_TYPE that is no
 * kernel set of this BLIS or that this CPU cannot run, an unknown ROPELAB_BLIS_SUP), or
 * NULL.  BLIS_ARCH_TYPE may be a set's name ("zen3") or BLIS's number for it. */
const char *rl_blis_env_warning(void);
/* Which of BLIS's two paths a product takes: its unpacked "sup" path for small shapes,
 * the packed one otherwise (ROPELAB_BLIS_SUP=on|off overrides), as a sentence. */
const char *rl_blis_sup_policy(void);

#endif
