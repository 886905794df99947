/* attn_linear_gate.c -- linear attention with the forget gate, one head (attn_linear.h):
 * the decayed scans of the generic form of attn_linear_plan.h. */
#include "config.h"
#include "attn_linear.h"
#include "attn_linear_plan.h"
#include "attn_linear_impl.h"
#include "../core/gemm.h"
#include "../core/vexp.h"

#include <math.h>
#include <string.h>

/* ---- the forget gate (causal only) ----------------------------------------------------
 * Every pair (m, n <= m) of the generic form is weighted by w(m,n) = e^{c_m - c_n}, c the
 * cumulative log gate, so each sum is a decayed scan: S_m = e^{lambda_m} S_{m-1} + C_m v_m^T,
 * z_m = e^{lambda_m} z_{m-1} + E_m (the float scan runs in a scaled frame,
 * attn_linear_scan.c; the double state of a block fold takes the block's terms weighted by
 * their decay to its end, products of the decays e^{lambda}).
 * Shen's positional normaliser Z is not decayed: it is part of the features.  Backward:
 * the suffix states decay the other way, G_n = e^{lambda_{n+1}} G_{n+1} + A_n dnum_n^T, and
 * the gate's own gradient is, per row,
 *   dc_m = sum_{n<=m} w (...)  [query side]  -  sum_{m'>=m} w (...)  [key side]
 *        = (dout_m . o_m) eps / den_m  -  v_m . dv_m  -  E_m . g_m,
 * (num_m . dnum_m + raw_m dden_m collapses to the first term), and dlogf_l = sum_{m>=l} dc_m. */

void rl_lin_gate_decays(struct lin_plan *p, int t0, int l)
{
    for (int i = 0; i < l; i++) {
        int n     = t0 + i;
        p->ad[i]  = p->dec[n];
        p->adn[i] = n + 1 < p->N ? p->dec[n + 1] : 1.0;
        p->af[i]  = (float)p->ad[i];
        p->afn[i] = (float)p->adn[i];
    }
}

double rl_lin_gate_block_decay(const struct lin_plan *p, int t0, int l, int reverse)
{
    if (reverse && t0 + l >= p->N) return 0.0; /* no state follows the last block */
    double d = 1.0; /* forward e^{c_{t0+l-1} - c_{t0-1}}, reverse e^{c_{t0+l} - c_{t0}} */
    for (int i = reverse; i < l + reverse; i++)
        d *= p->dec[t0 + i];
    return d;
}

double rl_lin_gate_fold_weights(struct lin_plan *p, int t0, int l, int reverse)
{
    /* products of the decays (in double: 256 factors lose less than exp(c_e - c_n) of
     * cumulative sums near N), the block's decay one factor further */
    if (reverse) { /* e^{c_n - c_t0} */
        p->wk[0] = 1.0;
        for (int i = 1; i < l; i++)
            p->wk[i] = p->wk[i - 1] * p->dec[t0 + i];
        return t0 + l < p->N ? p->wk[l - 1] * p->dec[t0 + l] : 0.0;
    }
    p->wk[l - 1] = 1.0; /* e^{c_end - c_n} */
    for (int i = l - 2; i >= 0; i--)
        p->wk[i] = p->wk[i + 1] * p->dec[t0 + i + 1];
    return p->wk[0] * p->dec[t0];
}

RL_SIMD_CLONES
void rl_lin_gate_dc(float *dc, const struct lin_plan *p, const float *v, const float *dvg, int l,
                    float eps)
{
    const int dv = p->dv;
    for (int i = 0; i < l; i++) {
        const float *vi = v + (size_t)i * dv, *gi = dvg + (size_t)i * dv;
        double       kv = 0.0;
#pragma omp simd reduction(+ : kv)
        for (int j = 0; j < dv; j++)
            kv += (double)vi[j] * (double)gi[j];
        dc[i] = (float)(-p->dden[i] * (double)eps - kv - p->eg[i]);
    }
}

