/* attn_linear_scan.c -- the O(N D dv) sums of linear attention (attn_linear_impl.h).
 *
 * Causal: a prefix scan written as one kernel used four times (attn_linear.c runs it block
 * by block, carrying the state),
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
 * It was the first implementation (in its last version with the state update stacked into
 * the output GEMM, 7 GEMM calls per chunk): with d = dv = 32 those GEMMs are 64-128 wide,
 * where BLIS's AVX-512 path spends ~3 us per call in set-up and reaches 25-45 GFLOP/s, so
 * the numerator alone took ~20 ms forward+backward for 4 heads at N = 4096 -- the whole
 * budget (docs/attention_linear.md).  The scan does the O(N D dv) arithmetic directly (a
 * rank-1 update and a read-out, 4 X Y flops a row) with the state in L1: a 4-row x 32-lane
 * register tile (scan_block) loads and stores each state row once per 4 rows and keeps 8
 * accumulators in registers.  GEMMs remain where they are large: the per-block folds below
 * and the non-causal form.
 *
 * Accuracy at N = 65536: the float state only lives for one block (RL_LIN_BLOCK rows).
 * After each block its increment K_b^T W_b is recomputed by one rl_sgemm, added to a
 * double state, and the float state restarts from the double one, so rounding does not
 * build up over N.  The non-causal sums are GEMMs per block added in double. */
#include "config.h"
#include "attn_linear_impl.h"
#include "../core/gemm.h"
#include "../core/peak.h"
#include "../core/tilemm.h"
#include "../core/util.h"
#include "../core/vexp.h"

#include <string.h>

/* 16 floats, any alignment: GCC/clang vector extension, compiled per clone of
 * RL_SIMD_CLONES (one zmm on AVX-512, two ymm on AVX2, four xmm otherwise). */
typedef float lin_v16 __attribute__((vector_size(64), aligned(4), may_alias));
typedef float lin_v8 __attribute__((vector_size(32), aligned(4), may_alias));

static size_t r16(size_t n) { return (n + 15) & ~(size_t)15; }
static int    lanes(int Y) { return (Y + 31) & ~31; } /* state rows padded to 32 lanes */

/* Carve n floats from *p, keeping every piece 64-byte aligned relative to the start. */
static float *take(float **p, size_t n)
{
    float *r = *p;
    *p += r16(n);
    return r;
}

size_t rl_lin_scan_floats(int X, int Y)
{
    size_t P = (size_t)lanes(Y);
    return r16((size_t)X * P) + r16((size_t)X * Y) + 2 * r16(4 * P) + r16((size_t)X) +
           r16(2 * (size_t)X * Y);
}

/* The float state from the double one, row by row (a loop GCC left scalar at -O2: 0.4 % of
 * a 1-thread linear N = 4096 training step in perf). */
RL_SIMD_CLONES
static void sync_float_state(struct rl_lin_scan *s)
{
    const int X = s->X, Y = s->Y, Yp = s->Yp;
    for (int x = 0; x < X; x++) {
        float        *S  = s->S + (size_t)x * Yp;
        const double *Sd = s->Sd + (size_t)x * Y;
#pragma omp simd
        for (int y = 0; y < Y; y++)
            S[y] = (float)Sd[y];
    }
}

void rl_lin_scan_init(struct rl_lin_scan *s, float *work, int X, int Y, const double *Sd0)
{
    float *p = work;
    s->X = X, s->Y = Y, s->Yp = lanes(Y);
    s->S    = take(&p, (size_t)X * s->Yp);
    s->T    = take(&p, (size_t)X * Y);
    s->wb   = take(&p, 4 * (size_t)s->Yp);
    s->ob   = take(&p, 4 * (size_t)s->Yp);
    s->zero = take(&p, (size_t)X);
    s->Sd   = (double *)take(&p, 2 * (size_t)X * Y);
    memset(s->S, 0, (size_t)X * s->Yp * sizeof(float)); /* the pad lanes stay zero */
    memset(s->wb, 0, 4 * (size_t)s->Yp * sizeof(float));
    memset(s->zero, 0, (size_t)X * sizeof(float));
    if (Sd0)
        memcpy(s->Sd, Sd0, (size_t)X * Y * sizeof(double));
    else
        memset(s->Sd, 0, (size_t)X * Y * sizeof(double));
    sync_float_state(s);
}

