/* attn_linear_shen.c -- causal Shen feature map with RoPE at the feature place (eq. 19).
 *
 * phi_k at query m is u_n / Z_m (per feature f, Z_m[f] = sum_{n<=m} u[n,f]); RoPE then
 * rotates it: the numerator term is (R_m p)^T R_n (u_n / Z_m), p = phi_q(q_m).  For one
 * pair (a, b) at angle n theta, with P = R_m p and x = u_n / Z_m,
 *   P^T R_n x = x_a (P_a cos + P_b sin) + x_b (P_b cos - P_a sin)
 *             = (P_a/Z_a) u_a cos + (P_b/Z_a) u_a sin + (P_b/Z_b) u_b cos - (P_a/Z_b) u_b sin,
 * a dot product of A'_m (query side, carries 1/Z_m) with C'_n = [u cos | u sin] (key side,
 * m-free) in 2d features: the causal scan of attn_linear_scan.c applies unchanged, at
 * twice the feature width, so the cost stays O(N d dv).  See attn_linear_impl.h. */
#include "config.h"
#include "attn_linear_impl.h"
#include "../core/vexp.h" /* RL_SIMD_CLONES */

/* Pair i of the rotation: features a = *pa, b = *pb. */
static void pair_of(const struct rl_rope *r, int i, int *pa, int *pb)
{
    int pairs = r->layout == RL_ROPE_LAYOUT_PAIRS;
    *pa       = pairs ? 2 * i : i;
    *pb       = pairs ? 2 * i + 1 : i + r->dims / 2;
}

void rl_lin_shen_rope_keys(float *C, const struct rl_lin_shen_block *sb)
{
    const struct rl_rope *rope = sb->rope;
    const float          *u    = sb->u;
    const int             d = sb->d, pos0 = sb->pos0, h = rope->dims / 2;
    for (int i = 0; i < sb->l; i++) {
        const float *um = u + (size_t)i * d;
        float       *Cc = C + (size_t)i * 2 * d, *Cs = Cc + d;
        const float *cs = rope->cos + (size_t)(pos0 + i) * h,
                    *sn = rope->sin + (size_t)(pos0 + i) * h;
        for (int f = rope->dims; f < d; f++)
            Cc[f] = um[f], Cs[f] = 0.0f; /* unrotated */
        for (int t = 0; t < h; t++) {
            int a, b;
            pair_of(rope, t, &a, &b);
            Cc[a] = um[a] * cs[t], Cs[a] = um[a] * sn[t];
            Cc[b] = um[b] * cs[t], Cs[b] = um[b] * sn[t];
        }
    }
}

/* x[f] / Z[f] for every f, rounded to float (the divisions in lanes). */
RL_SIMD_CLONES
static void divide_row(float *y, const float *x, const double *Z, int d)
{
#pragma omp simd
    for (int f = 0; f < d; f++)
        y[f] = (float)((double)x[f] / Z[f]);
}

/* Each row: A'c[f] = P_f / Z_f for every f; A's[a] = P_b / Z_a, A's[b] = -P_a / Z_b (0 past
 * the rotated dims), from the partners' values set out in A's first and divided in place. */
void rl_lin_shen_rope_queries(float *A, float *B, const float *phq,
                              const struct rl_lin_shen_block *sb)
{
    const struct rl_rope *rope = sb->rope;
    const float          *u    = sb->u;
    const int             d    = sb->d;
    double               *Z    = sb->Z;
    float                *P    = sb->work;
    for (int i = 0; i < sb->l; i++) {
        const float *um = u + (size_t)i * d, *pm = phq + (size_t)i * d;
        float       *Ac = A + (size_t)i * 2 * d, *As = Ac + d;
        for (int f = 0; f < d; f++)
            Z[f] += (double)um[f];
        rl_rope_rotate(rope, P, d, pm, d, 1, sb->pos0 + i, 0); /* P = R_m phi_q(q_m) */
        for (int f = rope->dims; f < d; f++)
            As[f] = 0.0f;
        for (int t = 0; t < rope->dims / 2; t++) {
            int a, b;
            pair_of(rope, t, &a, &b);
            As[a] = P[b], As[b] = -P[a];
        }
        divide_row(Ac, P, Z, d);
        divide_row(As, As, Z, d);
        if (B) divide_row(B + (size_t)i * d, pm, Z, d);
    }
}

/* The quotients x = dA'c / Z, y = dA's / Z (doubles), every f in lanes (a division rounds
 * the same in any lane). */