void rl_lin_backward_gated(struct lin_plan *p, const struct rl_lin_grads *g, const float *dout,
                           const float *out, const float *den, const struct rl_lin_head *h,
                           float eps)
{
    float             *dq = g->dq, *dk = g->dk, *dvg = g->dv, *dlogf = g->dlogf;
    const float       *q = h->q, *k = h->k, *v = h->v;
    const int          D = p->D, dv = p->dv, Dd = p->Dd, d = p->d;
    const size_t       Dv = (size_t)D * dv;
    struct rl_lin_scan sA, sG, sGT;
    rl_lin_record_prefix_states(p, q, k, v);
    rl_lin_scan_init(&sG, p->scan[1], D, dv, NULL);
    rl_lin_scan_init(&sGT, p->scan[2], dv, D, NULL);
    memset(p->g, 0, (size_t)Dd * sizeof(double));
    memset(p->Zs, 0, (size_t)d * sizeof(double));
    for (int b = p->nb - 1; b >= 0; b--) {
        const int     t0 = b * RL_LIN_BLOCK, l = rl_lin_block_rows(p->N, t0);
        const double *ck = p->ck + (size_t)b * p->ck_stride;
        const float  *vb = v + (size_t)t0 * dv;
        memcpy(p->Zrun, ck + Dv + Dd, (size_t)d * sizeof(double));
        rl_lin_build_block(p, q, k, t0, l, SIDE_K | SIDE_Q);
        rl_lin_gate_decays(p, t0, l);
        rl_lin_output_backward(p->dnum, p->dden, dout + (size_t)t0 * dv, out + (size_t)t0 * dv,
                               den + t0, l, dv);
        rl_lin_scan_init(&sA, p->scan[0], dv, D, ck);
        rl_lin_scan_rows_decay(&sA, p->dA, p->dnum, vb, p->C, l, 0, p->af);
        rl_lin_scan_rows_decay(&sG, dvg + (size_t)t0 * dv, p->C, p->A, p->dnum, l, 1, p->afn);
        rl_lin_scan_rows_decay(&sGT, p->dC, vb, p->dnum, p->A, l, 1, p->afn);
        double bd = rl_lin_gate_fold_weights(p, t0, l, 1);
        rl_lin_scan_fold_decay(&sG, p->A, p->dnum, l, &sGT, p->wk, bd, p->Kw);
        rl_lin_den_block_backward(p, ck + Dv, NULL, l, 1);
        if (dlogf) rl_lin_gate_dc(dlogf + t0, p, vb, dvg + (size_t)t0 * dv, l, eps);
        memcpy(p->Zrun, ck + Dv + Dd, (size_t)d * sizeof(double));
        rl_lin_chain_block(p, dq, dk, t0, l, NULL);
    }
    double acc = 0.0; /* dlogf_l = sum_{m >= l} dc_m; a constant gate (ALiBi) has none */
    for (int m = p->N - 1; dlogf && m >= 0; m--)
        dlogf[m] = (float)(acc += (double)dlogf[m]);
}

/* ---- T5 with the gate: quadratic tiles ----------------------------------------------
 * With a learned relative bias the weights e^{rel(n-m) + c_m - c_n} have no recurrence, so
 * every (query block, key block <= it) tile is formed: P = (A_i C_j^T) * W, num_i += P V_j,
 * den_i += rowsum P (T5 has no RoPE: B = A, E = C).  Backward: dP = dnum_i V_j^T + dden_i,
 * G = dP * W gives dA_i += G C_j, dC_j += G^T A_i; dV_j += P^T dnum_i; P * dP gathers into
 * drel along the diagonals and into dc (+ row sums, - column sums).  O(N^2 D). */

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

