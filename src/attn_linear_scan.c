/* attn_linear_scan.c -- the O(N D dv) sums of linear attention (attn_linear_impl.h).
 *
 * Causal: a prefix scan written as one kernel used four times,
 *   out_i = sum_x Q_i[x] S_i[x][:],   S_i = sum over the rows n seen so far, i included, of
 *                                           K_n[x] W_n[:]     (X x Y state, rows in order or
 *                                                             reversed for suffix sums)
 * forward  num = scan(Q = A, K = C, W = V)                   num_m = sum_{n<=m} (A_m.C_n) v_n
 * backward dA  = scan(dnum, V, C)                            dA_m = sum_{n<=m} (dnum_m.v_n) C_n
 *          dV  = scan(C, A, dnum) reversed                   dV_n = sum_{m>=n} (A_m.C_n) dnum_m
 *          dC  = scan(V, dnum, A) reversed                   dC_n = sum_{m>=n} (dnum_m.v_n) A_m
 * so the backward recomputes the prefix state and accumulates the gradient (suffix) states
 * itself; nothing of size N x D x dv is stored.
 *
 * Why not the chunked quadratic form (C x C masked scores by GEMM + inter-chunk state)?
 * It was the first implementation: with d = dv = 32 its GEMMs are 64-128 wide, and BLIS
 * spends ~3 us per call in set-up on the AVX-512 kernels (packing, control tree, thread
 * decorator), which held forward+backward at ~40 GFLOP/s and ~2.5x over PyTorch (see
 * docs/attention_linear.md).  The scan does the same O(N D dv) arithmetic (2 X Y flops a
 * row) with the state in L1: a 4-row x 32-lane register tile (scan_block) updates each
 * state row once per 4 rows and keeps 8 accumulators in registers.
 *
 * Accuracy at N = 65536: the float state only lives for RL_LIN_CHUNK rows.  At the end of
 * each chunk its increment K_c^T W_c is recomputed by one rl_sgemm, added to a double
 * state, and the float state restarts from the double one, so rounding does not build up
 * over N.  The non-causal form is two large GEMMs (associativity), S summed in double. */
#include "config.h"
#include "attn_linear_impl.h"
#include "gemm.h"
#include "vexp.h"

#include <string.h>

/* 16 floats, any alignment: GCC/clang vector extension, compiled per clone of
 * RL_SIMD_CLONES (one zmm on AVX-512, two ymm on AVX2, four xmm otherwise). */
typedef float lin_v16 __attribute__((vector_size(64), aligned(4), may_alias));

static size_t r16(size_t n) { return (n + 15) & ~(size_t)15; }
static int    imax(int a, int b) { return a > b ? a : b; }
static int    imin(int a, int b) { return a < b ? a : b; }
static int    lanes(int Y) { return (Y + 31) & ~31; } /* state rows padded to 32 lanes */

/* Carve n floats from *p, keeping every piece 64-byte aligned relative to the start. */
static float *take(float **p, size_t n)
{
    float *r = *p;
    *p += r16(n);
    return r;
}

/* Workspace (X, Y <= M = max(D, dv)): float state S (X x Yp), double state Sd (X x Y),
 * GEMM output T (X x Y), 4 padded rows of W in (wb) and of the output (ob), a zero row. */
struct scan_ws {
    float  *S, *T, *wb, *ob, *zero;
    double *Sd;
};

static size_t ws_floats(int D, int dv, struct scan_ws *w, float *base)
{
    const size_t M = (size_t)imax(D, dv), P = (size_t)lanes((int)M);
    float       *p = base;
    size_t       n = r16(M * P + M * M) + r16(M * M) + 2 * r16(4 * P) + r16(M) + r16(2 * M * M);
    if (w) {
        w->S    = take(&p, M * P + M * M); /* non-causal: S and Gs */
        w->T    = take(&p, M * M);
        w->wb   = take(&p, 4 * P);
        w->ob   = take(&p, 4 * P);
        w->zero = take(&p, M);
        w->Sd   = (double *)take(&p, 2 * M * M);
    }
    return n;
}

size_t rl_lin_num_work_floats(int D, int dv) { return ws_floats(D, dv, NULL, NULL); }

/* One step of the scan for 4 rows r = 0..3 (in scan order) and all Yp lanes of the state:
 *   for each x:  s = S[x];  for r:  s += k_r[x] w_r;  acc_r += q_r[x] s;   S[x] = s
 * i.e. row r's update is in the state before its readout (n <= m includes n = m). */
#define LIN_ROW(r, kx, qx)                                                                         \
    s0 += (kx) * w##r##0, s1 += (kx) * w##r##1, a##r##0 += (qx) * s0, a##r##1 += (qx) * s1

