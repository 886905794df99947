/* attn_linear.c -- linear attention without a bias PE, one head (attn_linear.h).
 *
 * Every option reduces to the generic form of attn_linear_impl.h,
 *   num_m = sum_{n in P(m)} (A_m . C_n) v_n,  den_m = sum_{n in P(m)} (B_m . E_n) + eps,
 * with the features (docs/attention_linear.md; phi_q, phi_k the feature maps of
 * featmap.h, R_m RoPE at position m, u = exp(k - colmax) the Shen key weights,
 * Z_m = sum_{n<=m} u_n the causal Shen normaliser per feature):
 *
 *   mode           A            C            B            E         width D / Dd
 *   PLAIN          phi_q        phi_k        A            C         d / d
 *   ROT_NUM        R phi_q      R phi_k      phi_q        phi_k     d / d   (eq. 19)
 *   ROT_BOTH       R phi_q      R phi_k      A            C         d / d   (rotated den.)
 *   SHEN           phi_q / Z_m  u            A            C         d / d   (causal Shen)
 *   SHEN_ROT_NUM   A' (2d)      C' (2d)      phi_q / Z_m  u         2d / d  (attn_linear_shen.c)
 *   SHEN_ROT_BOTH  A'           C'           A            C         2d / 2d
 *
 * Non-causal Shen normalises phi_k over all positions and is then PLAIN / ROT_*.
 * rope_place = input rotates q and k first and is then PLAIN or SHEN.
 *
 * Everything runs in blocks of RL_LIN_BLOCK rows (features, scans, denominators, chain
 * rule), so the working set is a few blocks and stays in L2; the scratch is O(block D + N/
 * block D dv).  Causal forward: one pass, the scan state carried.  Causal backward: a
 * forward pre-pass records the prefix states (scan state, sum of E, Shen's Z) at every
 * block start, then one reverse pass per block rebuilds the features, re-scans dA from the
 * recorded state, and scans dV, dC with the gradient states carried backwards.  The
 * non-causal forms need totals first: one pass for the sums, one for the rows (and a
 * third for the Shen column softmax's backward). */
#include "config.h"
#include "attn_linear.h"
#include "attn_linear_impl.h"
#include "attn_linear_plan.h"
#include "featmap.h"
#include "../core/gemm.h"
#include "../core/tilemm.h"
#include "../core/vexp.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static enum lin_mode lin_mode(const struct rl_attn_opts *o, int has_rope)
{
    int feat = has_rope && o->rope_place == RL_ROPE_PLACE_FEATURE;
    int both = feat && o->rope_denominator == RL_ROPE_DENOM_ROTATED;
    if (o->fmap == RL_FMAP_SOFTMAX && o->causal)
        return !feat ? SHEN : both ? SHEN_ROT_BOTH : SHEN_ROT_NUM;
    return !feat ? PLAIN : both ? ROT_BOTH : ROT_NUM;
}

/* n floats at *off (64-byte granules); NULL while only sizing. */
static float *at(float *base, size_t *off, size_t n)
{
    float *r = base ? base + *off : NULL;
    *off += (n + 15) & ~(size_t)15;
    return r;
}

static double *atd(float *base, size_t *off, size_t n) { return (double *)at(base, off, 2 * n); }

/* The forget gate's buffers (and T5 with the gate: the quadratic tiles'). */
static void gate_layout(struct lin_plan *p, const struct rl_attn_opts *o, int N, size_t R, float *s,
                        size_t *off)
{
    p->logf = NULL;
    p->cum = p->dec = p->ad = p->adn = p->wk = p->eg = NULL, p->af = p->afn = p->Kw = NULL;
    if (o->forget) {
        p->cum = o->pe == RL_ATTN_PE_T5 ? atd(s, off, (size_t)N) : NULL; /* T5's tiles */
        p->dec = o->pe == RL_ATTN_PE_T5 ? NULL : atd(s, off, (size_t)N); /* the scans' */
        p->ad = atd(s, off, R), p->adn = atd(s, off, R), p->wk = atd(s, off, R);
        p->eg = atd(s, off, R);
        p->af = at(s, off, R), p->afn = at(s, off, R);
        p->Kw = at(s, off, R * (size_t)(p->D > p->dv ? p->D : p->dv));
    }
    p->rel = NULL, p->drel = NULL;
    p->Af = p->Cf = p->dAf = p->dCf = p->tS = p->tW = p->tD = p->te = p->tP = NULL, p->dcd = NULL;
    if (o->forget && o->pe == RL_ATTN_PE_T5) { /* the quadratic tiles of T5 with the gate */
        const size_t ND = (size_t)N * p->D, T = R * R;
        p->Af = at(s, off, ND), p->Cf = at(s, off, ND);
        p->dAf = at(s, off, ND), p->dCf = at(s, off, ND);
        p->tS = at(s, off, T), p->tW = at(s, off, T), p->tD = at(s, off, T);
        p->te = at(s, off, 4 * R), p->tP = at(s, off, R * (size_t)(p->D + p->dv));
        p->dcd = atd(s, off, (size_t)N);
    }
}

