/* attn_toeplitz.c -- linear attention with a relative bias by FFT Toeplitz products
 * (SPEC 2.4, Luo et al. 2021); the derivation is in docs/attention_toeplitz.md.
 *
 * Per head, with T[m,n] = exp(rel[(n-m)+N-1]) (0 for n > m when causal):
 *   o_m = sum_f A[m,f] y_f,j[m] / (sum_f A[m,f] z_f[m] + eps),
 *   y_f,j = T (B[:,f] .* v[:,j]),   z_f = T B[:,f]
 * where A, B are the feature maps in double:
 *   elu1, exp:  A = phi_q(q), B = phi_k(k)  (exp: B = exp(k), unshifted -- a shift would
 *               not change the FFT's relative error, and double holds exp(30) easily)
 *   softmax:    B = exp(k - c_f), c_f = max_n k[n,f] (cancels exactly), A = phi_q(q) / Z,
 *               Z_m[f] = sum of B[n',f] over all n' (non-causal) or n' <= m (causal).
 * For each feature f the dv + 1 columns (B v_j, B) go through one batched r2c / c2r
 * pair (rl_fft_conv), so memory is O(N dv), never O(N d dv).
 * The decayed scan for causal ALiBi is in attn_decay.c and shares the feature and
 * gradient plumbing here (attn_toeplitz_impl.h). */
#include "config.h"
#include "attn_toeplitz_impl.h"

#include <math.h>
#include <string.h>

void rl_toeplitz_free(rl_toeplitz *t)
{
    if (!t) return;
    rl_fft_conv_free(t->conv);
    float  *fl[] = {t->phq, t->phk, t->dph, t->colmax};
    double *db[] = {t->E,   t->corr, t->A, t->B,  t->Z, t->dA, t->dB, t->num, t->dnum,
                    t->den, t->dden, t->S, t->dS, t->z, t->dz, t->w,  t->wg};
    rl_free(t->cut_x), rl_free(t->cut_y);
    for (size_t i = 0; i < sizeof fl / sizeof fl[0]; i++) rl_free(fl[i]);
    for (size_t i = 0; i < sizeof db / sizeof db[0]; i++) rl_free(db[i]);
    rl_free(t);
}

rl_status rl_toeplitz_create(rl_toeplitz **out, int N, int d, int dv)
{
    *out = NULL;
    if (N < 1 || d < 1 || dv < 1)
        RL_FAIL(RL_EINVAL, "toeplitz: N=%d, d=%d, dv=%d must be >= 1", N, d, dv);
    rl_toeplitz *t = rl_alloc(sizeof *t);
    if (!t) RL_FAIL(RL_ENOMEM, "toeplitz: out of memory");
    t->N = N, t->d = d, t->dv = dv;
    size_t nd = (size_t)N * d, nv = (size_t)N * dv, fs = sizeof(float), ds = sizeof(double);
    t->phq = rl_alloc(nd * fs), t->phk = rl_alloc(nd * fs), t->dph = rl_alloc(nd * fs);
    t->colmax = rl_alloc((size_t)d * fs);
    t->E = rl_alloc((2 * (size_t)N - 1) * ds), t->corr = rl_alloc((2 * (size_t)N - 1) * ds);
    t->A = rl_alloc(nd * ds), t->B = rl_alloc(nd * ds), t->Z = rl_alloc(nd * ds);
    t->dA = rl_alloc(nd * ds), t->dB = rl_alloc(nd * ds);
    t->num = rl_alloc(nv * ds), t->dnum = rl_alloc(nv * ds);
    t->den = rl_alloc((size_t)N * ds), t->dden = rl_alloc((size_t)N * ds);
    t->S = rl_alloc((size_t)d * dv * ds), t->dS = rl_alloc((size_t)d * dv * ds);
    t->z = rl_alloc((size_t)d * ds), t->dz = rl_alloc((size_t)d * ds);
    t->w = rl_alloc((size_t)N * ds), t->wg = rl_alloc((size_t)N * ds);
    t->cut_x = rl_alloc(((size_t)N + 1) * sizeof(int));
    t->cut_y = rl_alloc(((size_t)N + 1) * sizeof(int));
    if (!t->phq || !t->phk || !t->dph || !t->colmax || !t->E || !t->corr || !t->A || !t->B ||
        !t->Z || !t->dA || !t->dB || !t->num || !t->dnum || !t->den || !t->dden || !t->S ||
        !t->dS || !t->z || !t->dz || !t->w || !t->wg || !t->cut_x || !t->cut_y) {
        rl_toeplitz_free(t);
        RL_FAIL(RL_ENOMEM, "toeplitz: out of memory for N=%d, d=%d, dv=%d", N, d, dv);
    }
    rl_status s = rl_fft_conv_create(&t->conv, N, dv + 1);
    if (s != RL_OK) {
        rl_toeplitz_free(t);
        return s;
    }
    *out = t;
    return RL_OK;
}

