/* attn_softmax.c -- tiled softmax attention, one head, forward and backward.
 *
 *   s[m,n] = q_m . k_n / sqrt(d) + rel[(n-m)+N-1],   p = softmax_n(s),   o_m = sum_n p[m,n] v_n
 *
 * FlashAttention (Dao et al. 2022; backward as in FlashAttention-2, Dao 2023) on a CPU:
 * the queries are cut into blocks of BQ rows, the keys into blocks of BK; one Bq x Bk
 * score tile at a time is formed by a GEMM, turned into probabilities with an online
 * (running max) softmax, and multiplied into the output by a second GEMM.  Memory is
 * O(N (d + dv)) plus two tiles; the N x N matrix never exists.  Causal: tiles wholly
 * above the diagonal are skipped; in diagonal tiles each row is cut at its own length.
 *
 * Forward saves lse[m] = max_n s + log sum_n exp(s - max) (natural log).  The backward
 * recomputes p = exp(s - lse) tile by tile, so it needs no running statistics:
 *   D_m = dout_m . o_m,  dv += p^T dout,  dp = dout v^T,  ds = p (dp - D),
 *   dq += ds k / sqrt(d),  dk += ds^T q / sqrt(d),  drel[(n-m)+N-1] += ds[m,n].
 * The five products go through tilemm.h (a register-blocked kernel where the CPU has
 * AVX-512F or AVX2 and the widths are multiples of 16, BLIS otherwise); the elementwise passes
 * use the vectorisable exp of vexp.h.  Details, FLOP counts and timings: docs/attention.md. */
#include "config.h"
#include "attn_softmax.h"
#include "../core/tilemm.h"
#include "../core/vexp.h"

#include <math.h>
#include <string.h>
#if defined(__x86_64__) || defined(__SSE__)
#include <xmmintrin.h>
#define RL_HAVE_MXCSR 1
#endif

/* Tile sizes (compile-time tunables).  d = 32 makes the score GEMM a small-K product and
 * the other four GEMMs have only 32 output columns, so BLIS's per-call packing of the
 * tile is the overhead to amortise: 256 x 256 measured ~1.6x faster than 128 x 128 for
 * d = dv = 32 on a 2-vCPU AVX-512 Xeon guest, and 512-wide tiles no better (see
 * docs/attention.md).  Two 256 KiB tiles stay in a 2 MiB L2.  Any sizes are correct
 * (the tests were also run with 64 x 96 and 96 x 64). */
#ifndef RL_SM_BQ
#define RL_SM_BQ 256
#endif
#ifndef RL_SM_BK
#define RL_SM_BK 256
#endif
enum { SM_BQ = RL_SM_BQ, SM_BK = RL_SM_BK };

static int imin(int a, int b) { return a < b ? a : b; }

/* Probabilities below FLT_MIN (~1e-38; exp of scores more than 87 below the row max, common
 * with ALiBi's large far-away biases) are subnormal, and x86 cores take a microcode assist
 * on every subnormal operand or result: measured 3x on ALiBi's backward at N = 4096.  The
 * kernels run with flush-to-zero and denormals-are-zero set for the calling thread and
 * restore the caller's mode on return; the terms lost are < 1e-38 against sums >= 1. */
static unsigned ftz_on(void)
{
#ifdef RL_HAVE_MXCSR
    unsigned old = _mm_getcsr();
    _mm_setcsr(old | 0x8040u); /* FTZ (bit 15) | DAZ (bit 6) */
    return old;
#else
    return 0;
#endif
}

static void ftz_restore(unsigned old)
{
#ifdef RL_HAVE_MXCSR
    _mm_setcsr(old);
#else
    (void)old;
#endif
}

static void tile_dims(int N, int *bq, int *bk, int *ld)
{
    *bq = imin(SM_BQ, N);
    *bk = imin(SM_BK, N);
    /* rows of whole 64-byte lines, an odd number of them: with an even number (256 floats:
     * 16 lines, rows 1 KiB apart) the rows of a tile fall on a few L1 sets and evict each
     * other; 272 measured 63 -> 74 GFLOP/s for the 256 x 256 x 32 score product (Zen 3) */
    *ld = (*bk + 15) & ~15;
    if ((*ld / 16) % 2 == 0) *ld += 16;
}