/* Lays the plan out in scratch (NULL: sizing only); returns the floats used. */
static size_t lin_plan(struct lin_plan *p, const struct rl_attn_opts *o, int has_rope, int N, int d,
                       int dv, float *s)
{
    const size_t R   = (size_t)rl_lin_block_rows(N, 0); /* rows per block buffer */
    size_t       off = 0;
    p->mode          = lin_mode(o, has_rope);
    p->fmap          = o->fmap;
    p->N             = N;
    p->d             = d;
    p->dv            = dv;
    p->causal        = o->causal;
    p->nb            = (N + RL_LIN_BLOCK - 1) / RL_LIN_BLOCK;
    p->shen          = o->fmap == RL_FMAP_SOFTMAX;
    p->input_rot     = has_rope && o->rope_place == RL_ROPE_PLACE_INPUT;
    p->D             = p->mode >= SHEN_ROT_NUM ? 2 * d : d;
    p->Dd            = p->mode == SHEN_ROT_BOTH ? 2 * d : d;
    p->sep           = p->mode == ROT_NUM || p->mode == SHEN_ROT_NUM; /* B, E apart from A, C */
    const size_t nd = R * d, nD = R * p->D, nDd = R * p->Dd, Dv = (size_t)p->D * dv;
    p->feat = s; /* the block buffers of rl_lin_plan_to_block first */
    p->xq   = p->input_rot ? at(s, &off, nd) : NULL;
    p->xk   = p->input_rot ? at(s, &off, nd) : NULL;
    p->phq = at(s, &off, nd), p->phk = at(s, &off, nd);
    p->A           = p->mode == PLAIN ? p->phq : at(s, &off, nD);
    p->C           = p->mode == PLAIN || p->mode == SHEN ? p->phk : at(s, &off, nD);
    p->B           = p->mode == ROT_NUM ? p->phq : p->mode == SHEN_ROT_NUM ? at(s, &off, nd) : p->A;
    p->E           = p->sep ? p->phk : p->C;
    p->feat_floats = off;
    p->row         = at(s, &off, 5 * (size_t)d); /* also Shen's work: 2d doubles, d floats */
    p->colmax      = at(s, &off, (size_t)d);
    p->cmb         = at(s, &off, (size_t)d);
    p->dnum = at(s, &off, R * dv), p->dden = atd(s, &off, R);
    p->dA = at(s, &off, nD), p->dC = at(s, &off, nD);
    p->dB   = p->sep ? at(s, &off, nDd) : p->dA;
    p->dE   = p->sep ? at(s, &off, nDd) : p->dC;
    p->dphq = p->mode >= SHEN ? at(s, &off, nd) : p->dA;
    p->dphk = p->mode >= SHEN ? NULL : p->dC; /* causal Shen writes dk directly */
    p->dZ   = p->mode >= SHEN ? atd(s, &off, nd) : NULL;
    p->Sf = at(s, &off, Dv), p->Gf = at(s, &off, Dv);
    p->Zrun = atd(s, &off, (size_t)d);
    p->Ztot = atd(s, &off, (size_t)d);
    p->Zs   = atd(s, &off, (size_t)d);
    p->z = atd(s, &off, (size_t)p->Dd), p->g = atd(s, &off, (size_t)p->Dd);
    p->Sd = atd(s, &off, Dv), p->Gd = atd(s, &off, Dv);
    size_t a = rl_lin_scan_floats(p->D, dv), b = rl_lin_scan_floats(dv, p->D);
    p->scan_floats = a > b ? a : b;
    for (int i = 0; i < 3; i++)
        p->scan[i] = at(s, &off, p->scan_floats);
    p->ck_stride = Dv + (size_t)p->Dd + (size_t)d; /* doubles: dA scan state, sum E, Shen Z */
    p->ck        = o->causal ? atd(s, &off, (size_t)p->nb * p->ck_stride) : NULL;
    gate_layout(p, o, N, R, s, &off);
    return off;
}

size_t rl_attn_linear_scratch_floats(const struct rl_attn_opts *o, int N, int d, int dv)
{
    struct lin_plan p;
    return lin_plan(&p, o, o->pe == RL_ATTN_PE_ROPE, N, d, dv, NULL);
}

/* Shen keys: phk = exp(k - colmax) for the block (featmap's exp against the block's own
 * column max, rescaled to the global one), divided by Ztot when non-causal. */
