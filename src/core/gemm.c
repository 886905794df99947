/* gemm.c -- BLIS wrapper (the only file that includes <blis.h>) and the naive reference.
 *
 * BLIS facts that matter on the machines ropelab targets (measured on 2-vCPU guests):
 *  - Debian's BLIS 0.9 picks its AVX2 "haswell" kernels on Intel AVX-512 guests whose
 *    hypervisor hides the FMA-unit count, although its AVX-512 "skx" kernels run
 *    1.4-2.7x faster there; on AMD Zen 4 it picks "zen3" by itself, which measured
 *    faster than skx at the model's shapes.  So rl_init() asks BLIS what it would pick
 *    (in a short-lived child process, since the choice is fixed at BLIS's first call)
 *    and overrides it with BLIS_ARCH_TYPE=0 (skx) only when BLIS fell back to haswell
 *    or generic on a CPU with AVX-512 (F, DQ, BW, VL).  A BLIS_ARCH_TYPE set by the user
 *    wins when it names (or numbers) a kernel set of this build that the CPU can run.
 *  - BLIS ignores omp_set_num_threads: thread counts go through an rntm_t. */
#include "config.h"
#include "gemm.h"
#include "threads.h"
#include "util.h"

#include <blis.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static int         rl_inited      = 0;
static const char *rl_arch_reason = "BLIS's own choice";

/* The kernel set BLIS picks by itself on this CPU, asked in a child process (the parent's
 * BLIS stays uninitialised, so BLIS_ARCH_TYPE can still take effect); "" if unknown. */
