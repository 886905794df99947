/* layers.c -- dense layers of the transformer; see layers.h (derivations: docs/model.md). */
#include "config.h"
#include "layers.h"
#include "../core/gemm.h"
#include "../core/threads.h"
#include "../core/vexp.h"
#include "../core/vexp512.h"

#include <math.h>
#include <string.h>

/* Every loop is split by the problem (core/threads.h, rl_pieces): row loops into pieces of
 * about ROW_FLOATS floats of whole rows, elementwise loops into ELEM_CHUNK floats; column
 * reductions (bias and LayerNorm parameter gradients) into blocks of COL_BLOCK columns, each
 * streaming the rows in order with one accumulator per column.  Bounds depend on the sizes
 * only, so every sum has one order whatever the thread count.  Called inside a parallel
 * region (the model's chunks), a function runs its pieces on the calling thread. */
#define ROW_FLOATS 8192
#define COL_BLOCK 256
#define ELEM_CHUNK 4096

static long piece_rows(int C) { return C < ROW_FLOATS ? ROW_FLOATS / C : 1; }
static long row_pieces(long T, int C) { return (T + piece_rows(C) - 1) / piece_rows(C); }
/* acc[0 .. n-1] += r[0 .. n-1] */
RL_SIMD_CLONES
static void add_row(float *restrict acc, const float *restrict r, int n)
{
#pragma omp simd
    for (int c = 0; c < n; c++)
        acc[c] += r[c];
}

/* rows [*t0, *t1) of piece p */
static void piece_span(long p, long T, int C, long *t0, long *t1)
{
    *t0 = p * piece_rows(C);
    *t1 = *t0 + piece_rows(C) < T ? *t0 + piece_rows(C) : T;
}

/* --- embedding ---------------------------------------------------------------------- */

struct embed_ctx {
    float         *out, *dwte, *dpos;
    const float   *wte, *pos, *dout;
    const int32_t *tok;
    float          g;
    long           t0, n; /* the forward's rows: out and tok at row t0 of the batch */
    int            B, N, C, V;
    double        *part; /* rl_pos_scale_backward: one sum per piece */
};

static void embed_forward_piece(void *ctx, long p)
{
    const struct embed_ctx *e = ctx;
    const int               C = e->C, N = e->N;
    long                    t0, t1;
    piece_span(p, e->n, C, &t0, &t1);
    for (long t = t0; t < t1; t++) {
        float       *o = e->out + t * C;
        const float *w = e->wte + (size_t)e->tok[t] * C;
        const float *q = e->pos ? e->pos + ((e->t0 + t) % N) * C : NULL;
        if (q)
            for (int c = 0; c < C; c++)
                o[c] = w[c] + e->g * q[c];
        else
            memcpy(o, w, (size_t)C * sizeof *o);
    }
}

void rl_embed_forward_rows(float *out, const int32_t *tok, const float *wte, const float *pos,
                           float g, long t0, long n, int N, int C)
{
    struct embed_ctx e = {
        .out = out, .wte = wte, .pos = pos, .tok = tok, .g = g, .t0 = t0, .n = n, .N = N, .C = C};
    rl_pieces(row_pieces(n, C), embed_forward_piece, &e);
}

void rl_embed_forward(float *out, const int32_t *tok, const float *wte, const float *pos, float g,
                      int B, int N, int C)
{
    rl_embed_forward_rows(out, tok, wte, pos, g, 0, (long)B * N, N, C);
}

/* Two tokens may share an embedding row: piece p owns the rows [v0, v1) of the table and
 * adds, in token order, the gradients of the tokens that fall there, so each row is summed
 * in token order whatever the thread count.  The tokens are scanned EMBED_SCAN at a time
 * into a list of this piece's, without a branch, and then added: a branch taken at each
 * of the piece's tokens had made the rows' loads from memory wait one after another
 * (scan and adds: 0.6 % of a 1-thread softmax N = 256 update in perf, now 0.3 %). */
