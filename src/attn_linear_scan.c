/* attn_linear_scan.c -- the O(N D dv) sums of linear attention (attn_linear_impl.h).
 *
 * Causal forward, chunk c = rows t0 .. t0+l-1 (l <= L = RL_LIN_CHUNK):
 *   S_c   = A_c C_c^T masked to j <= i                        (l x l, intra-chunk)
 *   num_c = [A_c | S_c] [State ; V_c] = A_c State + S_c V_c     (one GEMM)
 *   State += C_c^T V_c                                        (D x dv, summed in double)
 * Backward, with G_c = dnum_c V_c^T masked (j <= i) and Gs = sum over later chunks of
 * A^T dnum (the gradient state, a suffix sum):
 *   dA_c = [dnum_c | G_c] [State^T ; C_c]    forward sweep (State = prefix before c)
 *   dC_c = [V_c | G_c^T] [Gs^T ; A_c]         reverse sweep
 *   dV_c = [C_c | S_c^T] [Gs ; dnum_c]        reverse sweep
 * so only two D x dv states live at a time: nothing of size N x D x dv is stored.
 * The concatenations cost l (D + dv) copies per chunk and save a GEMM call each, which
 * matters because a 64-row GEMM is mostly call overhead in BLIS. */
#include "config.h"
#include "attn_linear_impl.h"
#include "gemm.h"

#include <string.h>

/* Carve n floats from *p, keeping every piece 64-byte aligned relative to the start. */
static float *take(float **p, size_t n)
{
    float *r = *p;
    *p += (n + 15) & ~(size_t)15;
    return r;
}

static int imax(int a, int b) { return a > b ? a : b; }

size_t rl_lin_num_work_floats(int D, int dv)
{
    size_t L = RL_LIN_CHUNK, M = (size_t)imax(D, dv);
    /* two X (L x (M + L)), two Y ((M + L) x M), one float and one double M x M state */
    return 2 * (L * (M + L) + 16) + 2 * ((M + L) * M + 16) + 3 * (M * M + 16) + 16;
}

/* X (l x l block with leading dimension ld): zero j > i (upper) or j < i (lower). */
static void mask_upper(float *X, int ld, int l)
{
    for (int i = 0; i < l; i++) memset(X + (size_t)i * ld + i + 1, 0, (size_t)(l - 1 - i) * 4);
}

static void mask_lower(float *X, int ld, int l)
{
    for (int i = 0; i < l; i++) memset(X + (size_t)i * ld, 0, (size_t)i * 4);
}

static void copy_rows(float *dst, int ldd, const float *src, int lds, int rows, int cols)
{
    for (int i = 0; i < rows; i++)
        memcpy(dst + (size_t)i * ldd, src + (size_t)i * lds, (size_t)cols * sizeof(float));
}

/* Sd (nx x ny, double) += X^T Y for X (l x nx), Y (l x ny); then dst = (float)Sd, stored
 * nx x ny, or ny x nx when transpose.  The chunk sum is a float GEMM of l rows; the
 * running sum over N/l chunks is double, so the state is accurate at N = 65536. */
static void state_add(float *dst, int transpose, double *Sd, float *tmp, const float *X, int nx,
                      const float *Y, int ny, int l)
{
    rl_sgemm(RL_TRANS_T, RL_TRANS_N, nx, ny, l, 1.0f, X, nx, Y, ny, 0.0f, tmp, ny);
    for (int i = 0; i < nx; i++)
        for (int j = 0; j < ny; j++) {
            double s            = Sd[(size_t)i * ny + j] += (double)tmp[(size_t)i * ny + j];
            size_t at           = transpose ? (size_t)j * nx + i : (size_t)i * ny + j;
            dst[at]             = (float)s;
        }
}

