/* gemm.c -- BLIS wrapper (the only file that includes <blis.h>) and the naive reference.
 *
 * BLIS facts that matter on the machines ropelab targets (shared/MACHINE.md):
 *  - Debian's BLIS 0.9 picks its AVX2 "haswell" kernels on AVX-512 guests whose
 *    hypervisor hides the FMA-unit count; BLIS_ARCH_TYPE=0 (skx) set before the
 *    first BLIS call selects the AVX-512 kernels.  rl_init() sets it when the CPU
 *    has AVX-512F and the user has not set BLIS_ARCH_TYPE (a user's setting wins).
 *  - BLIS ignores omp_set_num_threads: thread counts go through an rntm_t. */
#define _GNU_SOURCE 1 /* sched_getaffinity, CPU_COUNT */
#include "config.h"
#include <sched.h>
#include <unistd.h>
#include "gemm.h"

#include <blis.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static int         rl_nthreads    = 1;
static int         rl_inited      = 0;
static const char *rl_arch_reason = "BLIS default";

int rl_cores_available(void)
{
#ifdef _OPENMP
    /* the runtime counts the process's affinity mask as it was at start: with
     * OMP_PROC_BIND the initial thread is bound to one core before main runs */
    return omp_get_num_procs();
#endif
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* OMP_NUM_THREADS when set, else the cores this process may run on (its affinity mask,
 * which taskset and container limits narrow): never more threads than cores by default. */
static int default_threads(void)
{
    const char *e = getenv("OMP_NUM_THREADS");
    if (e && atoi(e) > 0) return atoi(e);
#ifdef _OPENMP
    return rl_cores_available();
#else
    return 1;
#endif
}

void rl_init(int nthreads)
{
    if (!rl_inited) {
        rl_inited = 1;
#if defined(__x86_64__) && defined(__GNUC__)
        if (getenv("BLIS_ARCH_TYPE")) {
            rl_arch_reason = "BLIS_ARCH_TYPE set by the user";
        } else if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")) {
            setenv("BLIS_ARCH_TYPE", "0", 0); /* 0 = skx in BLIS 0.9's arch_t */
            rl_arch_reason = "AVX-512 detected; BLIS_ARCH_TYPE=0 (skx) chosen by ropelab";
        }
#endif
        /* BLIS must initialise its kernel registry before the arch id is queried: with
         * BLIS_ARCH_TYPE set, an early bli_arch_query_id() aborts in BLIS 0.9. */
        bli_init();
    }
    rl_threads_set(nthreads > 0 ? nthreads : default_threads());
}

void rl_threads_set(int n)
{
    rl_nthreads = n > 0 ? n : 1;
#ifdef _OPENMP
    omp_set_num_threads(rl_nthreads);
#endif
}

int rl_threads_get(void) { return rl_nthreads; }

const char *rl_blis_arch(void)
{
    if (!rl_inited) rl_init(0);
    return bli_arch_string(bli_arch_query_id());
}

const char *rl_blis_arch_reason(void) { return rl_arch_reason; }

static int gemm_threads(void)
{
#ifdef _OPENMP
    if (omp_in_parallel()) return 1;
#endif
    return rl_nthreads;
}

void rl_sgemm_strided(int m, int n, int k, float alpha, const float *A, ptrdiff_t rsa,
                      ptrdiff_t csa, const float *B, ptrdiff_t rsb, ptrdiff_t csb, float beta,
                      float *C, ptrdiff_t rsc, ptrdiff_t csc)
{
    if (m <= 0 || n <= 0) return;
    if (k <= 0) { /* BLIS handles k = 0, but make beta-scaling explicit */
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                float *c = C + i * rsc + j * csc;
                *c       = beta == 0.0f ? 0.0f : beta * *c;
            }
        return;
    }
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(gemm_threads(), &rntm);
    bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, m, n, k, &alpha, (float *)A, rsa, csa,
                 (float *)B, rsb, csb, &beta, C, rsc, csc, NULL, &rntm);
}

void rl_sgemm(enum rl_trans ta, enum rl_trans tb, int m, int n, int k, float alpha, const float *A,
              int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    /* op(A) is m x k: stored A is (m x k, ld lda) or (k x m, ld lda) for A^T. */
    ptrdiff_t rsa = ta == RL_TRANS_N ? lda : 1, csa = ta == RL_TRANS_N ? 1 : lda;
    ptrdiff_t rsb = tb == RL_TRANS_N ? ldb : 1, csb = tb == RL_TRANS_N ? 1 : ldb;
    rl_sgemm_strided(m, n, k, alpha, A, rsa, csa, B, rsb, csb, beta, C, ldc, 1);
}

void rl_sgemm_batched(enum rl_trans ta, enum rl_trans tb, int m, int n, int k, float alpha,
                      const float *A, int lda, ptrdiff_t stride_a, const float *B, int ldb,
                      ptrdiff_t stride_b, float beta, float *C, int ldc, ptrdiff_t stride_c,
                      int count)
{
#pragma omp parallel for schedule(static) if (count > 1 && rl_nthreads > 1)
    for (int i = 0; i < count; i++)
        rl_sgemm(ta, tb, m, n, k, alpha, A + i * stride_a, lda, B + i * stride_b, ldb, beta,
                 C + i * stride_c, ldc);
}

void rl_sgemm_ref(enum rl_trans ta, enum rl_trans tb, int m, int n, int k, float alpha,
                  const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double acc = 0.0;
            for (int p = 0; p < k; p++) {
                double a = ta == RL_TRANS_N ? A[(size_t)i * lda + p] : A[(size_t)p * lda + i];
                double b = tb == RL_TRANS_N ? B[(size_t)p * ldb + j] : B[(size_t)j * ldb + p];
                acc += a * b;
            }
            float *c = C + (size_t)i * ldc + j;
            *c       = (float)(alpha * acc + (beta == 0.0f ? 0.0 : (double)beta * *c));
        }
}