/* Query rows per block (<= tile_dims' bq, which sizes the scratch).  Causal with the whole
 * sequence in one key tile (N <= BK, e.g. training at N = 256): four query blocks instead
 * of one, each block's key range stopping at its last row (nb clipped below), so 3/8 of
 * the score tile -- all masked -- is never computed (1/4 with two blocks).  With the
 * tile kernel of tilemm.c small blocks cost little: at N = 256, d = 32, four blocks
 * measured ~10% faster per head than two, eight no better than four. */
static int query_block(int N, int causal)
{
    int bq, bk, ld;
    tile_dims(N, &bq, &bk, &ld);
    return causal && N <= SM_BK && bq >= 32 ? (bq + 3) / 4 : bq;
}

/* Rows per group of a causal tile that the diagonal crosses: each group's key range ends
 * at its own last row, so about 3/8 of such a tile -- the masked part -- is never computed
 * (diagonal tiles are 1/8 of the tiles at N = 4096 with 256-row tiles; at N <= BK
 * query_block already cuts the one tile).  The groups of a tile share its key pack; xPos
 * keeps whole blocks (its scaled queries and centre are the block's). */
enum { SM_DIAG_ROWS = 64 };

static int diag_group(int causal, int xpos, int i0, int mb, int j0, int nb)
{
    return causal && !xpos && j0 + nb > i0 + 1 && mb > SM_DIAG_ROWS ? SM_DIAG_ROWS : mb;
}

/* Key columns of tile [j0, j0+nb) that rows [i, i+rows) see together: up to the last row's. */
static int group_cols(int causal, int i, int rows, int j0, int nb)
{
    return causal ? imin(nb, i + rows - j0) : nb;
}

/* xPos (Sun et al. 2022, as x-transformers' rotary_xpos): the score term of feature f is
 * multiplied by zeta_f^((m-n)/gamma) = exp((m-n) lam_f), lam_f = ln(zeta_f)/gamma <= 0.
 * It is split as q_m . exp((m-c) lam) and k_n . exp(-(n-c) lam) for a centre c that
 * cancels in the product.  One centre for the whole sequence (x-transformers takes N/2)
 * needs factors up to zeta_0^(-N/(2 gamma)) = exp(1.25 N / (2 gamma)): e^80 at N = 65536,
 * gamma = 512, just inside float32 (e^88.7), beyond it from N / gamma ~ 142 on (dq, dk
 * were measured non-finite at N / gamma = 256), and the small factors at the other end
 * flush small components of q to zero.  So each query block takes its own centre
 * c = i0 + mb/2: its q factors and the factors of every key it sees (n <= i0+mb-1) are at
 * most exp(mb/2 |lam|), whatever N is, and the factors of keys far below the block
 * underflow to 0 -- as their true score terms, exp((m-n) lam) q_f k_f, do.  The key tile
 * is rescaled (and repacked) for each query block: d exps per key and block, 1/mb of the
 * score GEMM's work.  The block height is capped so that exp(mb/2 |lam|) <= e^40 (a cap
 * that bites only for gamma below ~4). */
static int xpos_rows_cap(const float *xlam, int d, int rows)
{
    float mx = 0.0f;
    for (int e = 0; e < d; e++)
        mx = fmaxf(mx, -xlam[e]);
    int cap = mx > 0 ? (int)(80.0f / mx) : rows;
    return cap < 1 ? 1 : cap < rows ? cap : rows;
}

