/* t_gemm.c -- the BLIS wrapper against the naive float64 loop: every transpose pair,
 * odd shapes, leading dimensions larger than the row, beta = 0 / 1, batched and
 * general strides, and a BLIS-style residual check on a large product; the attention-tile
 * products of tilemm.h against the same loop (vector kernel and BLIS fallback shapes);
 * the product accounting that `ropelab bench --train` reports. */
#include "config.h"
#include "core/gemm.h"
#include "core/threads.h"
#include "core/init.h"
#include "tap.h"
#include "core/tilemm.h"
#include "core/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void check_case(enum rl_trans ta, enum rl_trans tb, int m, int n, int k, float beta)
{
    int    lda = (ta == RL_TRANS_N ? k : m) + 3, ldb = (tb == RL_TRANS_N ? n : k) + 1, ldc = n + 2;
    int    ra = ta == RL_TRANS_N ? m : k, rb = tb == RL_TRANS_N ? k : n;
    float *A = malloc(sizeof(float) * ra * lda), *B = malloc(sizeof(float) * rb * ldb);
    float *C = malloc(sizeof(float) * m * ldc), *R = malloc(sizeof(float) * m * ldc);
    tap_fill_normal(A, (size_t)ra * lda, 1.0);
    tap_fill_normal(B, (size_t)rb * ldb, 1.0);
    tap_fill_normal(C, (size_t)m * ldc, 1.0);
    memcpy(R, C, sizeof(float) * m * ldc);
    rl_sgemm(ta, tb, m, n, k, 0.75f, A, lda, B, ldb, beta, C, ldc);
    rl_sgemm_ref(ta, tb, m, n, k, 0.75f, A, lda, B, ldb, beta, R, ldc);
    double *ref = malloc(sizeof(double) * m * ldc);
    for (int i = 0; i < m * ldc; i++) ref[i] = R[i];
    tap_close(C, ref, (size_t)m * ldc, 1e-5, 1e-5 * sqrt((double)k), "sgemm %c%c m=%d n=%d k=%d beta=%g",
              ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, beta);
    free(A), free(B), free(C), free(R), free(ref);
}

/* BLIS testsuite idea: ||C x - A (B x)|| / (||A|| ||B|| ||x||) small for a random x. */
static void residual_check(int m, int n, int k)
{
    float  *A = malloc(sizeof(float) * m * k), *B = malloc(sizeof(float) * k * n),
           *C = malloc(sizeof(float) * m * n);
    double *x = malloc(sizeof(double) * n), *Bx = malloc(sizeof(double) * k);
    tap_fill_normal(A, (size_t)m * k, 1.0);
    tap_fill_normal(B, (size_t)k * n, 1.0);
    for (int j = 0; j < n; j++) x[j] = tap_normal();
    rl_sgemm(RL_TRANS_N, RL_TRANS_N, m, n, k, 1.0f, A, k, B, n, 0.0f, C, n);
    double num = 0, na = 0, nb = 0, nx = 0;
    for (int p = 0; p < k; p++) {
        Bx[p] = 0;
        for (int j = 0; j < n; j++) Bx[p] += B[(size_t)p * n + j] * x[j];
    }
    for (int i = 0; i < m; i++) {
        double cx = 0, abx = 0;
        for (int j = 0; j < n; j++) cx += C[(size_t)i * n + j] * x[j];
        for (int p = 0; p < k; p++) abx += A[(size_t)i * k + p] * Bx[p];
        num += (cx - abx) * (cx - abx);
    }
    for (size_t i = 0; i < (size_t)m * k; i++) na += (double)A[i] * A[i];
    for (size_t i = 0; i < (size_t)k * n; i++) nb += (double)B[i] * B[i];
    for (int j = 0; j < n; j++) nx += x[j] * x[j];
    double res = sqrt(num) / (sqrt(na) * sqrt(nb) * sqrt(nx));
    tap_ok(res < 1e-6, "residual ||Cx - A(Bx)||/(|A||B||x|) = %.3g for %dx%dx%d", res, m, n, k);
    free(A), free(B), free(C), free(x), free(Bx);
}

