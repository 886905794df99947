/* layers.c -- dense layers of the transformer; see layers.h (derivations: docs/model.md). */
#include "config.h"
#include "layers.h"
#include "../core/gemm.h"
#include "../core/threads.h"
#include "../core/vexp.h"

#include <math.h>
#include <string.h>

/* Column reductions (bias and LayerNorm parameter gradients) stream the rows in order with
 * one accumulator per column: each thread owns a contiguous chunk of at most COL_MAX
 * columns, so every column is summed in row order whatever the thread count. */
#define COL_MAX 1024

static int col_chunk(int C)
{
    int w = (C + rl_threads_get() - 1) / rl_threads_get();
    w     = (w + 15) & ~15;
    return w < 16 ? 16 : w > COL_MAX ? COL_MAX : w;
}

/* --- embedding ---------------------------------------------------------------------- */

void rl_embed_forward(float *out, const int32_t *tok, const float *wte, const float *pos, float g,
                      int B, int N, int C)
{
#pragma omp parallel for schedule(static) num_threads(rl_threads_get())
    for (long t = 0; t < (long)B * N; t++) {
        float       *o = out + t * C;
        const float *e = wte + (size_t)tok[t] * C;
        const float *p = pos ? pos + (t % N) * C : NULL;
        if (p)
            for (int c = 0; c < C; c++)
                o[c] = e[c] + g * p[c];
        else
            memcpy(o, e, (size_t)C * sizeof *o);
    }
}

void rl_embed_backward(float *dwte, float *dpos, const float *dout, const int32_t *tok, int B,
                       int N, int C)
{
    /* serial in token order: two tokens may share an embedding row */
    for (long t = 0; t < (long)B * N; t++) {
        const float *g = dout + t * C;
        float       *e = dwte + (size_t)tok[t] * C;
        for (int c = 0; c < C; c++)
            e[c] += g[c];
        if (dpos) {
            float *p = dpos + (t % N) * C;
            for (int c = 0; c < C; c++)
                p[c] += g[c];
        }
    }
}

void rl_sinusoid_row(float *p, int m, int C)
{
    for (int c = 0; c < C; c++) {
        int    t     = c / 2;
        double angle = m / pow(10000.0, 2.0 * t / C);
        p[c]         = (float)(c % 2 ? cos(angle) : sin(angle));
    }
}

void rl_pos_scale_backward(float *dg, const float *dout, const float *pos, int B, int N, int C)
{
    /* out = e + g p: dg = sum of dout * p over every token and feature */
    double s = 0.0;
    for (long t = 0; t < (long)B * N; t++) {
        const float *d = dout + t * C, *p = pos + (t % N) * C;
        for (int c = 0; c < C; c++)
            s += (double)d[c] * (double)p[c];
    }
    dg[0] += (float)s;
}

void rl_sinusoid_table(float *p, int N, int C)
{
    for (int m = 0; m < N; m++)
        rl_sinusoid_row(p + (size_t)m * C, m, C);
}

/* --- LayerNorm ---------------------------------------------------------------------- */

/* one row: out = (x - mean) * rstd * w + b; returns mean and rstd */
RL_SIMD_CLONES
static void layernorm_row(float *o, float *mean, float *rstd, const float *x, const float *w,
                          const float *b, int C)
{
    float s = 0.0f, v = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int c = 0; c < C; c++)
        s += x[c];
    const float mu = s / (float)C;
#pragma omp simd reduction(+ : v)
    for (int c = 0; c < C; c++)
        v += (x[c] - mu) * (x[c] - mu);
    const float r = 1.0f / sqrtf(v / (float)C + RL_LN_EPS);
#pragma omp simd
    for (int c = 0; c < C; c++)
        o[c] = (x[c] - mu) * r * w[c] + b[c];
    *mean = mu;
    *rstd = r;
}

