/* attn_toeplitz.c -- linear attention with a relative bias by FFT Toeplitz products
 * (Luo et al. 2021); the derivation is in docs/attention_toeplitz.md.
 *
 * Per head, with T[m,n] = exp(rel[(n-m)+N-1]) (0 for n > m when causal):
 *   o_m = sum_f A[m,f] y_f,j[m] / (sum_f A[m,f] z_f[m] + eps),
 *   y_f,j = T (B[:,f] .* v[:,j]),   z_f = T B[:,f]
 * where A, B are the feature maps in double:
 *   elu1, exp:  A = phi_q(q), B = phi_k(k)  (exp: B = exp(k), unshifted -- a shift would
 *               not change the FFT's relative error, and double holds exp(30) easily,
 *               so eps enters exactly as written)
 *   softmax:    B = exp(k - c_f), c_f = max_n k[n,f] (cancels exactly), A = phi_q(q) / Z,
 *               Z_m[f] = sum of B[n',f] over all n' (non-causal) or n' <= m (causal).
 * For each feature f the dv + 1 columns (B v_j, B) go through one batched r2c / c2r
 * pair (rl_fft_conv), so memory is O(N dv), never O(N d dv).  (Causal ALiBi by the decayed
 * scan runs as the forget gate's scan: attn_run_linear.c.) */
#include "config.h"
#include "attn_toeplitz_impl.h"

#include <math.h>
#include <string.h>

void rl_toeplitz_free(rl_toeplitz *t)
{
    if (!t) return;
    rl_fft_conv_free(t->conv);
    rl_free(t->pool);
    rl_free(t);
}

/* Every array of the workspace, carved from one 64-byte aligned pool. */
static size_t carve(rl_toeplitz *t, char *pool)
{
    size_t N = (size_t)t->N, d = (size_t)t->d, dv = (size_t)t->dv, off = 0;
    struct {
        void **p;
        size_t bytes;
    } a[] = {
        {(void **)&t->phq, N * d * 4},
        {(void **)&t->dph, N * d * 4},
        {(void **)&t->colmax, d * 8},
        {(void **)&t->cut_x, (N + 1) * sizeof(int)},
        {(void **)&t->cut_y, (N + 1) * sizeof(int)},
        {(void **)&t->E, (2 * N - 1) * 8},
        {(void **)&t->corr, (2 * N - 1) * 8},
        {(void **)&t->A, N * d * 8},
        {(void **)&t->B, N * d * 8},
        {(void **)&t->Z, N * d * 8},
        {(void **)&t->dA, N * d * 8},
        {(void **)&t->dB, N * d * 8},
        {(void **)&t->num, N * dv * 8},
        {(void **)&t->dnum, N * dv * 8},
        {(void **)&t->vT, N * dv * 8},
        {(void **)&t->numT, N * dv * 8},
        {(void **)&t->dnumT, N * dv * 8},
        {(void **)&t->den, N * 8},
        {(void **)&t->dden, N * 8},
        {(void **)&t->w, N * 8},
        {(void **)&t->wg, N * 8},
        {(void **)&t->af, N * 8},
        {(void **)&t->bf, N * 8},
        {(void **)&t->gaf, N * 8},
        {(void **)&t->gbf, N * 8},
    };
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {
        if (pool) *a[i].p = pool + off;
        off += (a[i].bytes + 63) / 64 * 64;
    }
    return off;
}

size_t rl_toeplitz_store_bytes(int N, int d, int dv)
{
    rl_toeplitz t = {.N = N, .d = d, .dv = dv};
    return carve(&t, NULL);
}

/* The workspace; conv: with the FFT plans (a thread's), or without (a head's store). */
static rl_status create(rl_toeplitz **out, int N, int d, int dv, int conv)
{
    *out = NULL;
    if (N < 1 || d < 1 || dv < 1)
        RL_FAIL(RL_EINVAL, "toeplitz: N=%d, d=%d, dv=%d must be >= 1", N, d, dv);
    rl_toeplitz *t = rl_alloc(sizeof *t);
    if (!t) RL_FAIL(RL_ENOMEM, "toeplitz: out of memory");
    t->N = N, t->d = d, t->dv = dv;
    size_t bytes = carve(t, NULL);
    t->pool      = rl_alloc(bytes);
    if (!t->pool) {
        rl_toeplitz_free(t);
        RL_FAIL(RL_ENOMEM, "toeplitz: out of memory (%zu bytes) for N=%d, d=%d, dv=%d", bytes, N, d,
                dv);
    }
    carve(t, t->pool);
    rl_status s = conv ? rl_fft_conv_create(&t->conv, N, dv + 1) : RL_OK;
    if (s != RL_OK) {
        rl_toeplitz_free(t);
        return s;
    }
    *out = t;
    return RL_OK;
}

