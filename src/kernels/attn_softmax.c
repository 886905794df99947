/* attn_softmax.c -- tiled softmax attention, one head, forward and backward.
 *
 *   s[m,n] = q_m . k_n / sqrt(d) + rel[(n-m)+N-1] + c[m] - c[n],   p = softmax_n(s),
 *   o_m = sum_n p[m,n] v_n
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
 * The forget gate's term c[m] - c[n] (c the cumulative log gate, in double) enters a query
 * block as the per-key bias (float)(c[r] - c[n]), r the block's last row: c[m] - c[r] is
 * constant along row m and cancels in the softmax, and the bias of every key a row of the
 * block sees is <= 0 and exact to float precision relative to its own size, so nearby
 * keys keep their small differences at any N.  Its gradient: d c[n] = -sum_m ds[m,n]
 * (the row sums of ds vanish).
 * The five products go through tilemm.h (a register-blocked kernel where the CPU has
 * AVX-512F or AVX2 and the widths are multiples of 16, BLIS otherwise); the elementwise passes
 * use the vectorisable exp of vexp.h.  Details, FLOP counts and timings: docs/attention.md. */
#include "config.h"
#include "attn_softmax.h"
#include "../core/tilemm.h"
#include "../core/vexp.h"
#include "rope.h"

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

/* The n rows of x (positions r0 .. r0+n-1) scaled feature-wise: f = exp(sgn (r - c0) lam),
 * xs = x f. */