static void strided_and_batched(void)
{
    /* C^T = B^T A^T through general strides: compute C stored column-major. */
    int    m = 7, n = 5, k = 9;
    float  A[7 * 9], B[9 * 5], C[7 * 5], R[7 * 5] = {0};
    double ref[7 * 5];
    tap_fill_normal(A, 63, 1.0);
    tap_fill_normal(B, 45, 1.0);
    rl_sgemm_strided(m, n, k, 1.0f, A, k, 1, B, n, 1, 0.0f, C, 1, m); /* C column-major */
    rl_sgemm_ref(RL_TRANS_N, RL_TRANS_N, m, n, k, 1.0f, A, k, B, n, 0.0f, R, n);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) ref[j * m + i] = R[i * n + j];
    tap_close(C, ref, 35, 1e-5, 1e-5, "strided: column-major output");

    enum { CNT = 5 };
    float  X[CNT * 6 * 4], W[CNT * 3 * 4], Y[CNT * 6 * 3], Yr[CNT * 6 * 3];
    double yr[CNT * 6 * 3];
    tap_fill_normal(X, sizeof X / sizeof *X, 1.0);
    tap_fill_normal(W, sizeof W / sizeof *W, 1.0);
    rl_sgemm_batched(RL_TRANS_N, RL_TRANS_T, 6, 3, 4, 1.0f, X, 4, 24, W, 4, 12, 0.0f, Y, 3, 18, CNT);
    for (int b = 0; b < CNT; b++)
        rl_sgemm_ref(RL_TRANS_N, RL_TRANS_T, 6, 3, 4, 1.0f, X + 24 * b, 4, W + 12 * b, 4, 0.0f,
                     Yr + 18 * b, 3);
    for (int i = 0; i < CNT * 18; i++) yr[i] = Yr[i];
    tap_close(Y, yr, CNT * 18, 1e-5, 1e-5, "batched y = x W^T over %d items", CNT);
}

/* rl_tile_gemm (A plain or transposed through its strides, or B^T packed by
 * rl_tile_pack_t) against the naive loop; beta = 0 must not read C (it holds NaN then). */
static void tile_case(int m, int n, int k, int ta, float beta, int nt)
{
    int    np = (n + 15) & ~15, ldc = np + 2, ra = ta ? k : m, lda = (ta ? m : k) + 3;
    int    rb = nt ? n : k, ldb = (nt ? k : n) + 1;
    float *A = malloc(sizeof(float) * ra * lda), *B = malloc(sizeof(float) * rb * ldb);
    float *C = malloc(sizeof(float) * m * ldc), *R = malloc(sizeof(float) * m * ldc);
    float *pack = malloc(sizeof(float) * (size_t)k * np + 4);
    tap_fill_normal(A, (size_t)ra * lda, 1.0);
    tap_fill_normal(B, (size_t)rb * ldb, 1.0);
    tap_fill_normal(C, (size_t)m * ldc, 1.0);
    if (beta == 0.0f)
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) C[(size_t)i * ldc + j] = NAN;
    memcpy(R, C, sizeof(float) * m * ldc);
    if (nt) {
        rl_tile_pack_t(pack, np, B, ldb, n, k); /* A B^T through the packed transpose */
        rl_tile_gemm(m, np, k, 0.75f, A, lda, 1, pack, np, 0.0f, C, ldc);
        rl_sgemm_ref(RL_TRANS_N, RL_TRANS_T, m, n, k, 0.75f, A, lda, B, ldb, 0.0f, R, ldc);
    } else {
        rl_tile_gemm(m, n, k, 0.75f, A, ta ? 1 : lda, ta ? lda : 1, B, ldb, beta, C, ldc);
        rl_sgemm_ref(ta ? RL_TRANS_T : RL_TRANS_N, RL_TRANS_N, m, n, k, 0.75f, A, lda, B, ldb, beta,
                     R, ldc);
    }
    double *ref = malloc(sizeof(double) * m * ldc), *got = malloc(sizeof(double) * m * ldc);
    size_t  cnt = 0;
    for (int i = 0; i < m; i++) /* the n columns (the kernel may also write the padding) */
        for (int j = 0; j < n; j++, cnt++)
            ref[cnt] = R[(size_t)i * ldc + j], got[cnt] = C[(size_t)i * ldc + j];
    float *gf = malloc(sizeof(float) * (cnt + 1));
    for (size_t i = 0; i < cnt; i++) gf[i] = (float)got[i];
    tap_close(gf, ref, cnt, 1e-5, 1e-5 * sqrt((double)k + 1), "tile %s m=%d n=%d k=%d beta=%g",
              nt ? "A B^T" : ta ? "A^T B" : "A B", m, n, k, beta);
    free(A), free(B), free(C), free(R), free(pack), free(ref), free(got), free(gf);
}