/* Rows r0 .. r0+n-1 of x scaled feature-wise: f = exp(sgn (r - c0) lam), xs = x f. */
RL_SIMD_CLONES
static void xpos_rows(float *xs, float *f, const float *x, const float *lam, int r0, int n, int d,
                      int c0, float sgn)
{
    for (int a = 0; a < n; a++) {
        const float  t  = sgn * (float)(r0 + a - c0);
        const float *xr = x + (size_t)(r0 + a) * d;
#pragma omp simd
        for (int e = 0; e < d; e++) {
            float g               = rl_expf_inline(t * lam[e]);
            f[(size_t)a * d + e]  = g;
            xs[(size_t)a * d + e] = xr[e] * g;
        }
    }
}

/* x (n x d) += y * f, elementwise (the chain rule through xs = x f). */
static void mul_acc(float *x, const float *y, const float *f, size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++)
        x[i] += y[i] * f[i];
}

size_t rl_attn_softmax_xpos_scratch_floats(int N, int d)
{
    int bq, bk, ld;
    tile_dims(N, &bq, &bk, &ld);
    return 2 * (size_t)bq * d + 3 * (size_t)bk * d;
}

size_t rl_attn_softmax_scratch_floats(int N, int d, int dv)
{
    int bq, bk, ld;
    tile_dims(N, &bq, &bk, &ld);
    /* s/p tile, dp tile, row statistics, the packed k^T and v^T of a key tile */
    return 2 * (size_t)bq * ld + 3 * (size_t)bq + (size_t)(d + dv) * ld;
}

/* Columns of key tile [j0, j0+nb) that query i sees: all, or n <= i when causal. */
static int row_cols(int causal, int i, int j0, int nb)
{
    if (!causal) return nb;
    int c = i - j0 + 1;
    return c < 0 ? 0 : imin(c, nb);
}

/* Columns of a row's exp pass: the nc valid ones rounded up to whole 16-float vectors
 * (at most nb), so that the diagonal tiles of causal attention, whose rows end anywhere,
 * take no scalar remainder loop; the columns nc .. ncv-1 are set to -inf first. */
static int vector_cols(int nc, int nb)
{
    int v = (nc + 15) & ~15;
    return v < nb ? v : nb;
}

/* Online softmax step for one row of a score tile: add its bias slice (rel + (j0 - i) +
 * N-1, or NULL), let the running max m and sum l absorb the nc valid columns, turn s into
 * exp(s - m_new) (0 on columns nc..nb-1, masked), and return exp(m_old - m_new), the
 * factor by which the output row accumulated so far must shrink. */
RL_SIMD_CLONES
static float online_row(float *s, const float *bias, int nc, int nb, float *m, float *l)
{
    if (nc == 0) { /* row entirely masked in this tile: m and l unchanged */
        memset(s, 0, sizeof(float) * (size_t)nb);
        return 1.0f;
    }
    const int nv  = vector_cols(nc, nb);
    float     sum = 0.0f;
    if (bias) {
#pragma omp simd
        for (int b = 0; b < nc; b++)
            s[b] += bias[b];
    }
    const float mx = rl_maxf_inline(s, nc, *m);
    for (int b = nc; b < nv; b++)
        s[b] = -INFINITY; /* exp gives 0 */
#pragma omp simd reduction(+ : sum)
    for (int b = 0; b < nv; b++) {
        float p = rl_expf_inline(s[b] - mx);
        s[b]    = p;
        sum += p;
    }
    for (int b = nv; b < nb; b++)
        s[b] = 0.0f;
    /* exp(m_old - m_new); on the row's first tile m_old = -inf, l = 0 and the output row
     * is still 0: no exp (its latency would sit on every row of a one-tile sequence) */
    float alpha = *m == -INFINITY ? 0.0f : rl_expf_inline(*m - mx);
    *l          = *l * alpha + sum;
    *m          = mx;
    return alpha;
}

static void scale_row(float *x, int n, float a)
{
#pragma omp simd
    for (int c = 0; c < n; c++)
        x[c] *= a;
}

/* One call's operands: the forward reads q k v rel and writes o lse; the backward also
 * reads dout o lse and writes dq dk dv drel. */
