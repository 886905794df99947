/* t_attn_toeplitz.c -- linear attention with a relative bias (Luo et al. 2021): the FFT
 * Toeplitz path against a float64 direct sum written here (ALiBi's decayed scan, the
 * forget gate's scan with a constant log gate, is checked in t_attn_forget).
 *
 * Checks: fft.c's Toeplitz product, its transpose and its correlation against direct
 * sums (odd and even N, N = 1); forward (o, den, n_bad) for every map x causal/non-causal
 * x T5-like/ALiBi bias; dq, dk, dv, d rel against central differences of the float64
 * reference (every element at N = 6-7, directional at N = 100); N = 1; dv != d;
 * denominators below eps counted; keys up to ~40 and keys
 * ramping from -30 to 30 (the causal magnitude segments) still within 1e-4 / 1e-3; invalid
 * sizes rejected; the (head, group of features) pieces of a call of few heads give the
 * whole-head loop's results with 1 to d groups. */
#include "config.h"
#include "kernels/attn_toeplitz.h"
#include "core/fft.h"
#include "kernels/posbias.h"
#include "tap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *fm_name[] = {"elu1", "softmax", "exp"};

/* ---- float64 reference: sim(m,n) = phi_q(q_m) . phi_k(k_n) exp(rel[(n-m)+N-1]) ---- */

struct shape {
    int          N, d, dv, causal;
    enum rl_fmap fm;
    double       eps;
};

static void ref_phi(double *pq, double *ek, const double *q, const double *k, struct shape s)
{
    for (int m = 0; m < s.N; m++) {
        const double *x = q + (size_t)m * s.d;
        double       *p = pq + (size_t)m * s.d, mx = x[0], z = 0;
        for (int f = 0; f < s.d; f++)
            mx = fmax(mx, x[f]);
        for (int f = 0; f < s.d; f++) {
            if (s.fm == RL_FMAP_ELU1)
                p[f] = x[f] > 0 ? x[f] + 1 : exp(x[f]);
            else
                z += p[f] = exp(x[f] - mx);
        }
        for (int f = 0; f < s.d && s.fm != RL_FMAP_ELU1; f++)
            p[f] /= z;
        for (int f = 0; f < s.d; f++) {
            double kv               = k[(size_t)m * s.d + f];
            ek[(size_t)m * s.d + f] = s.fm == RL_FMAP_ELU1 ? (kv > 0 ? kv + 1 : exp(kv)) : exp(kv);
        }
    }
}

/* o (N x dv) and the denominators before eps; O(N^2 (d + dv)) */
static void ref_forward(double *o, double *den, const double *q, const double *k, const double *v,
                        const double *rel, struct shape s)
{
    int     N = s.N, d = s.d, dv = s.dv;
    double *pq = malloc(sizeof(double) * N * d), *ek = malloc(sizeof(double) * N * d);
    double *Z = malloc(sizeof(double) * N * d);
    ref_phi(pq, ek, q, k, s);
    for (int f = 0; f < d; f++) /* Shen: phi_k normalised over all n, or n <= m */
        for (int m = 0, first = 1; m < N; m++, first = 0) {
            double prev          = first ? 0 : Z[(size_t)(m - 1) * d + f];
            Z[(size_t)m * d + f] = prev + ek[(size_t)m * d + f];
        }
    for (int m = 0; m < N; m++) {
        double num[64] = {0}, dn = 0;
        for (int n = 0; n < (s.causal ? m + 1 : N); n++) {
            double a = 0;
            for (int f = 0; f < d; f++) {
                double z =
                    s.fm != RL_FMAP_SOFTMAX ? 1.0 : Z[(size_t)(s.causal ? m : N - 1) * d + f];
                a += pq[(size_t)m * d + f] * ek[(size_t)n * d + f] / z;
            }
            a *= exp(rel[n - m + N - 1]);
            dn += a;
            for (int j = 0; j < dv; j++)
                num[j] += a * v[(size_t)n * dv + j];
        }
        den[m] = dn;
        for (int j = 0; j < dv; j++)
            o[(size_t)m * dv + j] = num[j] / (dn + s.eps);
    }
    free(pq), free(ek), free(Z);
}