/* rl_tile_pack_t is a transpose: every float of B (n x k, ldb > k) in its place in the
 * pack, bit for bit, and zeros in the padding columns n .. ldp-1 (which hold NaN before).
 * The shapes cover whole 8 x 8 blocks (the vector path), and rows and columns left over
 * around them (the scalar path). */
static void pack_case(int n, int k)
{
    const int ldp = (n + 15) & ~15, ldb = k + 5;
    float    *B    = malloc(sizeof(float) * (size_t)n * ldb);
    float    *pack = malloc(sizeof(float) * (size_t)k * ldp);
    tap_fill_normal(B, (size_t)n * ldb, 1.0);
    for (size_t i = 0; i < (size_t)k * ldp; i++)
        pack[i] = NAN;
    rl_tile_pack_t(pack, ldp, B, ldb, n, k);
    size_t bad = 0;
    for (int c = 0; c < k; c++)
        for (int j = 0; j < ldp; j++) {
            const float want = j < n ? B[(size_t)j * ldb + c] : 0.0f;
            bad += memcmp(&pack[(size_t)c * ldp + j], &want, sizeof want) != 0;
        }
    tap_ok(bad == 0, "pack_t n=%d k=%d: the exact transpose, zero padded (%zu floats wrong)", n, k,
           bad);
    free(B), free(pack);
}

/* The product accounting: exact FLOP sums and call counts while on, nothing while off,
 * thread time scaled by the threads a BLIS product ran on; a tile product counts once
 * (its BLIS fallback through rl_sgemm_strided, otherwise the vector kernel). */
static void products_accounting(void)
{
    float *A = calloc(200 * 300, sizeof *A), *B = calloc(300 * 64, sizeof *B);
    float *C = calloc(200 * 64, sizeof *C);
    rl_threads_set(1);
    rl_products_count(1);
    rl_sgemm(RL_TRANS_N, RL_TRANS_N, 200, 64, 300, 1.0f, A, 300, B, 64, 0.0f, C, 64);
    rl_sgemm(RL_TRANS_T, RL_TRANS_N, 7, 5, 3, 1.0f, A, 7, B, 5, 1.0f, C, 5);
    rl_tile_gemm(16, 32, 32, 1.0f, A, 32, 1, B, 32, 0.0f, C, 32);
    rl_tile_gemm(5, 20, 7, 1.0f, A, 7, 1, B, 20, 0.0f, C, 20);
    struct rl_products p = rl_products_counted();
    double want = 2.0 * (200 * 64 * 300 + 7 * 5 * 3 + 16 * 32 * 32 + 5 * 20 * 7);
    tap_ok(p.flops == want && p.calls == 4 && p.thread_ms > 0,
           "products counted: %.0f FLOPs (want %.0f), %ld calls (want 4), %.3f thread-ms", p.flops,
           want, p.calls, p.thread_ms);
    rl_products_count(0);
    rl_sgemm(RL_TRANS_N, RL_TRANS_N, 200, 64, 300, 1.0f, A, 300, B, 64, 0.0f, C, 64);
    struct rl_products q = rl_products_counted();
    tap_ok(q.flops == p.flops && q.calls == 4, "nothing counted while off (%ld calls)", q.calls);
    /* the same product on 2 threads: at least ~2x its wall time is booked (generous bound:
     * thread time >= wall time always; = 2 x wall by construction) */
    rl_threads_set(2);
    rl_products_count(1);
    double t0 = rl_now_ms();
    rl_sgemm(RL_TRANS_N, RL_TRANS_N, 200, 64, 300, 1.0f, A, 300, B, 64, 0.0f, C, 64);
    double wall = rl_now_ms() - t0;
    struct rl_products r = rl_products_counted();
    rl_products_count(0);
    tap_ok(r.calls == 1 && r.thread_ms <= 2 * wall + 1e-9 && r.thread_ms > wall,
           "a 2-thread product books 2 x its wall time (%.4f thread-ms, wall %.4f ms)",
           r.thread_ms, wall);
    rl_threads_set(1);
    free(A), free(B), free(C);
}