#define EMBED_PIECES 64
#define EMBED_SCAN 256
static void embed_backward_piece(void *ctx, long p)
{
    const struct embed_ctx *e  = ctx;
    const int               C  = e->C;
    const long              np = e->V < EMBED_PIECES ? e->V : EMBED_PIECES, T = (long)e->B * e->N;
    const int32_t           v0 = (int32_t)(p * e->V / np), v1 = (int32_t)((p + 1) * e->V / np);
    int                     mine[EMBED_SCAN];
    for (long t0 = 0; t0 < T; t0 += EMBED_SCAN) {
        const int      nt  = T - t0 < EMBED_SCAN ? (int)(T - t0) : EMBED_SCAN;
        const int32_t *tok = e->tok + t0;
        int            n   = 0;
        for (int j = 0; j < nt; j++) { /* j is kept where its token is in [v0, v1) */
            mine[n] = j;
            n += (uint32_t)tok[j] - (uint32_t)v0 < (uint32_t)(v1 - v0);
        }
        for (int i = 0; i < n; i++)
            add_row(e->dwte + (size_t)tok[mine[i]] * C, e->dout + (t0 + mine[i]) * C, C);
    }
}

/* dpos[n] += sum over b of dout[b, n], b in order: piece p owns positions of rows [t0, t1) */
static void pos_backward_piece(void *ctx, long p)
{
    const struct embed_ctx *e = ctx;
    const int               C = e->C;
    long                    n0, n1;
    piece_span(p, e->N, C, &n0, &n1);
    for (int b = 0; b < e->B; b++)
        for (long n = n0; n < n1; n++) {
            add_row(e->dpos + n * C, e->dout + ((size_t)b * e->N + n) * C, C);
        }
}

void rl_embed_backward(float *dwte, float *dpos, const float *dout, const int32_t *tok, int B,
                       int N, int C, int V)
{
    struct embed_ctx e = {
        .dwte = dwte, .dpos = dpos, .dout = dout, .tok = tok, .B = B, .N = N, .C = C, .V = V};
    rl_pieces(V < EMBED_PIECES ? V : EMBED_PIECES, embed_backward_piece, &e);
    if (dpos) rl_pieces(row_pieces(N, C), pos_backward_piece, &e);
}

void rl_sinusoid_row(float *p, int m, int C)
{
    for (int c = 0; c < C; c++) {
        int    t     = c / 2;
        double angle = m / pow(10000.0, 2.0 * t / C);
        p[c]         = (float)(c % 2 ? cos(angle) : sin(angle));
    }
}

/* at most this many pieces (their sums are kept on the stack): more rows per piece beyond */
#define SUM_PIECES 256
static long sum_piece_rows(long T, int C)
{
    long r = piece_rows(C), min = (T + SUM_PIECES - 1) / SUM_PIECES;
    return r > min ? r : min;
}

static void pos_scale_piece(void *ctx, long p)
{
    const struct embed_ctx *e = ctx;
    const long              T = (long)e->B * e->N, r = sum_piece_rows(T, e->C),
               t1 = (p + 1) * r < T ? (p + 1) * r : T;
    double s      = 0.0;
    for (long t = p * r; t < t1; t++) {
        const float *d = e->dout + t * e->C, *q = e->pos + (t % e->N) * e->C;
        for (int c = 0; c < e->C; c++)
            s += (double)d[c] * (double)q[c];
    }
    e->part[p] = s;
}