/* State S = C^T V over all N rows, in blocks summed in double. */
static void full_state(float *S, double *Sd, float *tmp, const float *X, int nx, const float *Y,
                       int ny, int N)
{
    memset(Sd, 0, (size_t)nx * ny * sizeof(double));
    for (int t0 = 0; t0 < N; t0 += RL_LIN_BLOCK) {
        int l = N - t0 < RL_LIN_BLOCK ? N - t0 : RL_LIN_BLOCK;
        state_add(S, 0, Sd, tmp, X + (size_t)t0 * nx, nx, Y + (size_t)t0 * ny, ny, l);
    }
}

struct scan_ws {
    float  *X1, *Y1, *X2, *Y2, *tmp;
    double *Sd;
};

static struct scan_ws carve(float *work, int D, int dv)
{
    const size_t   L = RL_LIN_CHUNK, M = (size_t)imax(D, dv);
    struct scan_ws w;
    float         *p = work;
    w.X1             = take(&p, L * (M + L));
    w.X2             = take(&p, L * (M + L));
    w.Y1             = take(&p, (M + L) * M);
    w.Y2             = take(&p, (M + L) * M);
    w.tmp            = take(&p, M * M);
    w.Sd             = (double *)take(&p, 2 * M * M);
    return w;
}

static void causal_forward(float *num, const float *A, const float *C, const float *V, int N,
                           int D, int dv, float *work)
{
    const int      L = RL_LIN_CHUNK, ld1 = D + L;
    struct scan_ws w = carve(work, D, dv);
    float         *W1 = w.X1, *W2 = w.Y1; /* [A_c | S_c] (l x (D+l)), [State ; V_c] ((D+l) x dv) */
    memset(W2, 0, (size_t)D * dv * sizeof(float));
    memset(w.Sd, 0, (size_t)D * dv * sizeof(double));
    for (int t0 = 0; t0 < N; t0 += L) {
        const int    l  = N - t0 < L ? N - t0 : L;
        const float *Ac = A + (size_t)t0 * D, *Cc = C + (size_t)t0 * D, *Vc = V + (size_t)t0 * dv;
        rl_sgemm(RL_TRANS_N, RL_TRANS_T, l, l, D, 1.0f, Ac, D, Cc, D, 0.0f, W1 + D, ld1);
        mask_upper(W1 + D, ld1, l); /* n <= m */
        copy_rows(W1, ld1, Ac, D, l, D);
        memcpy(W2 + (size_t)D * dv, Vc, (size_t)l * dv * sizeof(float));
        rl_sgemm(RL_TRANS_N, RL_TRANS_N, l, dv, D + l, 1.0f, W1, ld1, W2, dv, 0.0f,
                 num + (size_t)t0 * dv, dv);
        if (t0 + l < N) state_add(W2, 0, w.Sd, w.tmp, Cc, D, Vc, dv, l);
    }
}

/* Forward sweep of the backward: dA_c = dnum_c State^T + G_c C_c. */
static void causal_backward_dA(float *dA, const float *dnum, const float *C, const float *V, int N,
                               int D, int dv, struct scan_ws *w)
{
    const int L = RL_LIN_CHUNK, ldx = dv + L;
    float    *X = w->X1, *Y = w->Y1; /* [dnum_c | G_c] (l x (dv+l)), [State^T ; C_c] ((dv+l) x D) */
    memset(Y, 0, (size_t)dv * D * sizeof(float));
    memset(w->Sd, 0, (size_t)D * dv * sizeof(double));
    for (int t0 = 0; t0 < N; t0 += L) {
        const int    l  = N - t0 < L ? N - t0 : L;
        const float *Cc = C + (size_t)t0 * D, *Vc = V + (size_t)t0 * dv;
        const float *gc = dnum + (size_t)t0 * dv;
        /* num_m = sum_{n<=m} (A_m . C_n) v_n  =>  dA_m = sum_{n<=m} (dnum_m . v_n) C_n */
        rl_sgemm(RL_TRANS_N, RL_TRANS_T, l, l, dv, 1.0f, gc, dv, Vc, dv, 0.0f, X + dv, ldx);
        mask_upper(X + dv, ldx, l);
        copy_rows(X, ldx, gc, dv, l, dv);
        memcpy(Y + (size_t)dv * D, Cc, (size_t)l * D * sizeof(float));
        rl_sgemm(RL_TRANS_N, RL_TRANS_N, l, D, dv + l, 1.0f, X, ldx, Y, D, 0.0f,
                 dA + (size_t)t0 * D, D);
        if (t0 + l < N) state_add(Y, 1, w->Sd, w->tmp, Cc, D, Vc, dv, l);
    }
}

