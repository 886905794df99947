/* attn_linear_quad.c -- linear attention with T5 and the forget gate: quadratic tiles, a
 * head at a time (attn_linear_plan.h) or in (head, block) pieces (attn_linear.h).
 *
 * With a learned relative bias the weights e^{rel(n-m) + c_m - c_n} have no recurrence, so
 * every (query block, key block <= it) tile is formed: P = (A_i C_j^T) * W, num_i += P V_j,
 * den_i += rowsum P (T5 has no RoPE: B = A, E = C).  Backward: dP = dnum_i V_j^T + dden_i,
 * G = dP * W gives dA_i += G C_j, dC_j += G^T A_i; dV_j += P^T dnum_i; P * dP gathers into
 * drel along the diagonals and into dc (+ row sums, - column sums).  O(N^2 D).
 *
 * In pieces, a query block's forward rows are its tiles, as in the head's loop (the same
 * bits).  The backward runs each tile twice: once in its query block's piece (dA_i, dc's
 * row share, drel into the block's own part) and once in its key block's (dV_j, dC_j, dc's
 * column share).  Every sum keeps the head loop's order except dc (the two shares apart,
 * then added) and drel (a part per query block, added in block order). */
#include "config.h"
#include "attn.h"
#include "attn_linear.h"
#include "attn_linear_plan.h"
#include "attn_linear_impl.h"
#include "../core/tilemm.h"
#include "../core/vexp.h"

#include <stddef.h>
#include <string.h>

/* The features of every row, in order (Shen's prefix normaliser advances), and Shen's Z at
 * each block start for the backward's chain rule. */
static void quad_features(struct lin_plan *p, const float *q, const float *k)
{
    const size_t D = (size_t)p->D;
    memset(p->Zrun, 0, (size_t)p->d * sizeof(double));
    for (int b = 0, t0 = 0; t0 < p->N; b++, t0 += RL_LIN_BLOCK) {
        const int l = rl_lin_block_rows(p->N, t0);
        memcpy(p->ck + (size_t)b * p->ck_stride, p->Zrun, (size_t)p->d * sizeof(double));
        rl_lin_build_block(p, q, k, t0, l, SIDE_K | SIDE_Q);
        memcpy(p->Af + (size_t)t0 * D, p->A, (size_t)l * D * sizeof(float));
        memcpy(p->Cf + (size_t)t0 * D, p->C, (size_t)l * D * sizeof(float));
    }
}

/* Row m of a tile: w[b] = e^{rel(n-m) + c_m - c_n} for the lj keys n = j0 + b (at most
 * nb of them are n <= m; the rest 0), s[b] *= w[b].  relm: rel(j0 - m), cn: c_{j0}.  The
 * exponent's c difference is taken in double (c grows with N), the exp by rl_expf_inline:
 * one SIMD pass instead of a libm call per pair (and its slow path where strong decays
 * underflow). */
RL_SIMD_CLONES
static void tile_weights_row(float *restrict w, float *restrict s, const float *restrict relm,
                             const double *restrict cn, double cm, int nb, int lj)
{
#pragma omp simd
    for (int b = 0; b < nb; b++) {
        w[b] = rl_expf_inline(relm[b] + (float)(cm - cn[b]));
        s[b] *= w[b];
    }
    for (int b = nb; b < lj; b++)
        w[b] = s[b] = 0.0f;
}

/* e[t] = e^{x[t] + y} (t < n), or e^{y - c[t]} with c given: a tile's factors */
RL_SIMD_CLONES
static void tile_factors(float *restrict e, const float *restrict x, const double *restrict c,
                         double y, int n)
{
    if (c) {
#pragma omp simd
        for (int t = 0; t < n; t++)
            e[t] = rl_expf_inline((float)(y - c[t]));
    } else {
#pragma omp simd
        for (int t = 0; t < n; t++)
            e[t] = rl_expf_inline(x[t] + (float)y);
    }
}