RL_SIMD_CLONES
static void scan_block(float *S, int Yp, const float *const *q, const float *const *k,
                       const float *wb, float *ob, int X)
{
    for (int t = 0; t < Yp; t += 32) {
        const float *w   = wb + t;
        lin_v16      w00 = *(const lin_v16 *)w, w01 = *(const lin_v16 *)(w + 16);
        lin_v16      w10 = *(const lin_v16 *)(w + Yp), w11 = *(const lin_v16 *)(w + Yp + 16);
        lin_v16 w20 = *(const lin_v16 *)(w + 2 * Yp), w21 = *(const lin_v16 *)(w + 2 * Yp + 16);
        lin_v16 w30 = *(const lin_v16 *)(w + 3 * Yp), w31 = *(const lin_v16 *)(w + 3 * Yp + 16);
        lin_v16 a00 = {0}, a01 = {0}, a10 = {0}, a11 = {0}, a20 = {0}, a21 = {0}, a30 = {0},
                a31 = {0};
        for (int x = 0; x < X; x++) {
            float  *Sx = S + (size_t)x * Yp + t;
            lin_v16 s0 = *(lin_v16 *)Sx, s1 = *(lin_v16 *)(Sx + 16);
            LIN_ROW(0, k[0][x], q[0][x]);
            LIN_ROW(1, k[1][x], q[1][x]);
            LIN_ROW(2, k[2][x], q[2][x]);
            LIN_ROW(3, k[3][x], q[3][x]);
            *(lin_v16 *)Sx = s0, *(lin_v16 *)(Sx + 16) = s1;
        }
        float *o = ob + t;
        *(lin_v16 *)o = a00, *(lin_v16 *)(o + 16) = a01;
        *(lin_v16 *)(o + Yp) = a10, *(lin_v16 *)(o + Yp + 16) = a11;
        *(lin_v16 *)(o + 2 * Yp) = a20, *(lin_v16 *)(o + 2 * Yp + 16) = a21;
        *(lin_v16 *)(o + 3 * Yp) = a30, *(lin_v16 *)(o + 3 * Yp + 16) = a31;
    }
}

/* The rows l of chunk [t0, t0 + l) in scan order, 4 at a time (zero rows pad the last). */
static void scan_chunk(float *out, const float *Q, const float *K, const float *W, int t0, int l,
                       int X, int Y, int reverse, struct scan_ws *w)
{
    const int Yp = lanes(Y);
    for (int b = 0; b < l; b += 4) {
        const float *q[4], *k[4];
        int          row[4];
        for (int r = 0; r < 4; r++) {
            int i  = b + r, n = reverse ? t0 + l - 1 - i : t0 + i;
            row[r] = i < l ? n : -1;
            q[r]   = i < l ? Q + (size_t)n * X : w->zero;
            k[r]   = i < l ? K + (size_t)n * X : w->zero;
            if (i < l)
                memcpy(w->wb + (size_t)r * Yp, W + (size_t)n * Y, (size_t)Y * sizeof(float));
            else
                memset(w->wb + (size_t)r * Yp, 0, (size_t)Y * sizeof(float));
        }
        scan_block(w->S, Yp, q, k, w->wb, w->ob, X);
        for (int r = 0; r < 4; r++)
            if (row[r] >= 0)
                memcpy(out + (size_t)row[r] * Y, w->ob + (size_t)r * Yp, (size_t)Y * sizeof(float));
    }
}

/* Sd (X x Y, double) += K_c^T W_c over the chunk's l rows (one GEMM); S = (float)Sd. */
static void fold(struct scan_ws *w, const float *Kc, const float *Wc, int l, int X, int Y)
{
    const int Yp = lanes(Y);
    rl_sgemm(RL_TRANS_T, RL_TRANS_N, X, Y, l, 1.0f, Kc, X, Wc, Y, 0.0f, w->T, Y);
    for (int x = 0; x < X; x++)
        for (int y = 0; y < Y; y++) {
            double s = w->Sd[(size_t)x * Y + y] += (double)w->T[(size_t)x * Y + y];
            w->S[(size_t)x * Yp + y] = (float)s;
        }
}

static void scan(float *out, const float *Q, const float *K, const float *W, int N, int X, int Y,
                 int reverse, struct scan_ws *w)
{
    const int L = RL_LIN_CHUNK, nc = (N + L - 1) / L, Yp = lanes(Y);
    memset(w->S, 0, (size_t)X * Yp * sizeof(float));
    memset(w->Sd, 0, (size_t)X * Y * sizeof(double));
    memset(w->zero, 0, (size_t)X * sizeof(float));
    memset(w->wb, 0, 4 * (size_t)Yp * sizeof(float)); /* the pad lanes stay zero */
    for (int ci = 0; ci < nc; ci++) {
        int c = reverse ? nc - 1 - ci : ci, t0 = c * L, l = imin(L, N - t0);
        scan_chunk(out, Q, K, W, t0, l, X, Y, reverse, w);
        if (ci + 1 < nc) fold(w, K + (size_t)t0 * X, W + (size_t)t0 * Y, l, X, Y);
    }
}

/* Non-causal state S = X^T Y over all N rows (nx x ny), in blocks summed in double. */
static void full_state(float *S, struct scan_ws *w, const float *X, int nx, const float *Y,
                       int ny, int N)
{
    memset(w->Sd, 0, (size_t)nx * ny * sizeof(double));
    for (int t0 = 0; t0 < N; t0 += RL_LIN_BLOCK) {
        int l = imin(RL_LIN_BLOCK, N - t0);
        rl_sgemm(RL_TRANS_T, RL_TRANS_N, nx, ny, l, 1.0f, X + (size_t)t0 * nx, nx,
                 Y + (size_t)t0 * ny, ny, 0.0f, w->T, ny);
        for (int i = 0; i < nx * ny; i++) S[i] = (float)(w->Sd[i] += (double)w->T[i]);
    }
}