static double ref_loss(const double *w, const double *q, const double *k, const double *v,
                       const double *rel, struct shape s)
{
    double *o = malloc(sizeof(double) * s.N * s.dv), *den = malloc(sizeof(double) * s.N), l = 0;
    ref_forward(o, den, q, k, v, rel, s);
    for (int i = 0; i < s.N * s.dv; i++)
        l += w[i] * o[i];
    free(o), free(den);
    return l;
}

/* ---- one problem instance: float inputs for the kernel, double copies for the reference ---- */

struct prob {
    struct shape s;
    float       *q, *k, *v, *rel, *w;
    double      *Q, *K, *V, *R, *W;
};

static double *to_double(const float *x, size_t n)
{
    double *y = malloc(sizeof(double) * n);
    for (size_t i = 0; i < n; i++)
        y[i] = x[i];
    return y;
}

/* bias 0: T5-like (random table through the real buckets), 1: ALiBi with `slope` */
static struct prob prob_make(struct shape s, int bias, double slope, double qk_scale)
{
    struct prob p  = {.s = s};
    size_t      nd = (size_t)s.N * s.d, nv = (size_t)s.N * s.dv, nr = 2 * (size_t)s.N - 1;
    p.q = malloc(sizeof(float) * nd), p.k = malloc(sizeof(float) * nd);
    p.v = malloc(sizeof(float) * nv), p.w = malloc(sizeof(float) * nv);
    p.rel = malloc(sizeof(float) * nr);
    tap_fill_normal(p.q, nd, qk_scale);
    tap_fill_normal(p.k, nd, qk_scale);
    tap_fill_normal(p.v, nv, 1.0);
    tap_fill_normal(p.w, nv, 1.0);
    if (bias == 0) {
        float tab[32];
        tap_fill_normal(tab, 32, 0.7);
        rl_t5_rel(p.rel, tab, 0, s.N, 32, 128, s.causal);
    } else {
        rl_alibi_rel(p.rel, slope, s.N);
    }
    p.Q = to_double(p.q, nd), p.K = to_double(p.k, nd), p.V = to_double(p.v, nv);
    p.R = to_double(p.rel, nr), p.W = to_double(p.w, nv);
    return p;
}

static void prob_free(struct prob *p)
{
    free(p->q), free(p->k), free(p->v), free(p->rel), free(p->w);
    free(p->Q), free(p->K), free(p->V), free(p->R), free(p->W);
}

static struct rl_attn_opts opts_of(struct shape s)
{
    struct rl_attn_opts o;
    memset(&o, 0, sizeof o);
    o.kind = RL_ATTN_LINEAR, o.fmap = s.fm, o.causal = s.causal, o.eps = (float)s.eps;
    return o;
}

/* kernel outputs for one instance (the FFT path, one head) */
struct result {
    float  *o, *den, *dq, *dk, *dv;
    double *drel;
    long    bad;
};

static struct result run_kernel(const struct prob *p, int backward)
{
    struct shape        s  = p->s;
    struct rl_attn_opts o  = opts_of(s);
    struct result       r  = {0};
    size_t              nd = (size_t)s.N * s.d, nv = (size_t)s.N * s.dv;
    rl_toeplitz        *t;
    if (rl_toeplitz_create(&t, s.N, s.d, s.dv) != RL_OK) tap_bail("create: %s", rl_last_error());
    const struct rl_lin_head h = {
        .q = p->q, .k = p->k, .v = p->v, .N = s.N, .d = s.d, .dv = s.dv, .rel = p->rel};
    r.o = malloc(sizeof(float) * nv), r.den = malloc(sizeof(float) * s.N);
    rl_attn_toeplitz_forward(t, r.o, r.den, &r.bad, &h, &o);
    if (backward) {
        r.dq = malloc(sizeof(float) * nd), r.dk = malloc(sizeof(float) * nd);
        r.dv = malloc(sizeof(float) * nv), r.drel = calloc(2 * (size_t)s.N - 1, sizeof(double));
        const struct rl_lin_grads g = {r.dq, r.dk, r.dv, NULL, r.drel};
        rl_attn_toeplitz_backward(t, &g, p->w, r.o, r.den, &h, &o);
    }
    rl_toeplitz_free(t);
    return r;
}