struct sm_call {
    const float *q, *k, *v, *rel, *dout, *o, *lse;
    float       *out, *lse_out, *dq, *dk, *dvg;
    double      *drel;
    int          N, d, dv, causal;
    float        scale; /* 1/sqrt(d) */
    const float *xlam;  /* xPos: d log-decays per feature, or NULL (see xpos_rows) */
    float       *xs;    /* xPos scratch: qs, fq (bq x d), ks, fk, dks (bk x d) */
};

/* The transpose of one key tile (k or v rows j0 .. j0+n-1, n = the whole tile), packed for
 * rl_tile_gemm (dims x ld, zero past n) and kept: the query blocks that follow reuse it
 * while the tile is the same -- at N <= BK, every block of the call. */
struct key_pack {
    float *t;
    int    j0; /* tile held, -1: none */
};

static const float *packed(struct key_pack *kp, const float *x, int dims, int ld, int j0, int n)
{
    if (kp->j0 != j0) {
        rl_tile_pack_t(kp->t, ld, x + (size_t)j0 * dims, dims, n, dims);
        kp->j0 = j0;
    }
    return kp->t;
}

/* The fields a forward and a backward call share. */
static struct sm_call sm_call_common(const float *q, const float *k, const float *v,
                                     const float *rel, const float *xlam, int N, int d, int dv,
                                     int causal, float *scratch)
{
    return (struct sm_call){.q      = q,
                            .k      = k,
                            .v      = v,
                            .rel    = rel,
                            .N      = N,
                            .d      = d,
                            .dv     = dv,
                            .causal = causal,
                            .scale  = (float)(1.0 / sqrt((double)d)),
                            .xlam   = xlam,
                            .xs     = scratch + rl_attn_softmax_scratch_floats(N, d, dv)};
}

/* rel (or drel) slice seen by query i in a key tile starting at j0: entry b is r = j0+b-i */
#define SM_DIAG(base, c, i, j0) ((base) ? (base) + ((j0) - (i)) + ((c)->N - 1) : NULL)

/* One block of query rows [i0, i0+mb): o rows accumulate p v over the key tiles. */
static void forward_block(const struct sm_call *c, int i0, int mb, float *scratch)
{
    int bq, bk, ld;
    tile_dims(c->N, &bq, &bk, &ld);
    float          *s = scratch, *mrow = scratch + (size_t)bq * ld, *lrow = mrow + bq;
    struct key_pack kp = {scratch + 2 * (size_t)bq * ld + 3 * (size_t)bq, -1};
    float          *oi = c->out + (size_t)i0 * c->dv;
    memset(oi, 0, sizeof(float) * (size_t)mb * c->dv);
    for (int a = 0; a < mb; a++)
        mrow[a] = -INFINITY, lrow[a] = 0.0f;
    const int    jend = c->causal ? i0 + mb : c->N; /* causal: tiles right of the block skipped */
    const int    c0   = i0 + mb / 2;                /* xPos centre */
    const float *qi   = c->q + (size_t)i0 * c->d;
    float       *ks = NULL, *fk = NULL;
    if (c->xlam) { /* q_m exp((m-c0) lam) */
        float *qs = c->xs, *fq = qs + (size_t)bq * c->d;
        ks = fq + (size_t)bq * c->d, fk = ks + (size_t)bk * c->d;
        xpos_rows(qs, fq, c->q, c->xlam, i0, mb, c->d, c0, 1.0f);
        qi = qs;
    }
    for (int j0 = 0; j0 < jend; j0 += bk) {
        const int nb = imin(bk, jend - j0); /* causal: keys past the block's last row unused */
        /* s = q k^T / sqrt(d) */
        const float *kt;
        if (c->xlam) { /* k_n exp(-(n-c0) lam), for this block's centre */
            xpos_rows(ks, fk, c->k, c->xlam, j0, nb, c->d, c0, -1.0f);
            rl_tile_pack_t(kp.t, ld, ks, c->d, nb, c->d);
            kt = kp.t;
        } else
            kt = packed(&kp, c->k, c->d, ld, j0, imin(bk, c->N - j0));
        const int g = diag_group(c->causal, c->xlam != NULL, i0, mb, j0, nb);
        for (int a0 = 0; a0 < mb; a0 += g) {
            const int rows = imin(g, mb - a0), ng = group_cols(c->causal, i0 + a0, rows, j0, nb);
            if (ng <= 0) continue; /* rows left of the tile: their state is unchanged */
            float *sa = s + (size_t)a0 * ld, *oa = oi + (size_t)a0 * c->dv;
            rl_tile_gemm(rows, (ng + 15) & ~15, c->d, c->scale, qi + (size_t)a0 * c->d, c->d, 1,
                         kt, ld, 0.0f, sa, ld);
            for (int a = a0; a < a0 + rows; a++) {
                float alpha = online_row(s + (size_t)a * ld, SM_DIAG(c->rel, c, i0 + a, j0),
                                         row_cols(c->causal, i0 + a, j0, ng), ng, mrow + a, lrow + a);
                if (alpha != 1.0f) scale_row(oi + (size_t)a * c->dv, c->dv, alpha);
            }
            /* o += p v */
            rl_tile_gemm(rows, c->dv, ng, 1.0f, sa, ld, 1, c->v + (size_t)j0 * c->dv, c->dv, 1.0f,
                         oa, c->dv);
        }
    }
    for (int a = 0; a < mb; a++) { /* o = acc / l, lse = m + log l (l >= 1: the max term) */
        scale_row(oi + (size_t)a * c->dv, c->dv, 1.0f / lrow[a]);
        c->lse_out[i0 + a] = mrow[a] + logf(lrow[a]);
    }
}