void rl_pos_scale_backward(float *dg, const float *dout, const float *pos, int B, int N, int C)
{
    /* out = e + g p: dg = sum of dout * p over every token and feature, by pieces of rows,
     * the pieces' sums added in order */
    double           part[SUM_PIECES];
    struct embed_ctx e = {.dout = dout, .pos = pos, .B = B, .N = N, .C = C, .part = part};
    const long       T = (long)B * N, np = (T + sum_piece_rows(T, C) - 1) / sum_piece_rows(T, C);
    double           s = 0.0;
    rl_pieces(np, pos_scale_piece, &e);
    for (long p = 0; p < np; p++)
        s += part[p];
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

struct ln_ctx {
    float       *out, *mean, *rstd, *dx, *dw, *db;
    const float *x, *w, *b, *dout;
    const float *cmean, *crstd; /* the backward's saved statistics */
    int          T, C;
};

static void layernorm_forward_piece(void *ctx, long p)
{
    const struct ln_ctx *l = ctx;
    const int            C = l->C;
    long                 t0, t1;
    piece_span(p, l->T, C, &t0, &t1);
    for (long t = t0; t < t1; t++)
        layernorm_row(l->out + t * C, l->mean + t, l->rstd + t, l->x + t * C, l->w, l->b, C);
}

void rl_layernorm_forward(float *out, float *mean, float *rstd, const float *x, const float *w,
                          const float *b, int T, int C)
{
    struct ln_ctx l = {
        .out = out, .mean = mean, .rstd = rstd, .x = x, .w = w, .b = b, .T = T, .C = C};
    rl_pieces(row_pieces(T, C), layernorm_forward_piece, &l);
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
static void ln_param_piece(void *ctx, long blk)
{
    const struct ln_ctx *l = ctx;
    const int C = l->C, c0 = (int)blk * COL_BLOCK, n = c0 + COL_BLOCK < C ? COL_BLOCK : C - c0;
    float     aw[COL_BLOCK] = {0}, ab[COL_BLOCK] = {0};
    for (int t = 0; t < l->T; t++)
        ln_grad_row(aw, ab, l->dout + (size_t)t * C + c0, l->x + (size_t)t * C + c0, l->cmean[t],
                    l->crstd[t], n);
    for (int c = 0; c < n; c++)
        l->dw[c0 + c] += aw[c], l->db[c0 + c] += ab[c];
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

static void layernorm_backward_piece(void *ctx, long p)
{
    const struct ln_ctx *l = ctx;
    const int            C = l->C;
    long                 t0, t1;
    piece_span(p, l->T, C, &t0, &t1);
    for (long t = t0; t < t1; t++)
        layernorm_backward_row(l->dx + t * C, l->dout + t * C, l->x + t * C, l->cmean[t],
                               l->crstd[t], l->w, C);
}

void rl_layernorm_backward(float *dx, float *dw, float *db, const float *dout, const float *x,
                           const float *mean, const float *rstd, const float *w, int T, int C)
{
    struct ln_ctx l = {.dx    = dx,
                       .dw    = dw,
                       .db    = db,
                       .x     = x,
                       .w     = w,
                       .dout  = dout,
                       .cmean = mean,
                       .crstd = rstd,
                       .T     = T,
                       .C     = C};
    rl_pieces(row_pieces(T, C), layernorm_backward_piece, &l);
    rl_pieces((C + COL_BLOCK - 1) / COL_BLOCK, ln_param_piece, &l);
}

/* --- linear ------------------------------------------------------------------------- */

struct bias_ctx {
    float       *out;
    const float *b, *x;
    int          T, C, accumulate;
};

/* out (=|+=) b per row */
static void bias_rows_piece(void *ctx, long p)
{
    const struct bias_ctx *e = ctx;
    long                   t0, t1;
    piece_span(p, e->T, e->C, &t0, &t1);
    for (long t = t0; t < t1; t++) {
        float *o = e->out + t * e->C;
        if (e->accumulate)
            for (int j = 0; j < e->C; j++)
                o[j] += e->b[j];
        else
            memcpy(o, e->b, (size_t)e->C * sizeof *o);
    }
}

void rl_linear_forward(float *out, const float *x, const float *W, const float *b, int T, int C,
                       int OC, int accumulate)
{
    if (b) { /* out (=|+=) b first, then the GEMM accumulates: one pass over out */
        struct bias_ctx e = {.out = out, .b = b, .T = T, .C = OC, .accumulate = accumulate};
        rl_pieces(row_pieces(T, OC), bias_rows_piece, &e);
    }
    /* out (T, OC) += x (T, C) . W^T, W stored (OC, C) */
    rl_sgemm(RL_TRANS_N, RL_TRANS_T, T, OC, C, 1.0f, x, C, W, C, (b || accumulate) ? 1.0f : 0.0f,
             out, OC);
}

/* Each column's sum in row order, held in a register over all rows, 64 columns at a time
 * in four vectors: every row is read once and out read and written once.  The bias
 * gradients' column sums had added each row into an array in memory, which waited on its
 * own stores (1.0 % of a 1-thread linear N = 4096 update in perf, now 0.15 %); the
 * model's reduction of its partial sums had added one slot at a time into a buffer (1.9 %
 * of the same update, 0.9 % in registers). */
typedef float rows_v16 __attribute__((vector_size(64), aligned(4), may_alias));

RL_SIMD_CLONES
void rl_rows_sum_add(float *restrict out, const float *restrict x, int rows, size_t ld, size_t n)
{
    if (rows < 1) return;
    size_t c = 0;
    for (; c + 64 <= n; c += 64) {
        const float *p  = x + c;
        rows_v16     a0 = *(const rows_v16 *)p, a1 = *(const rows_v16 *)(p + 16),
                 a2 = *(const rows_v16 *)(p + 32), a3 = *(const rows_v16 *)(p + 48);
        for (int t = 1; t < rows; t++) {
            p += ld;
            a0 += *(const rows_v16 *)p, a1 += *(const rows_v16 *)(p + 16);
            a2 += *(const rows_v16 *)(p + 32), a3 += *(const rows_v16 *)(p + 48);
        }
        float *o              = out + c;
        *(rows_v16 *)o        = *(rows_v16 *)o + a0;
        *(rows_v16 *)(o + 16) = *(rows_v16 *)(o + 16) + a1;
        *(rows_v16 *)(o + 32) = *(rows_v16 *)(o + 32) + a2;
        *(rows_v16 *)(o + 48) = *(rows_v16 *)(o + 48) + a3;
    }
    for (; c < n; c++) {
        float a = x[c];
        for (int t = 1; t < rows; t++)
            a += x[(size_t)t * ld + c];
        out[c] += a;
    }
}

static void colsum_piece(void *ctx, long blk)
{
    const struct bias_ctx *e  = ctx;
    const int              c0 = (int)blk * COL_BLOCK, C = e->C;
    rl_rows_sum_add(e->out + c0, e->x + c0, e->T, (size_t)C,
                    (size_t)(c0 + COL_BLOCK < C ? COL_BLOCK : C - c0));
}

void rl_colsum_add(float *db, const float *x, int T, int C)
{
    struct bias_ctx e = {.out = db, .x = x, .T = T, .C = C};
    rl_pieces((C + COL_BLOCK - 1) / COL_BLOCK, colsum_piece, &e);
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

/* One element: h = h + b, g = gelu(h) = h sig with sig = sigmoid(2u), and gelu'(h).
 * 0.5 x (1 + tanh u) = x sigmoid(2u) = x / (1 + exp(-2u)), and
 * gelu'(x) = sig + x sig (1 - sig) 2 S (1 + 3 A x^2).  Large negative x: exp overflows to
 * inf, sig = 0, g = -0, gelu' = 0; large positive x: sig = 1, gelu' = 1. */
static RL_INLINE float gelu_sig(float x)
{
    float u = GELU_S * (x + GELU_A * x * x * x);
    return 1.0f / (1.0f + rl_expf_inline(-2.0f * u));
}

static RL_INLINE float gelu_slope(float x, float s)
{
    float du = 2.0f * GELU_S * (1.0f + 3.0f * GELU_A * x * x);
    return s + x * s * (1.0f - s) * du;
}

RL_SIMD_CLONES
static void bias_gelu_row(float *restrict g, float *restrict gp, const float *restrict h,
                          const float *restrict b, int C)
{
    if (gp) {
#pragma omp simd
        for (int c = 0; c < C; c++) {
            float x = h[c] + b[c], s = gelu_sig(x);
            g[c] = x * s, gp[c] = gelu_slope(x, s);
        }
    } else { /* inference: no derivative */
#pragma omp simd
        for (int c = 0; c < C; c++) {
            float x = h[c] + b[c];
            g[c]    = x * gelu_sig(x);
        }
    }
}

#if RL_VEXP512
/* bias_gelu_row with gp, 16 columns at a time with AVX-512: its x86-64-v4 clone's
 * arithmetic, operation for operation as GCC compiles it (GELU_A x x x + x as one FMA,
 * (1 + 3 GELU_A x x) likewise, x s shared by g and gp, gp as one FMA), with the exp by
 * rl_expf16 (vexp512.h): the same floats, about 30 vector operations per 16 columns
 * instead of 48 (the exp's 2^n by vscalefps, no NaN mask). */
__attribute__((target("avx512f"))) static inline void gelu16(float *g, float *gp, __m512 x,
                                                             __mmask16 k)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512       t   = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(GELU_A), x), x);
    t                = _mm512_fmadd_ps(t, x, x); /* x + GELU_A x x x */
    t              = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(GELU_S), t), _mm512_set1_ps(-2.0f));
    const __m512 s = _mm512_div_ps(one, _mm512_add_ps(one, rl_expf16(t)));
    __m512       du = _mm512_mul_ps(_mm512_set1_ps(3.0f * GELU_A), x);
    du              = _mm512_mul_ps(_mm512_set1_ps(2.0f * GELU_S), _mm512_fmadd_ps(du, x, one));
    const __m512 xs = _mm512_mul_ps(x, s);
    _mm512_mask_storeu_ps(g, k, xs);
    _mm512_mask_storeu_ps(gp, k, _mm512_fmadd_ps(_mm512_mul_ps(xs, _mm512_sub_ps(one, s)), du, s));
}