RL_SIMD_CLONES
static void query_row_quotients(double *x, double *y, const float *dAc, int d, const double *Z)
{
    const float *dAs = dAc + d;
#pragma omp simd
    for (int f = 0; f < d; f++) {
        x[f] = (double)dAc[f] / Z[f];
        y[f] = (double)dAs[f] / Z[f];
    }
}

/* dP (the gradient of P = R_m phi_q) and dZ_m from dA'_m, as the forward lines
 *   A'c[a] = P_a/Z_a, A's[a] = P_b/Z_a, A'c[b] = P_b/Z_b, A's[b] = -P_a/Z_b,  A'c[f] = P_f/Z_f
 * differentiate; dZ_f = -(dA'c[f] A'c[f] + dA's[f] A's[f]) / Z_f for every f.  work: 2d
 * doubles. */
static void query_row_backward(float *dP, double *dZ, const float *dAc, const float *Ac,
                               const struct rl_rope *rope, int d, const double *Z, double *work)
{
    const float *dAs = dAc + d, *As = Ac + d;
    double      *x = work, *y = work + d;
    for (int f = 0; f < d; f++) /* here, not in the lanes' clones: no fused multiply-add */
        dZ[f] = -((double)dAc[f] * (double)Ac[f] + (double)dAs[f] * (double)As[f]) / Z[f];
    query_row_quotients(x, y, dAc, d, Z);
    for (int f = rope->dims; f < d; f++)
        dP[f] = (float)x[f];
    for (int t = 0; t < rope->dims / 2; t++) {
        int a, b;
        pair_of(rope, t, &a, &b);
        dP[a] = (float)(x[a] - y[b]);
        dP[b] = (float)(y[a] + x[b]);
    }
}

void rl_lin_shen_rope_query_backward(float *dphq, double *dZ, const float *dA, const float *dB,
                                     const float *A, const float *B,
                                     const struct rl_lin_shen_block *sb)
{
    const struct rl_rope *rope = sb->rope;
    const float          *u    = sb->u;
    const int             d    = sb->d;
    double               *Z    = sb->Z;
    double               *work = (double *)sb->work; /* 2d doubles, then dP: d floats */
    float                *dP   = (float *)(work + 2 * d);
    for (int i = 0; i < sb->l; i++) {
        size_t  r  = (size_t)i * d;
        double *dz = dZ + r;
        for (int f = 0; f < d; f++)
            Z[f] += (double)u[r + f];
        query_row_backward(dP, dz, dA + 2 * r, A + 2 * r, rope, d, Z, work);
        /* P = R_m phi_q  =>  dphi_q = R_m^T dP */
        rl_rope_rotate(rope, dphq + r, d, dP, d, 1, sb->pos0 + i, 1);
        if (dB) /* B = phi_q / Z_m (plain denominator) */
            for (int f = 0; f < d; f++) {
                dphq[r + f] += (float)((double)dB[r + f] / Z[f]);
                dz[f] -= (double)dB[r + f] * (double)B[r + f] / Z[f];
            }
    }
}

/* C'c = u cos, C's = u sin (E = u);  Z_m = sum_{n<=m} u_n  =>  du_n += sum_{m>=n} dZ_m;
 * u = exp(k - colmax)  =>  dk = du u.  Zs: the suffix sum of dZ after the block. */
void rl_lin_shen_rope_key_backward(float *dk, const float *dC, const float *dE, double *dZ,
                                   const struct rl_lin_shen_block *sb)
{
    const struct rl_rope *rope = sb->rope;
    const float          *u    = sb->u;
    const int             d = sb->d, pos0 = sb->pos0, h = rope->dims / 2;
    double               *Zs = sb->Z;
    for (int i = sb->l - 1; i >= 0; i--) {
        size_t       r   = (size_t)i * d;
        const float *dCc = dC + 2 * r, *dCs = dCc + d;
        const float *cs = rope->cos + (size_t)(pos0 + i) * h,
                    *sn = rope->sin + (size_t)(pos0 + i) * h;
        double *du      = dZ + r; /* consumed into the suffix sum, then reused for du_n */
        for (int f = 0; f < d; f++)
            Zs[f] += du[f], du[f] = dCc[f]; /* unrotated: C'c = u */
        for (int t = 0; t < h; t++) {
            int a, b;
            pair_of(rope, t, &a, &b);
            du[a] = (double)dCc[a] * (double)cs[t] + (double)dCs[a] * (double)sn[t];
            du[b] = (double)dCc[b] * (double)cs[t] + (double)dCs[b] * (double)sn[t];
        }
        for (int f = 0; f < d; f++) {
            double g  = du[f] + (dE ? (double)dE[r + f] : 0.0) + Zs[f];
            dk[r + f] = (float)((double)u[r + f] * g);
        }
    }
}