/* W[a][b] = e^{rel(n-m) + c_m - c_n} for n = j0+b <= m = i0+a, else 0; P = S * W. */
static void quad_tile(struct lin_plan *p, int i0, int li, int j0, int lj)
{
    const int N = p->N;
    rl_sgemm(RL_TRANS_N, RL_TRANS_T, li, lj, p->D, 1.0f, p->Af + (size_t)i0 * p->D, p->D,
             p->Cf + (size_t)j0 * p->D, p->D, 0.0f, p->tS, lj);
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

void rl_lin_forward_quad(struct lin_plan *p, float *out, float *den, long *bad, const float *q,
                         const float *k, const float *v, float eps)
{
    const int dv = p->dv;
    quad_features(p, q, k);
    for (int i0 = 0; i0 < p->N; i0 += RL_LIN_BLOCK) {
        const int li = rl_lin_block_rows(p->N, i0);
        float    *o  = out + (size_t)i0 * dv;
        memset(p->dden, 0, (size_t)li * sizeof(double)); /* the rows' denominators, in double */
        for (int j0 = 0; j0 <= i0; j0 += RL_LIN_BLOCK) {
            const int lj = rl_lin_block_rows(p->N, j0);
            quad_tile(p, i0, li, j0, lj);
            for (int a = 0; a < li; a++)
                p->dden[a] += row_sum(p->tS + (size_t)a * lj, lj);
            rl_sgemm(RL_TRANS_N, RL_TRANS_N, li, dv, lj, 1.0f, p->tS, lj, v + (size_t)j0 * dv, dv,
                     j0 ? 1.0f : 0.0f, o, dv);
        }
        for (int a = 0; a < li; a++) {
            *bad += p->dden[a] <= (double)eps;
            double dd   = p->dden[a] + (double)eps;
            den[i0 + a] = (float)dd;
            for (int j = 0; j < dv; j++)
                o[(size_t)a * dv + j] = (float)((double)o[(size_t)a * dv + j] / dd);
        }
    }
}

/* Row m of a tile's backward over its nb pairs n <= m (the rest of G's row is 0): with
 * dP = dp + dden_m, P dP goes into drel (relm: drel at rel(j0 - m), or NULL) and into dc
 * (+ at m: returned; - at each n: cn, dc at j0); dp becomes G = dP W. */
RL_SIMD_CLONES
static double tile_grads_row(float *restrict dp, const float *restrict pp, const float *restrict w,
                             double *restrict relm, double *restrict cn, double dden, int nb,
                             int lj)
{
    double dcm = 0.0;
    if (relm) {
#pragma omp simd reduction(+ : dcm)
        for (int b = 0; b < nb; b++) {
            const double dpb = (double)dp[b] + dden, pd = (double)pp[b] * dpb;
            relm[b] += pd, dcm += pd, cn[b] -= pd;
            dp[b] = (float)(dpb * (double)w[b]);
        }
    } else {
#pragma omp simd reduction(+ : dcm)
        for (int b = 0; b < nb; b++) {
            const double dpb = (double)dp[b] + dden, pd = (double)pp[b] * dpb;
            dcm += pd, cn[b] -= pd;
            dp[b] = (float)(dpb * (double)w[b]);
        }
    }
    for (int b = nb; b < lj; b++)
        dp[b] = 0.0f;
    return dcm;
}

/* One tile's backward: dP, then dV_j, drel, dc, and G = dP * W into dA_i, dC_j. */
static void quad_tile_backward(struct lin_plan *p, float *dvg, const float *v, int i0, int li,
                               int j0, int lj)
{
    const int N = p->N, dv = p->dv, D = p->D;
    quad_tile(p, i0, li, j0, lj);
    rl_sgemm(RL_TRANS_N, RL_TRANS_T, li, lj, dv, 1.0f, p->dnum, dv, v + (size_t)j0 * dv, dv, 0.0f,
             p->tD, lj); /* dnum_i V_j^T */
    rl_sgemm(RL_TRANS_T, RL_TRANS_N, lj, dv, li, 1.0f, p->tS, lj, p->dnum, dv, 1.0f,
             dvg + (size_t)j0 * dv, dv); /* dV_j += P^T dnum_i */
    for (int a = 0; a < li; a++) {
        const int m = i0 + a, nb = m - j0 + 1 < lj ? m - j0 + 1 : lj;
        p->dcd[m] += tile_grads_row(
            p->tD + (size_t)a * lj, p->tS + (size_t)a * lj, p->tW + (size_t)a * lj,
            p->drel ? p->drel + j0 - m + N - 1 : NULL, p->dcd + j0, p->dden[a], nb, lj);
    }
    rl_sgemm(RL_TRANS_N, RL_TRANS_N, li, D, lj, 1.0f, p->tD, lj, p->Cf + (size_t)j0 * D, D, 1.0f,
             p->dAf + (size_t)i0 * D, D);
    rl_sgemm(RL_TRANS_T, RL_TRANS_N, lj, D, li, 1.0f, p->tD, lj, p->Af + (size_t)i0 * D, D, 1.0f,
             p->dCf + (size_t)j0 * D, D);
}

void rl_lin_backward_quad(struct lin_plan *p, const struct rl_lin_grads *g, const float *dout,
                          const float *out, const float *den, const struct rl_lin_head *h)
{
    float       *dq = g->dq, *dk = g->dk, *dvg = g->dv, *dlogf = g->dlogf;
    const float *q = h->q, *k = h->k, *v = h->v;
    const int    dv = p->dv, D = p->D, N = p->N;
    const size_t ND = (size_t)N * D;
    quad_features(p, q, k);
    memset(p->dAf, 0, ND * sizeof(float));
    memset(p->dCf, 0, ND * sizeof(float));
    memset(dvg, 0, (size_t)N * dv * sizeof(float));
    memset(p->dcd, 0, (size_t)N * sizeof(double));
    for (int i0 = 0; i0 < N; i0 += RL_LIN_BLOCK) {
        const int li = rl_lin_block_rows(p->N, i0);
        rl_lin_output_backward(p->dnum, p->dden, dout + (size_t)i0 * dv, out + (size_t)i0 * dv,
                               den + i0, li, dv);
        for (int j0 = 0; j0 <= i0; j0 += RL_LIN_BLOCK)
            quad_tile_backward(p, dvg, v, i0, li, j0, rl_lin_block_rows(p->N, j0));
    }
    double acc = 0.0; /* dlogf_l = sum_{m >= l} dc_m */
    for (int l = N - 1; l >= 0; l--)
        dlogf[l] = (float)(acc += p->dcd[l]);
    memset(p->Zs, 0, (size_t)p->d * sizeof(double));
    for (int b = (N - 1) / RL_LIN_BLOCK; b >= 0; b--) { /* the chain rule, blocks reversed */
        const int t0 = b * RL_LIN_BLOCK, l = rl_lin_block_rows(p->N, t0);
        memcpy(p->Zrun, p->ck + (size_t)b * p->ck_stride, (size_t)p->d * sizeof(double));
        rl_lin_build_block(p, q, k, t0, l, SIDE_K | SIDE_Q);
        memcpy(p->dA, p->dAf + (size_t)t0 * D, (size_t)l * D * sizeof(float));
        memcpy(p->dC, p->dCf + (size_t)t0 * D, (size_t)l * D * sizeof(float));
        memcpy(p->Zrun, p->ck + (size_t)b * p->ck_stride, (size_t)p->d * sizeof(double));
        rl_lin_chain_block(p, dq, dk, t0, l, NULL);
    }
}