RL_SIMD_CLONES
static void xpos_rows(float *xs, float *f, const float *x, const float *lam, int r0, int n, int d,
                      int c0, float sgn)
{
    for (int a = 0; a < n; a++) {
        const float  t  = sgn * (float)(r0 + a - c0);
        const float *xr = x + (size_t)a * d;
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

/* s[b] += bias[b] + colb[b] over the nc valid columns (either may be NULL). */
RL_SIMD_CLONES
static void add_biases(float *s, const float *bias, const float *colb, int nc)
{
    if (bias) {
#pragma omp simd
        for (int b = 0; b < nc; b++)
            s[b] += bias[b];
    }
    if (colb) {
#pragma omp simd
        for (int b = 0; b < nc; b++)
            s[b] += colb[b];
    }
}

/* Online softmax step for one row of a score tile: add its bias slice (rel + (j0 - i) +
 * N-1, or NULL) and the gate's per-key bias (or NULL), let the running max m and sum l
 * absorb the nc valid columns, turn s into exp(s - m_new) (0 on columns nc..nb-1,
 * masked), and return exp(m_old - m_new), the factor by which the output row accumulated
 * so far must shrink. */
RL_SIMD_CLONES
static float online_row(float *s, const float *bias, const float *colb, int nc, int nb, float *m,
                        float *l)
{
    if (nc == 0) { /* row entirely masked in this tile: m and l unchanged */
        memset(s, 0, sizeof(float) * (size_t)nb);
        return 1.0f;
    }
    const int nv  = vector_cols(nc, nb);
    float     sum = 0.0f, mx;
    add_biases(s, bias, colb, nc);
    if (rl_vexp_wide()) /* the same floats and sum, fewer operations (vexp.h) */
        sum = rl_vexpf_ftz_online(s, nc, nv, *m, &mx);
    else {
        mx = rl_maxf_inline(s, nc, *m);
        for (int b = nc; b < nv; b++)
            s[b] = -INFINITY; /* exp gives 0 */
#pragma omp simd reduction(+ : sum)
        for (int b = 0; b < nv; b++) {
            float p = rl_expf_ftz_inline(s[b] - mx);
            s[b]    = p;
            sum += p;
        }
    }
    for (int b = nv; b < nb; b++)
        s[b] = 0.0f;
    /* exp(m_old - m_new); on the row's first tile m_old = -inf, l = 0 and the output row
     * is still 0: no exp (its latency would sit on every row of a one-tile sequence) */
    float alpha = *m == -INFINITY ? 0.0f : rl_expf_ftz_inline(*m - mx);
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

/* One call: the head's operands, 1/sqrt(d), and the scratch carved up. */
struct sm_call {
    const struct rl_sm_head *h;
    float                    scale;
    int                      bq, bk, ld;
    float                   *s, *dp, *mrow, *lrow, *kt, *vt, *gb;
    float                   *qr, *kr; /* RoPE: the block's rotated queries, the tile's keys */
    int                      kr_j0;   /* the tile kr holds (-1: none) */
    float                   *xs;      /* xPos: qs, fq (bq x d), ks, fk, dks (bk x d) */
    double                  *dcol;    /* a key block's gate column sums (bk) */
};

/* n floats at *off, every piece starting on a 64-byte boundary; NULL while sizing. */
static float *carve(float *base, size_t *off, size_t n)
{
    float *r = base ? base + *off : NULL;
    *off += (n + 15) & ~(size_t)15;
    return r;
}

/* The scratch layout (base NULL: sizing only); returns the floats used. */
static size_t sm_layout(struct sm_call *c, int N, int d, int dv, int xpos, float *base)
{
    size_t off = 0;
    tile_dims(N, &c->bq, &c->bk, &c->ld);
    const size_t bq = (size_t)c->bq, bk = (size_t)c->bk, ld = (size_t)c->ld;
    c->s    = carve(base, &off, bq * ld); /* the s / p tile */
    c->dp   = carve(base, &off, bq * ld);
    c->mrow = carve(base, &off, bq); /* running max (forward) or D of a block (backward) */
    c->lrow = carve(base, &off, bq);
    c->kt   = carve(base, &off, (size_t)d * ld); /* packed k^T, v^T of a key tile */
    c->vt   = carve(base, &off, (size_t)dv * ld);
    c->gb   = carve(base, &off, ld); /* the gate's per-key bias of a tile */
    c->qr   = carve(base, &off, bq * d);
    c->kr   = carve(base, &off, bk * d);
    c->xs   = xpos ? carve(base, &off, 2 * bq * d + 3 * bk * d) : NULL;
    c->dcol = (double *)carve(base, &off, 2 * bk);
    return off;
}

size_t rl_attn_softmax_scratch_floats(int N, int d, int dv, int xpos)
{
    struct sm_call c;
    return sm_layout(&c, N, d, dv, xpos, NULL);
}

static struct sm_call sm_call_make(const struct rl_sm_head *h, float *scratch)
{
    struct sm_call c = {.h = h, .scale = (float)(1.0 / sqrt((double)h->d)), .kr_j0 = -1};
    sm_layout(&c, h->N, h->d, h->dv, h->xlam != NULL, scratch);
    return c;
}

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

/* rel (or drel) slice seen by query i in a key tile starting at j0: entry b is r = j0+b-i */
#define SM_DIAG(base, c, i, j0) ((base) ? (base) + ((j0) - (i)) + ((c)->h->N - 1) : NULL)

/* The gate's bias of key tile [j0, j0+nb) for the query block whose last row is r:
 * gb[b] = c[r] - c[j0+b] (<= 0 for the keys the block sees), or NULL without a gate. */
static const float *gate_cols(const struct sm_call *c, int r, int j0, int nb)
{
    const double *cum = c->h->cum;
    if (!cum) return NULL;
    for (int b = 0; b < nb; b++)
        c->gb[b] = (float)(cum[r] - cum[j0 + b]);
    return c->gb;
}

/* Query rows per block: query_block's, capped for xPos. */
static int block_height(const struct rl_sm_head *h)
{
    int qb = query_block(h->N, h->causal);
    return h->xlam ? xpos_rows_cap(h->xlam, h->d, qb) : qb;
}

int rl_attn_softmax_key_blocks(int N)
{
    int bq, bk, ld;
    tile_dims(N, &bq, &bk, &ld);
    return (N + bk - 1) / bk;
}

int rl_attn_softmax_blocks(int N, int causal, const float *xlam, int d)
{
    struct rl_sm_head h  = {.N = N, .causal = causal, .xlam = xlam, .d = d};
    int               qb = block_height(&h);
    return (N + qb - 1) / qb;
}

void rl_attn_softmax_block_rows(int N, int causal, const float *xlam, int d, int b, int *i0,
                                int *mb)
{
    struct rl_sm_head h  = {.N = N, .causal = causal, .xlam = xlam, .d = d};
    int               qb = block_height(&h);
    *i0                  = b * qb;
    *mb                  = imin(qb, N - *i0);
}

size_t rl_attn_softmax_drel_part(int N, int causal, const float *xlam, int d, int b, size_t *len)
{
    const int nb  = rl_attn_softmax_blocks(N, causal, xlam, d);
    size_t    off = 0;
    for (int c = 0; c <= b && c < nb; c++) {
        int i0, mb;
        rl_attn_softmax_block_rows(N, causal, xlam, d, c, &i0, &mb);
        *len = (size_t)(causal ? i0 + mb : N) + (size_t)mb - 1;
        if (c < b) off += *len;
    }
    if (b >= nb) *len = 0;
    return off;
}

/* ---- prepared keys ---- */

size_t rl_attn_softmax_prepared_floats(int N, int d, int dv, int xpos, int rope)
{
    /* one key tile (N <= 256): the whole-head backward packs it once per head anyway, and
     * reading it from the buffers measured 5 % slower there (forward + backward, causal
     * N = 256, 64 heads); the forward's four query blocks repack it from cache for free */
    if (xpos || rl_attn_softmax_key_blocks(N) < 2) return 0;
    int bq, bk, ld;
    tile_dims(N, &bq, &bk, &ld);
    return (rope ? 2 * (size_t)N * d : 0) +
           (size_t)rl_attn_softmax_key_blocks(N) * ld * (size_t)(d + dv);
}

/* The parts of a head's prepared keys: rotated q and k (RoPE), packed k^T and v^T tiles. */
struct sm_prep {
    float *qr, *kr, *kt, *vt;
};

static struct sm_prep prep_parts(float *prep, const struct rl_sm_head *h)
{
    int bq, bk, ld;
    tile_dims(h->N, &bq, &bk, &ld);
    const size_t   nd = (size_t)h->N * h->d;
    struct sm_prep p  = {NULL, NULL, prep, NULL};
    if (h->rope) p.qr = prep, p.kr = prep + nd, p.kt = prep + 2 * nd;
    p.vt = p.kt + (size_t)rl_attn_softmax_key_blocks(h->N) * ld * h->d;
    return p;
}

/* A head's prepared keys, to read (the one place their pointer loses its const). */
static struct sm_prep head_prep(const struct rl_sm_head *h)
{
    return prep_parts((float *)h->prep, h);
}

/* The packed v^T of the key tile at j0: prepared, or packed into vp and kept while the
 * tile is the same. */
static const float *value_tile(struct sm_call *c, struct key_pack *vp, int j0)
{
    const struct rl_sm_head *h = c->h;
    if (h->prep) return head_prep(h).vt + (size_t)(j0 / c->bk) * h->dv * c->ld;
    return packed(vp, h->v, h->dv, c->ld, j0, imin(c->bk, h->N - j0));
}

void rl_attn_softmax_prepare(float *prep, const struct rl_sm_head *h, int t, int values)
{
    int bq, bk, ld;
    tile_dims(h->N, &bq, &bk, &ld);
    const int            d = h->d, dv = h->dv, j0 = t * bk, n = imin(bk, h->N - j0);
    const struct sm_prep p    = prep_parts(prep, h);
    const float         *k    = h->k + (size_t)j0 * d;
    const unsigned       mode = ftz_on(); /* the rotations as the kernels make them */
    if (h->rope) {
        /* the queries by query block, as block_queries rotates them (each block lies in
         * one tile): rl_rope_rotate's last bit may depend on how rows are grouped */
        const int nb = rl_attn_softmax_blocks(h->N, h->causal, NULL, d);
        for (int b = 0; b < nb; b++) {
            int i0, mb;
            rl_attn_softmax_block_rows(h->N, h->causal, NULL, d, b, &i0, &mb);
            if (i0 >= j0 && i0 < j0 + n)
                rl_rope_rotate(h->rope, p.qr + (size_t)i0 * d, d, h->q + (size_t)i0 * d, d, mb, i0,
                               0);
        }
        rl_rope_rotate(h->rope, p.kr + (size_t)j0 * d, d, k, d, n, j0, 0);
        k = p.kr + (size_t)j0 * d;
    }
    rl_tile_pack_t(p.kt + (size_t)t * d * ld, ld, k, d, n, d);
    if (values) rl_tile_pack_t(p.vt + (size_t)t * dv * ld, ld, h->v + (size_t)j0 * dv, dv, n, dv);
    ftz_restore(mode);
}

/* Key rows j0 .. j0+n-1 as the scores use them: k, or R_n k_n (prepared, or rotated into
 * kr and kept while the tile is the same). */
static const float *key_rows(struct sm_call *c, int j0, int n)
{
    const struct rl_sm_head *h = c->h;
    if (!h->rope) return h->k + (size_t)j0 * h->d;
    if (h->prep) return head_prep(h).kr + (size_t)j0 * h->d;
    if (c->kr_j0 != j0) {
        rl_rope_rotate(h->rope, c->kr, h->d, h->k + (size_t)j0 * h->d, h->d, n, j0, 0);
        c->kr_j0 = j0;
    }
    return c->kr;
}

/* The key tile's transposed keys for a query block: packed (rotated) k of the whole tile,
 * or (xPos) k_n exp(-(n-c0) lam) of its nb rows for the block's centre c0, packed afresh;
 * *rows_out gets the rows the products use (scaled for xPos), *fk_out xPos's factors. */
static const float *key_tile(struct sm_call *c, struct key_pack *kp, int c0, int j0, int nb,
                             const float **rows_out, float **fk_out)
{
    const struct rl_sm_head *h = c->h;
    const int                n = h->xlam ? nb : imin(c->bk, h->N - j0);
    const float             *k = key_rows(c, j0, n);
    if (rows_out) *rows_out = k;
    if (!h->xlam && h->prep) return head_prep(h).kt + (size_t)(j0 / c->bk) * h->d * c->ld;
    if (!h->xlam) {
        if (kp->j0 != j0) rl_tile_pack_t(kp->t, c->ld, k, h->d, n, h->d), kp->j0 = j0;
        return kp->t;
    }
    float *ks = c->xs + 2 * (size_t)c->bq * h->d, *fk = ks + (size_t)c->bk * h->d;
    xpos_rows(ks, fk, k, h->xlam, j0, nb, h->d, c0, -1.0f);
    rl_tile_pack_t(kp->t, c->ld, ks, h->d, nb, h->d);
    kp->j0   = -1;                      /* the pack is this block's, not reusable */
    c->kr_j0 = h->rope ? -1 : c->kr_j0; /* nb rows only: not the whole tile */
    if (rows_out) *rows_out = ks;
    if (fk_out) *fk_out = fk;
    return kp->t;
}

/* The block's queries: q, R_m q_m, and for xPos times exp((m-c0) lam), c0 = i0 + mb/2. */
static const float *block_queries(const struct sm_call *c, int i0, int mb)
{
    const struct rl_sm_head *h = c->h;
    const float             *q = h->q + (size_t)i0 * h->d;
    if (h->rope && h->prep)
        q = head_prep(h).qr + (size_t)i0 * h->d;
    else if (h->rope)
        rl_rope_rotate(h->rope, c->qr, h->d, q, h->d, mb, i0, 0), q = c->qr;
    if (!h->xlam) return q;
    float *qs = c->xs, *fq = qs + (size_t)c->bq * h->d;
    xpos_rows(qs, fq, q, h->xlam, i0, mb, h->d, i0 + mb / 2, 1.0f);
    return qs;
}

/* Back from the rotated frame: rows r0 .. r0+n-1 of dx get R_m^T (d/dx of R_m x). */
static void unrotate(const struct sm_call *c, float *dx, int r0, int n)
{
    const struct rl_sm_head *h = c->h;
    if (h->rope)
        rl_rope_rotate(h->rope, dx + (size_t)r0 * h->d, h->d, dx + (size_t)r0 * h->d, h->d, n, r0,
                       1);
}

/* One block of query rows [i0, i0+mb): o rows accumulate p v over the key tiles. */
static void forward_block(struct sm_call *c, float *o, float *lse, int i0, int mb,
                          struct key_pack *kp)
{
    const struct rl_sm_head *h  = c->h;
    float                   *oi = o + (size_t)i0 * h->dv;
    memset(oi, 0, sizeof(float) * (size_t)mb * h->dv);
    for (int a = 0; a < mb; a++)
        c->mrow[a] = -INFINITY, c->lrow[a] = 0.0f;
    const int    jend = h->causal ? i0 + mb : h->N; /* causal: tiles right of the block skipped */
    const float *qi   = block_queries(c, i0, mb);
    for (int j0 = 0; j0 < jend; j0 += c->bk) {
        const int nb = imin(c->bk, jend - j0); /* causal: keys past the block's last row unused */
        const float *kt = key_tile(c, kp, i0 + mb / 2, j0, nb, NULL, NULL);
        const float *gb = gate_cols(c, i0 + mb - 1, j0, nb);
        const int    g  = diag_group(h->causal, h->xlam != NULL, i0, mb, j0, nb);
        for (int a0 = 0; a0 < mb; a0 += g) {
            const int rows = imin(g, mb - a0), ng = group_cols(h->causal, i0 + a0, rows, j0, nb);
            if (ng <= 0) continue; /* rows left of the tile: their state is unchanged */
            float *sa = c->s + (size_t)a0 * c->ld, *oa = oi + (size_t)a0 * h->dv;
            /* s = q k^T / sqrt(d) */
            rl_tile_gemm(rows, (ng + 15) & ~15, h->d, c->scale, qi + (size_t)a0 * h->d, h->d, 1, kt,
                         c->ld, 0.0f, sa, c->ld);
            for (int a = a0; a < a0 + rows; a++) {
                float alpha =
                    online_row(c->s + (size_t)a * c->ld, SM_DIAG(h->rel, c, i0 + a, j0), gb,
                               row_cols(h->causal, i0 + a, j0, ng), ng, c->mrow + a, c->lrow + a);
                if (alpha != 1.0f) scale_row(oi + (size_t)a * h->dv, h->dv, alpha);
            }
            /* o += p v */
            rl_tile_gemm(rows, h->dv, ng, 1.0f, sa, c->ld, 1, h->v + (size_t)j0 * h->dv, h->dv,
                         1.0f, oa, h->dv);
        }
    }
    for (int a = 0; a < mb; a++) { /* o = acc / l, lse = m + log l (l >= 1: the max term) */
        scale_row(oi + (size_t)a * h->dv, h->dv, 1.0f / c->lrow[a]);
        lse[i0 + a] = c->mrow[a] + logf(c->lrow[a]);
    }
}

void rl_attn_softmax_forward_block(float *o, float *lse, const struct rl_sm_head *h, int b,
                                   float *scratch)
{
    struct sm_call  c  = sm_call_make(h, scratch);
    struct key_pack kp = {c.kt, -1};
    int             i0, mb;
    rl_attn_softmax_block_rows(h->N, h->causal, h->xlam, h->d, b, &i0, &mb);
    const unsigned mode = ftz_on();
    forward_block(&c, o, lse, i0, mb, &kp);
    ftz_restore(mode);
}

void rl_attn_softmax_forward(float *o, float *lse, const struct rl_sm_head *h, float *scratch)
{
    struct sm_call  c    = sm_call_make(h, scratch);
    struct key_pack kp   = {c.kt, -1}; /* kept across blocks: at N <= BK one pack serves all */
    const int       qb   = block_height(h);
    const unsigned  mode = ftz_on();
    for (int i0 = 0; i0 < h->N; i0 += qb)
        forward_block(&c, o, lse, i0, imin(qb, h->N - i0), &kp);
    ftz_restore(mode);
}

/* One row of a tile's backward: p = exp(s + rel + gate - lse_i) (the forward's softmax,
 * recomputed from the scores in p) and ds = p (dp - D_i), written over dp, on the valid
 * columns; both 0 past them.  drel (its slice for this row, or NULL) gathers ds along the
 * diagonal (forward: s[m,n] += rel[(n-m)+N-1]); dcol (the tile's keys' slice of dcum, or
 * NULL) takes -ds (forward: s[m,n] -= c[n]). */
RL_SIMD_CLONES
static void softmax_grad_row(float *p, float *dp, const float *bias, const float *colb,
                             double *drel, double *dcol, int nc, int nb, float lse_i, float D_i)
{
    const int nv = vector_cols(nc, nb);
    add_biases(p, bias, colb, nc);
    for (int b = nc; b < nv; b++)
        p[b] = -INFINITY; /* exp gives 0, and ds 0 */
    if (rl_vexp_wide())   /* the same floats in one pass (vexp.h) */
        rl_vexpf_ftz_grad(p, dp, nv, lse_i, D_i);
    else {
#pragma omp simd
        for (int b = 0; b < nv; b++)
            p[b] = rl_expf_ftz_inline(p[b] - lse_i);
#pragma omp simd
        for (int b = 0; b < nv; b++)
            dp[b] = p[b] * (dp[b] - D_i);
    }
    for (int b = nv; b < nb; b++)
        p[b] = 0.0f, dp[b] = 0.0f;
    if (drel) {
#pragma omp simd
        for (int b = 0; b < nc; b++)
            drel[b] += (double)dp[b];
    }
    if (dcol) {
#pragma omp simd
        for (int b = 0; b < nc; b++)
            dcol[b] -= (double)dp[b];
    }
}

/* A backward pass beyond its head: what it reads (dout, the forward's lse), what its tiles
 * write (the query side: dq rows; the key side: dk, dv rows, the gate's column sums dcum,
 * whose entry 0 is key dcum0; drel; any may be NULL) and its packs of key and value tiles. */
struct sm_bwd {
    const float    *dout, *lse;
    float          *dq, *dk, *dv;
    double         *drel, *dcum;
    int             dcum0, dlag; /* dlag: drel's index of lag 0 */
    struct key_pack kp, vp;
};

/* A query block: rows [i0, i0+mb), its queries q (scaled for xPos) and D of its rows
 * (D[0] is row i0's). */
struct sm_qblock {
    const float *q, *D;
    int          i0, mb;
};

/* Rows [i0, i0+mb) of query block qb against key columns [j0, j0+nb). */
static void backward_tile(struct sm_call *c, struct sm_bwd *w, const struct sm_qblock *qb, int i0,
                          int mb, int j0, int nb)
{
    const struct rl_sm_head *h = c->h;
    const int                d = h->d, dv = h->dv, ld = c->ld, np = (nb + 15) & ~15;
    const float *qi = qb->q + (size_t)(i0 - qb->i0) * d, *gi = w->dout + (size_t)i0 * dv;
    const float *kj = NULL, *D = qb->D + (i0 - qb->i0);
    float       *fk = NULL, *p = c->s, *dp = c->dp;
    const float *kt = key_tile(c, &w->kp, qb->i0 + qb->mb / 2, j0, nb, &kj, &fk);
    const float *gb = gate_cols(c, qb->i0 + qb->mb - 1, j0, nb);
    /* s = q k^T / sqrt(d) + rel + gate; o = p v  =>  dp = dout v^T */
    rl_tile_gemm(mb, np, d, c->scale, qi, d, 1, kt, ld, 0.0f, p, ld);
    rl_tile_gemm(mb, np, dv, 1.0f, gi, dv, 1, value_tile(c, &w->vp, j0), ld, 0.0f, dp, ld);
    /* p = exp(s - lse), the forward's softmax recomputed;  p = softmax(s)  =>
     * ds = p (dp - D);  s += rel - c[n]  =>  drel += ds, dcum -= ds */
    for (int a = 0; a < mb; a++)
        softmax_grad_row(p + (size_t)a * ld, dp + (size_t)a * ld, SM_DIAG(h->rel, c, i0 + a, j0),
                         gb, w->drel ? w->drel + (j0 - (i0 + a)) + w->dlag : NULL,
                         w->dcum ? w->dcum + (j0 - w->dcum0) : NULL,
                         row_cols(h->causal, i0 + a, j0, nb), nb, w->lse[i0 + a], D[a]);
    /* o = p v  =>  dv += p^T dout */
    if (w->dv) rl_tile_gemm(nb, dv, mb, 1.0f, p, 1, ld, gi, dv, 1.0f, w->dv + (size_t)j0 * dv, dv);
    /* s = q k^T / sqrt(d)  =>  dq += ds k / sqrt(d),  dk += ds^T q / sqrt(d) */
    if (w->dq) rl_tile_gemm(mb, d, nb, c->scale, dp, ld, 1, kj, d, 1.0f, w->dq + (size_t)i0 * d, d);
    if (!w->dk) return;
    if (!h->xlam) {
        rl_tile_gemm(nb, d, mb, c->scale, dp, 1, ld, qi, d, 1.0f, w->dk + (size_t)j0 * d, d);
        return;
    }
    /* xPos: ks = k fk  =>  dk += fk (ds^T qs / sqrt(d)); dq is rescaled at the block's end */
    float *dks = fk + (size_t)c->bk * d;
    rl_tile_gemm(nb, d, mb, c->scale, dp, 1, ld, qi, d, 0.0f, dks, d);
    mul_acc(w->dk + (size_t)j0 * d, dks, fk, (size_t)nb * d);
}

/* Query block qb against key tile [j0, ...): its row groups in order. */
static void backward_block_tile(struct sm_call *c, struct sm_bwd *w, const struct sm_qblock *qb,
                                int j0)
{
    const struct rl_sm_head *h  = c->h;
    const int                i0 = qb->i0, mb = qb->mb, jend = h->causal ? i0 + mb : h->N;
    if (j0 >= jend) return;
    const int nb = imin(c->bk, jend - j0),
              g  = diag_group(h->causal, h->xlam != NULL, i0, mb, j0, nb);
    for (int a0 = 0; a0 < mb; a0 += g) {
        const int rows = imin(g, mb - a0), ng = group_cols(h->causal, i0 + a0, rows, j0, nb);
        if (ng > 0) backward_tile(c, w, qb, i0 + a0, rows, j0, ng);
    }
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

void rl_attn_softmax_row_dots(float *Drow, const float *dout, const float *o,
                              const struct rl_sm_head *h, int b)
{
    int i0, mb;
    rl_attn_softmax_block_rows(h->N, h->causal, h->xlam, h->d, b, &i0, &mb);
    row_dots(Drow + i0, dout + (size_t)i0 * h->dv, o + (size_t)i0 * h->dv, mb, h->dv);
}

/* xPos: qs = q fq  =>  dq = fq (ds ks / sqrt(d)), the block's rows rescaled at its end */
static void xpos_dq(const struct sm_call *c, float *dq, int i0, int mb)
{
    const int    d  = c->h->d;
    const float *fq = c->xs + (size_t)c->bq * d;
    float       *r  = dq + (size_t)i0 * d;
    for (size_t i = 0; i < (size_t)mb * d; i++)
        r[i] *= fq[i];
}

/* Query block b's T5 part (zeroed) as w's drel, when the head has parts. */
static void drel_part_of(struct sm_bwd *w, double *parts, const struct rl_sm_head *h, int b,
                         const struct sm_qblock *qb)
{
    size_t len;
    if (!parts) return;
    w->drel = parts + rl_attn_softmax_drel_part(h->N, h->causal, h->xlam, h->d, b, &len);
    w->dlag = qb->i0 + qb->mb - 1;
    memset(w->drel, 0, len * sizeof(double));
}

void rl_attn_softmax_backward_q(float *dq, double *drel_parts, const float *dout, const float *lse,
                                const float *Drow, const struct rl_sm_head *h, int b,
                                float *scratch)
{
    struct sm_call   c = sm_call_make(h, scratch);
    struct sm_bwd    w = {.dout = dout, .lse = lse, .dq = dq, .kp = {c.kt, -1}, .vp = {c.vt, -1}};
    struct sm_qblock qb;
    rl_attn_softmax_block_rows(h->N, h->causal, h->xlam, h->d, b, &qb.i0, &qb.mb);
    drel_part_of(&w, drel_parts, h, b, &qb);
    memset(dq + (size_t)qb.i0 * h->d, 0, sizeof(float) * (size_t)qb.mb * h->d);
    const unsigned mode = ftz_on();
    qb.q = block_queries(&c, qb.i0, qb.mb), qb.D = Drow + qb.i0;
    for (int j0 = 0; j0 < h->N; j0 += c.bk)
        backward_block_tile(&c, &w, &qb, j0);
    if (h->xlam) xpos_dq(&c, dq, qb.i0, qb.mb);
    unrotate(&c, dq, qb.i0, qb.mb);
    ftz_restore(mode);
}

void rl_attn_softmax_backward_kv(float *dk, float *dv, float *dc, const float *dout,
                                 const float *lse, const float *Drow, const struct rl_sm_head *h,
                                 int b, float *scratch)
{
    struct sm_call c = sm_call_make(h, scratch);
    struct sm_bwd  w = {
         .dout = dout, .lse = lse, .dk = dk, .dv = dv, .kp = {c.kt, -1}, .vp = {c.vt, -1}};
    const int j0 = b * c.bk, nb = imin(c.bk, h->N - j0), qh = block_height(h);
    memset(dk + (size_t)j0 * h->d, 0, sizeof(float) * (size_t)nb * h->d);
    memset(dv + (size_t)j0 * h->dv, 0, sizeof(float) * (size_t)nb * h->dv);
    if (h->cum && dc) { /* the block's column sums in double, then dc */
        w.dcum = c.dcol, w.dcum0 = j0;
        memset(w.dcum, 0, sizeof(double) * (size_t)nb);
    }
    const unsigned mode = ftz_on();
    for (int i0 = h->causal ? j0 / qh * qh : 0; i0 < h->N; i0 += qh) {
        const int              mb = imin(qh, h->N - i0);
        const struct sm_qblock qb = {block_queries(&c, i0, mb), Drow + i0, i0, mb};
        backward_block_tile(&c, &w, &qb, j0);
    }
    unrotate(&c, dk, j0, nb);
    if (w.dcum)
        for (int n = 0; n < nb; n++)
            dc[j0 + n] = (float)w.dcum[n];
    ftz_restore(mode);
}

void rl_attn_softmax_backward(const struct rl_sm_grads *g, const float *dout, const float *o,
                              const float *lse, const struct rl_sm_head *h, float *scratch)
{
    struct sm_call c  = sm_call_make(h, scratch);
    struct sm_bwd  w  = {.dout = dout,
                         .lse  = lse,
                         .dq   = g->dq,
                         .dk   = g->dk,
                         .dv   = g->dv,
                         .drel = g->drel,
                         .dcum = h->cum ? g->dcum : NULL,
                         .dlag = h->N - 1,
                         .kp   = {c.kt, -1},
                         .vp   = {c.vt, -1}};
    const int      qh = block_height(h), N = h->N;
    float         *Drow = c.mrow; /* bq floats: this block's D, indexed from its first row */
    memset(g->dq, 0, sizeof(float) * (size_t)N * h->d);
    memset(g->dk, 0, sizeof(float) * (size_t)N * h->d);
    memset(g->dv, 0, sizeof(float) * (size_t)N * h->dv);
    if (w.dcum) memset(w.dcum, 0, sizeof(double) * (size_t)N);
    const unsigned mode = ftz_on();
    for (int i0 = 0; i0 < N; i0 += qh) {
        const int mb = imin(qh, N - i0);
        row_dots(Drow, dout + (size_t)i0 * h->dv, o + (size_t)i0 * h->dv, mb, h->dv);
        const struct sm_qblock qb = {block_queries(&c, i0, mb), Drow, i0, mb};
        drel_part_of(&w, g->drel_parts, h, i0 / qh, &qb);
        for (int j0 = 0; j0 < N; j0 += c.bk)
            backward_block_tile(&c, &w, &qb, j0);
        if (h->xlam) xpos_dq(&c, g->dq, i0, mb);
        unrotate(&c, g->dq, i0, mb);
    }
    unrotate(&c, g->dk, 0, N);
    ftz_restore(mode);
}