void rl_layernorm_forward(float *out, float *mean, float *rstd, const float *x, const float *w,
                          const float *b, int T, int C)
{
#pragma omp parallel for schedule(static) num_threads(rl_threads_get())
    for (int t = 0; t < T; t++)
        layernorm_row(out + (size_t)t * C, mean + t, rstd + t, x + (size_t)t * C, w, b, C);
}

/* dw[c] += sum_t dout[t,c] xhat[t,c];  db[c] += sum_t dout[t,c]  (column blocks) */
RL_SIMD_CLONES
static void ln_grad_row(float *aw, float *ab, const float *g, const float *x, float mu, float r,
                        int n)
{
#pragma omp simd
    for (int c = 0; c < n; c++) {
        aw[c] += g[c] * (x[c] - mu) * r;
        ab[c] += g[c];
    }
}

/* dw[c] += sum_t dout[t,c] xhat[t,c];  db[c] += sum_t dout[t,c]  (rows in order) */
static void layernorm_param_grads(float *dw, float *db, const float *dout, const float *x,
                                  const float *mean, const float *rstd, int T, int C)
{
    const int w = col_chunk(C), nblk = (C + w - 1) / w;
#pragma omp parallel for schedule(static) num_threads(rl_threads_get())
    for (int blk = 0; blk < nblk; blk++) {
        const int c0 = blk * w, n = c0 + w < C ? w : C - c0;
        float     aw[COL_MAX] = {0}, ab[COL_MAX] = {0};
        for (int t = 0; t < T; t++)
            ln_grad_row(aw, ab, dout + (size_t)t * C + c0, x + (size_t)t * C + c0, mean[t], rstd[t],
                        n);
        for (int c = 0; c < n; c++)
            dw[c0 + c] += aw[c], db[c0 + c] += ab[c];
    }
}

/* forward: out = xhat * w + b, xhat = (x - mean) * rstd.  With gh = dout * w:
 * dx = rstd * (gh - mean_c(gh) - xhat * mean_c(gh * xhat))   (added to d) */
RL_SIMD_CLONES
static void layernorm_backward_row(float *d, const float *g, const float *x, float mu, float r,
                                   const float *w, int C)
{
    float s1 = 0.0f, s2 = 0.0f;
#pragma omp simd reduction(+ : s1, s2)
    for (int c = 0; c < C; c++) {
        float gh = g[c] * w[c];
        s1 += gh;
        s2 += gh * (x[c] - mu) * r;
    }
    s1 /= (float)C;
    s2 /= (float)C;
#pragma omp simd
    for (int c = 0; c < C; c++)
        d[c] += r * (g[c] * w[c] - s1 - (x[c] - mu) * r * s2);
}

void rl_layernorm_backward(float *dx, float *dw, float *db, const float *dout, const float *x,
                           const float *mean, const float *rstd, const float *w, int T, int C)
{
#pragma omp parallel for schedule(static) num_threads(rl_threads_get())
    for (int t = 0; t < T; t++)
        layernorm_backward_row(dx + (size_t)t * C, dout + (size_t)t * C, x + (size_t)t * C, mean[t],
                               rstd[t], w, C);
    layernorm_param_grads(dw, db, dout, x, mean, rstd, T, C);
}

/* --- linear ------------------------------------------------------------------------- */

void rl_linear_forward(float *out, const float *x, const float *W, const float *b, int T, int C,
                       int OC, int accumulate)
{
    if (b) { /* out (=|+=) b first, then the GEMM accumulates: one pass over out */
#pragma omp parallel for schedule(static) num_threads(rl_threads_get())
        for (int t = 0; t < T; t++) {
            float *o = out + (size_t)t * OC;
            if (accumulate)
                for (int j = 0; j < OC; j++)
                    o[j] += b[j];
            else
                memcpy(o, b, (size_t)OC * sizeof *o);
        }
    }
    /* out (T, OC) += x (T, C) . W^T, W stored (OC, C) */
    rl_sgemm(RL_TRANS_N, RL_TRANS_T, T, OC, C, 1.0f, x, C, W, C, (b || accumulate) ? 1.0f : 0.0f,
             out, OC);
}

