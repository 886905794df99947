/* attn_linear.c -- linear attention without a bias PE, one head (attn_linear.h, SPEC 2.2, 2.3).
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
 * The backward recomputes the features from q, k (O(N d)) rather than saving them. */
#include "config.h"
#include "attn_linear.h"
#include "attn_linear_impl.h"
#include "featmap.h"
#include "vexp.h"

#include <stdint.h>
#include <string.h>

enum lin_mode { PLAIN, ROT_NUM, ROT_BOTH, SHEN, SHEN_ROT_NUM, SHEN_ROT_BOTH };

/* Views into the caller's scratch.  B, E, dB, dE, dphq, dphk alias other buffers where
 * the table above says so. */
struct lin_plan {
    enum lin_mode mode;
    int           N, d, dv, D, Dd, causal, shen, input_rot;
    float        *xq, *xk, *phq, *phk, *A, *C, *B, *E, *colmax, *row, *work;
    float        *dnum, *dA, *dC, *dB, *dE, *dphq, *dphk;
    double       *zd, *dden, *dZ;
};

static enum lin_mode lin_mode(const struct rl_attn_opts *o, int has_rope)
{
    int feat = has_rope && o->rope_place == RL_ROPE_PLACE_FEATURE;
    int both = feat && o->rope_denominator == RL_ROPE_DENOM_ROTATED;
    if (o->fmap == RL_FMAP_SOFTMAX && o->causal) return !feat ? SHEN : both ? SHEN_ROT_BOTH : SHEN_ROT_NUM;
    return !feat ? PLAIN : both ? ROT_BOTH : ROT_NUM;
}

/* n floats at *off (64-byte granules); NULL while only sizing. */
static float *at(float *base, size_t *off, size_t n)
{
    float *r = base ? base + *off : NULL;
    *off += (n + 15) & ~(size_t)15;
    return r;
}

/* Lays the plan out in scratch (NULL: sizing only); returns the floats used. */
static size_t lin_plan(struct lin_plan *p, const struct rl_attn_opts *o, int has_rope, int N, int d,
                       int dv, float *s)
{
    size_t nd = (size_t)N * d, off = 0;
    p->mode = lin_mode(o, has_rope);
    p->N = N, p->d = d, p->dv = dv, p->causal = o->causal;
    p->shen      = o->fmap == RL_FMAP_SOFTMAX;
    p->input_rot = has_rope && o->rope_place == RL_ROPE_PLACE_INPUT;
    p->D         = p->mode >= SHEN_ROT_NUM ? 2 * d : d;
    p->Dd        = p->mode == SHEN_ROT_BOTH ? 2 * d : d;
    size_t nD = (size_t)N * p->D, nDd = (size_t)N * p->Dd, M = (size_t)(p->D > dv ? p->D : dv);
    p->xq = p->xk = NULL;
    if (p->input_rot) p->xq = at(s, &off, nd), p->xk = at(s, &off, nd);
    p->phq = at(s, &off, nd), p->phk = at(s, &off, nd);
    p->A   = p->mode == PLAIN ? p->phq : at(s, &off, nD);
    p->C   = p->mode == PLAIN || p->mode == SHEN ? p->phk : at(s, &off, nD);
    p->B   = p->mode == ROT_NUM ? p->phq : p->mode == SHEN_ROT_NUM ? at(s, &off, nd) : p->A;
    p->E   = p->mode == ROT_NUM || p->mode == SHEN_ROT_NUM ? p->phk : p->C;
    p->colmax = at(s, &off, (size_t)d), p->row = at(s, &off, (size_t)d);
    p->zd     = (double *)at(s, &off, 4 * M);
    p->work   = at(s, &off, rl_lin_num_work_floats(p->D, dv));
    /* backward only */
    p->dnum = at(s, &off, (size_t)N * dv);
    p->dden = (double *)at(s, &off, 2 * (size_t)N);
    p->dA = at(s, &off, nD), p->dC = at(s, &off, nD);
    int sep = p->mode == ROT_NUM || p->mode == SHEN_ROT_NUM; /* B, E not aliasing A, C */
    p->dB   = sep ? at(s, &off, nDd) : p->dA;
    p->dE   = sep ? at(s, &off, nDd) : p->dC;
    p->dphq = p->mode >= SHEN ? at(s, &off, nd) : p->dA;
    p->dphk = p->mode >= SHEN ? NULL : p->dC; /* Shen causal writes dk directly */
    p->dZ   = p->mode >= SHEN ? (double *)at(s, &off, 2 * nd) : NULL;
    return off;
}

size_t rl_attn_linear_scratch_floats(const struct rl_attn_opts *o, int N, int d, int dv)
{
    struct lin_plan p;
    return lin_plan(&p, o, o->pe == RL_ATTN_PE_ROPE, N, d, dv, NULL);
}