/* Row of a tile below the diagonal: w[b] = er[b] em en[b], s[b] *= w[b] */
RL_SIMD_CLONES
static void tile_product_row(float *restrict w, float *restrict s, const float *restrict er,
                             float em, const float *restrict en, int lj)
{
#pragma omp simd
    for (int b = 0; b < lj; b++) {
        w[b] = er[b] * em * en[b];
        s[b] *= w[b];
    }
}

/* W[a][b] = e^{rel(n-m) + c_m - c_n} for n = j0+b <= m = i0+a, else 0; P = S * W.  Below
 * the diagonal (j0 < i0) every key precedes every row: with r the tile's last key,
 * e^{c_m - c_r} and e^{c_r - c_n} are both at most 1 (the log gates are <= 0), so W is
 * the product of e^{rel} by lag (li + lj - 1 of them), e^{c_m - c_r} by row and
 * e^{c_r - c_n} by key: li + lj exps more instead of li lj (a product that underflows
 * does so where W itself would).  The diagonal tile, whose keys may follow a row, takes
 * each pair's exp. */
static void quad_tile(struct lin_plan *p, int i0, int li, int j0, int lj)
{
    const int N = p->N;
    rl_tile_gemm(li, lj, p->D, 1.0f, p->Af + (size_t)i0 * p->D, p->D, 1, p->tP, lj, 0.0f, p->tS,
                 lj); /* A_i C_j^T, C_j^T packed by the caller */
    if (j0 < i0) {
        const int     r  = j0 + lj - 1;
        float        *er = p->te, *em = er + li + lj - 1, *en = em + li;
        const double *c = p->cum;
        tile_factors(er, p->rel + j0 - (i0 + li - 1) + N - 1, NULL, 0.0, li + lj - 1);
        for (int a = 0; a < li; a++)
            em[a] = rl_expf_inline((float)(c[i0 + a] - c[r]));
        tile_factors(en, NULL, c + j0, c[r], lj);
        for (int a = 0; a < li; a++)
            tile_product_row(p->tW + (size_t)a * lj, p->tS + (size_t)a * lj, er + li - 1 - a, em[a],
                             en, lj);
        return;
    }
    for (int a = 0; a < li; a++) {
        const int m = i0 + a, nb = m - j0 + 1 < lj ? m - j0 + 1 : lj;
        tile_weights_row(p->tW + (size_t)a * lj, p->tS + (size_t)a * lj, p->rel + j0 - m + N - 1,
                         p->cum + j0, p->cum[m], nb, lj);
    }
}

/* sum x[0..n) in double */
RL_SIMD_CLONES
static double row_sum(const float *restrict x, int n)
{
    double t = 0.0;
#pragma omp simd reduction(+ : t)
    for (int b = 0; b < n; b++)
        t += (double)x[b];
    return t;
}

/* Key block j0's C_j^T (and, with v, V_j^T) packed into p->tP for rl_tile_gemm. */
static void pack_keys(struct lin_plan *p, const float *v, int j0, int lj)
{
    rl_tile_pack_t(p->tP, lj, p->Cf + (size_t)j0 * p->D, p->D, lj, p->D);
    if (v) rl_tile_pack_t(p->tP + (size_t)p->D * lj, lj, v + (size_t)j0 * p->dv, p->dv, lj, p->dv);
}

/* The rows of query block i0 (out, den; returns the rows whose denominator <= eps). */
static long forward_block(struct lin_plan *p, float *out, float *den, const float *v, int i0,
                          float eps)
{
    const int li = rl_lin_block_rows(p->N, i0), dv = p->dv;
    float    *o   = out + (size_t)i0 * dv;
    long      bad = 0;
    memset(p->dden, 0, (size_t)li * sizeof(double)); /* the rows' denominators, in double */
    for (int j0 = 0; j0 <= i0; j0 += RL_LIN_BLOCK) {
        const int lj = rl_lin_block_rows(p->N, j0);
        pack_keys(p, NULL, j0, lj);
        quad_tile(p, i0, li, j0, lj);
        for (int a = 0; a < li; a++)
            p->dden[a] += row_sum(p->tS + (size_t)a * lj, lj);
        rl_tile_gemm(li, dv, lj, 1.0f, p->tS, lj, 1, v + (size_t)j0 * dv, dv, j0 ? 1.0f : 0.0f, o,
                     dv);
    }
    for (int a = 0; a < li; a++) {
        bad += p->dden[a] <= (double)eps;
        double dd   = p->dden[a] + (double)eps;
        den[i0 + a] = (float)dd;
        for (int j = 0; j < dv; j++)
            o[(size_t)a * dv + j] = (float)((double)o[(size_t)a * dv + j] / dd);
    }
    return bad;
}