RL_SIMD_CLONES
static void add_row(float *acc, const float *r, int n)
{
#pragma omp simd
    for (int c = 0; c < n; c++)
        acc[c] += r[c];
}

void rl_colsum_add(float *db, const float *x, int T, int C)
{
    const int w = col_chunk(C), nblk = (C + w - 1) / w;
#pragma omp parallel for schedule(static) num_threads(rl_threads_get())
    for (int blk = 0; blk < nblk; blk++) {
        const int c0 = blk * w, n = c0 + w < C ? w : C - c0;
        float     acc[COL_MAX] = {0};
        for (int t = 0; t < T; t++)
            add_row(acc, x + (size_t)t * C + c0, n);
        for (int c = 0; c < n; c++)
            db[c0 + c] += acc[c];
    }
}

void rl_linear_backward(float *dx, float *dW, float *db, const float *dout, const float *x,
                        const float *W, int T, int C, int OC, int accumulate_dx)
{
    /* forward: out = x W^T + b */
    if (dx) /* dx (T, C) (+)= dout (T, OC) . W (OC, C) */
        rl_sgemm(RL_TRANS_N, RL_TRANS_N, T, C, OC, 1.0f, dout, OC, W, C,
                 accumulate_dx ? 1.0f : 0.0f, dx, C);
    /* dW (OC, C) += dout^T (OC, T) . x (T, C) */
    if (dW) rl_sgemm(RL_TRANS_T, RL_TRANS_N, OC, C, T, 1.0f, dout, OC, x, C, 1.0f, dW, C);
    if (db) rl_colsum_add(db, dout, T, OC);
}

/* --- GELU (tanh approximation) ------------------------------------------------------ */

#define GELU_S 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_A 0.044715f

/* One row: h = h + b, sig = sigmoid(2u), g = h sig.  0.5 x (1 + tanh u) = x sigmoid(2u) =
 * x / (1 + exp(-2u)); the sigmoid is kept so that the backward needs no exp.  Large
 * negative x: exp overflows to inf, sig = 0, g = -0; large positive x: sig = 1. */
static RL_INLINE void gelu_elem(float *g, float *sig, float *h, int c, float x)
{
    float u = GELU_S * (x + GELU_A * x * x * x);
    float s = 1.0f / (1.0f + rl_expf_inline(-2.0f * u));
    h[c]    = x;
    g[c]    = x * s;
    sig[c]  = s;
}

RL_SIMD_CLONES
static void bias_gelu_row(float *g, float *sig, float *h, const float *b, int C)
{
    if (b) {
#pragma omp simd
        for (int c = 0; c < C; c++)
            gelu_elem(g, sig, h, c, h[c] + b[c]);
    } else {
#pragma omp simd
        for (int c = 0; c < C; c++)
            gelu_elem(g, sig, h, c, h[c]);
    }
}

void rl_bias_gelu_forward(float *g, float *sig, float *h, const float *b, int T, int C)
{
#pragma omp parallel for schedule(static) num_threads(rl_threads_get())
    for (int t = 0; t < T; t++)
        bias_gelu_row(g + (size_t)t * C, sig + (size_t)t * C, h + (size_t)t * C, b, C);
}

RL_SIMD_CLONES
static void gelu_recompute_chunk(float *g, const float *h, const float *sig, size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++)
        g[i] = h[i] * sig[i];
}

/* g = x sig, sig = sigmoid(2u), u = S (x + A x^3):
 * dg/dx = sig + x sig (1 - sig) 2 S (1 + 3 A x^2)  (no exp: sig comes from the forward) */
RL_SIMD_CLONES
static void gelu_backward_chunk(float *dh, const float *dg, const float *h, const float *sig,
                                size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++) {
        float x = h[i], s = sig[i];
        float du = 2.0f * GELU_S * (1.0f + 3.0f * GELU_A * x * x);
        dh[i]    = dg[i] * (s + x * s * (1.0f - s) * du);
    }
}