static void result_free(struct result *r)
{
    free(r->o), free(r->den), free(r->dq), free(r->dk), free(r->dv), free(r->drel);
}

static float *drel_float(const struct result *r, int N)
{
    float *x = malloc(sizeof(float) * (2 * N - 1));
    for (int i = 0; i < 2 * N - 1; i++)
        x[i] = (float)r->drel[i];
    return x;
}

#define DESC "%s %s %s N=%d d=%d dv=%d"
#define DARGS(s, bias)                                                                             \
    fm_name[(s).fm], (s).causal ? "causal" : "non-causal", bias, (s).N, (s).d, (s).dv

/* ---- fft.c: Toeplitz product, its transpose and the correlation vs direct sums ---- */

static double max_rel_err(const double *got, const double *ref, size_t n)
{
    double e = 0, sc = 0;
    for (size_t i = 0; i < n; i++)
        e = fmax(e, fabs(got[i] - ref[i])), sc = fmax(sc, fabs(ref[i]));
    return isnan(e) ? (double)INFINITY : e / (sc > 0 ? sc : 1);
}

static void check_fft_case(int N, int causal)
{
    int          C = 3;
    rl_fft_conv *c;
    if (rl_fft_conv_create(&c, N, C) != RL_OK) tap_bail("fft conv: %s", rl_last_error());
    int     L   = rl_fft_conv_length(c);
    double *buf = rl_fft_conv_buf(c), *E = malloc(sizeof(double) * (2 * N - 1));
    double *x = malloc(sizeof(double) * N * C), *y = malloc(sizeof(double) * N * C);
    double *ref = malloc(sizeof(double) * N * C), *got = malloc(sizeof(double) * N * C);
    double *cr = calloc(2 * N - 1, sizeof(double)), *cg = malloc(sizeof(double) * (2 * N - 1));
    for (int r = 0; r < 2 * N - 1; r++)
        E[r] = exp(tap_normal());
    for (int i = 0; i < N * C; i++)
        x[i] = tap_normal(), y[i] = tap_normal();
    rl_fft_conv_set_kernel(c, E, causal);
    for (int tr = 0; tr < 2; tr++) {
        for (int j = 0; j < C; j++)
            for (int m = 0; m < N; m++) {
                double s = 0; /* (T x)[m] = sum_n T[m,n] x[n];  (T^T x)[m] = sum_n T[n,m] x[n] */
                for (int n = 0; n < N; n++) {
                    int row = tr ? n : m, col = tr ? m : n;
                    if (!causal || col <= row) s += E[col - row + N - 1] * x[j * N + n];
                }
                ref[j * N + m] = s;
            }
        for (int j = 0; j < C; j++)
            memcpy(buf + (size_t)j * L, x + j * N, sizeof(double) * N);
        rl_fft_conv_apply(c, tr);
        const double *out = rl_fft_conv_out(c);
        for (int j = 0; j < C; j++)
            memcpy(got + j * N, out + (size_t)j * L, sizeof(double) * N);
        double e = max_rel_err(got, ref, (size_t)N * C);
        tap_ok(e < 1e-12, "fft Toeplitz %s N=%d L=%d %s equals the direct sum (rel err %.2g)",
               tr ? "transposed" : "product", N, L, causal ? "causal" : "full", e);
    }
    /* correlation: sum_j sum_m y_j[m] x_j[m+r], two calls accumulate */
    for (int j = 0; j < C; j++)
        for (int m = 0; m < N; m++)
            for (int n = 0; n < N; n++)
                cr[n - m + N - 1] += 2 * y[j * N + m] * x[j * N + n];
    rl_fft_conv_corr_zero(c);
    for (int rep = 0; rep < 2; rep++) {
        for (int j = 0; j < C; j++)
            memcpy(buf + (size_t)j * L, x + j * N, sizeof(double) * N);
        rl_fft_conv_r2c(c, 0);
        for (int j = 0; j < C; j++)
            memcpy(buf + (size_t)j * L, y + j * N, sizeof(double) * N);
        rl_fft_conv_r2c(c, 1);
        rl_fft_conv_corr_acc(c, 1, 0);
    }
    rl_fft_conv_corr_read(c, cg);
    double e = max_rel_err(cg, cr, 2 * (size_t)N - 1);
    tap_ok(e < 1e-12, "fft correlation N=%d equals the direct sum (rel err %.2g)", N, e);
    free(E), free(x), free(y), free(ref), free(got), free(cr), free(cg);
    rl_fft_conv_free(c);
}