static void shen_keys(struct lin_plan *p, int l)
{
    const int d = p->d;
    rl_fmap_k_forward(p->phk, p->cmb, p->k, l, d, RL_FMAP_SOFTMAX);
    for (int f = 0; f < d; f++) {
        double sc = exp((double)p->cmb[f] - (double)p->colmax[f]);
        p->row[f] = (float)(p->causal ? sc : sc / p->Ztot[f]);
    }
    for (int i = 0; i < l; i++)
        for (int f = 0; f < d; f++)
            p->phk[(size_t)i * d + f] *= p->row[f];
}

/* The Shen map's block of rows t0 .. t0+l-1 (its u: the keys' features) with the running
 * sums Z. */
static struct rl_lin_shen_block shen_block(const struct lin_plan *p, double *Z, int t0, int l)
{
    return (struct rl_lin_shen_block){p->rope, p->phk, Z, p->row, l, p->d, t0};
}

/* The block's (rotated) input rows: p->q, p->k point at them. */
static void block_inputs(struct lin_plan *p, const float *q, const float *k, int t0, int l,
                         int side)
{
    const int d = p->d;
    p->q = q + (size_t)t0 * d, p->k = k + (size_t)t0 * d;
    if (!p->input_rot) return; /* rope_place = input: phi(R_m q_m), phi(R_n k_n) */
    if (side & SIDE_Q) rl_rope_rotate(p->rope, p->xq, d, p->q, d, l, t0, 0), p->q = p->xq;
    if (side & SIDE_K) rl_rope_rotate(p->rope, p->xk, d, p->k, d, l, t0, 0), p->k = p->xk;
}

/* Shen: the column max of k (and, non-causal, Ztot = sum_n exp(k - colmax), summed online
 * with a rescale whenever the max grows) over all N rows, before any block is built. */
static void shen_prepass(struct lin_plan *p, const float *q, const float *k)
{
    const int d = p->d;
    for (int f = 0; f < d; f++)
        p->colmax[f] = -INFINITY, p->Ztot[f] = 0.0;
    for (int t0 = 0; t0 < p->N; t0 += RL_LIN_BLOCK) {
        int l = rl_lin_block_rows(p->N, t0);
        block_inputs(p, q, k, t0, l, SIDE_K);
        rl_fmap_k_forward(p->phk, p->cmb, p->k, l, d, RL_FMAP_SOFTMAX); /* exp(k - block max) */
        memset(p->Zs, 0, (size_t)d * sizeof(double));
        rl_lin_sum_rows(p->Zs, p->phk, l, d);
        for (int f = 0; f < d; f++) {
            double mx  = fmax((double)p->colmax[f], (double)p->cmb[f]);
            p->Ztot[f] = p->Ztot[f] * exp((double)p->colmax[f] - mx) +
                         p->Zs[f] * exp((double)p->cmb[f] - mx);
            p->colmax[f] = (float)mx;
        }
    }
}

/* Features of rows t0 .. t0+l-1 (side: SIDE_K and/or SIDE_Q; the Shen causal queries need
 * the keys of the same block and advance Zrun). */
void rl_lin_build_block(struct lin_plan *p, const float *q, const float *k, int t0, int l, int side)
{
    const int d = p->d;
    block_inputs(p, q, k, t0, l, side);
    if (side & SIDE_K) {
        if (p->shen)
            shen_keys(p, l);
        else
            rl_fmap_k_forward(p->phk, p->cmb, p->k, l, d, p->fmap);
        if (p->mode == ROT_NUM || p->mode == ROT_BOTH) /* eq. 19: R_n phi_k(k_n) */
            rl_rope_rotate(p->rope, p->C, d, p->phk, d, l, t0, 0);
        if (p->mode >= SHEN_ROT_NUM) {
            const struct rl_lin_shen_block sb = shen_block(p, p->Zrun, t0, l);
            rl_lin_shen_rope_keys(p->C, &sb);
        }
    }
    if (!(side & SIDE_Q)) return;
    rl_fmap_q_forward(p->phq, p->q, l, d, p->fmap);
    if (p->mode == ROT_NUM || p->mode == ROT_BOTH)
        rl_rope_rotate(p->rope, p->A, d, p->phq, d, l, t0, 0);
    if (p->mode == SHEN) /* A_m = phi_q / Z_m: the prefix normaliser moves to the query side */
        for (int i = 0; i < l; i++)
            for (int f = 0; f < d; f++) {
                size_t r = (size_t)i * d + f;
                p->Zrun[f] += (double)p->phk[r];
                p->A[r] = (float)((double)p->phq[r] / p->Zrun[f]);
            }
    if (p->mode >= SHEN_ROT_NUM) {
        const struct rl_lin_shen_block sb = shen_block(p, p->Zrun, t0, l);
        rl_lin_shen_rope_queries(p->A, p->mode == SHEN_ROT_NUM ? p->B : NULL, p->phq, &sb);
    }
}