__attribute__((target("avx512f"))) static void bias_gelu_row_wide(float *restrict g,
                                                                  float *restrict gp,
                                                                  const float *restrict h,
                                                                  const float *restrict b, int C)
{
    int c = 0;
    for (; c + 16 <= C; c += 16)
        gelu16(g + c, gp + c, _mm512_add_ps(_mm512_loadu_ps(h + c), _mm512_loadu_ps(b + c)),
               (__mmask16)0xffff);
    if (c < C) {
        const __mmask16 k = rl_mask16(C - c);
        gelu16(g + c, gp + c,
               _mm512_add_ps(_mm512_maskz_loadu_ps(k, h + c), _mm512_maskz_loadu_ps(k, b + c)), k);
    }
}
#endif

struct gelu_ctx {
    float       *g, *gp, *dh;
    const float *h, *b, *cgp, *dg;
    size_t       n; /* elements (elementwise passes) */
    int          T, C;
    int          wide; /* the forward with gp: bias_gelu_row_wide (AVX-512) */
};

static void bias_gelu_piece(void *ctx, long p)
{
    const struct gelu_ctx *e = ctx;
    const int              C = e->C;
    long                   t0, t1;
    piece_span(p, e->T, C, &t0, &t1);
#if RL_VEXP512
    if (e->gp && e->wide) {
        for (long t = t0; t < t1; t++)
            bias_gelu_row_wide(e->g + t * C, e->gp + t * C, e->h + t * C, e->b, C);
        return;
    }
#endif
    for (long t = t0; t < t1; t++)
        bias_gelu_row(e->g + t * C, e->gp ? e->gp + t * C : NULL, e->h + t * C, e->b, C);
}