/* One step of the scan for 4 rows r = 0..3 (in scan order) and all Yp lanes of the state:
 *   for each x:  s = S[x];  for r:  s += k_r[x] w_r;  acc_r += q_r[x] s;   S[x] = s
 * i.e. row r's update is in the state before its readout (n <= m includes n = m).  A
 * 4-row x 32-lane tile keeps its 8 accumulators and 8 W vectors in registers and loads
 * and stores each state row once per 4 rows.
 * The decayed tiles (forget gate): before row r's update the state shrinks by a_r,
 *   for each x:  s = S[x];  for r:  s = a_r s + k_r[x] w_r;  acc_r += q_r[x] s;   S[x] = s
 * the same tiles with one multiply more per state element and row.  The decayed scan
 * runs them only for 4-row steps that decay past STEP_MIN (below); every other step goes
 * through the plain tiles in a scaled frame.  Both are one always-inlined body whose
 * `decay` is a constant at each call, so each kernel keeps only its own row step. */
#define LIN_ROW(r, kx, qx)                                                                         \
    s0 += (kx)*w##r##0, s1 += (kx)*w##r##1, a##r##0 += (qx)*s0, a##r##1 += (qx)*s1
/* a row step ROW for each of the 4 rows, at state row x */
#define LIN_ROWS4(ROW)                                                                             \
    (ROW(0, k[0][x], q[0][x]), ROW(1, k[1][x], q[1][x]), ROW(2, k[2][x], q[2][x]),                 \
     ROW(3, k[3][x], q[3][x]))
/* the row's term k w formed apart, so that the state's chain is one fused multiply-add
 * per row (s a + t), as in LIN_ROW, not a multiply and then a fused multiply-add */
#define LIN_ROWD(r, kx, qx)                                                                        \
    t0 = (kx)*w##r##0, t1 = (kx)*w##r##1, s0 = s0 * a##r + t0, s1 = s1 * a##r + t1,                \
    a##r##0 += (qx)*s0, a##r##1 += (qx)*s1

static RL_INLINE void scan_tiles32(float *S, int Yp, const float *const *q, const float *const *k,
                                   const float *const *wr, float *const *orow, int X,
                                   const float *a, int decay)
{
    const float a0 = decay ? a[0] : 1, a1 = decay ? a[1] : 1, a2 = decay ? a[2] : 1,
                a3 = decay ? a[3] : 1;
    for (int t = 0; t < Yp; t += 32) {
        lin_v16 w00 = *(const lin_v16 *)(wr[0] + t), w01 = *(const lin_v16 *)(wr[0] + t + 16);
        lin_v16 w10 = *(const lin_v16 *)(wr[1] + t), w11 = *(const lin_v16 *)(wr[1] + t + 16);
        lin_v16 w20 = *(const lin_v16 *)(wr[2] + t), w21 = *(const lin_v16 *)(wr[2] + t + 16);
        lin_v16 w30 = *(const lin_v16 *)(wr[3] + t), w31 = *(const lin_v16 *)(wr[3] + t + 16);
        lin_v16 a00 = {0}, a01 = {0}, a10 = {0}, a11 = {0}, a20 = {0}, a21 = {0}, a30 = {0},
                a31 = {0};
        for (int x = 0; x < X; x++) {
            float  *Sx = S + (size_t)x * Yp + t;
            lin_v16 s0 = *(lin_v16 *)Sx, s1 = *(lin_v16 *)(Sx + 16), t0, t1;
            if (decay)
                LIN_ROWS4(LIN_ROWD);
            else
                LIN_ROWS4(LIN_ROW);
            *(lin_v16 *)Sx = s0, *(lin_v16 *)(Sx + 16) = s1;
        }
        *(lin_v16 *)(orow[0] + t) = a00, *(lin_v16 *)(orow[0] + t + 16) = a01;
        *(lin_v16 *)(orow[1] + t) = a10, *(lin_v16 *)(orow[1] + t + 16) = a11;
        *(lin_v16 *)(orow[2] + t) = a20, *(lin_v16 *)(orow[2] + t + 16) = a21;
        *(lin_v16 *)(orow[3] + t) = a30, *(lin_v16 *)(orow[3] + t + 16) = a31;
    }
}