static void check_fft_helper(void)
{
    int sizes[] = {1, 2, 7, 8, 100, 257};
    tap_ok(rl_fft_good_size(2047) == 2048 && rl_fft_good_size(1999) == 2000 &&
               rl_fft_good_size(1) == 1 && rl_fft_good_size(11 * 13) == 144,
           "rl_fft_good_size picks 2^a 3^b 5^c 7^d sizes");
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        check_fft_case(sizes[i], 0);
        check_fft_case(sizes[i], 1);
    }
}

/* ---- forward against the float64 direct sum ---- */

static void check_forward(struct shape s, int bias, double slope, double qk_scale, double tol)
{
    struct prob   p = prob_make(s, bias, slope, qk_scale);
    struct result r = run_kernel(&p, 0);
    double       *o = malloc(sizeof(double) * s.N * s.dv), *den = malloc(sizeof(double) * s.N);
    const char   *bn  = bias ? "alibi" : "t5";
    long          bad = 0;
    ref_forward(o, den, p.Q, p.K, p.V, p.R, s);
    for (int m = 0; m < s.N; m++)
        bad += den[m] <= s.eps, den[m] += s.eps;
    tap_close_scaled(r.o, o, (size_t)s.N * s.dv, tol, "forward o " DESC " |qk|~%g", DARGS(s, bn),
                     qk_scale);
    tap_close(r.den, den, (size_t)s.N, 1e-5, 0, "forward den (incl. eps) " DESC, DARGS(s, bn));
    tap_ok(r.bad == bad, "n_bad %ld == reference %ld", r.bad, bad);
    free(o), free(den);
    result_free(&r), prob_free(&p);
}

static void check_forward_all(void)
{
    for (int fm = 0; fm < 3; fm++)
        for (int causal = 0; causal < 2; causal++) {
            struct shape s = {150, 8, 6, causal, (enum rl_fmap)fm, 1e-6};
            check_forward(s, 0, 0, 1.0, 1e-4);
            check_forward(s, 1, 0.5, 1.0, 1e-4);
        }
    /* odd length whose FFT size is not a power of two; dv > d */
    struct shape s = {301, 4, 9, 1, RL_FMAP_EXP, 1e-6};
    check_forward(s, 0, 0, 1.0, 1e-4);
}

/* ---- gradients: every element by central differences of the reference (tiny N) ---- */

/* 1e-3 of the largest |fd|; a gradient that is zero by symmetry (Shen's dk at N = 1) is compared
 * against the finite differences' own noise instead */
static void grad_close(const float *got, const double *fd, size_t n, const char *what,
                       struct shape s, const char *bias)
{
    double sc = 0;
    for (size_t i = 0; i < n; i++)
        sc = fmax(sc, fabs(fd[i]));
    if (sc > 1e-8)
        tap_close_scaled(got, fd, n, 1e-3, "%s vs central differences " DESC, what, DARGS(s, bias));
    else
        tap_close(got, fd, n, 0, 1e-8, "%s (zero by symmetry) vs central differences " DESC, what,
                  DARGS(s, bias));
}