void rl_attn_softmax_forward(float *o, float *lse, const float *q, const float *k, const float *v,
                             const float *rel, int N, int d, int dv, int causal, float *scratch)
{
    rl_attn_softmax_forward_xpos(o, lse, q, k, v, rel, NULL, N, d, dv, causal, scratch);
}

void rl_attn_softmax_forward_xpos(float *o, float *lse, const float *q, const float *k,
                                  const float *v, const float *rel, const float *xlam, int N, int d,
                                  int dv, int causal, float *scratch)
{
    struct sm_call c = sm_call_common(q, k, v, rel, xlam, N, d, dv, causal, scratch);
    c.out            = o;
    c.lse_out        = lse;
    const int bq = xlam ? xpos_rows_cap(xlam, d, query_block(N, causal)) : query_block(N, causal);
    const unsigned mode = ftz_on();
    for (int i0 = 0; i0 < N; i0 += bq)
        forward_block(&c, i0, imin(bq, N - i0), scratch);
    ftz_restore(mode);
}

/* p = exp(s + rel - lse_i) on the valid columns, 0 past them (forward: p = softmax(s)). */
RL_SIMD_CLONES
static void recompute_p(float *p, const float *bias, int nc, int nb, float lse_i)
{
    const int nv = vector_cols(nc, nb);
    if (bias) {
#pragma omp simd
        for (int b = 0; b < nc; b++)
            p[b] += bias[b];
    }
    for (int b = nc; b < nv; b++)
        p[b] = -INFINITY; /* exp gives 0 */
#pragma omp simd
    for (int b = 0; b < nv; b++)
        p[b] = rl_expf_inline(p[b] - lse_i);
    for (int b = nv; b < nb; b++)
        p[b] = 0.0f;
}

/* ds = p (dp - D_i), written over dp; drel (its slice for this row, or NULL) gathers ds
 * along the diagonal (forward: s[m,n] += rel[(n-m)+N-1]). */
RL_SIMD_CLONES
static void softmax_grad_row(float *dp, const float *p, double *drel, int nc, int nb, float D_i)
{
    const int nv = vector_cols(nc, nb); /* p = 0 on columns nc .. nv-1 */
#pragma omp simd
    for (int b = 0; b < nv; b++)
        dp[b] = p[b] * (dp[b] - D_i);
    for (int b = nv; b < nb; b++)
        dp[b] = 0.0f;
    if (drel) {
#pragma omp simd
        for (int b = 0; b < nc; b++)
            drel[b] += (double)dp[b];
    }
}

