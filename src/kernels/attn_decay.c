/* attn_decay.c -- causal ALiBi linear attention by the decayed scan.
 *
 * With exp(rel[(n-m)+N-1]) = gamma^(m-n) for n <= m (gamma = exp(-slope)):
 *   S_m = gamma S_{m-1} + B_m v_m^T   (d x dv),   z_m = gamma z_{m-1} + B_m   (d)
 *   o_m = A_m^T S_m / (A_m . z_m + eps)
 * with A, B the feature maps of attn_toeplitz.c (for softmax, A = phi_q / Z_m with the
 * unweighted prefix normaliser Z_m: the decay acts on the sums, not on Z).  The states
 * are double; O(N d dv) per pass.  The same sums as the FFT path, without its rounding
 * spread: each row is a sum of positive terms.
 *
 * The maps whose features are row by row (elu1, exp) run in pieces (the linear split's
 * phases, attn_linear_split.c): blocks of RL_DECAY_BLOCK rows.  A block's increment is its
 * scan from zero, S_b = sum_{n in b} gamma^(end-n) B_n v_n^T; the state entering block b
 * is the exclusive prefix P_b = gamma^(l_{b-1}) P_{b-1} + S_{b-1} in block order; the rows
 * then scan from it.  The backward's reverse states G_m = A_m dnum_m^T + gamma G_{m+1}
 * likewise, in reverse block order.  Shen's map (a column maximum and a normaliser over
 * the whole head) keeps one piece per head.  A head's states: nb + 1 slots of
 * [S: d x dv | z: d | G: d x dv | g: d] doubles. */
#include "config.h"
#include "attn_toeplitz_impl.h"
#include "../core/vexp.h" /* RL_SIMD_CLONES */

#include <math.h>
#include <string.h>

#define RL_DECAY_BLOCK 256

/* rows m0 .. m1-1 of v as doubles, at their rows of t->vT (the scan keeps v there; the
 * FFT path keeps v^T) */
static const double *v_double(rl_toeplitz *t, const float *v, int m0, int m1)
{
    for (size_t i = (size_t)m0 * t->dv; i < (size_t)m1 * t->dv; i++)
        t->vT[i] = v[i];
    return t->vT;
}

/* The forward scan over rows m0 .. m1-1 from the state in t->S, t->z: num_m = A_m^T S_m and
 * den_m = A_m . z_m into t->num, t->den. */
RL_SIMD_CLONES
static void scan_forward(rl_toeplitz *t, const double *vd, double gamma, int m0, int m1)
{
    const int d = t->d, dv = t->dv;
    for (int m = m0; m < m1; m++) {
        const double *a = t->A + (size_t)m * d, *b = t->B + (size_t)m * d;
        const double *vr = vd + (size_t)m * dv;
        double       *nr = t->num + (size_t)m * dv, dn = 0.0;
        memset(nr, 0, (size_t)dv * sizeof(double));
        for (int f = 0; f < d; f++) { /* decay_step fused with num_m = A_m^T S_m */
            double *s = t->S + (size_t)f * dv, af = a[f], bf = b[f];
#pragma omp simd
            for (int j = 0; j < dv; j++) {
                s[j] = gamma * s[j] + bf * vr[j];
                nr[j] += af * s[j];
            }
            t->z[f] = gamma * t->z[f] + bf;
            dn += af * t->z[f];
        }
        t->den[m] = dn;
    }
}

void rl_attn_decay_forward(rl_toeplitz *t, float *out, float *den, long *n_bad,
                           const struct rl_lin_head *h, double gamma, const struct rl_attn_opts *o)
{
    const int N = h->N, d = h->d, dv = h->dv;
    RL_ASSERT(N == t->N && d == t->d && dv == t->dv);
    rl_toeplitz_features(t, h->q, h->k, o->fmap, 1);
    const double *vd = v_double(t, h->v, 0, N);
    memset(t->S, 0, (size_t)d * dv * sizeof(double));
    memset(t->z, 0, (size_t)d * sizeof(double));
    scan_forward(t, vd, gamma, 0, N);
    rl_toeplitz_finish(t, out, den, n_bad, o->eps);
}

/* Pass 1 (forward in m) over rows m0 .. m1-1 from the state in t->S, t->z: recompute
 * S_m, z_m and take dA[m,f] = sum_j dnum[m,j] S_m[f,j] + dden[m] z_m[f]
 * (differentiates num_m = A_m^T S_m, den_m = A_m . z_m). */