rl_status rl_toeplitz_create(rl_toeplitz **out, int N, int d, int dv)
{
    return create(out, N, d, dv, 1);
}

rl_status rl_toeplitz_create_store(rl_toeplitz **out, int N, int d, int dv)
{
    return create(out, N, d, dv, 0);
}

/* A, B (and Z for softmax) from q, k; see the file header.  B is computed here in double
 * (not by rl_fmap_k_forward in float): exp(k - c) of a key 100 below its column maximum
 * would underflow in float and leave a zero prefix normaliser. */
static void features_rowwise(rl_toeplitz *t, const float *q, const float *k, enum rl_fmap fm)
{
    const size_t nd = (size_t)t->N * t->d;
    rl_fmap_q_forward(t->phq, q, t->N, t->d, fm);
    for (size_t i = 0; i < nd; i++) {
        double x = k[i];
        t->A[i]  = t->phq[i];
        t->B[i]  = fm == RL_FMAP_ELU1 && x > 0 ? x + 1.0 : exp(x);
    }
}

static void features(rl_toeplitz *t, const float *q, const float *k, enum rl_fmap fm, int causal)
{
    int    N = t->N, d = t->d;
    size_t nd = (size_t)N * d;
    if (fm != RL_FMAP_SOFTMAX) {
        features_rowwise(t, q, k, fm);
        return;
    }
    rl_fmap_q_forward(t->phq, q, N, d, fm);
    for (int f = 0; f < d; f++)
        t->colmax[f] = -INFINITY;
    for (size_t i = 0; i < nd; i++)
        t->colmax[i % d] = fmax(t->colmax[i % d], (double)k[i]);
    for (size_t i = 0; i < nd; i++) {
        t->A[i] = t->phq[i];
        t->B[i] = exp((double)k[i] - t->colmax[i % d]);
    }
    /* Z_m[f] = sum_{n'} exp(k[n',f] - c_f) over the prefix n' <= m, or over all n' */
    for (int f = 0; f < d; f++) {
        double s = 0.0;
        for (int m = 0; m < N; m++) {
            s += t->B[(size_t)m * d + f];
            t->Z[(size_t)m * d + f] = s;
        }
        if (!causal)
            for (int m = 0; m < N; m++)
                t->Z[(size_t)m * d + f] = s;
    }
    for (size_t i = 0; i < nd; i++)
        t->A[i] /= t->Z[i];
}

/* out = num / (den + eps) from t->num, t->den (the sums before eps), rows m0 .. m1-1. */
long rl_toeplitz_finish_rows(rl_toeplitz *t, float *out, float *den, float eps, int m0, int m1)
{
    const int dv  = t->dv;
    long      bad = 0;
    for (int m = m0; m < m1; m++) {
        double dn = t->den[m];
        bad += dn <= (double)eps;
        dn += (double)eps;
        den[m] = (float)dn;
        for (int j = 0; j < dv; j++)
            out[(size_t)m * dv + j] = (float)(t->num[(size_t)m * dv + j] / dn);
    }
    return bad;
}

/* The fixed part of every backward: from o = num / den,
 *   dnum[m,j] = g[m,j] / den[m],   dden[m] = -(g_m . o_m) / den[m]. */
static void dout_terms(rl_toeplitz *t, const float *dout, const float *out, const float *den)
{
    const int dv = t->dv;
    for (int m = 0; m < t->N; m++) {
        double inv = 1.0 / (double)den[m], go = 0.0;
        for (int j = 0; j < dv; j++) {
            size_t i   = (size_t)m * dv + j;
            t->dnum[i] = (double)dout[i] * inv;
            go += (double)dout[i] * (double)out[i];
        }
        t->dden[m] = -go * inv;
    }
}

/* dq, dk from dA, dB (t->dA, t->dB: gradients of the loss w.r.t. A and B). */
void rl_toeplitz_features_backward(rl_toeplitz *t, float *dq, float *dk, const float *k,
                                   enum rl_fmap fm, int causal)
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
        for (size_t i = 0; i < nd; i++)
            t->dph[i] = (float)(t->dA[i] / t->Z[i]);
    } else /* A = phi_q */
        for (size_t i = 0; i < nd; i++)
            t->dph[i] = (float)t->dA[i];
    rl_fmap_q_backward(dq, t->dph, t->phq, N, d, fm);
    /* B = exp(k - c) (softmax, exp; c is constant: the map is invariant to it), or
     * elu1(k) = k + 1 (k > 0), exp(k) = B otherwise */
    for (size_t i = 0; i < nd; i++)
        dk[i] = (float)(t->dB[i] * (fm == RL_FMAP_ELU1 && k[i] > 0 ? 1.0 : t->B[i]));
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
        int c   = cut[lo];
        cut[lo] = cut[hi], cut[hi] = c;
    }
    return S;
}