void rl_lin_forward_quad(struct lin_plan *p, float *out, float *den, long *bad, const float *q,
                         const float *k, const float *v, float eps)
{
    quad_features(p, q, k);
    for (int i0 = 0; i0 < p->N; i0 += RL_LIN_BLOCK)
        *bad += forward_block(p, out, den, v, i0, eps);
}

/* Row m of a tile's backward over its nb pairs n <= m (the rest of G's row is 0): with
 * dP = dp + dden_m, P dP goes into drel (relm: drel at rel(j0 - m), or NULL) and into dc
 * (+ at m: returned; - at each n: cn, dc at j0, or NULL); dp becomes G = dP W.  Inlined
 * into grads_row with constant has_rel, has_cn. */
static RL_INLINE double grads_row_(float *restrict dp, const float *restrict pp,
                                   const float *restrict w, double *restrict relm,
                                   double *restrict cn, double dden, int nb, int lj, int has_rel,
                                   int has_cn)
{
    double dcm = 0.0;
#pragma omp simd reduction(+ : dcm)
    for (int b = 0; b < nb; b++) {
        const double dpb = (double)dp[b] + dden, pd = (double)pp[b] * dpb;
        if (has_rel) relm[b] += pd;
        if (has_cn) cn[b] -= pd;
        dcm += pd;
        dp[b] = (float)(dpb * (double)w[b]);
    }
    for (int b = nb; b < lj; b++)
        dp[b] = 0.0f;
    return dcm;
}

RL_SIMD_CLONES
static double grads_row(float *restrict dp, const float *restrict pp, const float *restrict w,
                        double *restrict relm, double *restrict cn, double dden, int nb, int lj)
{
    if (relm && cn) return grads_row_(dp, pp, w, relm, cn, dden, nb, lj, 1, 1);
    if (cn) return grads_row_(dp, pp, w, relm, cn, dden, nb, lj, 0, 1);
    if (relm) return grads_row_(dp, pp, w, relm, cn, dden, nb, lj, 1, 0);
    return grads_row_(dp, pp, w, relm, cn, dden, nb, lj, 0, 0);
}

/* Where a tile's backward goes, NULL where it is not formed: dV_j += P^T dnum_i (dv),
 * dA_i += G C_j, dC_j += G^T A_i (the head's rows), dc's + share at the rows m (dcq) and
 * - share at the keys n (dck), P dP into drel at rel + n - m + roff. */
struct tile_sinks {
    float    *dv, *dA, *dC;
    double   *dcq, *dck, *rel;
    ptrdiff_t roff;
};

/* One tile's backward, with query block i0's dnum and dden (li rows); C_j^T and V_j^T
 * packed (pack_keys). */