void rl_lin_num_forward(float *num, const float *A, const float *C, const float *V, int N, int D,
                        int dv, int causal, float *work)
{
    struct scan_ws w;
    ws_floats(D, dv, &w, work);
    if (causal) {
        scan(num, A, C, V, N, D, dv, 0, &w);
        return;
    }
    full_state(w.S, &w, C, D, V, dv, N); /* S = C^T V;  num = A S */
    rl_sgemm(RL_TRANS_N, RL_TRANS_N, N, dv, D, 1.0f, A, D, w.S, dv, 0.0f, num, dv);
}

void rl_lin_num_backward(float *dA, float *dC, float *dV, const float *dnum, const float *A,
                         const float *C, const float *V, int N, int D, int dv, int causal,
                         float *work)
{
    struct scan_ws w;
    ws_floats(D, dv, &w, work);
    if (causal) {
        scan(dA, dnum, V, C, N, dv, D, 0, &w);
        scan(dV, C, A, dnum, N, D, dv, 1, &w);
        scan(dC, V, dnum, A, N, dv, D, 1, &w);
        return;
    }
    /* num = A S, S = C^T V:  dA = dnum S^T;  Gs = A^T dnum;  dC = V Gs^T;  dV = C Gs */
    float *S = w.S, *Gs = w.S + (size_t)D * dv;
    full_state(S, &w, C, D, V, dv, N);
    rl_sgemm(RL_TRANS_N, RL_TRANS_T, N, D, dv, 1.0f, dnum, dv, S, dv, 0.0f, dA, D);
    full_state(Gs, &w, A, D, dnum, dv, N);
    rl_sgemm(RL_TRANS_N, RL_TRANS_T, N, D, dv, 1.0f, V, dv, Gs, dv, 0.0f, dC, D);
    rl_sgemm(RL_TRANS_N, RL_TRANS_N, N, dv, D, 1.0f, C, D, Gs, dv, 0.0f, dV, dv);
}

/* z += e (double accumulation of a float row) */
static RL_INLINE void add_row(double *z, const float *e, int n)
{
#pragma omp simd
    for (int f = 0; f < n; f++)
        z[f] += (double)e[f];
}

RL_SIMD_CLONES
long rl_lin_den_forward(float *den, float *out, int dv, const float *B, const float *E, int N,
                        int Dd, int causal, float eps, double *z)
{
    memset(z, 0, (size_t)Dd * sizeof(double));
    if (!causal)
        for (int n = 0; n < N; n++) add_row(z, E + (size_t)n * Dd, Dd);
    long bad = 0;
    for (int m = 0; m < N; m++) {
        const float *b = B + (size_t)m * Dd;
        if (causal) add_row(z, E + (size_t)m * Dd, Dd);
        double s = 0.0;
#pragma omp simd reduction(+ : s)
        for (int f = 0; f < Dd; f++)
            s += (double)b[f] * z[f];
        bad += s <= (double)eps; /* SPEC 2.3: the denominator before eps is <= eps */
        double dd = s + (double)eps;
        den[m]    = (float)dd;
        if (out) {
            float *o = out + (size_t)m * dv;
#pragma omp simd
            for (int j = 0; j < dv; j++)
                o[j] = (float)((double)o[j] / dd);
        }
    }
    return bad;
}

RL_SIMD_CLONES
void rl_lin_den_backward(float *dB, float *dE, const double *dden, const float *B, const float *E,
                         int N, int Dd, int causal, double *z)
{
    double *g = z + Dd;
    memset(z, 0, 2 * (size_t)Dd * sizeof(double));
    if (!causal)
        for (int n = 0; n < N; n++) {
            const float *b = B + (size_t)n * Dd;
            add_row(z, E + (size_t)n * Dd, Dd);
#pragma omp simd
            for (int f = 0; f < Dd; f++)
                g[f] += dden[n] * (double)b[f];
        }
    /* den_m = B_m . z_m + eps  =>  dB_m = dden_m z_m */
    for (int m = 0; m < N; m++) {
        float *db = dB + (size_t)m * Dd;
        if (causal) add_row(z, E + (size_t)m * Dd, Dd);
#pragma omp simd
        for (int f = 0; f < Dd; f++)
            db[f] += (float)(dden[m] * z[f]);
    }
    /* dE_n = sum_{m >= n (causal) or all m} dden_m B_m: a suffix sum, in double */
    for (int n = N - 1; n >= 0; n--) {
        const float *b  = B + (size_t)n * Dd;
        float       *de = dE + (size_t)n * Dd;
        if (causal) {
#pragma omp simd
            for (int f = 0; f < Dd; f++)
                g[f] += dden[n] * (double)b[f];
        }
#pragma omp simd
        for (int f = 0; f < Dd; f++)
            de[f] += (float)g[f];
    }
}