/* Columns j < dv of the FFT buffer: x_f,j = B[:,f] .* v[:,j]; column dv: B[:,f]; rows
 * [lo, hi), zero elsewhere.  Uses t's contiguous copy bf (B[:,f]) and the head's v^T. */
static void load_x(rl_toeplitz *t, const rl_toeplitz *h, int lo, int hi)
{
    int     N = t->N, dv = t->dv, L = rl_fft_conv_length(t->conv);
    double *buf = rl_fft_conv_buf(t->conv);
    for (int j = 0; j <= dv; j++) {
        double       *col = buf + (size_t)j * L;
        const double *vj  = h->vT + (size_t)j * N;
        memset(col, 0, (size_t)lo * sizeof(double));
        memset(col + hi, 0, (size_t)(N - hi) * sizeof(double));
        if (j < dv)
#pragma omp simd
            for (int n = lo; n < hi; n++)
                col[n] = t->bf[n] * vj[n];
        else
            memcpy(col + lo, t->bf + lo, (size_t)(hi - lo) * sizeof(double));
    }
}

/* The adjoint inputs dy_f,j[m] = dnum[m,j] A[m,f], dz_f[m] = dden[m] A[m,f], rows [lo, hi). */
static void load_dy(rl_toeplitz *t, const rl_toeplitz *h, int lo, int hi)
{
    int     N = t->N, dv = t->dv, L = rl_fft_conv_length(t->conv);
    double *buf = rl_fft_conv_buf(t->conv);
    for (int j = 0; j <= dv; j++) {
        double       *col = buf + (size_t)j * L;
        const double *g   = j < dv ? h->dnumT + (size_t)j * N : h->dden;
        memset(col, 0, (size_t)lo * sizeof(double));
        memset(col + hi, 0, (size_t)(N - hi) * sizeof(double));
#pragma omp simd
        for (int m = lo; m < hi; m++)
            col[m] = t->af[m] * g[m];
    }
}

/* dst (cols x rows) = src^T, src row-major (rows x cols) */
static void transpose_fd(double *dst, const float *src, int rows, int cols)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            dst[(size_t)c * rows + r] = src[(size_t)r * cols + c];
}

static void transpose_dd(double *dst, const double *src, int rows, int cols)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            dst[(size_t)c * rows + r] = src[(size_t)r * cols + c];
}

/* t's af = A[:,f], bf = B[:,f] (contiguous) from the head's features */
static void gather_feature(rl_toeplitz *t, const rl_toeplitz *h, int f)
{
    for (int m = 0; m < t->N; m++)
        t->af[m] = h->A[(size_t)m * t->d + f], t->bf[m] = h->B[(size_t)m * t->d + f];
}

void rl_toeplitz_exp_rel(rl_toeplitz *h, const float *rel)
{
    for (int r = 0; r < 2 * h->N - 1; r++)
        h->E[r] = exp((double)rel[r]);
}

static void load_kernel(rl_toeplitz *t, const float *rel, int causal)
{
    rl_toeplitz_exp_rel(t, rel);
    rl_fft_conv_set_kernel(t->conv, t->E, causal);
}

void rl_toeplitz_forward_feature(rl_toeplitz *t, const rl_toeplitz *h, double *numT, double *den,
                                 int f, int causal)
{
    const int     N = t->N, dv = t->dv, L = rl_fft_conv_length(t->conv);
    const double *buf = rl_fft_conv_out(t->conv);
    gather_feature(t, h, f);
    int nseg = segments(t->cut_x, t->bf, N, causal, 0);
    for (int s = 0; s < nseg; s++) {
        int lo = t->cut_x[s], hi = t->cut_x[s + 1];
        load_x(t, h, 0, hi);
        rl_fft_conv_apply(t->conv, 0); /* y_f,j = T x_f,j, z_f = T B_f */
        /* num[m,j] += A[m,f] y_f,j[m],  den[m] += A[m,f] z_f[m] */
        for (int j = 0; j <= dv; j++) {
            const double *y  = buf + (size_t)j * L;
            double       *nr = j < dv ? numT + (size_t)j * N : den;
#pragma omp simd
            for (int m = lo; m < hi; m++)
                nr[m] += t->af[m] * y[m];
        }
    }
}