/* The same for CPUs with 16 vector registers of 256 bits (AVX2): a 4-row x 8-lane tile
 * (4 W vectors, 4 accumulators, the state row and two broadcasts) stays in registers,
 * where the 32-lane tile needs 36 and spills.  Every lane sees the same operations in
 * the same order as in the 32-lane tile, so the results are the same. */
#define LIN_ROW8(r, kx, qx) s0 += (kx)*w##r, a##r##x += (qx)*s0
#define LIN_ROWD8(r, kx, qx) t0 = (kx)*w##r, s0 = s0 * a##r + t0, a##r##x += (qx)*s0

static RL_INLINE void scan_tiles8(float *S, int Yp, const float *const *q, const float *const *k,
                                  const float *const *wr, float *const *orow, int X, const float *a,
                                  int decay)
{
    const float a0 = decay ? a[0] : 1, a1 = decay ? a[1] : 1, a2 = decay ? a[2] : 1,
                a3 = decay ? a[3] : 1;
    for (int t = 0; t < Yp; t += 8) {
        lin_v8 w0 = *(const lin_v8 *)(wr[0] + t), w1 = *(const lin_v8 *)(wr[1] + t);
        lin_v8 w2 = *(const lin_v8 *)(wr[2] + t), w3 = *(const lin_v8 *)(wr[3] + t);
        lin_v8 a0x = {0}, a1x = {0}, a2x = {0}, a3x = {0};
        for (int x = 0; x < X; x++) {
            float *Sx = S + (size_t)x * Yp + t;
            lin_v8 s0 = *(lin_v8 *)Sx, t0;
            if (decay)
                LIN_ROWS4(LIN_ROWD8);
            else
                LIN_ROWS4(LIN_ROW8);
            *(lin_v8 *)Sx = s0;
        }
        *(lin_v8 *)(orow[0] + t) = a0x, *(lin_v8 *)(orow[1] + t) = a1x;
        *(lin_v8 *)(orow[2] + t) = a2x, *(lin_v8 *)(orow[3] + t) = a3x;
    }
}

/* The four kernels, each compiled per instruction set (RL_SIMD_CLONES). */
RL_SIMD_CLONES
static void scan_block(float *S, int Yp, const float *const *q, const float *const *k,
                       const float *const *wr, float *const *orow, int X)
{
    scan_tiles32(S, Yp, q, k, wr, orow, X, NULL, 0);
}

RL_SIMD_CLONES
static void scan_block_decay(float *S, int Yp, const float *const *q, const float *const *k,
                             const float *const *wr, float *const *orow, int X, const float *a)
{
    scan_tiles32(S, Yp, q, k, wr, orow, X, a, 1);
}

RL_SIMD_CLONES
static void scan_block8(float *S, int Yp, const float *const *q, const float *const *k,
                        const float *const *wr, float *const *orow, int X)
{
    scan_tiles8(S, Yp, q, k, wr, orow, X, NULL, 0);
}