/* The causal forward block by block; with the forget gate (p->logf) the scans decay. */
static void forward_causal(struct lin_plan *p, float *out, float *den, long *bad, const float *q,
                           const float *k, const float *v, float eps)
{
    struct rl_lin_scan s;
    rl_lin_scan_init(&s, p->scan[0], p->D, p->dv, NULL);
    memset(p->z, 0, (size_t)p->Dd * sizeof(double));
    memset(p->Zrun, 0, (size_t)p->d * sizeof(double));
    for (int t0 = 0; t0 < p->N; t0 += RL_LIN_BLOCK) {
        int          l  = rl_lin_block_rows(p->N, t0);
        float       *o  = out + (size_t)t0 * p->dv;
        const float *vb = v + (size_t)t0 * p->dv;
        rl_lin_build_block(p, q, k, t0, l, SIDE_K | SIDE_Q);
        if (!p->logf) {
            rl_lin_scan_rows(&s, o, p->A, p->C, vb, l, 0, 1);
            const struct rl_lin_den dn = rl_lin_den_of(p, l);
            *bad += rl_lin_den_rows(den + t0, o, p->dv, &dn, 1, eps);
            continue;
        }
        rl_lin_gate_decays(p, t0, l);
        rl_lin_scan_rows_decay(&s, o, p->A, p->C, vb, l, 0, p->af);
        double bd = rl_lin_gate_fold_weights(p, t0, l, 0);
        rl_lin_scan_fold_decay(&s, p->C, vb, l, NULL, p->wk, bd, p->Kw);
        const struct rl_lin_den dn = rl_lin_den_of(p, l);
        *bad += rl_lin_den_rows_decay(den + t0, o, p->dv, &dn, eps);
    }
}

static void forward_full(struct lin_plan *p, float *out, float *den, long *bad, const float *q,
                         const float *k, const float *v, float eps)
{
    const int D = p->D, dv = p->dv;
    memset(p->z, 0, (size_t)p->Dd * sizeof(double));
    memset(p->Sd, 0, (size_t)D * dv * sizeof(double));
    for (int t0 = 0; t0 < p->N; t0 += RL_LIN_BLOCK) { /* S = C^T V, z = sum E */
        int l = rl_lin_block_rows(p->N, t0);
        rl_lin_build_block(p, q, k, t0, l, SIDE_K);
        rl_lin_gemm_acc(p->Sd, p->Gf, p->C, D, v + (size_t)t0 * dv, dv, l);
        rl_lin_sum_rows(p->z, p->E, l, p->Dd);
    }
    for (int i = 0; i < D * dv; i++)
        p->Sf[i] = (float)p->Sd[i];
    for (int t0 = 0; t0 < p->N; t0 += RL_LIN_BLOCK) { /* num = A S */
        int    l = rl_lin_block_rows(p->N, t0);
        float *o = out + (size_t)t0 * dv;
        rl_lin_build_block(p, q, k, t0, l, SIDE_Q);
        rl_tile_gemm(l, dv, D, 1.0f, p->A, D, 1, p->Sf, dv, 0.0f, o, dv);
        const struct rl_lin_den dn = rl_lin_den_of(p, l);
        *bad += rl_lin_den_rows(den + t0, o, dv, &dn, 0, eps);
    }
}

/* A stored block: the plan's block buffers of features and rotated inputs, then dnum and
 * dden; with `slot`, the plan's dnum and dden are pointed there. */
static size_t block_slot(struct lin_plan *p, float *slot)
{
    const size_t R   = (size_t)rl_lin_block_rows(p->N, 0);
    size_t       off = p->feat_floats;
    float       *dn  = at(slot, &off, R * p->dv);
    double      *dd  = atd(slot, &off, R);
    if (slot) p->dnum = dn, p->dden = dd;
    return off;
}

size_t rl_lin_block_store_floats(const struct rl_attn_opts *o, int has_rope, int N, int d, int dv)
{
    struct lin_plan p;
    lin_plan(&p, o, has_rope, N, d, dv, NULL);
    return p.shen ? 0 : block_slot(&p, NULL);
}

static float *moved(float *x, const float *from, float *to) { return x ? to + (x - from) : NULL; }

void rl_lin_plan_to_block(struct lin_plan *p, float *store, int b)
{
    float *const slot = store + (size_t)b * block_slot(p, NULL);
    const float *from = p->feat;
    p->xq = moved(p->xq, from, slot), p->xk = moved(p->xk, from, slot);
    p->phq = moved(p->phq, from, slot), p->phk = moved(p->phk, from, slot);
    p->A = moved(p->A, from, slot), p->C = moved(p->C, from, slot);
    p->B = moved(p->B, from, slot), p->E = moved(p->E, from, slot);
    block_slot(p, slot);
    p->feat = slot;
}