#define GELU_CHUNK 4096

void rl_gelu_recompute(float *g, const float *h, const float *sig, size_t n)
{
    const long nchunk = (long)((n + GELU_CHUNK - 1) / GELU_CHUNK);
#pragma omp parallel for schedule(static) num_threads(rl_threads_get())
    for (long k = 0; k < nchunk; k++) {
        size_t i0 = (size_t)k * GELU_CHUNK, len = n - i0 < GELU_CHUNK ? n - i0 : GELU_CHUNK;
        gelu_recompute_chunk(g + i0, h + i0, sig + i0, len);
    }
}

void rl_gelu_backward(float *dh, const float *dg, const float *h, const float *sig, size_t n)
{
    const long nchunk = (long)((n + GELU_CHUNK - 1) / GELU_CHUNK);
#pragma omp parallel for schedule(static) num_threads(rl_threads_get())
    for (long k = 0; k < nchunk; k++) {
        size_t i0 = (size_t)k * GELU_CHUNK, len = n - i0 < GELU_CHUNK ? n - i0 : GELU_CHUNK;
        gelu_backward_chunk(dh + i0, dg + i0, h + i0, sig + i0, len);
    }
}

/* --- heads layout -------------------------------------------------------------------
 * Each loop walks the (B*N, 3C) or (B*N, C) side row by row -- one contiguous row, read or
 * written once -- and scatters to or gathers from the H per-head rows, so both sides stream
 * through memory (going head by head re-read every qkv row H times, 3 d floats at a time).
 * The bias add's inner loop is an OpenMP simd loop: GCC at -O2 left it scalar. */

static void split_row(float *restrict dst, const float *restrict src, const float *restrict bias,
                      int d)
{
#pragma omp simd
    for (int i = 0; i < d; i++) dst[i] = src[i] + bias[i];
}

void rl_heads_split(float *q, float *k, float *v, const float *qkv, const float *bias, int B, int N,
                    int H, int d)
{
    const int  C = H * d;
    const long T = (long)B * N;
#pragma omp parallel for schedule(static) num_threads(rl_threads_get())
    for (long t = 0; t < T; t++) {
        const long   b = t / N, n = t % N;
        const float *r = qkv + (size_t)t * 3 * C;
        for (int h = 0; h < H; h++) {
            const size_t off = (((size_t)b * H + h) * N + n) * d, c = (size_t)h * d;
            split_row(q + off, r + c, bias + c, d);
            split_row(k + off, r + C + c, bias + C + c, d);
            split_row(v + off, r + 2 * C + c, bias + 2 * C + c, d);
        }
    }
}

void rl_heads_merge3(float *dqkv, const float *dq, const float *dk, const float *dv, int B, int N,
                     int H, int d)
{
    const int  C = H * d;
    const long T = (long)B * N;
#pragma omp parallel for schedule(static) num_threads(rl_threads_get())
    for (long t = 0; t < T; t++) {
        const long b = t / N, n = t % N;
        float     *r = dqkv + (size_t)t * 3 * C;
        for (int h = 0; h < H; h++) {
            const size_t off = (((size_t)b * H + h) * N + n) * d, c = (size_t)h * d;
            memcpy(r + c, dq + off, (size_t)d * sizeof *r);
            memcpy(r + C + c, dk + off, (size_t)d * sizeof *r);
            memcpy(r + 2 * C + c, dv + off, (size_t)d * sizeof *r);
        }
    }
}

void rl_heads_merge(float *out, const float *x, int B, int N, int H, int d)
{
    const long T = (long)B * N;
#pragma omp parallel for schedule(static) num_threads(rl_threads_get())
    for (long t = 0; t < T; t++) {
        const long b = t / N, n = t % N;
        for (int h = 0; h < H; h++)
            memcpy(out + ((size_t)t * H + h) * d, x + (((size_t)b * H + h) * N + n) * d,
                   (size_t)d * sizeof *out);
    }
}