static void fd_grad(double *g, double *x, size_t n, const struct prob *p)
{
    for (size_t i = 0; i < n; i++) {
        double x0 = x[i], h = 1e-5 * fmax(1.0, fabs(x0));
        x[i]      = x0 + h;
        double lp = ref_loss(p->W, p->Q, p->K, p->V, p->R, p->s);
        x[i]      = x0 - h;
        double lm = ref_loss(p->W, p->Q, p->K, p->V, p->R, p->s);
        x[i]      = x0;
        g[i]      = (lp - lm) / (2 * h);
    }
}

static void check_grad_fd(struct shape s, int bias)
{
    struct prob   p  = prob_make(s, bias, 0.3, 1.0);
    struct result r  = run_kernel(&p, 1);
    size_t        nd = (size_t)s.N * s.d, nv = (size_t)s.N * s.dv, nr = 2 * (size_t)s.N - 1;
    double     *g  = malloc(sizeof(double) * (nd > nv ? (nd > nr ? nd : nr) : (nv > nr ? nv : nr)));
    const char *bn = bias ? "alibi" : "t5";
    float      *dr = drel_float(&r, s.N);
    fd_grad(g, p.Q, nd, &p);
    grad_close(r.dq, g, nd, "dq", s, bn);
    fd_grad(g, p.K, nd, &p);
    grad_close(r.dk, g, nd, "dk", s, bn);
    fd_grad(g, p.V, nv, &p);
    grad_close(r.dv, g, nv, "dv", s, bn);
    fd_grad(g, p.R, nr, &p);
    grad_close(dr, g, nr, "drel", s, bn);
    free(g), free(dr);
    result_free(&r), prob_free(&p);
}

static void check_grad_fd_all(void)
{
    for (int fm = 0; fm < 3; fm++)
        for (int causal = 0; causal < 2; causal++) {
            check_grad_fd((struct shape){7, 4, 3, causal, (enum rl_fmap)fm, 1e-6}, 0);
            check_grad_fd((struct shape){6, 3, 5, causal, (enum rl_fmap)fm, 1e-6}, 1);
        }
}

/* ---- gradients at N = 100: directional derivative vs a central difference ---- */

static void check_directional(double *x, const float *gx, size_t n, const struct prob *p,
                              const char *what)
{
    double *u = malloc(sizeof(double) * n), *x0 = malloc(sizeof(double) * n), an = 0, h = 1e-5;
    memcpy(x0, x, sizeof(double) * n);
    for (size_t i = 0; i < n; i++)
        u[i] = tap_normal(), an += (double)gx[i] * u[i];
    for (size_t i = 0; i < n; i++)
        x[i] = x0[i] + h * u[i];
    double lp = ref_loss(p->W, p->Q, p->K, p->V, p->R, p->s);
    for (size_t i = 0; i < n; i++)
        x[i] = x0[i] - h * u[i];
    double lm = ref_loss(p->W, p->Q, p->K, p->V, p->R, p->s), fd = (lp - lm) / (2 * h);
    memcpy(x, x0, sizeof(double) * n);
    float got = (float)an;
    tap_close_scaled(&got, &fd, 1, 1e-3, "directional %s %s %s N=%d", what, fm_name[p->s.fm],
                     p->s.causal ? "causal" : "non-causal", p->s.N);
    free(u), free(x0);
}

static void check_grad_directional_all(void)
{
    for (int fm = 0; fm < 3; fm++)
        for (int causal = 0; causal < 2; causal++) {
            struct shape  s  = {100, 8, 8, causal, (enum rl_fmap)fm, 1e-6};
            struct prob   p  = prob_make(s, 0, 0, 1.0);
            struct result r  = run_kernel(&p, 1);
            float        *dr = drel_float(&r, s.N);
            check_directional(p.Q, r.dq, (size_t)s.N * s.d, &p, "dq");
            check_directional(p.K, r.dk, (size_t)s.N * s.d, &p, "dk");
            check_directional(p.V, r.dv, (size_t)s.N * s.dv, &p, "dv");
            check_directional(p.R, dr, 2 * (size_t)s.N - 1, &p, "drel (t5)");
            free(dr);
            result_free(&r), prob_free(&p);
        }
}