RL_SIMD_CLONES
static void scan_block8_decay(float *S, int Yp, const float *const *q, const float *const *k,
                              const float *const *wr, float *const *orow, int X, const float *a)
{
    scan_tiles8(S, Yp, q, k, wr, orow, X, a, 1);
}

/* The 32-lane tile where the CPU has 32 vector registers of 512 bits (AVX-512F), else 8
 * lanes. */
static int wide_tile(void) { return rl_peak_width_supported(512); }

/* The decayed scan runs in a scaled frame.  The true state is pi S, pi a double carried
 * from row to row, so a row's decay only multiplies pi (pi_r = pi_{r-1} a_r), and row r
 * runs the plain kernel with its term divided and its read-out multiplied by pi_r:
 *   pi_r (S_{r-1} + k_r (w_r / pi_r)) = a_r (pi_{r-1} S_{r-1}) + k_r w_r,
 *   pi_r (q_r . S_r) = q_r . (pi_r S_r).
 * The division rides on the copy that stages w_r for the kernel and the multiplication
 * on the copy of the read-out, so the gate costs the kernel nothing.  Floating point
 * rounds the same at every scale, so this is as accurate as decaying the state row by
 * row.  The state returns to the true scale (S *= pi, pi = 1) before pi would fall below
 * FRAME_MIN and at the end of the rows, so a staged term is at most 2^48 times its own
 * size; a 4-row step that decays by more than STEP_MIN on its own runs the per-row
 * kernel (scan_block_decay) from the true scale instead. */
#define FRAME_MIN 0x1p-16
#define STEP_MIN 0x1p-32

RL_SIMD_CLONES
static void rescale(struct rl_lin_scan *s, double pi)
{
    const float f = (float)pi;
    float      *S = s->S;
#pragma omp simd
    for (size_t i = 0; i < (size_t)s->X * s->Yp; i++)
        S[i] *= f;
}

/* y = x f over n floats (f = 1: a copy, bit for bit). */
RL_SIMD_CLONES
static void copy_scaled(float *restrict y, const float *restrict x, float f, int n)
{
#pragma omp simd
    for (int i = 0; i < n; i++)
        y[i] = x[i] * f;
}

/* The frame *pi through a 4-row step with decays a: the factors of its staged terms (down)
 * and read-outs (up).  Returns 1 for a step that runs the per-row kernel: the state is
 * then at the true scale (*pi = 1) and up and down are left at 1. */
static int frame_step(struct rl_lin_scan *s, const float *a, double *pi, float *up, float *down)
{
    const double step = (double)a[0] * a[1] * a[2] * a[3];
    if (*pi != 1.0 && (step < STEP_MIN || *pi * step < FRAME_MIN)) rescale(s, *pi), *pi = 1.0;
    if (step < STEP_MIN) return 1;
    for (int r = 0; r < 4; r++) {
        *pi *= (double)a[r];
        up[r] = (float)*pi, down[r] = (float)(1.0 / *pi);
    }
    return 0;
}

static void kernel_step(struct rl_lin_scan *s, const float *const *q, const float *const *k,
                        const float *const *w, float *const *o, const float *a)
{
    const int wide = wide_tile();
    if (a && wide)
        scan_block_decay(s->S, s->Yp, q, k, w, o, s->X, a);
    else if (a)
        scan_block8_decay(s->S, s->Yp, q, k, w, o, s->X, a);
    else if (wide)
        scan_block(s->S, s->Yp, q, k, w, o, s->X);
    else
        scan_block8(s->S, s->Yp, q, k, w, o, s->X);
}

/* The rows of a block in 4-row steps (zero rows, decay 1, pad the last step); decay NULL:
 * the plain scan.  The kernels read the W rows and write the output rows in place where
 * those are whole 32-lane tiles (Y = Yp) at scale 1; otherwise a row is staged through
 * wb (zero lanes past Y, or divided by the frame) and the read-out through ob.  A
 * benchmark's product accounting (gemm.h) books the call as a product of 4 X Y FLOPs a
 * row: the rank-1 update and the read-out are linear attention's matrix products, done
 * here instead of by GEMMs. */