/* The plan of one forward or backward call (Shen's map: its per-feature maxima too, and
 * non-causal Ztot, the pieces form's when h->colmax is set). */
static void call_plan(struct lin_plan *p, const struct rl_lin_head *h, const struct rl_attn_opts *o,
                      float *scratch)
{
    const int N = h->N, d = h->d;
    RL_ASSERT(((uintptr_t)scratch & 7) == 0 && N > 0 && d > 0 && h->dv > 0);
    RL_ASSERT(!h->rope || (h->rope->d == d && h->rope->n_pos >= N));
    lin_plan(p, o, h->rope != NULL, N, d, h->dv, scratch);
    p->rope = h->rope;
    if (p->shen && h->colmax) {
        memcpy(p->colmax, h->colmax, (size_t)d * sizeof(float));
        if (!o->causal) memcpy(p->Ztot, h->ztot, (size_t)d * sizeof(double));
    } else if (p->shen) {
        shen_prepass(p, h->q, h->k);
    }
}

static void gate_plan(struct lin_plan *p, const struct rl_lin_head *h)
{
    p->logf = h->logf;
    p->rel  = h->rel;
    if (h->logf && h->rel && h->cum) /* c: read by T5's quadratic tiles only */
        p->cum = (double *)h->cum;   /* read only */
    else if (h->logf && h->rel)
        rl_lin_cumsum(p->cum, h->logf, p->N);
    if (h->logf && h->dec)
        p->dec = (double *)h->dec;
    else if (h->logf && !h->rel) /* the decayed scans' e^{logf} */
        for (int m = 0; m < p->N; m++)
            p->dec[m] = exp((double)h->logf[m]);
}

void rl_lin_plan_make(struct lin_plan *p, const struct rl_lin_head *h, const struct rl_attn_opts *o,
                      float *scratch)
{
    call_plan(p, h, o, scratch);
    gate_plan(p, h);
}

void rl_attn_linear_forward(float *out, float *den, long *n_bad, const struct rl_lin_head *h,
                            const struct rl_attn_opts *o, float *scratch)
{
    struct lin_plan p;
    long            bad = 0;
    const float    *q = h->q, *k = h->k, *v = h->v;
    call_plan(&p, h, o, scratch);
    gate_plan(&p, h);
    if (h->logf && h->rel)
        rl_lin_forward_quad(&p, out, den, &bad, q, k, v, o->eps);
    else if (o->causal || h->logf)
        forward_causal(&p, out, den, &bad, q, k, v, o->eps);
    else
        forward_full(&p, out, den, &bad, q, k, v, o->eps);
    if (n_bad) *n_bad = bad;
}

/* o_m = num_m / den_m  =>  dnum_m = dout_m / den_m,  dden_m = -(dout_m . o_m) / den_m */
RL_SIMD_CLONES
void rl_lin_output_backward(float *dnum, double *dden, const float *dout, const float *out,
                            const float *den, int l, int dv)
{
    for (int m = 0; m < l; m++) {
        const float *g = dout + (size_t)m * dv, *om = out + (size_t)m * dv;
        float       *dn = dnum + (size_t)m * dv;
        double       s = 0.0, inv = 1.0 / (double)den[m];
#pragma omp simd reduction(+ : s)
        for (int j = 0; j < dv; j++) {
            dn[j] = (float)((double)g[j] * inv);
            s += (double)g[j] * (double)om[j];
        }
        dden[m] = -s * inv;
    }
}

/* Causal Shen without a feature-place rotation, A = phi_q / Z, C = E = u, B = A:
 *   dphi_q = dA / Z,  dZ_m = -dA A / Z;   Z_m = sum_{n<=m} u_n  =>  du_n = dC_n + sum_{m>=n} dZ_m;
 *   u = exp(k - colmax)  =>  dk = du u.   Zrun: the prefix before the block, Zs: the suffix
 * of dZ after it. */
static void shen_prefix_backward(struct lin_plan *p, float *dk, int l)
{
    const int d = p->d;
    for (int i = 0; i < l; i++)
        for (int f = 0; f < d; f++) {
            size_t r = (size_t)i * d + f;
            p->Zrun[f] += (double)p->phk[r];
            p->dphq[r] = (float)((double)p->dA[r] / p->Zrun[f]);
            p->dZ[r]   = -(double)p->dA[r] * (double)p->A[r] / p->Zrun[f];
        }
    for (int i = l - 1; i >= 0; i--)
        for (int f = 0; f < d; f++) {
            size_t r = (size_t)i * d + f;
            p->Zs[f] += p->dZ[r];
            dk[r] = (float)((double)p->phk[r] * ((double)p->dC[r] + p->Zs[f]));
        }
}