void rl_bias_gelu_forward_wide(float *g, float *gp, const float *h, const float *b, int T, int C,
                               int wide)
{
    struct gelu_ctx e = {.g = g, .gp = gp, .h = h, .b = b, .T = T, .C = C, .wide = wide};
    rl_pieces(row_pieces(T, C), bias_gelu_piece, &e);
}

void rl_bias_gelu_forward(float *g, float *gp, const float *h, const float *b, int T, int C)
{
    rl_bias_gelu_forward_wide(g, gp, h, b, T, C, rl_vexp_wide());
}

RL_SIMD_CLONES
static void gelu_backward_chunk(float *dh, const float *dg, const float *gp, size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++)
        dh[i] = dg[i] * gp[i];
}

/* One row of the fused backward: dh = dg gelu'(h) in place, acc += dh. */
RL_SIMD_CLONES
static void gelu_backward_row(float *restrict dh, float *restrict acc, const float *restrict gp,
                              int n)
{
#pragma omp simd
    for (int c = 0; c < n; c++) {
        dh[c] = dh[c] * gp[c];
        acc[c] += dh[c];
    }
}

/* Whole rows in order, up to SUM_COLS columns at a time.  In blocks of COL_BLOCK columns
 * the segments read one after another lay 2 KB apart (C = 512; likely the same L1 sets),
 * and the pass took 1.9 % of a 1-thread linear N = 256 update, now 0.7 % (perf, Zen 4).
 * Each column is still summed in row order: the same bytes. */