/* Reverse sweep: dC_n = sum_{m>=n} (dnum_m . v_n) A_m, dV_n = sum_{m>=n} (A_m . C_n) dnum_m. */
static void causal_backward_dCdV(float *dC, float *dV, const float *dnum, const float *A,
                                 const float *C, const float *V, int N, int D, int dv,
                                 struct scan_ws *w)
{
    const int L = RL_LIN_CHUNK, ld2 = dv + L, ld3 = D + L;
    float    *X2 = w->X1, *Y2 = w->Y1; /* [V_c | G_c^T] (l x (dv+l)), [Gs^T ; A_c] ((dv+l) x D) */
    float    *X3 = w->X2, *Y3 = w->Y2; /* [C_c | S_c^T] (l x (D+l)),  [Gs ; dnum_c] ((D+l) x dv) */
    memset(Y2, 0, (size_t)dv * D * sizeof(float));
    memset(Y3, 0, (size_t)D * dv * sizeof(float));
    memset(w->Sd, 0, (size_t)D * dv * sizeof(double));
    for (int t0 = ((N - 1) / L) * L; t0 >= 0; t0 -= L) {
        const int    l  = N - t0 < L ? N - t0 : L;
        const float *Ac = A + (size_t)t0 * D, *Cc = C + (size_t)t0 * D, *Vc = V + (size_t)t0 * dv;
        const float *gc = dnum + (size_t)t0 * dv;
        /* G^T[i][j] = v_i . dnum_j and S^T[i][j] = C_i . A_j, kept for j >= i */
        rl_sgemm(RL_TRANS_N, RL_TRANS_T, l, l, dv, 1.0f, Vc, dv, gc, dv, 0.0f, X2 + dv, ld2);
        rl_sgemm(RL_TRANS_N, RL_TRANS_T, l, l, D, 1.0f, Cc, D, Ac, D, 0.0f, X3 + D, ld3);
        mask_lower(X2 + dv, ld2, l);
        mask_lower(X3 + D, ld3, l);
        copy_rows(X2, ld2, Vc, dv, l, dv);
        copy_rows(X3, ld3, Cc, D, l, D);
        memcpy(Y2 + (size_t)dv * D, Ac, (size_t)l * D * sizeof(float));
        memcpy(Y3 + (size_t)D * dv, gc, (size_t)l * dv * sizeof(float));
        rl_sgemm(RL_TRANS_N, RL_TRANS_N, l, D, dv + l, 1.0f, X2, ld2, Y2, D, 0.0f,
                 dC + (size_t)t0 * D, D);
        rl_sgemm(RL_TRANS_N, RL_TRANS_N, l, dv, D + l, 1.0f, X3, ld3, Y3, dv, 0.0f,
                 dV + (size_t)t0 * dv, dv);
        if (t0 > 0) { /* Gs += A_c^T dnum_c, kept as Gs^T (Y2) and Gs (Y3) */
            state_add(Y3, 0, w->Sd, w->tmp, Ac, D, gc, dv, l);
            for (int f = 0; f < D; f++)
                for (int j = 0; j < dv; j++) Y2[(size_t)j * D + f] = Y3[(size_t)f * dv + j];
        }
    }
}

void rl_lin_num_forward(float *num, const float *A, const float *C, const float *V, int N, int D,
                        int dv, int causal, float *work)
{
    if (causal) {
        causal_forward(num, A, C, V, N, D, dv, work);
        return;
    }
    struct scan_ws w = carve(work, D, dv);
    float         *S = w.Y1;
    full_state(S, w.Sd, w.tmp, C, D, V, dv, N); /* S = C^T V */
    rl_sgemm(RL_TRANS_N, RL_TRANS_N, N, dv, D, 1.0f, A, D, S, dv, 0.0f, num, dv);
}