/* A, B (and Z for softmax) from q, k; see the file header. */
void rl_toeplitz_features(rl_toeplitz *t, const float *q, const float *k, enum rl_fmap fm,
                          int causal)
{
    int    N = t->N, d = t->d;
    size_t nd = (size_t)N * d;
    rl_fmap_q_forward(t->phq, q, N, d, fm);
    rl_fmap_k_forward(t->phk, t->colmax, k, N, d, fm);
    for (size_t i = 0; i < nd; i++) t->A[i] = t->phq[i], t->B[i] = t->phk[i];
    if (fm != RL_FMAP_SOFTMAX) return;
    /* Z_m[f] = sum_{n'} exp(k[n',f] - c_f) over the prefix n' <= m, or over all n' */
    for (int f = 0; f < d; f++) {
        double s = 0.0;
        for (int m = 0; m < N; m++) {
            s += t->B[(size_t)m * d + f];
            t->Z[(size_t)m * d + f] = s;
        }
        if (!causal)
            for (int m = 0; m < N; m++) t->Z[(size_t)m * d + f] = s;
    }
    for (size_t i = 0; i < nd; i++) t->A[i] /= t->Z[i];
}

/* out = num / (den + eps) from t->num, t->den (the sums before eps). */
void rl_toeplitz_finish(rl_toeplitz *t, float *out, float *den, long *n_bad, float eps)
{
    int  N = t->N, dv = t->dv;
    long bad = 0;
    for (int m = 0; m < N; m++) {
        double dn = t->den[m];
        bad += dn <= (double)eps;
        dn += (double)eps;
        den[m] = (float)dn;
        for (int j = 0; j < dv; j++)
            out[(size_t)m * dv + j] = (float)(t->num[(size_t)m * dv + j] / dn);
    }
    *n_bad = bad;
}

/* The fixed part of every backward: from o = num / den,
 *   dnum[m,j] = g[m,j] / den[m],   dden[m] = -(g_m . o_m) / den[m]. */
void rl_toeplitz_dout(rl_toeplitz *t, const float *dout, const float *out, const float *den)
{
    int N = t->N, dv = t->dv;
    for (int m = 0; m < N; m++) {
        double inv = 1.0 / den[m], go = 0.0;
        for (int j = 0; j < dv; j++) {
            size_t i = (size_t)m * dv + j;
            t->dnum[i] = dout[i] * inv;
            go += (double)dout[i] * out[i];
        }
        t->dden[m] = -go * inv;
    }
}

/* dq, dk from dA, dB (t->dA, t->dB: gradients of the loss w.r.t. A and B). */
void rl_toeplitz_features_backward(rl_toeplitz *t, float *dq, float *dk, const float *q,
                                   const float *k, enum rl_fmap fm, int causal)
{
    int    N = t->N, d = t->d;
    size_t nd = (size_t)N * d;
    if (fm == RL_FMAP_SOFTMAX) {
        /* A = phi_q / Z:  dphi_q = dA / Z,  dZ_m = -dA A / Z;  Z_m = sum_{n' <= m} B[n']
         * (or all n'), so dB[n] += sum over m >= n (or all m) of dZ_m */
        for (int f = 0; f < d; f++) {
            double s = 0.0;
            if (!causal)
                for (int m = 0; m < N; m++) {
                    size_t i = (size_t)m * d + f;
                    s -= t->dA[i] * t->A[i] / t->Z[i];
                }
            for (int m = N - 1; m >= 0; m--) {
                size_t i = (size_t)m * d + f;
                if (causal) s -= t->dA[i] * t->A[i] / t->Z[i];
                t->dB[i] += s;
            }
        }
        for (size_t i = 0; i < nd; i++) t->dph[i] = (float)(t->dA[i] / t->Z[i]);
    } else {
        for (size_t i = 0; i < nd; i++) t->dph[i] = (float)t->dA[i];
    }
    rl_fmap_q_backward(dq, t->dph, q, t->phq, N, d, fm);
    /* B = exp(k - c) (softmax, exp) or elu1(k): the elementwise derivative */
    for (size_t i = 0; i < nd; i++) t->dph[i] = (float)t->dB[i];
    rl_fmap_k_backward(dk, t->dph, k, t->phk, N, d, fm);
}