static void scan_rows(struct rl_lin_scan *s, float *out, const float *Q, const float *K,
                      const float *W, int l, int reverse, const float *decay)
{
    const int    X = s->X, Y = s->Y, Yp = s->Yp;
    const int    count = rl_products_counting();
    const double t0    = count ? rl_now_ms() : 0;
    double       pi    = 1.0; /* the decayed scan's frame */
    for (int b = 0; b < l; b += 4) {
        const float *q[4], *k[4], *w[4];
        float       *o[4];
        float        a[4], up[4] = {1, 1, 1, 1}, down[4] = {1, 1, 1, 1};
        int          row[4];
        for (int r = 0; r < 4; r++) {
            int i = b + r, n = reverse ? l - 1 - i : i;
            row[r] = i < l ? n : -1;
            q[r]   = i < l ? Q + (size_t)n * X : s->zero;
            k[r]   = i < l ? K + (size_t)n * X : s->zero;
            a[r]   = i < l && decay ? decay[n] : 1.0f;
        }
        const int per_row = decay && frame_step(s, a, &pi, up, down);
        for (int r = 0; r < 4; r++) {
            float *wb = s->wb + (size_t)r * Yp;
            w[r]      = wb;
            o[r]      = s->ob + (size_t)r * Yp;
            if (row[r] < 0) {
                memset(wb, 0, (size_t)Y * sizeof(float));
                continue;
            }
            if (Y == Yp && down[r] == 1.0f)
                w[r] = W + (size_t)row[r] * Y;
            else
                copy_scaled(wb, W + (size_t)row[r] * Y, down[r], Y);
            if (Y == Yp && up[r] == 1.0f) o[r] = out + (size_t)row[r] * Y;
        }
        kernel_step(s, q, k, w, o, per_row ? a : NULL);
        for (int r = 0; r < 4; r++)
            if (row[r] >= 0 && o[r] == s->ob + (size_t)r * Yp)
                copy_scaled(out + (size_t)row[r] * Y, o[r], up[r], Y);
    }
    if (pi != 1.0) rescale(s, pi);
    if (count) rl_products_add(4.0 * X * Y * l, rl_now_ms() - t0);
}

void rl_lin_scan_rows(struct rl_lin_scan *s, float *out, const float *Q, const float *K,
                      const float *W, int l, int reverse, int fold)
{
    scan_rows(s, out, Q, K, W, l, reverse, NULL);
    if (fold) rl_lin_scan_fold(s, K, W, l, NULL);
}

void rl_lin_scan_rows_decay(struct rl_lin_scan *s, float *out, const float *Q, const float *K,
                            const float *W, int l, int reverse, const float *decay)
{
    scan_rows(s, out, Q, K, W, l, reverse, decay);
}

void rl_lin_weight_rows(float *Y, const float *X, const double *w, int l, int n)
{
    for (int i = 0; i < l; i++)
        copy_scaled(Y + (size_t)i * n, X + (size_t)i * n, (float)w[i], n);
}

void rl_lin_scan_fold_decay(struct rl_lin_scan *s, const float *K, const float *W, int l,
                            struct rl_lin_scan *twin, const double *wk, double block_decay,
                            float *Kw)
{
    const int X = s->X, Y = s->Y;
    rl_lin_weight_rows(Kw, K, wk, l, X); /* K_n e^{c_end - c_n}: its decay to the block's end */
    for (size_t i = 0; i < (size_t)X * Y; i++)
        s->Sd[i] *= block_decay;
    rl_lin_scan_fold(s, Kw, W, l, NULL);
    if (!twin) return;
    for (size_t i = 0; i < (size_t)X * Y; i++)
        twin->Sd[i] *= block_decay;
    for (int x = 0; x < X; x++) /* the twin's state is the transpose: add T^T */
        for (int y = 0; y < Y; y++)
            twin->Sd[(size_t)y * X + x] += (double)s->T[(size_t)x * Y + y];
    sync_float_state(twin);
}