static void blis_own_choice(char *name, size_t len)
{
    int fd[2];
    name[0] = 0;
    if (pipe(fd) != 0) return;
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]), close(fd[1]);
        return;
    }
    if (pid == 0) {
        close(fd[0]);
        unsetenv("BLIS_ARCH_TYPE");
        bli_init();
        const char *a = bli_arch_string(bli_arch_query_id());
        ssize_t     w = write(fd[1], a, strlen(a));
        _exit(w < 0);
    }
    close(fd[1]);
    size_t  got = 0;
    ssize_t r;
    while (got + 1 < len && (r = read(fd[0], name + got, len - 1 - got)) > 0)
        got += (size_t)r;
    name[got] = 0;
    close(fd[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
}

/* The kernel sets of this BLIS build (its BLIS_CONFIG_* macros) and what each needs from
 * the CPU.  BLIS 0.9 reads BLIS_ARCH_TYPE as a number only (a name such as "zen3" reads
 * as 0, skx) and runs the set it names without asking whether the CPU has its
 * instructions, so a wrong value ends in SIGILL or in BLIS's abort().  ropelab checks the
 * value first: a name is turned into its number, a set this CPU cannot run is refused. */
enum isa { ISA_ANY, ISA_SSSE3, ISA_AVX, ISA_AVX2_FMA, ISA_AVX_FMA4, ISA_AVX_FMA_FMA4, ISA_SKX, ISA_KNL };

static const struct kernel_set {
    arch_t   id;
    enum isa needs;
} kernel_sets[] = {
#ifdef BLIS_CONFIG_SKX
    {BLIS_ARCH_SKX, ISA_SKX},
#endif
#ifdef BLIS_CONFIG_KNL
    {BLIS_ARCH_KNL, ISA_KNL},
#endif
#ifdef BLIS_CONFIG_HASWELL
    {BLIS_ARCH_HASWELL, ISA_AVX2_FMA},
#endif
#ifdef BLIS_CONFIG_SANDYBRIDGE
    {BLIS_ARCH_SANDYBRIDGE, ISA_AVX},
#endif
#ifdef BLIS_CONFIG_PENRYN
    {BLIS_ARCH_PENRYN, ISA_SSSE3},
#endif
#ifdef BLIS_CONFIG_ZEN3
    {BLIS_ARCH_ZEN3, ISA_AVX2_FMA},
#endif
#ifdef BLIS_CONFIG_ZEN2
    {BLIS_ARCH_ZEN2, ISA_AVX2_FMA},
#endif
#ifdef BLIS_CONFIG_ZEN
    {BLIS_ARCH_ZEN, ISA_AVX2_FMA},
#endif
#ifdef BLIS_CONFIG_EXCAVATOR
    {BLIS_ARCH_EXCAVATOR, ISA_AVX_FMA_FMA4},
#endif
#ifdef BLIS_CONFIG_STEAMROLLER
    {BLIS_ARCH_STEAMROLLER, ISA_AVX_FMA_FMA4},
#endif
#ifdef BLIS_CONFIG_PILEDRIVER
    {BLIS_ARCH_PILEDRIVER, ISA_AVX_FMA_FMA4},
#endif
#ifdef BLIS_CONFIG_BULLDOZER
    {BLIS_ARCH_BULLDOZER, ISA_AVX_FMA4},
#endif
#ifdef BLIS_CONFIG_GENERIC
    {BLIS_ARCH_GENERIC, ISA_ANY},
#endif
};
#define N_KERNEL_SETS (sizeof kernel_sets / sizeof kernel_sets[0])

static int cpu_runs(enum isa n)
{
#if defined(__x86_64__) && defined(__GNUC__)
    switch (n) {
    case ISA_ANY: return 1;
    case ISA_SSSE3: return __builtin_cpu_supports("ssse3");
    case ISA_AVX: return __builtin_cpu_supports("avx");
    case ISA_AVX2_FMA: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case ISA_AVX_FMA4: return __builtin_cpu_supports("avx") && __builtin_cpu_supports("fma4");
    case ISA_AVX_FMA_FMA4:
        return __builtin_cpu_supports("avx") && __builtin_cpu_supports("fma") &&
               __builtin_cpu_supports("fma4");
    case ISA_SKX:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    case ISA_KNL:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512pf") &&
               __builtin_cpu_supports("avx512er");
    }
    return 0;
#else
    return n == ISA_ANY; /* no way to ask here: only the portable set is known to run */
#endif
}

/* The kernel sets this CPU runs, "zen3 (6), haswell (3), ...", for messages. */
static void runnable_sets(char *buf, size_t len)
{
    size_t off = 0;
    buf[0]     = 0;
    for (size_t i = 0; i < N_KERNEL_SETS && off < len; i++)
        if (cpu_runs(kernel_sets[i].needs))
            off += (size_t)snprintf(buf + off, len - off, "%s%s (%d)", off ? ", " : "",
                                    bli_arch_string(kernel_sets[i].id), (int)kernel_sets[i].id);
}

/* what rl_init ignored of the user's BLIS settings (BLIS_ARCH_TYPE, ROPELAB_BLIS_SUP) and
 * why, sentences joined by "; ", or "" */
static char env_warning[768];

static void warn_env(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warn_env(const char *fmt, ...)
{
    size_t  off = strlen(env_warning);
    va_list ap;
    if (off && off + 2 < sizeof env_warning) strcpy(env_warning + off, "; "), off += 2;
    va_start(ap, fmt);
    vsnprintf(env_warning + off, sizeof env_warning - off, fmt, ap);
    va_end(ap);
}

/* Checks the user's BLIS_ARCH_TYPE: 1 = kept (a name replaced by its number), 0 = removed
 * from the environment, with the reason in env_warning. */
static int check_user_arch(const char *value)
{
    char        num[24], sets[256];
    const char *why = NULL;
    long        id  = -1;
    char       *end;
    errno           = 0;
    long v          = strtol(value, &end, 10);
    if (end != value && *end == 0 && errno == 0)
        id = v;
    else
        for (int i = 0; i < BLIS_NUM_ARCHS; i++)
            if (!strcasecmp(value, bli_arch_string((arch_t)i))) id = i;
    const struct kernel_set *k = NULL;
    for (size_t i = 0; i < N_KERNEL_SETS; i++)
        if (kernel_sets[i].id == id) k = &kernel_sets[i];
    if (id < 0)
        why = "neither a kernel set's name nor its number";
    else if (!k)
        why = "not a kernel set of this BLIS build";
    else if (!cpu_runs(k->needs))
        why = "a kernel set whose instructions this CPU does not have";
    if (!why) {
        snprintf(num, sizeof num, "%ld", id);
        setenv("BLIS_ARCH_TYPE", num, 1);
        return 1;
    }
    runnable_sets(sets, sizeof sets);
    warn_env("BLIS_ARCH_TYPE=%.32s ignored: %s (this CPU runs %s); BLIS chooses", value, why,
             sets);
    unsetenv("BLIS_ARCH_TYPE");
    return 0;
}

static void choose_blis_arch(void)
{
    static char why[200];
    const char *user = getenv("BLIS_ARCH_TYPE");
    if (user) {
        char value[33];
        snprintf(value, sizeof value, "%s", user);
        if (check_user_arch(value)) {
            snprintf(why, sizeof why, "BLIS_ARCH_TYPE=%s set by the user", value);
            rl_arch_reason = why;
            return;
        }
    }
#if defined(__x86_64__) && defined(__GNUC__)
    if (!cpu_runs(ISA_SKX)) {
        rl_arch_reason = "BLIS's own choice (no AVX-512 on this CPU)";
        return;
    }
    char own[32];
    blis_own_choice(own, sizeof own);
    if (!strcmp(own, "haswell") || !strcmp(own, "generic")) {
        char num[16];
        snprintf(num, sizeof num, "%d", (int)BLIS_ARCH_SKX);
        setenv("BLIS_ARCH_TYPE", num, 0);
        snprintf(why, sizeof why,
                 "BLIS fell back to %s on an AVX-512 CPU; BLIS_ARCH_TYPE=%d (skx) set by ropelab",
                 own, (int)BLIS_ARCH_SKX);
        rl_arch_reason = why;
    } else {
        snprintf(why, sizeof why, "BLIS's own choice on this AVX-512 CPU (%s)",
                 own[0] ? "kept: not a fallback" : "could not be asked; kept");
        rl_arch_reason = why;
    }
#else
    rl_arch_reason = "BLIS's own choice";
#endif
}

/* BLIS 0.9 sends every product with one dimension below a few hundred to its "sup" path
 * (small / unpacked matrices: no packing, kernels that read A and B in place).  For the
 * model's products -- thousands of rows by 128-512 columns, or weight gradients with a long
 * inner dimension -- that is the slower choice on Zen 3: measured at one thread, with
 * sup vs packed, 4096 x 384 x 128 (X W^T) 57 vs 77 GFLOP/s, 384 x 128 x 4096 (dY^T X) 49
 * vs 67, 128 x 512 x 128 (every transposition) 48-54 vs 70; sup stays ahead only where a
 * dimension is small: 4096 x 128 x 64 (72 vs 65), 256 x 32 x 256 (79 vs 55), 16 x 64 x 128
 * (35 vs 18), and decoding's single rows.  So the packed path is taken from m, n >= 64
 * and k >= 128 on.  The rule depends on the shape only, never on a timing or the thread
 * count, so a run's numbers stay reproducible (the two paths round differently).
 * ROPELAB_BLIS_SUP=on (BLIS's own choice everywhere) or off (packed everywhere) overrides
 * it, to measure another CPU; --version says which holds. */
enum { SUP_BY_SHAPE, SUP_ALWAYS, SUP_NEVER };
static int sup_mode = SUP_BY_SHAPE; /* ROPELAB_BLIS_SUP=on|off|auto, read by rl_init */

static int sup_path(int m, int n, int k)
{
    if (sup_mode != SUP_BY_SHAPE) return sup_mode == SUP_ALWAYS;
    return m < 64 || n < 64 || k < 128;
}

static void choose_sup(void)
{
    const char *e = getenv("ROPELAB_BLIS_SUP");
    sup_mode      = SUP_BY_SHAPE;
    if (!e || !strcmp(e, "auto")) return;
    if (!strcmp(e, "on"))
        sup_mode = SUP_ALWAYS;
    else if (!strcmp(e, "off"))
        sup_mode = SUP_NEVER;
    else
        warn_env("ROPELAB_BLIS_SUP=%.32s ignored: not on, off or auto; the paths go by shape", e);
}

const char *rl_blis_sup_policy(void)
{
    return sup_mode == SUP_ALWAYS  ? "BLIS's own choice for every product (ROPELAB_BLIS_SUP=on)"
           : sup_mode == SUP_NEVER ? "packed for every product (ROPELAB_BLIS_SUP=off)"
                                   : "sup where m or n < 64 or k < 128, packed otherwise";
}

void rl_gemm_init(void)
{
    if (rl_inited) return;
    rl_inited = 1;
    choose_blis_arch();
    choose_sup();
    /* BLIS must initialise its kernel registry before the arch id is queried: with
     * BLIS_ARCH_TYPE set, an early bli_arch_query_id() aborts in BLIS 0.9. */
    bli_init();
}

const char *rl_blis_arch(void)
{
    rl_gemm_init();
    return bli_arch_string(bli_arch_query_id());
}

const char *rl_blis_arch_reason(void) { return rl_arch_reason; }

const char *rl_blis_env_warning(void) { return env_warning[0] ? env_warning : NULL; }

/* The counters, one per thread slot (rl_thread_slot) on a cache line of its own: a
 * product adds to its thread's, so the counting adds no shared writes to a step (one
 * shared counter made 16 threads take turns on its line at every product); slots past
 * PRODUCT_SLOTS share the last one, atomically. */
#define PRODUCT_SLOTS 256
static int counting;
static struct {
    _Alignas(64) struct rl_products p;
} counted[PRODUCT_SLOTS];

void rl_products_count(int on)
{
    if (on) memset(counted, 0, sizeof counted);
    counting = on;
}

struct rl_products rl_products_counted(void)
{
    struct rl_products sum = {0, 0, 0};
    for (int i = 0; i < PRODUCT_SLOTS; i++) { /* in slot order: the same sum every time */
        sum.flops += counted[i].p.flops;
        sum.thread_ms += counted[i].p.thread_ms;
        sum.calls += counted[i].p.calls;
    }
    return sum;
}

int rl_products_counting(void) { return counting; }

void rl_products_add(double flops, double thread_ms)
{
    if (!counting) return;
    const int slot = rl_thread_slot();
    if (slot < PRODUCT_SLOTS - 1) {
        struct rl_products *c = &counted[slot].p;
        c->flops += flops, c->thread_ms += thread_ms, c->calls++;
        return;
    }
    struct rl_products *c = &counted[PRODUCT_SLOTS - 1].p;
#pragma omp atomic
    c->flops += flops;
#pragma omp atomic
    c->thread_ms += thread_ms;
#pragma omp atomic
    c->calls++;
}

/* Inside any parallel region -- a team's thread, or a one-thread region (a region with one
 * piece, or nested) -- a product runs on the calling thread: the region owns the threads. */
static int gemm_threads(void)
{
#ifdef _OPENMP
    if (omp_get_level() > 0) return 1;
#endif
    return rl_threads_get();
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
    rntm_t    rntm = BLIS_RNTM_INITIALIZER;
    const int nt   = gemm_threads();
    bli_rntm_set_num_threads(nt, &rntm);
    if (!sup_path(m, n, k)) bli_rntm_disable_l3_sup(&rntm);
    const double t0 = counting ? rl_now_ms() : 0;
    /* outside any region the product is a region of its own, on BLIS's threads, which
     * split its rows and columns: booked as one piece per 32 x 32 block of C */
    const double r0 = rl_region_begin();
    bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, m, n, k, &alpha, (float *)A, rsa, csa,
                 (float *)B, rsb, csb, &beta, C, rsc, csc, NULL, &rntm);
    rl_region_end(r0, (long)((m + 31) / 32) * ((n + 31) / 32));
    if (counting) rl_products_add(2.0 * m * n * k, (rl_now_ms() - t0) * nt);
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
    if (count == 1 || rl_nested()) { /* one product: BLIS's threads; nested: this thread */
        for (int i = 0; i < count; i++)
            rl_sgemm(ta, tb, m, n, k, alpha, A + i * stride_a, lda, B + i * stride_b, ldb, beta,
                     C + i * stride_c, ldc);
        return;
    }
    const int    team = rl_team(count); /* the items are the pieces */
    const double t0   = rl_region_begin();
#pragma omp parallel for schedule(static) num_threads(team)
    for (int i = 0; i < count; i++)
        rl_sgemm(ta, tb, m, n, k, alpha, A + i * stride_a, lda, B + i * stride_b, ldb, beta,
                 C + i * stride_c, ldc);
    rl_region_end(t0, count);
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