/* Magnitude segments (causal only).  An FFT's rounding error at every output is relative
 * to the largest input anywhere, but causal row m sums only the inputs n <= m (and the
 * adjoint T^T only m >= n).  When a feature's exp(k) grows by many orders of magnitude
 * along the sequence (Shen's causal map with |k| ~ 30: the prefix normaliser of early
 * rows is ~e^-60 of the last), early rows would drown in the error of later, larger
 * terms.  So the sequence is cut wherever the running maximum of the input grows by more
 * than SEG_GROWTH, and each prefix (suffix for T^T) is transformed on its own, which
 * keeps the error of a row relative to the terms it really sums.  Keys of moderate range
 * give one segment: one transform per column, as without segments. */
#define SEG_GROWTH 1e4

/* cut[0] = 0 < cut[1] < ... < cut[S] = N from w (N magnitudes); returns S.  reverse:
 * running maximum from the end. */
static int segments(int *cut, const double *w, int N, int causal, int reverse)
{
    int    S = 0, lo = 0, hi = N;
    double run = 0, ref = 0; /* running maximum; its value where the segment began */
    if (!causal) return cut[0] = 0, cut[1] = N, 1;
    cut[S++] = reverse ? N : 0;
    for (int i = 0; i < N; i++) {
        int m = reverse ? N - 1 - i : i;
        if (w[m] > run) run = w[m];
        if (ref == 0) ref = run; /* zero inputs carry no error */
        if (w[m] > SEG_GROWTH * ref) cut[S++] = reverse ? m + 1 : m, ref = run;
    }
    cut[S] = reverse ? 0 : N;
    for (lo = 0, hi = S; reverse && lo < hi; lo++, hi--) {
        int c = cut[lo];
        cut[lo] = cut[hi], cut[hi] = c;
    }
    return S;
}

/* Columns c < dv of the FFT buffer: B[:,f] .* v[:,c]; column dv: B[:,f]; rows [lo, hi),
 * zero elsewhere. */
static void load_x(rl_toeplitz *t, const float *v, int f, int lo, int hi)
{
    int     N = t->N, d = t->d, dv = t->dv, L = rl_fft_conv_length(t->conv);
    double *buf = rl_fft_conv_buf(t->conv);
    for (int j = 0; j <= dv; j++) {
        double *col = buf + (size_t)j * L;
        memset(col, 0, (size_t)N * sizeof(double));
        for (int n = lo; n < hi; n++)
            col[n] = t->B[(size_t)n * d + f] * (j < dv ? v[(size_t)n * dv + j] : 1.0f);
    }
}

/* The adjoint inputs dy_f,j[m] = dnum[m,j] A[m,f], dz_f[m] = dden[m] A[m,f], rows [lo, hi). */
static void load_dy(rl_toeplitz *t, int f, int lo, int hi)
{
    int     N = t->N, d = t->d, dv = t->dv, L = rl_fft_conv_length(t->conv);
    double *buf = rl_fft_conv_buf(t->conv);
    for (int j = 0; j <= dv; j++) {
        double *col = buf + (size_t)j * L;
        memset(col, 0, (size_t)N * sizeof(double));
        for (int m = lo; m < hi; m++)
            col[m] = t->A[(size_t)m * d + f] * (j < dv ? t->dnum[(size_t)m * dv + j] : t->dden[m]);
    }
}