void rl_lin_scan_fold(struct rl_lin_scan *s, const float *K, const float *W, int l,
                      struct rl_lin_scan *twin)
{
    const int X = s->X, Y = s->Y;
    rl_lin_gemm_acc(s->Sd, s->T, K, X, W, Y, l);
    sync_float_state(s);
    if (!twin) return;
    for (int x = 0; x < X; x++) /* the twin's state is the transpose: add T^T */
        for (int y = 0; y < Y; y++)
            twin->Sd[(size_t)y * X + x] += (double)s->T[(size_t)x * Y + y];
    sync_float_state(twin);
}

void rl_lin_gemm_acc(double *Sd, float *T, const float *X, int nx, const float *Y, int ny, int l)
{
    rl_tile_gemm(nx, ny, l, 1.0f, X, 1, nx, Y, ny, 0.0f, T, ny); /* T = X^T Y */
    for (size_t i = 0; i < (size_t)nx * ny; i++)
        Sd[i] += (double)T[i];
}

/* z += e (double accumulation of a float row) */
static RL_INLINE void add_row(double *z, const float *e, int n)
{
#pragma omp simd
    for (int f = 0; f < n; f++)
        z[f] += (double)e[f];
}

static RL_INLINE void add_scaled_row(double *g, double w, const float *b, int n)
{
#pragma omp simd
    for (int f = 0; f < n; f++)
        g[f] += w * (double)b[f];
}

RL_SIMD_CLONES
void rl_lin_sum_rows(double *z, const float *E, int l, int n)
{
    for (int i = 0; i < l; i++)
        add_row(z, E + (size_t)i * n, n);
}

RL_SIMD_CLONES
void rl_lin_wsum_rows(double *g, const double *w, const float *B, int l, int n)
{
    for (int i = 0; i < l; i++)
        add_scaled_row(g, w[i], B + (size_t)i * n, n);
}

/* A row's denominator from s = B_m . z_m: *den = s + eps, o (num on entry, dv wide) /= it;
 * returns 1 when s <= eps (the diagnostic count of rl_lin_den_rows). */
static RL_INLINE long den_row(float *den, float *o, int dv, double s, float eps)
{
    double dd = s + (double)eps;
    *den      = (float)dd;
#pragma omp simd
    for (int j = 0; j < dv; j++)
        o[j] = (float)((double)o[j] / dd);
    return s <= (double)eps;
}

RL_SIMD_CLONES
long rl_lin_den_rows(float *den, float *out, int dv, const struct rl_lin_den *n, int causal,
                     float eps)
{
    const int Dd  = n->Dd;
    double   *z   = n->z;
    long      bad = 0;
    for (int m = 0; m < n->l; m++) {
        const float *b = n->B + (size_t)m * Dd;
        if (causal) add_row(z, n->E + (size_t)m * Dd, Dd);
        double s = 0.0;
#pragma omp simd reduction(+ : s)
        for (int f = 0; f < Dd; f++)
            s += (double)b[f] * z[f];
        bad += den_row(den + m, out + (size_t)m * dv, dv, s, eps);
    }
    return bad;
}

/* y[f] += w x[f] (add), or y[f] = 0 + w x[f] (!add: the same floats as adding into a zeroed y,
 * -0 included, without zeroing it first) */
static RL_INLINE void put_scaled_row(float *y, double w, const double *x, int n, int add)
{
    if (add) {
#pragma omp simd
        for (int f = 0; f < n; f++)
            y[f] += (float)(w * x[f]);
    } else {
#pragma omp simd
        for (int f = 0; f < n; f++)
            y[f] = 0.0f + (float)(w * x[f]);
    }
}