/* One (query block, key block) tile of the backward; Drow holds D for the block's rows. */
static void backward_tile(const struct sm_call *c, int i0, int mb, int j0, int nb,
                          const float *Drow, float *p, float *dp, int ld, struct key_pack *kp,
                          struct key_pack *vp)
{
    const int    d = c->d, dv = c->dv;
    const float *qi = c->q + (size_t)i0 * d, *kj = c->k + (size_t)j0 * d;
    const float *gi = c->dout + (size_t)i0 * dv;
    /* s = q k^T / sqrt(d) + rel, p = exp(s - lse): the forward's softmax, recomputed */
    const int    nfull = imin(SM_BK, c->N - j0); /* the whole key tile */
    const int    np    = (nb + 15) & ~15;
    const float *kt;
    float       *fk = NULL, *dks = NULL;
    if (c->xlam) { /* xPos: the block's scaled q (made by the caller), this tile's scaled k */
        int bq, bk, ldx;
        tile_dims(c->N, &bq, &bk, &ldx);
        float *ks = c->xs + 2 * (size_t)bq * d;
        fk = ks + (size_t)bk * d, dks = fk + (size_t)bk * d;
        xpos_rows(ks, fk, c->k, c->xlam, j0, nb, d, i0 + mb / 2, -1.0f);
        rl_tile_pack_t(kp->t, ld, ks, d, nb, d);
        kp->j0 = -1; /* the pack is this block's, not reusable */
        qi = c->xs, kj = ks, kt = kp->t;
    } else
        kt = packed(kp, c->k, d, ld, j0, nfull);
    rl_tile_gemm(mb, np, d, c->scale, qi, d, 1, kt, ld, 0.0f, p, ld);
    for (int a = 0; a < mb; a++)
        recompute_p(p + (size_t)a * ld, SM_DIAG(c->rel, c, i0 + a, j0),
                    row_cols(c->causal, i0 + a, j0, nb), nb, c->lse[i0 + a]);
    /* o = p v  =>  dv += p^T dout,  dp = dout v^T */
    rl_tile_gemm(nb, dv, mb, 1.0f, p, 1, ld, gi, dv, 1.0f, c->dvg + (size_t)j0 * dv, dv);
    rl_tile_gemm(mb, np, dv, 1.0f, gi, dv, 1, packed(vp, c->v, dv, ld, j0, nfull), ld, 0.0f, dp,
                 ld);
    /* p = softmax(s)  =>  ds = p (dp - D);  s += rel  =>  drel += ds along diagonals */
    for (int a = 0; a < mb; a++)
        softmax_grad_row(dp + (size_t)a * ld, p + (size_t)a * ld, SM_DIAG(c->drel, c, i0 + a, j0),
                         row_cols(c->causal, i0 + a, j0, nb), nb, Drow[a]);
    /* s = q k^T / sqrt(d)  =>  dq += ds k / sqrt(d),  dk += ds^T q / sqrt(d) */
    rl_tile_gemm(mb, d, nb, c->scale, dp, ld, 1, kj, d, 1.0f, c->dq + (size_t)i0 * d, d);
    if (!c->xlam) {
        rl_tile_gemm(nb, d, mb, c->scale, dp, 1, ld, qi, d, 1.0f, c->dk + (size_t)j0 * d, d);
        return;
    }
    /* xPos: ks = k fk  =>  dk += fk (ds^T qs / sqrt(d)); dq is rescaled by the caller */
    rl_tile_gemm(nb, d, mb, c->scale, dp, 1, ld, qi, d, 0.0f, dks, d);
    mul_acc(c->dk + (size_t)j0 * d, dks, fk, (size_t)nb * d);
}