/* The Shen map with RoPE: the query side's dphq and dZ (Z from the prefix before the
 * block), then the key side's dk (Zs: the suffix of dZ after the block). */
static void shen_rope_backward(struct lin_plan *p, float *dk, int t0, int l)
{
    const struct rl_lin_shen_block q = shen_block(p, p->Zrun, t0, l),
                                   k = shen_block(p, p->Zs, t0, l);
    rl_lin_shen_rope_query_backward(p->dphq, p->dZ, p->dA, p->sep ? p->dB : NULL, p->A, p->B, &q);
    rl_lin_shen_rope_key_backward(dk, p->dC, p->sep ? p->dE : NULL, p->dZ, &k);
}

/* y += x over n floats */
RL_SIMD_CLONES
static void add_to(float *restrict y, const float *restrict x, size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++)
        y[i] += x[i];
}

/* dq, dk of rows t0 .. t0+l-1 from the block's dA, dB, dC, dE (the chain rule through the
 * table at the top).  Non-causal Shen: dk gets phi_k * dphi_k, and colsum the column sums
 * sum_n dphi_k phi_k that the last pass subtracts (the column softmax's backward). */
void rl_lin_chain_block(struct lin_plan *p, float *dq, float *dk, int t0, int l, double *colsum)
{
    const int    d   = p->d;
    const size_t nd  = (size_t)l * d;
    float       *dqb = dq + (size_t)t0 * d, *dkb = dk + (size_t)t0 * d;
    switch (p->mode) {
    case PLAIN:
        break; /* dB, dE were added into dA, dC */
    case ROT_NUM:
    case ROT_BOTH: /* A = R phi_q  =>  dphi_q = R^T dA (+ dB when B = phi_q) */
        rl_rope_rotate(p->rope, p->dA, d, p->dA, d, l, t0, 1);
        rl_rope_rotate(p->rope, p->dC, d, p->dC, d, l, t0, 1);
        if (p->mode == ROT_NUM) add_to(p->dA, p->dB, nd), add_to(p->dC, p->dE, nd);
        break;
    case SHEN:
        shen_prefix_backward(p, dkb, l);
        break;
    case SHEN_ROT_NUM:
    case SHEN_ROT_BOTH:
        shen_rope_backward(p, dkb, t0, l);
        break;
    }
    rl_fmap_q_backward(dqb, p->dphq, p->phq, l, d, p->fmap);
    if (p->mode < SHEN && p->shen) {
        for (size_t i = 0; i < nd; i++) {
            dkb[i] = p->phk[i] * p->dphk[i];
            colsum[i % (size_t)d] += (double)dkb[i];
        }
    } else if (p->mode < SHEN) {
        rl_fmap_k_backward(dkb, p->dphk, p->phk, l, d, p->fmap);
    }
    if (p->input_rot) { /* q~ = R q  =>  dq = R^T dq~ */
        rl_rope_rotate(p->rope, dqb, d, dqb, d, l, t0, 1);
        rl_rope_rotate(p->rope, dkb, d, dkb, d, l, t0, 1);
    }
}

/* Causal pre-pass: at each block start record the state of the dA scan (sum V^T C, dv x D),
 * the prefix sum of E and Shen's Z, which the reverse pass restarts from.  With the forget
 * gate (p->logf) the dA state and z are decayed sums (sum w v C^T, w the decay to the
 * block's end, the carried state scaled by the block's decay); Shen's Z is not decayed. */
void rl_lin_record_prefix_states(struct lin_plan *p, const float *q, const float *k, const float *v)
{
    const int    D = p->D, dv = p->dv, Dd = p->Dd, d = p->d;
    const size_t Dv = (size_t)D * dv;
    memset(p->Sd, 0, Dv * sizeof(double));
    memset(p->z, 0, (size_t)Dd * sizeof(double));
    memset(p->Zrun, 0, (size_t)d * sizeof(double));
    for (int b = 0, t0 = 0; b < p->nb; b++, t0 += RL_LIN_BLOCK) {
        int     l  = rl_lin_block_rows(p->N, t0);
        double *ck = p->ck + (size_t)b * p->ck_stride;
        memcpy(ck, p->Sd, Dv * sizeof(double));
        memcpy(ck + Dv, p->z, (size_t)Dd * sizeof(double));
        memcpy(ck + Dv + Dd, p->Zrun, (size_t)d * sizeof(double));
        rl_lin_build_block(p, q, k, t0, l, SIDE_K);
        const float *vb = v + (size_t)t0 * dv;
        if (p->logf) {
            double bd = rl_lin_gate_fold_weights(p, t0, l, 0);
            for (size_t i = 0; i < Dv; i++)
                p->Sd[i] *= bd;
            rl_lin_weight_rows(p->Kw, vb, p->wk, l, dv);
            rl_lin_gemm_acc(p->Sd, p->Gf, p->Kw, dv, p->C, D, l);
            rl_lin_sum_rows_decay(p->z, p->E, l, Dd, p->wk, bd);
        } else {
            rl_lin_gemm_acc(p->Sd, p->Gf, vb, dv, p->C, D, l);
            rl_lin_sum_rows(p->z, p->E, l, Dd);
        }
        if (p->mode >= SHEN) rl_lin_sum_rows(p->Zrun, p->phk, l, d);
    }
}