RL_SIMD_CLONES
void rl_lin_den_rows_backward(float *dB, float *dE, const double *dden, const struct rl_lin_den *n,
                              int causal, int add)
{
    const int Dd = n->Dd;
    double   *z = n->z, *g = n->g;
    for (int m = 0; m < n->l; m++) { /* den_m = B_m . z_m + eps  =>  dB_m = dden_m z_m */
        if (causal) add_row(z, n->E + (size_t)m * Dd, Dd);
        put_scaled_row(dB + (size_t)m * Dd, dden[m], z, Dd, add);
    }
    for (int r = n->l - 1; r >= 0; r--) { /* dE_r = sum_{m >= r, or all m} dden_m B_m */
        if (causal) add_scaled_row(g, dden[r], n->B + (size_t)r * Dd, Dd);
        put_scaled_row(dE + (size_t)r * Dd, 1.0, g, Dd, add);
    }
}

RL_SIMD_CLONES
long rl_lin_den_rows_decay(float *den, float *out, int dv, const struct rl_lin_den *n, float eps)
{
    const int Dd  = n->Dd;
    double   *z   = n->z;
    long      bad = 0;
    for (int m = 0; m < n->l; m++) {
        const float *b = n->B + (size_t)m * Dd, *e = n->E + (size_t)m * Dd;
        double       s = 0.0, am = n->a[m];
#pragma omp simd reduction(+ : s)
        for (int f = 0; f < Dd; f++) {
            z[f] = am * z[f] + (double)e[f]; /* z_m = e^{lambda_m} z_{m-1} + E_m */
            s += (double)b[f] * z[f];
        }
        bad += den_row(den + m, out + (size_t)m * dv, dv, s, eps);
    }
    return bad;
}

RL_SIMD_CLONES
void rl_lin_den_rows_backward_decay(float *dB, float *dE, double *eg, const double *dden,
                                    const struct rl_lin_den *n)
{
    const int Dd = n->Dd;
    double   *z = n->z, *g = n->g;
    for (int m = 0; m < n->l; m++) { /* den_m = B_m . z_m + eps  =>  dB_m = dden_m z_m */
        float       *db = dB + (size_t)m * Dd;
        const float *e  = n->E + (size_t)m * Dd;
        double       am = n->a[m];
#pragma omp simd
        for (int f = 0; f < Dd; f++) {
            z[f] = am * z[f] + (double)e[f];
            db[f] += (float)(dden[m] * z[f]);
        }
    }
    for (int r = n->l - 1; r >= 0; r--) { /* g_r = e^{lambda_{r+1}} g_{r+1} + dden_r B_r = dE_r */
        float       *de = dE + (size_t)r * Dd;
        const float *b = n->B + (size_t)r * Dd, *e = n->E + (size_t)r * Dd;
        double       an = n->a_next[r], dot = 0.0;
#pragma omp simd reduction(+ : dot)
        for (int f = 0; f < Dd; f++) {
            g[f] = an * g[f] + dden[r] * (double)b[f];
            de[f] += (float)g[f];
            dot += (double)e[f] * g[f];
        }
        eg[r] = dot; /* E_r . g_r: the denominator's share of the gate's key-side gradient */
    }
}

RL_SIMD_CLONES
void rl_lin_sum_rows_decay(double *z, const float *E, int l, int n, const double *wk,
                           double block_decay)
{
    for (int f = 0; f < n; f++)
        z[f] *= block_decay;
    for (int i = 0; i < l; i++) {
        const float *e = E + (size_t)i * n;
        double       w = wk[i];
#pragma omp simd
        for (int f = 0; f < n; f++)
            z[f] += w * (double)e[f];
    }
}

void rl_lin_cumsum(double *c, const float *logf, int N)
{
    double acc = 0.0;
    for (int m = 0; m < N; m++)
        c[m] = acc += (double)logf[m];
}