static void quad_tile_backward(struct lin_plan *p, const struct tile_sinks *s, const float *dnum,
                               const double *dden, int i0, int li, int j0, int lj)
{
    const int dv = p->dv, D = p->D;
    quad_tile(p, i0, li, j0, lj);
    rl_tile_gemm(li, lj, dv, 1.0f, dnum, dv, 1, p->tP + (size_t)D * lj, lj, 0.0f, p->tD,
                 lj); /* dnum_i V_j^T */
    if (s->dv)        /* dV_j += P^T dnum_i */
        rl_tile_gemm(lj, dv, li, 1.0f, p->tS, 1, lj, dnum, dv, 1.0f, s->dv + (size_t)j0 * dv, dv);
    for (int a = 0; a < li; a++) {
        const int m = i0 + a, nb = m - j0 + 1 < lj ? m - j0 + 1 : lj;
        double    dcm = grads_row(p->tD + (size_t)a * lj, p->tS + (size_t)a * lj,
                                  p->tW + (size_t)a * lj, s->rel ? s->rel + j0 - m + s->roff : NULL,
                               s->dck ? s->dck + j0 : NULL, dden[a], nb, lj);
        if (s->dcq) s->dcq[m] += dcm;
    }
    if (s->dA) /* dA_i += G C_j */
        rl_tile_gemm(li, D, lj, 1.0f, p->tD, lj, 1, p->Cf + (size_t)j0 * D, D, 1.0f,
                     s->dA + (size_t)i0 * D, D);
    if (s->dC) /* dC_j += G^T A_i */
        rl_tile_gemm(lj, D, li, 1.0f, p->tD, 1, lj, p->Af + (size_t)i0 * D, D, 1.0f,
                     s->dC + (size_t)j0 * D, D);
}

/* dlogf_l = sum_{m >= l} dc_m (dc: dcq + dck, or dcq alone), then dq, dk by the chain rule
 * from p->dAf, p->dCf, the blocks reversed (Shen's Z at the block starts: quad_features';
 * the other maps carry nothing across blocks). */
static void quad_finish(struct lin_plan *p, const struct rl_lin_grads *g, const double *dcq,
                        const double *dck, const float *q, const float *k)
{
    const int N = p->N, D = p->D;
    double    acc = 0.0;
    for (int l = N - 1; l >= 0; l--)
        g->dlogf[l] = (float)(acc += dck ? dcq[l] + dck[l] : dcq[l]);
    memset(p->Zs, 0, (size_t)p->d * sizeof(double));
    for (int b = (N - 1) / RL_LIN_BLOCK; b >= 0; b--) {
        const int     t0 = b * RL_LIN_BLOCK, l = rl_lin_block_rows(N, t0);
        const double *zb = p->ck + (size_t)b * p->ck_stride; /* Shen's only carry */
        if (p->shen) memcpy(p->Zrun, zb, (size_t)p->d * sizeof(double));
        rl_lin_build_block(p, q, k, t0, l, SIDE_K | SIDE_Q);
        memcpy(p->dA, p->dAf + (size_t)t0 * D, (size_t)l * D * sizeof(float));
        memcpy(p->dC, p->dCf + (size_t)t0 * D, (size_t)l * D * sizeof(float));
        if (p->shen) memcpy(p->Zrun, zb, (size_t)p->d * sizeof(double));
        rl_lin_chain_block(p, g->dq, g->dk, t0, l, NULL);
    }
}

void rl_lin_backward_quad(struct lin_plan *p, const struct rl_lin_grads *g, const float *dout,
                          const float *out, const float *den, const struct rl_lin_head *h)
{
    const int               dv = p->dv, N = p->N;
    const size_t            ND = (size_t)N * p->D;
    const struct tile_sinks s  = {g->dv, p->dAf, p->dCf, p->dcd, p->dcd, p->drel, N - 1};
    quad_features(p, h->q, h->k);
    memset(p->dAf, 0, ND * sizeof(float));
    memset(p->dCf, 0, ND * sizeof(float));
    memset(g->dv, 0, (size_t)N * dv * sizeof(float));
    memset(p->dcd, 0, (size_t)N * sizeof(double));
    for (int i0 = 0; i0 < N; i0 += RL_LIN_BLOCK) {
        const int li = rl_lin_block_rows(N, i0);
        rl_lin_output_backward(p->dnum, p->dden, dout + (size_t)i0 * dv, out + (size_t)i0 * dv,
                               den + i0, li, dv);
        for (int j0 = 0, lj; j0 <= i0; j0 += RL_LIN_BLOCK) {
            pack_keys(p, h->v, j0, lj = rl_lin_block_rows(N, j0));
            quad_tile_backward(p, &s, p->dnum, p->dden, i0, li, j0, lj);
        }
    }
    quad_finish(p, g, p->dcd, NULL, h->q, h->k);
}