struct rl_lin_den rl_lin_den_of(const struct lin_plan *p, int l)
{
    return (struct rl_lin_den){p->B, p->E, p->z, p->g, p->ad, p->adn, l, p->Dd};
}

void rl_lin_den_block_backward(struct lin_plan *p, const double *z0, const double *g0, int l,
                               int causal)
{
    const int Dd = p->Dd;
    if (p->sep && p->logf) { /* dB, dE of their own: from zero (the plain rows write them) */
        memset(p->dB, 0, (size_t)l * Dd * sizeof(float));
        memset(p->dE, 0, (size_t)l * Dd * sizeof(float));
    }
    if (z0 != p->z) memcpy(p->z, z0, (size_t)Dd * sizeof(double));
    if (g0) memcpy(p->g, g0, (size_t)Dd * sizeof(double));
    const struct rl_lin_den dn = rl_lin_den_of(p, l);
    if (p->logf)
        rl_lin_den_rows_backward_decay(p->dB, p->dE, p->eg, p->dden, &dn);
    else
        rl_lin_den_rows_backward(p->dB, p->dE, p->dden, &dn, causal, !p->sep);
}

static void backward_causal(struct lin_plan *p, const struct rl_lin_grads *g, const float *dout,
                            const float *out, const float *den, const struct rl_lin_head *h)
{
    float             *dq = g->dq, *dk = g->dk, *dvg = g->dv;
    const float       *q = h->q, *k = h->k, *v = h->v;
    const int          D = p->D, dv = p->dv, Dd = p->Dd, d = p->d;
    const size_t       Dv = (size_t)D * dv;
    struct rl_lin_scan sA, sG, sGT;
    rl_lin_record_prefix_states(p, q, k, v);
    rl_lin_scan_init(&sG, p->scan[1], D, dv, NULL);  /* sum_{m>=n} A_m dnum_m^T: for dV */
    rl_lin_scan_init(&sGT, p->scan[2], dv, D, NULL); /* its transpose: for dC */
    memset(p->g, 0, (size_t)Dd * sizeof(double));
    memset(p->Zs, 0, (size_t)d * sizeof(double));
    for (int b = p->nb - 1; b >= 0; b--) {
        const int     t0 = b * RL_LIN_BLOCK, l = rl_lin_block_rows(p->N, t0);
        const double *ck = p->ck + (size_t)b * p->ck_stride;
        const float  *vb = v + (size_t)t0 * dv;
        memcpy(p->Zrun, ck + Dv + Dd, (size_t)d * sizeof(double));
        rl_lin_build_block(p, q, k, t0, l, SIDE_K | SIDE_Q);
        rl_lin_output_backward(p->dnum, p->dden, dout + (size_t)t0 * dv, out + (size_t)t0 * dv,
                               den + t0, l, dv);
        rl_lin_scan_init(&sA, p->scan[0], dv, D, ck); /* dA_m = sum_{n<=m} (dnum_m.v_n) C_n */
        rl_lin_scan_rows(&sA, p->dA, p->dnum, vb, p->C, l, 0, 0);
        rl_lin_scan_rows(&sG, dvg + (size_t)t0 * dv, p->C, p->A, p->dnum, l, 1, 0);
        rl_lin_scan_rows(&sGT, p->dC, vb, p->dnum, p->A, l, 1, 0);
        rl_lin_scan_fold(&sG, p->A, p->dnum, l, &sGT); /* one GEMM for both states */
        rl_lin_den_block_backward(p, ck + Dv, NULL, l, 1);
        memcpy(p->Zrun, ck + Dv + Dd, (size_t)d * sizeof(double));
        rl_lin_chain_block(p, dq, dk, t0, l, NULL);
    }
}