static void load_kernel(rl_toeplitz *t, const float *rel, int causal)
{
    int N = t->N;
    for (int r = 0; r < 2 * N - 1; r++) t->E[r] = exp((double)rel[r]);
    rl_fft_conv_set_kernel(t->conv, t->E, causal);
}

/* Segments of x_f by the running maximum of B[:,f] (into t->cut_x). */
static int segments_x(rl_toeplitz *t, int f, int causal)
{
    for (int m = 0; m < t->N; m++) t->w[m] = t->B[(size_t)m * t->d + f];
    return segments(t->cut_x, t->w, t->N, causal, 0);
}

void rl_attn_toeplitz_forward(rl_toeplitz *t, float *out, float *den, long *n_bad, const float *q,
                              const float *k, const float *v, const float *rel,
                              const struct rl_attn_opts *o, int N, int d, int dv)
{
    RL_ASSERT(N == t->N && d == t->d && dv == t->dv);
    int           L   = rl_fft_conv_length(t->conv);
    const double *buf = rl_fft_conv_buf(t->conv);
    rl_toeplitz_features(t, q, k, o->fmap, o->causal);
    load_kernel(t, rel, o->causal);
    memset(t->num, 0, (size_t)N * dv * sizeof(double));
    memset(t->den, 0, (size_t)N * sizeof(double));
    for (int f = 0; f < d; f++) {
        int nseg = segments_x(t, f, o->causal);
        for (int s = 0; s < nseg; s++) {
            load_x(t, v, f, 0, t->cut_x[s + 1]);
            rl_fft_conv_apply(t->conv, 0); /* y_f,j = T (B_f v_j), z_f = T B_f */
            for (int m = t->cut_x[s]; m < t->cut_x[s + 1]; m++) {
                double  a  = t->A[(size_t)m * d + f];
                double *nr = t->num + (size_t)m * dv;
                for (int j = 0; j < dv; j++) nr[j] += a * buf[(size_t)j * L + m];
                t->den[m] += a * buf[(size_t)dv * L + m];
            }
        }
    }
    rl_toeplitz_finish(t, out, den, n_bad, o->eps);
}

/* dA[m,f] = sum_j dnum[m,j] y_f,j[m] + dden[m] z_f[m] for rows [lo, hi) of the buffer. */
static void grad_A(rl_toeplitz *t, int f, int lo, int hi)
{
    int           d = t->d, dv = t->dv, L = rl_fft_conv_length(t->conv);
    const double *buf = rl_fft_conv_buf(t->conv);
    for (int m = lo; m < hi; m++) {
        const double *dn = t->dnum + (size_t)m * dv;
        double        s  = t->dden[m] * buf[(size_t)dv * L + m];
        for (int j = 0; j < dv; j++) s += dn[j] * buf[(size_t)j * L + m];
        t->dA[(size_t)m * d + f] = s;
    }
}

/* From dx = T^T dy in the buffer, rows [lo, hi):  x = B_f v_j  =>
 * dB[n,f] = sum_j dx_j[n] v[n,j] + dx_z[n],  dv[n,j] += dx_j[n] B[n,f] (kept in t->num). */
static void grad_Bv(rl_toeplitz *t, const float *v, int f, int lo, int hi)
{
    int           d = t->d, dv = t->dv, L = rl_fft_conv_length(t->conv);
    const double *buf = rl_fft_conv_buf(t->conv);
    for (int n = lo; n < hi; n++) {
        double  b = t->B[(size_t)n * d + f], s = buf[(size_t)dv * L + n];
        double *dvr = t->num + (size_t)n * dv;
        for (int j = 0; j < dv; j++) {
            double dx = buf[(size_t)j * L + n];
            s += dx * v[(size_t)n * dv + j];
            dvr[j] += dx * b;
        }
        t->dB[(size_t)n * d + f] = s;
    }
}