void rl_toeplitz_prepare(rl_toeplitz *h, const struct rl_lin_head *hd, const struct rl_attn_opts *o)
{
    features(h, hd->q, hd->k, o->fmap, o->causal);
    transpose_fd(h->vT, hd->v, h->N, h->dv);
}

void rl_attn_toeplitz_forward(rl_toeplitz *t, float *out, float *den, long *n_bad,
                              const struct rl_lin_head *h, const struct rl_attn_opts *o)
{
    const int N = h->N, d = h->d, dv = h->dv;
    RL_ASSERT(N == t->N && d == t->d && dv == t->dv);
    rl_toeplitz_prepare(t, h, o);
    load_kernel(t, h->rel, o->causal);
    memset(t->numT, 0, (size_t)N * dv * sizeof(double));
    memset(t->den, 0, (size_t)N * sizeof(double));
    for (int f = 0; f < d; f++)
        rl_toeplitz_forward_feature(t, t, t->numT, t->den, f, o->causal);
    transpose_dd(t->num, t->numT, dv, N);
    *n_bad = rl_toeplitz_finish_rows(t, out, den, o->eps, 0, t->N);
}

/* gaf[m] = dA[m,f] = sum_j dnum[m,j] y_f,j[m] + dden[m] z_f[m], rows [lo, hi) */
static void grad_A(rl_toeplitz *t, const rl_toeplitz *h, int lo, int hi)
{
    int           N = t->N, dv = t->dv, L = rl_fft_conv_length(t->conv);
    const double *buf = rl_fft_conv_out(t->conv);
    for (int j = 0; j <= dv; j++) {
        const double *y = buf + (size_t)j * L, *g = j < dv ? h->dnumT + (size_t)j * N : h->dden;
        double       *ga = t->gaf;
        if (j == 0)
#pragma omp simd
            for (int m = lo; m < hi; m++)
                ga[m] = g[m] * y[m];
        else
#pragma omp simd
            for (int m = lo; m < hi; m++)
                ga[m] += g[m] * y[m];
    }
}

/* From dx = T^T dy in the buffer, rows [lo, hi):  x_f,j = B_f .* v_j  =>
 * gbf[n] = dB[n,f] = sum_j dx_j[n] v[n,j] + dx_z[n],  dv[n,j] += dx_j[n] B[n,f] (dvT). */
static void grad_Bv(rl_toeplitz *t, const rl_toeplitz *h, double *dvT, int lo, int hi)
{
    int           N = t->N, dv = t->dv, L = rl_fft_conv_length(t->conv);
    const double *buf = rl_fft_conv_out(t->conv);
    memcpy(t->gbf + lo, buf + (size_t)dv * L + lo, (size_t)(hi - lo) * sizeof(double));
    for (int j = 0; j < dv; j++) {
        const double *dx = buf + (size_t)j * L, *vj = h->vT + (size_t)j * N;
        double       *gv = dvT + (size_t)j * N, *gb = t->gbf;
#pragma omp simd
        for (int n = lo; n < hi; n++) {
            gb[n] += dx[n] * vj[n];
            gv[n] += dx[n] * t->bf[n];
        }
    }
}

/* The correlation pairs of a feature whose segments are not one each way: each x segment
 * against every dy segment that ends after it begins (rows outside a segment zero). */
static void corr_pairs(rl_toeplitz *t, const rl_toeplitz *h, int nx, int ny)
{
    for (int a = 0; a < nx; a++) {
        load_x(t, h, t->cut_x[a], t->cut_x[a + 1]);
        rl_fft_conv_r2c(t->conv, 0);
        for (int b = 0; b < ny; b++) {
            if (t->cut_x[a] >= t->cut_y[b + 1]) continue; /* no pair n <= m */
            load_dy(t, h, t->cut_y[b], t->cut_y[b + 1]);
            rl_fft_conv_r2c(t->conv, 1);
            rl_fft_conv_corr_acc(t->conv, 1, 0);
        }
    }
}

/* Per feature f (derivation in docs/attention_toeplitz.md):
 *   forward:  num[m,j] += A[m,f] y_f,j[m],  den[m] += A[m,f] z_f[m],  y = T x
 *   =>  dA (grad_A, from y recomputed),  dy_f,j[m] = dnum[m,j] A[m,f],  dz_f[m] = dden[m] A[m,f]
 *   =>  dx = T^T dy (grad_Bv),  d E[r] = sum_{n-m=r} dy[m] x[n]: a correlation of slot 1
 *       (dy) against slot 0 (x), accumulated over features in the frequency domain.
 * With one segment each way the spectra of the products are reused for the correlation;
 * otherwise each pair of an x segment and a later-or-overlapping dy segment is
 * correlated on its own (corr_pairs), which sums to the same. */