/* Non-causal Shen: phi_k[n,f] = u[n,f] / sum_n' u[n',f] (the colmax shift cancels here). */
static void shen_normalise(float *u, int N, int d, double *z)
{
    memset(z, 0, (size_t)d * sizeof(double));
    for (int n = 0; n < N; n++)
        for (int f = 0; f < d; f++) z[f] += (double)u[(size_t)n * d + f];
    for (int n = 0; n < N; n++)
        for (int f = 0; f < d; f++) u[(size_t)n * d + f] = (float)((double)u[(size_t)n * d + f] / z[f]);
}

/* Backward of shen_normalise: dk[n,f] = phi[n,f] (g[n,f] - sum_n' g[n',f] phi[n',f]). */
static void shen_normalise_backward(float *dk, const float *g, const float *phi, int N, int d,
                                    double *z)
{
    memset(z, 0, (size_t)d * sizeof(double));
    for (size_t i = 0; i < (size_t)N * d; i++) z[i % (size_t)d] += (double)g[i] * (double)phi[i];
    for (size_t i = 0; i < (size_t)N * d; i++)
        dk[i] = (float)((double)phi[i] * ((double)g[i] - z[i % (size_t)d]));
}

/* Causal Shen without a feature-place rotation: A_m = phi_q(q_m) / Z_m, Z_m = sum_{n<=m} u_n,
 * since num_m = sum_f phi_q[m,f]/Z_m[f] sum_{n<=m} u[n,f] v_n (the prefix normaliser moves to
 * the query side, so the scan is the plain one with C = u). */
static void shen_prefix(float *A, const float *phq, const float *u, int N, int d, double *Z)
{
    memset(Z, 0, (size_t)d * sizeof(double));
    for (int m = 0; m < N; m++)
        for (int f = 0; f < d; f++) {
            size_t i = (size_t)m * d + f;
            Z[f] += (double)u[i];
            A[i] = (float)((double)phq[i] / Z[f]);
        }
}

/* Backward of shen_prefix with C = u:  A = phi_q / Z  =>  dphi_q = dA / Z, dZ_m = -dA A / Z;
 * Z_m = sum_{n<=m} u_n  =>  du_n = dC_n + sum_{m>=n} dZ_m;  u = exp(k - c)  =>  dk = du u. */
static void shen_prefix_backward(float *dphq, float *dk, const float *dA, const float *dC,
                                 const float *A, const float *u, int N, int d, double *Z,
                                 double *dZ)
{
    memset(Z, 0, (size_t)d * sizeof(double));
    for (int m = 0; m < N; m++)
        for (int f = 0; f < d; f++) {
            size_t i = (size_t)m * d + f;
            Z[f] += (double)u[i];
            dphq[i] = (float)((double)dA[i] / Z[f]);
            dZ[i]   = -(double)dA[i] * (double)A[i] / Z[f];
        }
    memset(Z, 0, (size_t)d * sizeof(double)); /* now the suffix sum of dZ */
    for (int n = N - 1; n >= 0; n--)
        for (int f = 0; f < d; f++) {
            size_t i = (size_t)n * d + f;
            Z[f] += dZ[i];
            dk[i] = (float)((double)u[i] * ((double)dC[i] + Z[f]));
        }
}

static void build_features(struct lin_plan *p, const float *q, const float *k,
                           const struct rl_rope *rope, enum rl_fmap fmap)
{
    const int    N = p->N, d = p->d;
    const float *xq = q, *xk = k;
    if (p->input_rot) { /* rope_place = input: phi(R_m q_m), phi(R_n k_n) */
        rl_rope_rotate(rope, p->xq, d, q, d, N, 0, 0);
        rl_rope_rotate(rope, p->xk, d, k, d, N, 0, 0);
        xq = p->xq, xk = p->xk;
    }
    rl_fmap_q_forward(p->phq, xq, N, d, fmap);
    rl_fmap_k_forward(p->phk, p->colmax, xk, N, d, fmap);
    if (p->shen && !p->causal) shen_normalise(p->phk, N, d, p->zd);
    switch (p->mode) {
    case PLAIN: break;
    case ROT_NUM:
    case ROT_BOTH: /* eq. 19: R_m phi_q(q_m), R_n phi_k(k_n) */
        rl_rope_rotate(rope, p->A, d, p->phq, d, N, 0, 0);
        rl_rope_rotate(rope, p->C, d, p->phk, d, N, 0, 0);
        break;
    case SHEN: shen_prefix(p->A, p->phq, p->phk, N, d, p->zd); break;
    case SHEN_ROT_NUM:
    case SHEN_ROT_BOTH:
        rl_lin_shen_rope_features(p->A, p->C, p->mode == SHEN_ROT_NUM ? p->B : NULL, p->phq,
                                  p->phk, rope, N, d, p->zd, p->row);
        break;
    }
}