/* BLIS splits a product's rows and columns between its threads, never the inner dimension
 * (its automatic factorisation sets the k loop's ways to 1, on its packed path and on the
 * unpacked "sup" one alike), so every element is summed in one order whatever the count:
 * the products of the model's shapes (both paths, every transposition, odd edges, beta 0
 * and 1) on 1, 2, 3, 7 and 16 threads give the same bits. */
static void thread_count_bits(void)
{
    const int shapes[][3] = {{1024, 384, 128}, {384, 128, 1024}, {128, 512, 128},
                             {301, 77, 515},   {1024, 48, 128},  {48, 128, 1024}};
    const int counts[]    = {2, 3, 7, 16};
    for (int s = 0; s < 6; s++) {
        const int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        float    *A = malloc((size_t)m * k * 4), *B = malloc((size_t)k * n * 4);
        float    *C1 = malloc((size_t)m * n * 4), *Ck = malloc((size_t)m * n * 4);
        tap_fill_normal(A, (size_t)m * k, 1.0), tap_fill_normal(B, (size_t)k * n, 1.0);
        tap_fill_normal(C1, (size_t)m * n, 1.0);
        memcpy(Ck, C1, (size_t)m * n * 4);
        const int ta = s % 2, tb = s / 2 % 2, lda = ta ? m : k, ldb = tb ? k : n;
        int       same = 1;
        rl_threads_set(1);
        rl_sgemm(ta, tb, m, n, k, 1.0f, A, lda, B, ldb, s % 3 ? 1.0f : 0.0f, C1, n);
        for (int c = 0; c < 4; c++) {
            float *Ct = malloc((size_t)m * n * 4);
            memcpy(Ct, Ck, (size_t)m * n * 4);
            rl_threads_set(counts[c]);
            rl_sgemm(ta, tb, m, n, k, 1.0f, A, lda, B, ldb, s % 3 ? 1.0f : 0.0f, Ct, n);
            same &= memcmp(Ct, C1, (size_t)m * n * 4) == 0;
            free(Ct);
        }
        rl_threads_set(1);
        tap_ok(same, "%d x %d x %d (%c%c, beta %d): 2, 3, 7, 16 BLIS threads give the bits of 1", m,
               n, k, ta ? 'T' : 'N', tb ? 'T' : 'N', s % 3 ? 1 : 0);
        free(A), free(B), free(C1), free(Ck);
    }
}

int main(void)
{
    rl_init(1);
    tap_seed(11);
    tap_diag("BLIS kernels: %s (%s)", rl_blis_arch(), rl_blis_arch_reason());
    const int shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {17, 13, 33}, {64, 48, 32}, {129, 67, 5}};
    for (int s = 0; s < 5; s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                check_case(ta, tb, shapes[s][0], shapes[s][1], shapes[s][2], s % 2 ? 1.0f : 0.0f);
    check_case(RL_TRANS_N, RL_TRANS_N, 4, 4, 0, 0.5f); /* k = 0: C = beta C */
    residual_check(300, 200, 250);
    rl_threads_set(2);
    residual_check(256, 256, 256);
    strided_and_batched();
    rl_threads_set(1);
    /* tiles: n a multiple of 16 (the vector kernel where AVX-512F or AVX2 exists: 8- or
     * 6-row blocks, 4-row blocks, row tails, 32- and 16-wide column blocks) and not (BLIS) */
    const int tiles[][3] = {{8, 32, 32}, {13, 32, 256}, {256, 32, 100}, {7, 16, 5},
                            {9, 48, 3},  {5, 20, 7},    {1, 64, 1},     {16, 32, 0}};
    for (int s = 0; s < 8; s++)
        for (int ta = 0; ta < 2; ta++)
            tile_case(tiles[s][0], tiles[s][1], tiles[s][2], ta, s % 2 ? 1.0f : 0.0f, 0);
    const int nts[][3] = {{17, 256, 32}, {3, 40, 32}, {128, 128, 16}, {2, 5, 3}};
    for (int s = 0; s < 4; s++)
        tile_case(nts[s][0], nts[s][1], nts[s][2], 0, 0.0f, 1);
    const int packs[][2] = {{256, 32}, {64, 16}, {40, 8}, {17, 32}, {256, 37}, {7, 5}, {9, 64}};
    for (int s = 0; s < 7; s++)
        pack_case(packs[s][0], packs[s][1]);
    products_accounting();
    thread_count_bits();
    return tap_done();
}