RL_SIMD_CLONES
static void decay_dA(rl_toeplitz *t, const double *v, double gamma, int m0, int m1)
{
    int d = t->d, dv = t->dv;
    for (int m = m0; m < m1; m++) {
        const double *g = t->dnum + (size_t)m * dv, *b = t->B + (size_t)m * d;
        const double *vr = v + (size_t)m * dv;
        for (int f = 0; f < d; f++) {
            double *s = t->S + (size_t)f * dv, bf = b[f], acc;
            t->z[f] = gamma * t->z[f] + bf;
            acc     = t->dden[m] * t->z[f];
#pragma omp simd reduction(+ : acc)
            for (int j = 0; j < dv; j++) {
                s[j] = gamma * s[j] + bf * vr[j];
                acc += g[j] * s[j];
            }
            t->dA[(size_t)m * d + f] = acc;
        }
    }
}

/* Pass 2 (reverse) over rows m1-1 .. m0 from the state in t->dS, t->dz: G_m = dL/dS_m =
 * A_m dnum_m^T + gamma G_{m+1} (S_m feeds num_m and S_{m+1}), g_m = A_m dden_m +
 * gamma g_{m+1} likewise for z; then from S_m = gamma S_{m-1} + B_m v_m^T:
 * dB_m = G_m v_m + g_m,  dv_m = G_m^T B_m. */
RL_SIMD_CLONES
static void decay_reverse(rl_toeplitz *t, float *dv_out, const double *v, double gamma, int m0,
                          int m1)
{
    int d = t->d, dv = t->dv;
    for (int m = m1 - 1; m >= m0; m--) {
        const double *a = t->A + (size_t)m * d, *g = t->dnum + (size_t)m * dv;
        const double *b   = t->B + (size_t)m * d;
        const double *vr  = v + (size_t)m * dv;
        double       *dvr = t->num + (size_t)m * dv; /* dv accumulates in num */
        memset(dvr, 0, (size_t)dv * sizeof(double));
        for (int f = 0; f < d; f++) {
            double *G = t->dS + (size_t)f * dv, acc;
            t->dz[f]  = gamma * t->dz[f] + a[f] * t->dden[m];
            acc       = t->dz[f];
#pragma omp simd reduction(+ : acc)
            for (int j = 0; j < dv; j++) {
                G[j] = gamma * G[j] + a[f] * g[j];
                acc += G[j] * vr[j];
                dvr[j] += G[j] * b[f];
            }
            t->dB[(size_t)m * d + f] = acc;
        }
        for (int j = 0; j < dv; j++)
            dv_out[(size_t)m * dv + j] = (float)dvr[j];
    }
}

void rl_attn_decay_backward(rl_toeplitz *t, const struct rl_lin_grads *g, const float *dout,
                            const float *out, const float *den, const struct rl_lin_head *h,
                            double gamma, const struct rl_attn_opts *o)
{
    const int N = h->N, d = h->d, dv = h->dv;
    RL_ASSERT(N == t->N && d == t->d && dv == t->dv);
    rl_toeplitz_features(t, h->q, h->k, o->fmap, 1);
    rl_toeplitz_dout(t, dout, out, den);
    const double *vd = v_double(t, h->v, 0, N);
    memset(t->S, 0, (size_t)d * dv * sizeof(double));
    memset(t->z, 0, (size_t)d * sizeof(double));
    decay_dA(t, vd, gamma, 0, N);
    memset(t->dS, 0, (size_t)d * dv * sizeof(double));
    memset(t->dz, 0, (size_t)d * sizeof(double));
    decay_reverse(t, g->dv, vd, gamma, 0, N);
    rl_toeplitz_features_backward(t, g->dq, g->dk, h->q, h->k, o->fmap, 1);
}

/* ---- the pieces ------------------------------------------------------------------------- */

int rl_attn_decay_splits(const struct rl_attn_opts *o)
{
    return o->kind == RL_ATTN_LINEAR && o->alibi_scan && !o->forget && o->fmap != RL_FMAP_SOFTMAX;
}

int rl_attn_decay_blocks(int N) { return (N + RL_DECAY_BLOCK - 1) / RL_DECAY_BLOCK; }

static size_t decay_slot(int d, int dv) { return 2 * ((size_t)d * dv + (size_t)d); }

size_t rl_attn_decay_state_doubles(int N, int d, int dv)
{
    return (size_t)(rl_attn_decay_blocks(N) + 1) * decay_slot(d, dv);
}

/* Block b's slot: S at x, z at x + d dv, G after, g last. */
static double *slot(const struct rl_decay_piece *p, int b)
{
    return p->st + (size_t)b * decay_slot(p->t->d, p->t->dv);
}

static void block_rows(const struct rl_decay_piece *p, int b, int *m0, int *m1)
{
    *m0 = b * RL_DECAY_BLOCK;
    *m1 = *m0 + RL_DECAY_BLOCK < p->h->N ? *m0 + RL_DECAY_BLOCK : p->h->N;
}

/* The block's key features (and its queries' if asked), v in double, and (backward) dnum,
 * dden. */