/* D_m = dout_m . o_m (= sum_n p[m,n] dp[m,n], the softmax Jacobian's row term), in double */
RL_SIMD_CLONES
static void row_dots(float *D, const float *dout, const float *o, int rows, int dv)
{
    for (int a = 0; a < rows; a++) {
        const float *g = dout + (size_t)a * dv, *y = o + (size_t)a * dv;
        double       acc = 0.0;
#pragma omp simd reduction(+ : acc)
        for (int e = 0; e < dv; e++)
            acc += (double)g[e] * (double)y[e];
        D[a] = (float)acc;
    }
}

void rl_attn_softmax_backward(float *dq, float *dk, float *dvg, double *drel, const float *dout,
                              const float *o, const float *lse, const float *q, const float *k,
                              const float *v, const float *rel, int N, int d, int dv, int causal,
                              float *scratch)
{
    rl_attn_softmax_backward_xpos(dq, dk, dvg, drel, dout, o, lse, q, k, v, rel, NULL, N, d, dv,
                                  causal, scratch);
}

/* xPos: qs = q fq  =>  dq = fq (ds ks / sqrt(d)), the block's rows rescaled at its end */
static void xpos_dq(const struct sm_call *c, int i0, int mb)
{
    int bq, bk, ld;
    tile_dims(c->N, &bq, &bk, &ld);
    float       *dq = c->dq + (size_t)i0 * c->d;
    const float *fq = c->xs + (size_t)bq * c->d;
    for (size_t i = 0; i < (size_t)mb * c->d; i++)
        dq[i] *= fq[i];
}

void rl_attn_softmax_backward_xpos(float *dq, float *dk, float *dvg, double *drel,
                                   const float *dout, const float *o, const float *lse,
                                   const float *q, const float *k, const float *v, const float *rel,
                                   const float *xlam, int N, int d, int dv, int causal,
                                   float *scratch)
{
    struct sm_call c = sm_call_common(q, k, v, rel, xlam, N, d, dv, causal, scratch);
    c.dout           = dout;
    c.o              = o;
    c.lse            = lse;
    c.dq             = dq;
    c.dk             = dk;
    c.dvg            = dvg;
    c.drel           = drel;
    int bq, bk, ld;
    tile_dims(N, &bq, &bk, &ld);
    float          *p = scratch, *dp = scratch + (size_t)bq * ld, *Drow = dp + (size_t)bq * ld;
    struct key_pack kp = {Drow + 3 * (size_t)bq, -1}, vp = {kp.t + (size_t)d * ld, -1};
    memset(dq, 0, sizeof(float) * (size_t)N * d);
    memset(dk, 0, sizeof(float) * (size_t)N * d);
    memset(dvg, 0, sizeof(float) * (size_t)N * dv);
    const int qb = xlam ? xpos_rows_cap(xlam, d, query_block(N, causal)) : query_block(N, causal);
    const unsigned mode = ftz_on();
    for (int i0 = 0; i0 < N; i0 += qb) {
        const int mb = imin(qb, N - i0);
        row_dots(Drow, dout + (size_t)i0 * dv, o + (size_t)i0 * dv, mb, dv);
        if (xlam) /* q_m exp((m-c0) lam), c0 = i0 + mb/2 as in the forward */
            xpos_rows(c.xs, c.xs + (size_t)bq * d, q, xlam, i0, mb, d, i0 + mb / 2, 1.0f);
        const int jend = c.causal ? i0 + mb : N;
        for (int j0 = 0; j0 < jend; j0 += bk) {
            const int nb = imin(bk, jend - j0), g = diag_group(causal, xlam != NULL, i0, mb, j0, nb);
            for (int a0 = 0; a0 < mb; a0 += g) {
                const int rows = imin(g, mb - a0), ng = group_cols(causal, i0 + a0, rows, j0, nb);
                if (ng > 0)
                    backward_tile(&c, i0 + a0, rows, j0, ng, Drow + a0, p, dp, ld, &kp, &vp);
            }
        }
        if (xlam) xpos_dq(&c, i0, mb);
    }
    ftz_restore(mode);
}