/* ---- in pieces ---- */

int rl_attn_linear_quad_pieces(const struct rl_attn_opts *o, int G, int N)
{
    return o->kind == RL_ATTN_LINEAR && o->forget && o->pe == RL_ATTN_PE_T5 &&
           G < RL_LIN_QUAD_SPLIT_HEADS &&
           8.0 * G * (double)rl_attn_linear_quad_part_doubles(N) <= RL_ATTN_T5_PARTS_BYTES;
}

/* query block b's part: lags n - m + N - 1 from N - i0 - li to N - 1 (i0 + li doubles),
 * after the parts of the blocks before it (all full: 256 i (i + 1) / 2 doubles) */
static size_t part_offset(int b) { return (size_t)RL_LIN_BLOCK * b * (b + 1) / 2; }

size_t rl_attn_linear_quad_part_doubles(int N)
{
    const int nb = rl_attn_linear_blocks(N);
    return part_offset(nb - 1) + (size_t)N;
}

/* the store's arrays: Af, Cf, dAf, dCf (N x d), dnum (N x dv), Shen's column maxima (d),
 * then dden, dcq, dck (N doubles each), each at a multiple of 16 floats */
static size_t pad16(size_t n) { return (n + 15) & ~(size_t)15; }

size_t rl_attn_linear_quad_store_floats(int N, int d, int dv)
{
    return 4 * pad16((size_t)N * d) + pad16((size_t)N * dv) + pad16((size_t)d) +
           3 * pad16(2 * (size_t)N);
}

struct rl_lin_quad rl_attn_linear_quad_store(float *base, double *part, int N, int d, int dv)
{
    struct rl_lin_quad s;
    const size_t       Nd = pad16((size_t)N * d), N2 = pad16(2 * (size_t)N);
    s.Af = base, s.Cf = base + Nd, s.dAf = base + 2 * Nd, s.dCf = base + 3 * Nd;
    s.dnum   = base + 4 * Nd;
    s.colmax = s.dnum + pad16((size_t)N * dv);
    s.dden   = (double *)(s.colmax + pad16((size_t)d));
    s.dcq = (double *)((float *)s.dden + N2), s.dck = (double *)((float *)s.dcq + N2);
    s.part = part;
    return s;
}

/* A piece's plan: the head's (Shen's column maxima from the store once made), the rows'
 * feature gradients the store's, and their features the store's too where shared (else
 * the plan's own rows in scratch). */
static void piece_plan(struct lin_plan *p, const struct rl_lin_quad *s, struct rl_lin_head h,
                       const struct rl_attn_opts *o, float *scratch, int colmax, int shared)
{
    if (colmax && o->fmap == RL_FMAP_SOFTMAX) h.colmax = s->colmax;
    rl_lin_plan_make(p, &h, o, scratch);
    if (shared) p->Af = s->Af, p->Cf = s->Cf;
    p->dAf = s->dAf, p->dCf = s->dCf;
}

void rl_attn_linear_quad_features(const struct rl_lin_quad *s, const struct rl_lin_head *h,
                                  const struct rl_attn_opts *o, float *scratch)
{
    struct lin_plan p;
    piece_plan(&p, s, *h, o, scratch, 0, 1);
    quad_features(&p, h->q, h->k);
    if (p.shen) memcpy(s->colmax, p.colmax, (size_t)h->d * sizeof(float));
}

long rl_attn_linear_quad_fwd_rows(float *out, float *den, const struct rl_lin_quad *s,
                                  const struct rl_lin_head *h, const struct rl_attn_opts *o, int b,
                                  float *scratch)
{
    struct lin_plan p;
    piece_plan(&p, s, *h, o, scratch, 1, 1);
    return forward_block(&p, out, den, h->v, b * RL_LIN_BLOCK, o->eps);
}