void rl_toeplitz_backward_feature(rl_toeplitz *t, rl_toeplitz *h, double *dvT, int f, int causal,
                                  int want_rel)
{
    int N = t->N, nx, ny, fused;
    gather_feature(t, h, f);
    for (int m = 0; m < N; m++)
        t->w[m] = fabs(t->af[m]) * h->wg[m];
    nx    = segments(t->cut_x, t->bf, N, causal, 0);
    ny    = segments(t->cut_y, t->w, N, causal, 1);
    fused = nx == 1 && ny == 1;
    for (int s = 0; s < nx; s++) {
        load_x(t, h, 0, t->cut_x[s + 1]);
        rl_fft_conv_r2c(t->conv, 0);
        rl_fft_conv_mul(t->conv, 1, 0, 0);
        rl_fft_conv_c2r(t->conv, 1);
        grad_A(t, h, t->cut_x[s], t->cut_x[s + 1]);
    }
    for (int s = 0; s < ny; s++) {
        load_dy(t, h, t->cut_y[s], N);
        rl_fft_conv_r2c(t->conv, 1);
        if (fused && want_rel) rl_fft_conv_corr_acc(t->conv, 1, 0);
        rl_fft_conv_mul(t->conv, 1, 1, 1);
        rl_fft_conv_c2r(t->conv, 1);
        grad_Bv(t, h, dvT, t->cut_y[s], t->cut_y[s + 1]);
    }
    if (want_rel && !fused) corr_pairs(t, h, nx, ny);
    for (int m = 0; m < N; m++)
        h->dA[(size_t)m * t->d + f] = t->gaf[m], h->dB[(size_t)m * t->d + f] = t->gbf[m];
}

void rl_toeplitz_prepare_backward(rl_toeplitz *h, const struct rl_lin_head *hd, const float *dout,
                                  const float *out, const float *den, const struct rl_attn_opts *o)
{
    const int N = h->N, dv = h->dv;
    rl_toeplitz_prepare(h, hd, o);
    dout_terms(h, dout, out, den);
    transpose_dd(h->dnumT, h->dnum, N, dv);
    for (int m = 0; m < N; m++) { /* row scale of the adjoint inputs, for the segments */
        double s = fabs(h->dden[m]);
        for (int j = 0; j < dv; j++)
            s = fmax(s, fabs(h->dnum[(size_t)m * dv + j]));
        h->wg[m] = s;
    }
}

/* d rel[r] += E[r] corr[r] (rel -> E = exp(rel): d rel = E d E); causal T never uses
 * r = n - m > 0 */
void rl_toeplitz_drel_add(double *drel, const double *E, const double *corr, int N, int causal)
{
    int rmax = causal ? N - 1 : 2 * N - 2;
    for (int r = 0; r <= rmax; r++)
        drel[r] += E[r] * corr[r];
}

void rl_attn_toeplitz_backward(rl_toeplitz *t, const struct rl_lin_grads *g, const float *dout,
                               const float *out, const float *den, const struct rl_lin_head *h,
                               const struct rl_attn_opts *o)
{
    const int N = h->N, d = h->d, dv = h->dv;
    double   *drel = g->drel;
    RL_ASSERT(N == t->N && d == t->d && dv == t->dv);
    rl_toeplitz_prepare_backward(t, h, dout, out, den, o);
    load_kernel(t, h->rel, o->causal);
    memset(t->numT, 0, (size_t)N * dv * sizeof(double)); /* dv^T accumulates here */
    if (drel) rl_fft_conv_corr_zero(t->conv);
    for (int f = 0; f < d; f++)
        rl_toeplitz_backward_feature(t, t, t->numT, f, o->causal, drel != NULL);
    if (drel) {
        rl_fft_conv_corr_read(t->conv, t->corr);
        rl_toeplitz_drel_add(drel, t->E, t->corr, N, o->causal);
    }
    rl_toeplitz_dv_out(g->dv, t->numT, N, dv);
    rl_toeplitz_features_backward(t, g->dq, g->dk, h->k, o->fmap, o->causal);
}

/* dv[n,j] (float) = dvT[j,n] */
void rl_toeplitz_dv_out(float *dv, const double *dvT, int N, int dvd)
{
    for (int n = 0; n < N; n++)
        for (int j = 0; j < dvd; j++)
            dv[(size_t)n * dvd + j] = (float)dvT[(size_t)j * N + n];
}