void rl_heads_split1(float *out, const float *x, int B, int N, int H, int d)
{
    const long T = (long)B * N;
#pragma omp parallel for schedule(static) num_threads(rl_threads_get())
    for (long t = 0; t < T; t++) {
        const long b = t / N, n = t % N;
        for (int h = 0; h < H; h++)
            memcpy(out + (((size_t)b * H + h) * N + n) * d, x + ((size_t)t * H + h) * d,
                   (size_t)d * sizeof *out);
    }
}

/* --- mean pooling ------------------------------------------------------------------- */

void rl_meanpool_forward(float *out, const float *x, int B, int N, int C)
{
    for (int b = 0; b < B; b++)
        for (int c = 0; c < C; c++) {
            double s = 0.0;
            for (int n = 0; n < N; n++)
                s += (double)x[((size_t)b * N + n) * C + c];
            out[(size_t)b * C + c] = (float)(s / N);
        }
}

void rl_meanpool_backward(float *dx, const float *dout, int B, int N, int C)
{
    /* forward: out[b,c] = (1/N) sum_n x[b,n,c] */
    for (int b = 0; b < B; b++)
        for (int n = 0; n < N; n++)
            for (int c = 0; c < C; c++)
                dx[((size_t)b * N + n) * C + c] = dout[(size_t)b * C + c] / (float)N;
}

/* --- softmax + cross-entropy -------------------------------------------------------- */

RL_SIMD_CLONES
static float row_lse(const float *l, int V)
{
    float mx = l[0];
    for (int j = 1; j < V; j++)
        mx = l[j] > mx ? l[j] : mx;
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int j = 0; j < V; j++)
        s += rl_expf_inline(l[j] - mx);
    return mx + logf(s);
}

double rl_softmax_ce_forward(float *lse, double *row_loss, uint8_t *row_ok, long *n_targets,
                             long *n_correct, const float *logits, const int32_t *targets,
                             const uint8_t *mask, int rows, int V)
{
#pragma omp parallel for schedule(static) num_threads(rl_threads_get())
    for (int r = 0; r < rows; r++) {
        lse[r]      = row_lse(logits + (size_t)r * V, V);
        row_loss[r] = 0.0;
        if (!mask || mask[r])
            row_loss[r] = (double)lse[r] - (double)logits[(size_t)r * V + targets[r]];
    }
    double sum = 0.0;
    long   nt = 0, nc = 0;
    for (int r = 0; r < rows; r++) { /* row order: reproducible */
        if (row_ok) row_ok[r] = 0;
        if (mask && !mask[r]) continue;
        const float *l  = logits + (size_t)r * V;
        int          am = 0;
        for (int j = 1; j < V; j++)
            if (l[j] > l[am]) am = j;
        sum += row_loss[r];
        nt++;
        nc += am == targets[r];
        if (row_ok) row_ok[r] = am == targets[r];
    }
    *n_targets = nt;
    *n_correct = nc;
    return sum;
}

void rl_softmax_ce_backward(float *dlogits, const float *logits, const float *lse,
                            const int32_t *targets, const uint8_t *mask, float scale, int rows,
                            int V)
{
    /* forward: loss = lse - logits[target]; dloss/dlogits[j] = softmax_j - [j == target] */
#pragma omp parallel for schedule(static) num_threads(rl_threads_get())
    for (int r = 0; r < rows; r++) {
        float       *d = dlogits + (size_t)r * V;
        const float *l = logits + (size_t)r * V;
        if (mask && !mask[r]) {
            memset(d, 0, (size_t)V * sizeof *d);
            continue;
        }
        const float m = lse[r];
#pragma omp simd
        for (int j = 0; j < V; j++)
            d[j] = scale * rl_expf_inline(l[j] - m);
        d[targets[r]] -= scale;
    }
}