void rl_attn_linear_quad_bwd_query(const struct rl_lin_quad *s, const float *dout, const float *out,
                                   const float *den, const struct rl_lin_head *h,
                                   const struct rl_attn_opts *o, int b, float *scratch)
{
    struct lin_plan p;
    piece_plan(&p, s, *h, o, scratch, 1, 1);
    const int    N = h->N, dv = h->dv, i0 = b * RL_LIN_BLOCK, li = rl_lin_block_rows(N, i0);
    float       *dnum = s->dnum + (size_t)i0 * dv;
    double      *dden = s->dden + i0, *part = s->part ? s->part + part_offset(b) : NULL;
    const size_t plen = (size_t)i0 + li;
    rl_lin_output_backward(dnum, dden, dout + (size_t)i0 * dv, out + (size_t)i0 * dv, den + i0, li,
                           dv);
    memset(s->dAf + (size_t)i0 * p.D, 0, (size_t)li * p.D * sizeof(float));
    memset(s->dcq + i0, 0, (size_t)li * sizeof(double));
    if (part) memset(part, 0, plen * sizeof(double));
    const struct tile_sinks k = {NULL, s->dAf, NULL, s->dcq, NULL, part, (ptrdiff_t)plen - 1};
    for (int j0 = 0, lj; j0 <= i0; j0 += RL_LIN_BLOCK) {
        pack_keys(&p, h->v, j0, lj = rl_lin_block_rows(N, j0));
        quad_tile_backward(&p, &k, dnum, dden, i0, li, j0, lj);
    }
}

void rl_attn_linear_quad_bwd_key(float *dvg, const struct rl_lin_quad *s,
                                 const struct rl_lin_head *h, const struct rl_attn_opts *o, int b,
                                 float *scratch)
{
    struct lin_plan p;
    piece_plan(&p, s, *h, o, scratch, 1, 1);
    const int N = h->N, dv = h->dv, j0 = b * RL_LIN_BLOCK, lj = rl_lin_block_rows(N, j0);
    memset(dvg + (size_t)j0 * dv, 0, (size_t)lj * dv * sizeof(float));
    memset(s->dCf + (size_t)j0 * p.D, 0, (size_t)lj * p.D * sizeof(float));
    memset(s->dck + j0, 0, (size_t)lj * sizeof(double));
    const struct tile_sinks k = {dvg, NULL, s->dCf, NULL, s->dck, NULL, 0};
    pack_keys(&p, h->v, j0, lj);
    for (int i0 = j0; i0 < N; i0 += RL_LIN_BLOCK)
        quad_tile_backward(&p, &k, s->dnum + (size_t)i0 * dv, s->dden + i0, i0,
                           rl_lin_block_rows(N, i0), j0, lj);
}

void rl_attn_linear_quad_bwd_head(const struct rl_lin_grads *g, const struct rl_lin_quad *s,
                                  const struct rl_lin_head *h, const struct rl_attn_opts *o,
                                  float *scratch)
{
    struct lin_plan p;
    piece_plan(&p, s, *h, o, scratch, 1, 0);
    if (p.shen) quad_features(&p, h->q, h->k); /* Shen's Z at the block starts */
    quad_finish(&p, g, s->dcq, s->dck, h->q, h->k);
}

void rl_attn_linear_quad_drel(double *drel, const double *parts, size_t head_doubles, int G, int H,
                              int h, int N, int r0, int r1)
{
    const int nb = rl_attn_linear_blocks(N);
    for (int g = h; g < G; g += H)
        for (int b = 0; b < nb; b++) {
            const int     i0 = b * RL_LIN_BLOCK, lo = N - i0 - rl_lin_block_rows(N, i0);
            const double *pt = parts + (size_t)g * head_doubles + part_offset(b);
            for (int r = r0 > lo ? r0 : lo; r < r1; r++)
                drel[r] += pt[r - lo];
        }
}