#define SUM_COLS 4096
void rl_gelu_backward_sum(float *dh, float *db, const float *gp, int T, int C)
{
    for (int c0 = 0; c0 < C; c0 += SUM_COLS) { /* column bands, rows in order */
        const int n             = C - c0 < SUM_COLS ? C - c0 : SUM_COLS;
        float     acc[SUM_COLS] = {0};
        for (int t = 0; t < T; t++) {
            const size_t o = (size_t)t * C + c0;
            gelu_backward_row(dh + o, acc, gp + o, n);
        }
        for (int c = 0; c < n; c++)
            db[c0 + c] += acc[c];
    }
}

static long   elem_pieces(size_t n) { return (long)((n + ELEM_CHUNK - 1) / ELEM_CHUNK); }
static size_t elem_len(size_t n, long k)
{
    size_t i0 = (size_t)k * ELEM_CHUNK;
    return n - i0 < ELEM_CHUNK ? n - i0 : ELEM_CHUNK;
}

static void gelu_backward_piece(void *ctx, long k)
{
    const struct gelu_ctx *e  = ctx;
    size_t                 i0 = (size_t)k * ELEM_CHUNK;
    gelu_backward_chunk(e->dh + i0, e->dg + i0, e->cgp + i0, elem_len(e->n, k));
}

void rl_gelu_backward(float *dh, const float *dg, const float *gp, size_t n)
{
    struct gelu_ctx e = {.dh = dh, .dg = dg, .cgp = gp, .n = n};
    rl_pieces(elem_pieces(n), gelu_backward_piece, &e);
}

/* --- mean pooling ------------------------------------------------------------------- */

struct pool_ctx {
    float       *out;
    const float *x;
    int          B, N, C;
};

static void meanpool_forward_piece(void *ctx, long b)
{
    const struct pool_ctx *e = ctx;
    const int              N = e->N, C = e->C;
    for (int c = 0; c < C; c++) {
        double s = 0.0;
        for (int n = 0; n < N; n++)
            s += (double)e->x[((size_t)b * N + n) * C + c];
        e->out[(size_t)b * C + c] = (float)(s / N);
    }
}

void rl_meanpool_forward(float *out, const float *x, int B, int N, int C)
{
    struct pool_ctx e = {out, x, B, N, C};
    rl_pieces(B, meanpool_forward_piece, &e);
}

static void meanpool_backward_piece(void *ctx, long p)
{
    /* forward: out[b,c] = (1/N) sum_n x[b,n,c] */
    const struct pool_ctx *e = ctx;
    const int              C = e->C;
    long                   t0, t1;
    piece_span(p, (long)e->B * e->N, C, &t0, &t1);
    for (long t = t0; t < t1; t++)
        for (int c = 0; c < C; c++)
            e->out[t * C + c] = e->x[(t / e->N) * C + c] / (float)e->N;
}

void rl_meanpool_backward(float *dx, const float *dout, int B, int N, int C)
{
    struct pool_ctx e = {dx, dout, B, N, C};
    rl_pieces(row_pieces((long)B * N, C), meanpool_backward_piece, &e);
}

/* --- softmax + cross-entropy -------------------------------------------------------- */

/* log sum exp of a row of logits; *max: its largest logit (a vector max over order keys,
 * vexp.h: a float compare kept the loop scalar) */
RL_SIMD_CLONES
static float row_lse(const float *l, int V, float *max)
{
    const float mx = rl_maxf_inline(l, V, -INFINITY);
    *max           = mx;
    float s        = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int j = 0; j < V; j++)
        s += rl_expf_inline(l[j] - mx);
    return mx + logf(s);
}

struct ce_ctx {
    float         *lse, *dlogits;
    const float   *clse; /* the backward's */
    double        *row_loss;
    uint8_t       *row_ok;
    const float   *logits;
    const int32_t *targets;
    const uint8_t *mask;
    float          scale;
    int            rows, V;
    double        *sum; /* per piece: loss sum, targets, correct */
    long          *nt, *nc;
};