/* ---- edges: N = 1, tiny denominators, large |q|, |k| ---- */

static int all_finite(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

/* keys ~ N(0, 10^2) (|k| up to ~40): outputs finite and still within 1e-4 (relative) */
static void check_large(struct shape s)
{
    struct prob   p  = prob_make(s, 1, 0.25, 10.0);
    struct result r  = run_kernel(&p, 1);
    size_t        nd = (size_t)s.N * s.d, nv = (size_t)s.N * s.dv;
    double       *o = malloc(sizeof(double) * nv), *den = malloc(sizeof(double) * s.N);
    tap_ok(all_finite(r.o, nv) && all_finite(r.dq, nd) && all_finite(r.dk, nd) &&
               all_finite(r.dv, nv) && all_finite(r.den, (size_t)s.N),
           "|q|,|k| up to ~40: o, dq, dk, dv finite " DESC, DARGS(s, "alibi"));
    ref_forward(o, den, p.Q, p.K, p.V, p.R, s);
    tap_close_scaled(r.o, o, nv, 1e-4, "|q|,|k| up to ~40: o vs reference");
    free(o), free(den);
    result_free(&r), prob_free(&p);
}

/* Keys that grow along the sequence (a ramp from -30 to 30 plus noise): exp(k) spans
 * e^60, so causal rows would drown in the FFT error of later terms without the
 * magnitude segments of attn_toeplitz.c.  Forward, and gradients directionally. */
static void check_ramp(enum rl_fmap fm, int N)
{
    struct shape s  = {N, 6, 4, 1, fm, 1e-6};
    struct prob  p  = prob_make(s, 0, 0, 1.0);
    size_t       nd = (size_t)N * s.d, nv = (size_t)N * s.dv;
    for (int n = 0; n < N; n++)
        for (int f = 0; f < s.d; f++) {
            size_t i = (size_t)n * s.d + f;
            p.k[i]   = (float)(-30.0 + 60.0 * n / (N - 1) + 0.5 * p.k[i]);
            p.K[i]   = p.k[i];
        }
    struct result r = run_kernel(&p, 1);
    double       *o = malloc(sizeof(double) * nv), *den = malloc(sizeof(double) * N);
    float        *dr = drel_float(&r, N);
    ref_forward(o, den, p.Q, p.K, p.V, p.R, s);
    tap_close_scaled(r.o, o, nv, 1e-4, "key ramp -30..30: o vs reference %s causal t5 N=%d",
                     fm_name[fm], N);
    check_directional(p.Q, r.dq, nd, &p, "key ramp dq");
    check_directional(p.K, r.dk, nd, &p, "key ramp dk");
    check_directional(p.V, r.dv, nv, &p, "key ramp dv");
    check_directional(p.R, dr, 2 * (size_t)N - 1, &p, "key ramp drel");
    free(o), free(den), free(dr);
    result_free(&r), prob_free(&p);
}

/* One head through the pieces of attn_toeplitz_split.c, run here in order: the phases
 * with `groups` groups of features, the thread's workspace t and the head's store hs. */
static struct result run_pieces(const struct prob *p, int groups)
{
    struct shape        s  = p->s;
    struct rl_attn_opts o  = opts_of(s);
    struct result       r  = {0};
    size_t              nd = (size_t)s.N * s.d, nv = (size_t)s.N * s.dv;
    rl_toeplitz        *t, *hs;
    if (rl_toeplitz_create(&t, s.N, s.d, s.dv) != RL_OK ||
        rl_toeplitz_create_store(&hs, s.N, s.d, s.dv) != RL_OK)
        tap_bail("create: %s", rl_last_error());
    double *part = calloc((size_t)groups * rl_toeplitz_part_doubles(s.N, s.dv), sizeof(double));
    const struct rl_lin_head h = {
        .q = p->q, .k = p->k, .v = p->v, .N = s.N, .d = s.d, .dv = s.dv, .rel = p->rel};
    r.o = malloc(sizeof(float) * nv), r.den = malloc(sizeof(float) * s.N);
    r.dq = malloc(sizeof(float) * nd), r.dk = malloc(sizeof(float) * nd);
    r.dv = malloc(sizeof(float) * nv), r.drel = calloc(2 * (size_t)s.N - 1, sizeof(double));
    const struct rl_lin_grads g  = {r.dq, r.dk, r.dv, NULL, r.drel};
    struct rl_toeplitz_piece  pc = {t, hs, &h, &o, part, groups, r.o, r.den, NULL, &g};
    rl_toeplitz_split_prepare(&pc);
    for (int J = 0; J < groups; J++)
        rl_toeplitz_split_sums(&pc, J);
    for (int b = 0; b < rl_toeplitz_row_blocks(s.N); b++)
        r.bad += rl_toeplitz_split_rows(&pc, b);
    pc.dout = p->w;
    rl_toeplitz_split_prepare(&pc);
    for (int J = 0; J < groups; J++)
        rl_toeplitz_split_sums(&pc, J);
    rl_toeplitz_split_grads(&pc);
    rl_toeplitz_split_drel(&pc, 1, 1);
    rl_toeplitz_free(t), rl_toeplitz_free(hs), free(part);
    return r;
}

static double max_rel_float(const float *a, const float *b, size_t n)
{
    double e = 0, sc = 0;
    for (size_t i = 0; i < n; i++)
        e = fmax(e, fabs((double)a[i] - b[i])), sc = fmax(sc, fabs((double)b[i]));
    return isnan(e) ? (double)INFINITY : e / (sc > 0 ? sc : 1);
}

/* The pieces (groups of features, their parts summed in group order) against the
 * whole-head loop: keys ramping from -30 to 30 (several magnitude segments, so the
 * correlation of T5's gradient runs segment pair by pair), N past one row block of the
 * forward's last phase, 1 to d groups (uneven at 4 of 6). */
static void check_pieces(enum rl_fmap fm, int causal)
{
    struct shape s  = {1100, 6, 4, causal, fm, 1e-6};
    struct prob  p  = prob_make(s, 0, 0, 1.0);
    size_t       nd = (size_t)s.N * s.d, nv = (size_t)s.N * s.dv, nr = 2 * (size_t)s.N - 1;
    for (int n = 0; n < s.N; n++)
        for (int f = 0; f < s.d; f++) {
            size_t i = (size_t)n * s.d + f;
            p.k[i]   = (float)(-30.0 + 60.0 * n / (s.N - 1) + 0.5 * p.k[i]);
        }
    struct result    w        = run_kernel(&p, 1);
    float           *wr       = drel_float(&w, s.N);
    static const int groups[] = {1, 2, 4, 6};
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
        struct result r  = run_pieces(&p, groups[i]);
        float        *dr = drel_float(&r, s.N);
        double e = fmax(max_rel_float(r.o, w.o, nv), max_rel_float(r.den, w.den, (size_t)s.N));
        double g = fmax(fmax(max_rel_float(r.dq, w.dq, nd), max_rel_float(r.dk, w.dk, nd)),
                        fmax(max_rel_float(r.dv, w.dv, nv), max_rel_float(dr, wr, nr)));
        tap_ok(e <= 1e-6 && g <= 1e-6 && r.bad == w.bad,
               "pieces, %d groups of 6 features, %s %s t5 N=%d, key ramp: o, den within %.1e, "
               "dq, dk, dv, drel within %.1e of the whole-head loop (tol 1e-6), n_bad %ld = %ld",
               groups[i], fm_name[fm], causal ? "causal" : "non-causal", s.N, e, g, r.bad, w.bad);
        free(dr), result_free(&r);
    }
    free(wr), result_free(&w), prob_free(&p);
}