/* Non-causal sums: S = C^T V, z = sum E, Gs = A^T dnum, g = sum dden B (all rows). */
static void full_sums(struct lin_plan *p, const float *dout, const float *out, const float *den,
                      const float *q, const float *k, const float *v)
{
    const int D = p->D, dv = p->dv, Dd = p->Dd;
    memset(p->Sd, 0, (size_t)D * dv * sizeof(double));
    memset(p->Gd, 0, (size_t)D * dv * sizeof(double));
    memset(p->z, 0, (size_t)Dd * sizeof(double));
    memset(p->g, 0, (size_t)Dd * sizeof(double));
    for (int t0 = 0; t0 < p->N; t0 += RL_LIN_BLOCK) {
        int l = rl_lin_block_rows(p->N, t0);
        rl_lin_build_block(p, q, k, t0, l, SIDE_K | SIDE_Q);
        rl_lin_output_backward(p->dnum, p->dden, dout + (size_t)t0 * dv, out + (size_t)t0 * dv,
                               den + t0, l, dv);
        rl_lin_gemm_acc(p->Sd, p->Sf, p->C, D, v + (size_t)t0 * dv, dv, l);
        rl_lin_gemm_acc(p->Gd, p->Sf, p->A, D, p->dnum, dv, l);
        rl_lin_sum_rows(p->z, p->E, l, Dd);
        rl_lin_wsum_rows(p->g, p->dden, p->B, l, Dd);
    }
    for (int i = 0; i < D * dv; i++)
        p->Sf[i] = (float)p->Sd[i], p->Gf[i] = (float)p->Gd[i];
}

/* num = A S:  dA = dnum S^T;  dC = V Gs^T;  dV = C Gs;  den = B . z:  dB = dden z, dE = g. */
static void backward_full(struct lin_plan *p, const struct rl_lin_grads *g, const float *dout,
                          const float *out, const float *den, const struct rl_lin_head *h)
{
    float       *dq = g->dq, *dk = g->dk, *dvg = g->dv;
    const float *q = h->q, *k = h->k, *v = h->v;
    const int    D = p->D, dv = p->dv, d = p->d;
    full_sums(p, dout, out, den, q, k, v);
    memset(p->Zs, 0, (size_t)d * sizeof(double)); /* Shen: the column sums (colsum) */
    for (int t0 = 0; t0 < p->N; t0 += RL_LIN_BLOCK) {
        int          l  = rl_lin_block_rows(p->N, t0);
        const float *vb = v + (size_t)t0 * dv;
        rl_lin_build_block(p, q, k, t0, l, SIDE_K | SIDE_Q);
        rl_lin_output_backward(p->dnum, p->dden, dout + (size_t)t0 * dv, out + (size_t)t0 * dv,
                               den + t0, l, dv);
        rl_sgemm(RL_TRANS_N, RL_TRANS_T, l, D, dv, 1.0f, p->dnum, dv, p->Sf, dv, 0.0f, p->dA, D);
        rl_sgemm(RL_TRANS_N, RL_TRANS_T, l, D, dv, 1.0f, vb, dv, p->Gf, dv, 0.0f, p->dC, D);
        rl_tile_gemm(l, dv, D, 1.0f, p->C, D, 1, p->Gf, dv, 0.0f, dvg + (size_t)t0 * dv, dv);
        rl_lin_den_block_backward(p, p->z, NULL, l, 0);
        rl_lin_chain_block(p, dq, dk, t0, l, p->Zs);
    }
    if (!p->shen) return;
    for (int t0 = 0; t0 < p->N; t0 += RL_LIN_BLOCK) { /* dk -= phi_k colsum */
        int    l   = rl_lin_block_rows(p->N, t0);
        float *dkb = dk + (size_t)t0 * d;
        rl_lin_build_block(p, q, k, t0, l, SIDE_K);
        for (int i = 0; i < l; i++)
            for (int f = 0; f < d; f++)
                p->phk[(size_t)i * d + f] *= (float)p->Zs[f];
        if (p->input_rot) rl_rope_rotate(p->rope, p->phk, d, p->phk, d, l, t0, 1);
        for (size_t i = 0; i < (size_t)l * d; i++)
            dkb[i] -= p->phk[i];
    }
}

void rl_attn_linear_backward(const struct rl_lin_grads *g, const float *dout, const float *out,
                             const float *den, const struct rl_lin_head *h,
                             const struct rl_attn_opts *o, float *scratch)
{
    struct lin_plan p;
    call_plan(&p, h, o, scratch);
    gate_plan(&p, h);
    p.drel = g->drel;
    if (h->logf && h->rel)
        rl_lin_backward_quad(&p, g, dout, out, den, h);
    else if (h->logf)
        rl_lin_backward_gated(&p, g, dout, out, den, h, o->eps);
    else if (o->causal)
        backward_causal(&p, g, dout, out, den, h);
    else
        backward_full(&p, g, dout, out, den, h);
}