/* Per feature f (derivation in docs/attention_toeplitz.md):
 *   forward:  num[m,j] += A[m,f] y_f,j[m],  den[m] += A[m,f] z_f[m],  y = T x
 *   =>  dA (grad_A, from y recomputed),  dy_f,j[m] = dnum[m,j] A[m,f],  dz_f[m] = dden[m] A[m,f]
 *   =>  dx = T^T dy (grad_Bv),  d E[r] = sum_{n-m=r} dy[m] x[n]: a correlation of slot 1
 *       (dy) against slot 0 (x), accumulated over features in the frequency domain.
 * With one segment each way the spectra of the products are reused for the correlation;
 * otherwise each pair of an x segment and a later-or-overlapping dy segment is
 * correlated on its own (rows outside a segment zero), which sums to the same. */
static void backward_feature(rl_toeplitz *t, const float *v, int f, int causal, int want_rel)
{
    int N = t->N, nx = segments_x(t, f, causal), ny, fused;
    for (int m = 0; m < N; m++) t->w[m] = fabs(t->A[(size_t)m * t->d + f]) * t->wg[m];
    ny    = segments(t->cut_y, t->w, N, causal, 1);
    fused = nx == 1 && ny == 1;
    for (int s = 0; s < nx; s++) {
        load_x(t, v, f, 0, t->cut_x[s + 1]);
        rl_fft_conv_r2c(t->conv, 0);
        rl_fft_conv_mul(t->conv, 1, 0, 0);
        rl_fft_conv_c2r(t->conv, 1);
        grad_A(t, f, t->cut_x[s], t->cut_x[s + 1]);
    }
    for (int s = 0; s < ny; s++) {
        load_dy(t, f, t->cut_y[s], N);
        rl_fft_conv_r2c(t->conv, 1);
        if (fused && want_rel) rl_fft_conv_corr_acc(t->conv, 1, 0);
        rl_fft_conv_mul(t->conv, 1, 1, 1);
        rl_fft_conv_c2r(t->conv, 1);
        grad_Bv(t, v, f, t->cut_y[s], t->cut_y[s + 1]);
    }
    for (int a = 0; want_rel && !fused && a < nx; a++) {
        load_x(t, v, f, t->cut_x[a], t->cut_x[a + 1]);
        rl_fft_conv_r2c(t->conv, 0);
        for (int b = 0; b < ny; b++) {
            if (t->cut_x[a] >= t->cut_y[b + 1]) continue; /* no pair n <= m */
            load_dy(t, f, t->cut_y[b], t->cut_y[b + 1]);
            rl_fft_conv_r2c(t->conv, 1);
            rl_fft_conv_corr_acc(t->conv, 1, 0);
        }
    }
}

void rl_attn_toeplitz_backward(rl_toeplitz *t, float *dq, float *dk, float *dv, double *drel,
                               const float *dout, const float *out, const float *den,
                               const float *q, const float *k, const float *v, const float *rel,
                               const struct rl_attn_opts *o, int N, int d, int dv_)
{
    RL_ASSERT(N == t->N && d == t->d && dv_ == t->dv);
    rl_toeplitz_features(t, q, k, o->fmap, o->causal);
    load_kernel(t, rel, o->causal);
    rl_toeplitz_dout(t, dout, out, den);
    for (int m = 0; m < N; m++) { /* row scale of the adjoint inputs, for the segments */
        double s = fabs(t->dden[m]);
        for (int j = 0; j < dv_; j++) s = fmax(s, fabs(t->dnum[(size_t)m * dv_ + j]));
        t->wg[m] = s;
    }
    memset(t->num, 0, (size_t)N * dv_ * sizeof(double)); /* dv accumulates here */
    if (drel) rl_fft_conv_corr_zero(t->conv);
    for (int f = 0; f < d; f++) backward_feature(t, v, f, o->causal, drel != NULL);
    if (drel) {
        /* rel -> E = exp(rel): d rel[r] = E[r] d E[r]; causal T never uses r = n-m > 0 */
        rl_fft_conv_corr_read(t->conv, t->corr);
        int rmax = o->causal ? N - 1 : 2 * N - 2;
        for (int r = 0; r <= rmax; r++) drel[r] += t->E[r] * t->corr[r];
    }
    for (size_t i = 0; i < (size_t)N * dv_; i++) dv[i] = (float)t->num[i];
    rl_toeplitz_features_backward(t, dq, dk, q, k, o->fmap, o->causal);
}
