/* attn_linear_gate.c -- linear attention with the forget gate, one head (attn_linear.h):
 * the decayed scans of the generic form of attn_linear_plan.h (T5 with the gate, which
 * has no scan: attn_linear_quad.c). */
#include "config.h"
#include "attn_linear.h"
#include "attn_linear_plan.h"
#include "attn_linear_impl.h"
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