static const double *block_setup(const struct rl_decay_piece *p, int m0, int m1, int queries)
{
    rl_toeplitz *t = p->t;
    RL_ASSERT(p->h->N == t->N && p->h->d == t->d && p->h->dv == t->dv);
    rl_toeplitz_features_rows(t, queries ? p->h->q : NULL, p->h->k, p->fm, m0, m1);
    if (p->dout) rl_toeplitz_dout_rows(t, p->dout, p->out, p->den, m0, m1);
    return v_double(t, p->h->v, m0, m1);
}

/* X += sum over rows m of c_m x_m y_m^T and x0 += sum c_m x_m y0_m (x: nx wide, y: ny),
 * c_m = gamma^(m1-1-m) (forward: each term decayed to the block's last row) or
 * gamma^(m-m0) (reverse: to its first). */
RL_SIMD_CLONES
static void weighted_sum(double *X, double *x0, const double *x, const double *y, const double *y0,
                         int nx, int ny, double gamma, int m0, int m1, int reverse)
{
    double c = 1.0;
    for (int i = 0; i < m1 - m0; i++, c *= gamma) {
        const int     m  = reverse ? m0 + i : m1 - 1 - i;
        const double *xm = x + (size_t)m * nx, *ym = y + (size_t)m * ny;
        for (int f = 0; f < nx; f++) {
            const double cf = c * xm[f];
            double      *X_ = X + (size_t)f * ny;
#pragma omp simd
            for (int j = 0; j < ny; j++)
                X_[j] += cf * ym[j];
            x0[f] += cf * (y0 ? y0[m] : 1.0);
        }
    }
}

/* Block b's increments: S_b = sum_n gamma^(end-n) B_n v_n^T and z_b likewise (the block's
 * scan from zero), and in the backward G_b = sum_m gamma^(m-start) A_m dnum_m^T and g_b
 * with dden_m (its reverse scan from zero). */
void rl_attn_decay_sums(const struct rl_decay_piece *p, int b)
{
    rl_toeplitz *t = p->t;
    const int    d = t->d, dv = t->dv;
    int          m0, m1;
    block_rows(p, b, &m0, &m1);
    const double *vd = block_setup(p, m0, m1, p->dout != NULL);
    double       *x = slot(p, b), *z = x + (size_t)d * dv;
    memset(x, 0, decay_slot(d, dv) * sizeof(double));
    weighted_sum(x, z, t->B, vd, NULL, d, dv, p->gamma, m0, m1, 0);
    if (p->dout)
        weighted_sum(z + d, z + d + (size_t)d * dv, t->A, t->dnum, t->dden, d, dv, p->gamma, m0, m1,
                     1);
}

/* gamma^(rows of block b): a carried state's decay across it */
static double block_decay(const struct rl_decay_piece *p, int b)
{
    int m0, m1;
    block_rows(p, b, &m0, &m1);
    return pow(p->gamma, (double)(m1 - m0));
}

/* The states entering every block: the forward ones' exclusive prefix in block order into
 * S, z, and (backward) the reverse ones' exclusive suffix into G, g; each carried state
 * decays by gamma^(rows) across a block. */
void rl_attn_decay_prefix(const struct rl_decay_piece *p)
{
    const int    nb = rl_attn_decay_blocks(p->h->N), d = p->t->d, dv = p->t->dv;
    const size_t nf  = (size_t)d * dv + (size_t)d; /* S and z; G and g follow */
    double      *run = slot(p, nb);
    memset(run, 0, decay_slot(d, dv) * sizeof(double));
    for (int b = 0; b < nb; b++)
        rl_lin_carry(slot(p, b), run, nf, block_decay(p, b), 1);
    for (int b = nb - 1; p->dout && b >= 0; b--)
        rl_lin_carry(slot(p, b) + nf, run + nf, nf, block_decay(p, b), 1);
}

long rl_attn_decay_rows(const struct rl_decay_piece *p, int b)
{
    rl_toeplitz *t = p->t;
    const int    d = t->d, dv = t->dv;
    int          m0, m1;
    block_rows(p, b, &m0, &m1);
    const double *vd = block_setup(p, m0, m1, 1), *x = slot(p, b), *z = x + (size_t)d * dv;
    memcpy(t->S, x, (size_t)d * dv * sizeof(double));
    memcpy(t->z, z, (size_t)d * sizeof(double));
    if (!p->dout) {
        scan_forward(t, vd, p->gamma, m0, m1);
        return rl_toeplitz_finish_rows(t, p->out, p->den, p->eps, m0, m1);
    }
    decay_dA(t, vd, p->gamma, m0, m1);
    memcpy(t->dS, z + d, (size_t)d * dv * sizeof(double));
    memcpy(t->dz, z + d + (size_t)d * dv, (size_t)d * sizeof(double));
    decay_reverse(t, p->g->dv, vd, p->gamma, m0, m1);
    rl_toeplitz_features_backward_rows(t, p->g->dq, p->g->dk, p->h->q, p->h->k, p->fm, m0, m1);
    return 0;
}