void rl_attn_linear_forward(float *out, float *den, long *n_bad, const float *q, const float *k,
                            const float *v, const struct rl_rope *rope,
                            const struct rl_attn_opts *o, int N, int d, int dv, float *scratch)
{
    struct lin_plan p;
    RL_ASSERT(((uintptr_t)scratch & 7) == 0 && N > 0 && d > 0 && dv > 0);
    RL_ASSERT(!rope || (rope->d == d && rope->n_pos >= N));
    lin_plan(&p, o, rope != NULL, N, d, dv, scratch);
    build_features(&p, q, k, rope, o->fmap);
    rl_lin_num_forward(out, p.A, p.C, v, N, p.D, dv, o->causal, p.work);
    long bad = rl_lin_den_forward(den, out, dv, p.B, p.E, N, p.Dd, o->causal, o->eps, p.zd);
    if (n_bad) *n_bad = bad;
}

/* dphi_q, dphi_k from dA, dB, dC, dE (and straight to dk for causal Shen). */
static void features_backward(struct lin_plan *p, float *dk, const struct rl_rope *rope)
{
    const int    N = p->N, d = p->d;
    const size_t nd = (size_t)N * d;
    switch (p->mode) {
    case PLAIN: break; /* dB, dE were added into dA, dC */
    case ROT_NUM:
    case ROT_BOTH: /* A = R phi_q  =>  dphi_q = R^T dA (+ dB when B = phi_q) */
        rl_rope_rotate(rope, p->dA, d, p->dA, d, N, 0, 1);
        rl_rope_rotate(rope, p->dC, d, p->dC, d, N, 0, 1);
        if (p->mode == ROT_NUM)
            for (size_t i = 0; i < nd; i++) p->dA[i] += p->dB[i], p->dC[i] += p->dE[i];
        break;
    case SHEN: shen_prefix_backward(p->dphq, dk, p->dA, p->dC, p->A, p->phk, N, d, p->zd, p->dZ); break;
    case SHEN_ROT_NUM:
    case SHEN_ROT_BOTH:
        rl_lin_shen_rope_backward(p->dphq, dk, p->dA, p->dC, p->mode == SHEN_ROT_NUM ? p->dB : NULL,
                                  p->mode == SHEN_ROT_NUM ? p->dE : NULL, p->A, p->B, p->phk,
                                  rope, N, d, p->zd, p->dZ, p->row);
        break;
    }
}

/* o_m = num_m / den_m  =>  dnum_m = dout_m / den_m,  dden_m = -(dout_m . o_m) / den_m */
RL_SIMD_CLONES
static void output_backward(float *dnum, double *dden, const float *dout, const float *out,
                            const float *den, int N, int dv)
{
    for (int m = 0; m < N; m++) {
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

void rl_attn_linear_backward(float *dq, float *dk, float *dvg, const float *dout, const float *out,
                             const float *den, const float *q, const float *k, const float *v,
                             const struct rl_rope *rope, const struct rl_attn_opts *o, int N,
                             int d, int dv, float *scratch)
{
    struct lin_plan p;
    const int       nv = dv;
    RL_ASSERT(((uintptr_t)scratch & 7) == 0 && N > 0 && d > 0 && nv > 0);
    lin_plan(&p, o, rope != NULL, N, d, nv, scratch);
    build_features(&p, q, k, rope, o->fmap);
    output_backward(p.dnum, p.dden, dout, out, den, N, nv);
    rl_lin_num_backward(p.dA, p.dC, dvg, p.dnum, p.A, p.C, v, N, p.D, nv, o->causal, p.work);
    if (p.dB != p.dA) {
        memset(p.dB, 0, (size_t)N * p.Dd * sizeof(float));
        memset(p.dE, 0, (size_t)N * p.Dd * sizeof(float));
    }
    rl_lin_den_backward(p.dB, p.dE, p.dden, p.B, p.E, N, p.Dd, o->causal, p.zd);
    features_backward(&p, dk, rope);
    const float *xq = p.input_rot ? p.xq : q, *xk = p.input_rot ? p.xk : k;
    rl_fmap_q_backward(dq, p.dphq, xq, p.phq, N, d, o->fmap);
    if (p.mode < SHEN) {
        if (p.shen)
            shen_normalise_backward(dk, p.dphk, p.phk, N, d, p.zd);
        else
            rl_fmap_k_backward(dk, p.dphk, xk, p.phk, N, d, o->fmap);
    }
    if (p.input_rot) { /* q~ = R q  =>  dq = R^T dq~ */
        rl_rope_rotate(rope, dq, d, dq, d, N, 0, 1);
        rl_rope_rotate(rope, dk, d, dk, d, N, 0, 1);
    }
}