static void check_pieces_all(void)
{
    tap_ok(rl_toeplitz_groups(4, 4096, 32, 32) == 8 && rl_toeplitz_groups(1, 4096, 32, 32) == 32 &&
               rl_toeplitz_groups(3, 700, 4, 8) == 4 && rl_toeplitz_groups(16, 4096, 32, 32) == 0 &&
               rl_toeplitz_groups(1, 1, 1, 1) == 0,
           "groups per head: ceil(32 / G) at most d, none from 16 heads on or with d = 1");
    int g = rl_toeplitz_groups(4, 65536, 32, 32);
    tap_ok(g >= 2 && g < 8 &&
               4 * (rl_toeplitz_store_bytes(65536, 32, 32) +
                    8.0 * g * rl_toeplitz_part_doubles(65536, 32)) <=
                   (double)(1L << 30),
           "4 heads at N = 65536: %d groups, stores and parts within 1 GiB", g);
    for (int fm = 0; fm < 3; fm++)
        for (int causal = 0; causal < 2; causal++)
            check_pieces((enum rl_fmap)fm, causal);
}

static void check_edges(void)
{
    rl_toeplitz *tz = NULL;
    rl_fft_conv *fc = NULL;
    tap_ok(rl_toeplitz_create(&tz, 0, 4, 4) == RL_EINVAL && !tz &&
               rl_toeplitz_create(&tz, 8, 4, 0) == RL_EINVAL && !tz,
           "rl_toeplitz_create rejects N = 0 and dv = 0");
    tap_ok(rl_fft_conv_create(&fc, 8, 0) == RL_EINVAL && !fc,
           "rl_fft_conv_create rejects cols = 0");
    for (int fm = 0; fm < 3; fm++)
        for (int causal = 0; causal < 2; causal++) {
            /* eps = 0.5: with one position o = v sim / (sim + eps), and a small eps would
             * leave gradients of size eps, below what float o and den resolve */
            struct shape s = {1, 4, 3, causal, (enum rl_fmap)fm, 0.5};
            check_forward(s, 0, 0, 1.0, 1e-5);
            check_grad_fd(s, 1);
        }
    /* elu1 features of q, k ~ -20 are ~2e-9: every denominator is below eps */
    struct shape s = {20, 4, 3, 1, RL_FMAP_ELU1, 1e-6};
    struct prob  p = prob_make(s, 0, 0, 0.1);
    for (int i = 0; i < s.N * s.d; i++)
        p.q[i] -= 20, p.k[i] -= 20, p.Q[i] = p.q[i], p.K[i] = p.k[i];
    struct result r = run_kernel(&p, 1);
    tap_ok(r.bad == s.N && all_finite(r.o, (size_t)s.N * s.dv) &&
               all_finite(r.dq, (size_t)s.N * s.d),
           "tiny denominators: n_bad = %ld of %d rows, outputs finite", r.bad, s.N);
    result_free(&r), prob_free(&p);
    for (int fm = 0; fm < 3; fm++)
        for (int causal = 0; causal < 2; causal++) {
            check_large((struct shape){200, 8, 4, causal, (enum rl_fmap)fm, 1e-6});
        }
    for (int fm = 0; fm < 3; fm++)
        check_ramp((enum rl_fmap)fm, 240);
    /* Shen, causal, keys ~ N(0, 25^2): exp(k - c) reaches e^-200, below float's range */
    struct shape  w  = {100, 4, 3, 1, RL_FMAP_SOFTMAX, 1e-6};
    struct prob   pw = prob_make(w, 0, 0, 25.0);
    struct result rw = run_kernel(&pw, 1);
    double       *ow = malloc(sizeof(double) * 300), *dw = malloc(sizeof(double) * 100);
    ref_forward(ow, dw, pw.Q, pw.K, pw.V, pw.R, w);
    tap_ok(all_finite(rw.dq, 400) && all_finite(rw.dk, 400) && all_finite(rw.dv, 300),
           "softmax causal, keys ~ N(0, 25^2): gradients finite");
    tap_close_scaled(rw.o, ow, 300, 1e-4, "softmax causal, keys ~ N(0, 25^2): o vs reference");
    free(ow), free(dw);
    result_free(&rw), prob_free(&pw);
}

int main(void)
{
    tap_seed(20240611);
    check_fft_helper();
    check_forward_all();
    check_grad_fd_all();
    check_grad_directional_all();
    check_edges();
    check_pieces_all();
    return tap_done();
}