void rl_lin_num_backward(float *dA, float *dC, float *dV, const float *dnum, const float *A,
                         const float *C, const float *V, int N, int D, int dv, int causal,
                         float *work)
{
    struct scan_ws w = carve(work, D, dv);
    if (causal) {
        causal_backward_dA(dA, dnum, C, V, N, D, dv, &w);
        causal_backward_dCdV(dC, dV, dnum, A, C, V, N, D, dv, &w);
        return;
    }
    /* num = A S, S = C^T V:  dA = dnum S^T;  Gs = A^T dnum;  dC = V Gs^T;  dV = C Gs */
    float *S = w.Y1, *Gs = w.Y2;
    full_state(S, w.Sd, w.tmp, C, D, V, dv, N);
    rl_sgemm(RL_TRANS_N, RL_TRANS_T, N, D, dv, 1.0f, dnum, dv, S, dv, 0.0f, dA, D);
    full_state(Gs, w.Sd, w.tmp, A, D, dnum, dv, N);
    rl_sgemm(RL_TRANS_N, RL_TRANS_T, N, D, dv, 1.0f, V, dv, Gs, dv, 0.0f, dC, D);
    rl_sgemm(RL_TRANS_N, RL_TRANS_N, N, dv, D, 1.0f, C, D, Gs, dv, 0.0f, dV, dv);
}

long rl_lin_den_forward(float *den, float *out, int dv, const float *B, const float *E, int N,
                        int Dd, int causal, float eps, double *z)
{
    memset(z, 0, (size_t)Dd * sizeof(double));
    if (!causal)
        for (int n = 0; n < N; n++)
            for (int f = 0; f < Dd; f++) z[f] += (double)E[(size_t)n * Dd + f];
    long bad = 0;
    for (int m = 0; m < N; m++) {
        const float *b = B + (size_t)m * Dd;
        if (causal)
            for (int f = 0; f < Dd; f++) z[f] += (double)E[(size_t)m * Dd + f];
        double s = 0.0;
        for (int f = 0; f < Dd; f++) s += (double)b[f] * z[f];
        bad += s <= (double)eps; /* SPEC 2.3: the denominator before eps is <= eps */
        double dd = s + (double)eps;
        den[m]    = (float)dd;
        if (out)
            for (int j = 0; j < dv; j++)
                out[(size_t)m * dv + j] = (float)((double)out[(size_t)m * dv + j] / dd);
    }
    return bad;
}

void rl_lin_den_backward(float *dB, float *dE, const double *dden, const float *B, const float *E,
                         int N, int Dd, int causal, double *z)
{
    double *g = z + Dd;
    memset(z, 0, 2 * (size_t)Dd * sizeof(double));
    if (!causal)
        for (int n = 0; n < N; n++)
            for (int f = 0; f < Dd; f++) {
                z[f] += (double)E[(size_t)n * Dd + f];
                g[f] += dden[n] * (double)B[(size_t)n * Dd + f];
            }
    /* den_m = B_m . z_m + eps  =>  dB_m = dden_m z_m */
    for (int m = 0; m < N; m++) {
        if (causal)
            for (int f = 0; f < Dd; f++) z[f] += (double)E[(size_t)m * Dd + f];
        for (int f = 0; f < Dd; f++) dB[(size_t)m * Dd + f] += (float)(dden[m] * z[f]);
    }
    /* dE_n = sum_{m >= n (causal) or all m} dden_m B_m: a suffix sum, in double */
    for (int n = N - 1; n >= 0; n--) {
        if (causal)
            for (int f = 0; f < Dd; f++) g[f] += dden[n] * (double)B[(size_t)n * Dd + f];
        for (int f = 0; f < Dd; f++) dE[(size_t)n * Dd + f] += (float)g[f];
    }
}