/* rows [r0, r1) of the forward: lse and the per-row loss and flag; the piece's sums in
 * row order */
static void ce_forward_piece(void *ctx, long p)
{
    const struct ce_ctx *e = ctx;
    const int            V = e->V;
    const long R = sum_piece_rows(e->rows, V), r1 = (p + 1) * R < e->rows ? (p + 1) * R : e->rows;
    double     sum = 0.0;
    long       nt = 0, nc = 0;
    for (long r = p * R; r < r1; r++) {
        const float *l = e->logits + (size_t)r * V;
        float        mx;
        e->lse[r]      = row_lse(l, V, &mx);
        e->row_loss[r] = 0.0;
        if (e->row_ok) e->row_ok[r] = 0;
        if (e->mask && !e->mask[r]) continue;
        int am = 0; /* the first logit equal to the max (none when it is NaN: V - 1) */
        while (am < V - 1 && !(l[am] == mx))
            am++;
        e->row_loss[r] = (double)e->lse[r] - (double)l[e->targets[r]];
        sum += e->row_loss[r];
        nt++;
        nc += am == e->targets[r];
        if (e->row_ok) e->row_ok[r] = am == e->targets[r];
    }
    e->sum[p] = sum, e->nt[p] = nt, e->nc[p] = nc;
}

double rl_softmax_ce_forward(float *lse, double *row_loss, uint8_t *row_ok, long *n_targets,
                             long *n_correct, const float *logits, const int32_t *targets,
                             const uint8_t *mask, int rows, int V)
{
    double        sums[SUM_PIECES];
    long          nts[SUM_PIECES], ncs[SUM_PIECES];
    struct ce_ctx e = {.lse      = lse,
                       .row_loss = row_loss,
                       .row_ok   = row_ok,
                       .logits   = logits,
                       .targets  = targets,
                       .mask     = mask,
                       .rows     = rows,
                       .V        = V,
                       .sum      = sums,
                       .nt       = nts,
                       .nc       = ncs};
    const long    R = sum_piece_rows(rows, V), np = (rows + R - 1) / R;
    double        sum = 0.0;
    long          nt = 0, nc = 0;
    rl_pieces(np, ce_forward_piece, &e);
    for (long p = 0; p < np; p++) /* the pieces' sums in piece order: reproducible */
        sum += sums[p], nt += nts[p], nc += ncs[p];
    *n_targets = nt;
    *n_correct = nc;
    return sum;
}

/* In clones per instruction set, as row_lse: the backward's probabilities take the
 * forward's exp (the baseline build's had no FMA in its polynomial) */
RL_SIMD_CLONES
static void ce_backward_piece(void *ctx, long p)
{
    /* forward: loss = lse - logits[target]; dloss/dlogits[j] = softmax_j - [j == target] */
    const struct ce_ctx *e = ctx;
    const int            V = e->V;
    long                 r0, r1;
    piece_span(p, e->rows, V, &r0, &r1);
    for (long r = r0; r < r1; r++) {
        float       *d = e->dlogits + (size_t)r * V;
        const float *l = e->logits + (size_t)r * V;
        if (e->mask && !e->mask[r]) {
            memset(d, 0, (size_t)V * sizeof *d);
            continue;
        }
        const float m = e->clse[r], scale = e->scale;
#pragma omp simd
        for (int j = 0; j < V; j++)
            d[j] = scale * rl_expf_inline(l[j] - m);
        d[e->targets[r]] -= scale;
    }
}

void rl_softmax_ce_backward(float *dlogits, const float *logits, const float *lse,
                            const int32_t *targets, const uint8_t *mask, float scale, int rows,
                            int V)
{
    struct ce_ctx e = {.dlogits = dlogits,
                       .logits  = logits,
                       .clse    = lse,
                       .targets = targets,
                       .mask    = mask,
                       .scale   = scale,
                       .rows    = rows,
                       .V       = V};
    rl_pieces(row_pieces(rows, V), ce_backward_piece, &e);
}
