/* t_attn_xpos.c -- YaRN and xPos through the attention plan (rl_attn), softmax and linear.
 *
 * Evidence: (1) a float64 reference of causal softmax attention with RoPE, YaRN (theta'_i
 * and the factor a on the rotated q and k) and xPos (score term of feature f of pair i
 * times zeta_i^((m-n)/gamma)), forward and an analytic backward, itself checked by
 * central differences of the float64 forward; the kernel against it at N = 700 (three
 * query blocks, each with its own xPos centre), both layouts, partial rotary;
 * (2) directional finite differences of the kernel's own forward for YaRN in linear
 * attention; (3) invariants: YaRN with s = 1 is plain RoPE bit for bit (softmax and
 * linear), xPos with gamma -> infinity is plain RoPE, xPos scores depend on m - n only
 * (constant q and k rows, one-hot values expose the probabilities); (4) long sequences
 * (N / gamma = 256, where one centre for the whole sequence overflows; N = 65536 with
 * gamma = 512 under ROPELAB_LONG_TESTS=1): no inf or NaN in the output and gradients, and
 * rows against a float64 direct sum. */
#include "config.h"
#include "kernels/attn.h"
#include "core/threads.h"
#include "tap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- float64 reference */

struct refcase {
    int    N, d, dv, R, halves, causal;
    double base, yarn, gamma; /* yarn = 1: off; gamma = 0: no xPos */
    int    yarn_orig;
};

/* theta'_i from the formulas (truncated YaRN correction range, beta_fast 32, beta_slow 1) */
static double ref_theta(const struct refcase *c, int i)
{
    const double pi = 3.14159265358979323846;
    double       th = pow(c->base, -2.0 * i / c->R);
    if (c->yarn == 1.0) return th;
    double L  = c->yarn_orig;
    double lo = fmax(floor(c->R * log(L / (2 * pi * 32)) / (2 * log(c->base))), 0.0);
    double hi = fmin(ceil(c->R * log(L / (2 * pi)) / (2 * log(c->base))), c->R - 1.0);
    if (lo == hi) hi += 0.001;
    double r = fmin(fmax((i - lo) / (hi - lo), 0.0), 1.0);
    return th / c->yarn * r + th * (1 - r);
}

static void pair_of(const struct refcase *c, int i, int *p, int *q)
{
    *p = c->halves ? i : 2 * i;
    *q = c->halves ? i + c->R / 2 : 2 * i + 1;
}

/* y = amp R_m x (inverse: amp R_m^T x): the pass-through features of partial rotary are
 * multiplied by amp too (YaRN's factor scales the scores by amp^2 for any R) */
static void ref_rot(double *y, const double *x, const struct refcase *c, int m, int inverse)
{
    double amp = c->yarn > 1 ? 0.1 * log(c->yarn) + 1 : 1.0, sg = inverse ? -1.0 : 1.0;
    for (int f = 0; f < c->d; f++)
        y[f] = amp * x[f];
    for (int i = 0; i < c->R / 2; i++) {
        int    p, q;
        double a = m * ref_theta(c, i), co = cos(a), si = sg * sin(a);
        pair_of(c, i, &p, &q);
        y[p] = amp * (x[p] * co - x[q] * si);
        y[q] = amp * (x[p] * si + x[q] * co);
    }
}

/* xPos weight of feature f at distance m - n */
static double ref_w(const struct refcase *c, const double *lz, int f, int delta)
{
    return c->gamma > 0 ? exp(lz[f] * delta / c->gamma) : 1.0;
}

struct refout {
    double *o, *dq, *dk, *dv;
};

/* o (and with dout the gradients) of one head, quadratic form, float64 */
static void ref_attn(struct refout *r, const double *q, const double *k, const double *v,
                     const double *dout, const struct refcase *c)
{
    const int N = c->N, d = c->d, dv = c->dv;
    double   *Q = calloc((size_t)N * d, sizeof(double)), *K = calloc((size_t)N * d, sizeof(double));
    double   *P = calloc((size_t)N * N, sizeof(double)), lz[512] = {0};
    double *dQ = calloc((size_t)N * d, sizeof(double)), *dK = calloc((size_t)N * d, sizeof(double));
    for (int i = 0; i < c->R / 2; i++) {
        int p, qq;
        pair_of(c, i, &p, &qq);
        lz[p] = lz[qq] = log((2.0 * i / c->R + 0.4) / 1.4);
    }
    for (int m = 0; m < N; m++) {
        ref_rot(Q + (size_t)m * d, q + (size_t)m * d, c, m, 0);
        ref_rot(K + (size_t)m * d, k + (size_t)m * d, c, m, 0);
    }
    for (int m = 0; m < N; m++) {
        int    nn = c->causal ? m + 1 : N;
        double mx = -INFINITY, sum = 0;
        for (int n = 0; n < nn; n++) {
            double s = 0;
            for (int f = 0; f < d; f++)
                s += Q[(size_t)m * d + f] * K[(size_t)n * d + f] * ref_w(c, lz, f, m - n);
            P[(size_t)m * N + n] = s / sqrt((double)d);
            mx                   = fmax(mx, P[(size_t)m * N + n]);
        }
        for (int n = 0; n < nn; n++)
            sum += (P[(size_t)m * N + n] = exp(P[(size_t)m * N + n] - mx));
        for (int n = 0; n < nn; n++)
            P[(size_t)m * N + n] /= sum;
        for (int e = 0; e < dv; e++) {
            double acc = 0;
            for (int n = 0; n < nn; n++)
                acc += P[(size_t)m * N + n] * v[(size_t)n * dv + e];
            r->o[(size_t)m * dv + e] = acc;
        }
    }
    if (dout) { /* o = P v; P = softmax(S); S = sum_f Q K w / sqrt(d); Q = a R q */
        memset(r->dv, 0, sizeof(double) * (size_t)N * dv);
        for (int m = 0; m < N; m++) {
            int     nn = c->causal ? m + 1 : N;
            double *ds = calloc((size_t)nn, sizeof(double)), D = 0;
            for (int n = 0; n < nn; n++) {
                double dp = 0;
                for (int e = 0; e < dv; e++) {
                    dp += dout[(size_t)m * dv + e] * v[(size_t)n * dv + e];
                    r->dv[(size_t)n * dv + e] += P[(size_t)m * N + n] * dout[(size_t)m * dv + e];
                }
                ds[n] = dp;
                D += P[(size_t)m * N + n] * dp;
            }
            for (int n = 0; n < nn; n++) {
                double g = P[(size_t)m * N + n] * (ds[n] - D) / sqrt((double)d);
                for (int f = 0; f < d; f++) {
                    double w = ref_w(c, lz, f, m - n);
                    dQ[(size_t)m * d + f] += g * K[(size_t)n * d + f] * w;
                    dK[(size_t)n * d + f] += g * Q[(size_t)m * d + f] * w;
                }
            }
            free(ds);
        }
        for (int m = 0; m < N; m++) {
            ref_rot(r->dq + (size_t)m * d, dQ + (size_t)m * d, c, m, 1);
            ref_rot(r->dk + (size_t)m * d, dK + (size_t)m * d, c, m, 1);
        }
    }
    free(Q), free(K), free(P), free(dQ), free(dK);
}

static double *dvec(size_t n, double scale)
{
    double *x = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++)
        x[i] = scale * tap_normal();
    return x;
}

static double ref_loss(const double *q, const double *k, const double *v, const double *dout,
                       const struct refcase *c, double *o)
{
    struct refout r = {o, NULL, NULL, NULL};
    ref_attn(&r, q, k, v, NULL, c);
    double l = 0;
    for (size_t i = 0; i < (size_t)c->N * c->dv; i++)
        l += o[i] * dout[i];
    return l;
}

/* The analytic float64 backward against central differences of the float64 forward. */
static void test_reference_fd(void)
{
    const struct refcase c  = {7, 8, 3, 6, 0, 1, 30, 3, 2.5, 500};
    const size_t         nq = (size_t)c.N * c.d, nv = (size_t)c.N * c.dv;
    double              *q = dvec(nq, 1), *k = dvec(nq, 1), *v = dvec(nv, 1), *dout = dvec(nv, 1);
    double              *o = malloc(nv * sizeof(double)), *g[3], *x[3] = {q, k, v};
    for (int t = 0; t < 3; t++)
        g[t] = malloc((t < 2 ? nq : nv) * sizeof(double));
    struct refout r = {o, g[0], g[1], g[2]};
    ref_attn(&r, q, k, v, dout, &c);
    double worst = 0, h = 1e-6;
    for (int t = 0; t < 3; t++)
        for (size_t i = 0; i < (t < 2 ? nq : nv); i++) {
            double old = x[t][i], lp, lm;
            x[t][i] = old + h, lp = ref_loss(q, k, v, dout, &c, o);
            x[t][i] = old - h, lm = ref_loss(q, k, v, dout, &c, o);
            x[t][i] = old;
            worst   = fmax(worst, fabs((lp - lm) / (2 * h) - g[t][i]));
        }
    tap_ok(worst < 1e-7,
           "float64 reference (YaRN + xPos, R < d): analytic backward = central "
           "differences (max abs diff %.2g)",
           worst);
    for (int t = 0; t < 3; t++)
        free(g[t]);
    free(q), free(k), free(v), free(dout), free(o);
}

/* ---------------------------------------------------------------- kernel runs */

static void opts_of(struct rl_attn_opts *o, const struct refcase *c, int linear)
{
    rl_attn_opts_default(o);
    o->kind            = linear ? RL_ATTN_LINEAR : RL_ATTN_SOFTMAX;
    o->pe              = RL_ATTN_PE_ROPE;
    o->causal          = c->causal;
    o->rope.base       = c->base;
    o->rope.layout     = c->halves ? RL_ROPE_LAYOUT_HALVES : RL_ROPE_LAYOUT_PAIRS;
    o->rope.dims       = c->R == c->d ? 0 : c->R;
    o->rope.yarn       = c->yarn;
    o->rope.yarn_orig  = c->yarn_orig;
    o->xpos            = c->gamma > 0;
    o->xpos_scale_base = c->gamma > 0 ? c->gamma : 512;
}

struct run {
    float *q, *k, *v, *dout, *o, *saved, *dq, *dk, *dv;
};

static void run_alloc(struct run *b, int G, const struct refcase *c)
{
    size_t nq = (size_t)G * c->N * c->d, nv = (size_t)G * c->N * c->dv;
    b->q = malloc(nq * 4), b->k = malloc(nq * 4), b->dq = malloc(nq * 4), b->dk = malloc(nq * 4);
    b->v = malloc(nv * 4), b->dout = malloc(nv * 4), b->o = malloc(nv * 4), b->dv = malloc(nv * 4);
    b->saved = malloc((size_t)G * c->N * 4);
    tap_fill_normal(b->q, nq, 1.0), tap_fill_normal(b->k, nq, 1.0);
    tap_fill_normal(b->v, nv, 1.0), tap_fill_normal(b->dout, nv, 1.0);
}

static void run_free(struct run *b)
{
    free(b->q), free(b->k), free(b->v), free(b->dout), free(b->o), free(b->saved);
    free(b->dq), free(b->dk), free(b->dv);
}

/* forward (and backward when grad) of G heads through rl_attn */
static void kernel(struct run *b, int G, const struct refcase *c, int linear, int grad)
{
    struct rl_attn_opts o;
    rl_attn            *a;
    opts_of(&o, c, linear);
    if (rl_attn_create(&a, &o, G, c->N, c->d, c->dv) != RL_OK) tap_bail("%s", rl_last_error());
    const struct rl_attn_in in = {b->q, b->k, b->v, NULL, NULL, NULL};
    if (rl_attn_forward(a, b->o, b->saved, &in, G, NULL) != RL_OK)
        tap_bail("forward: %s", rl_last_error());
    if (grad) {
        const struct rl_attn_grads gr = {b->dq, b->dk, b->dv, NULL, NULL};
        if (rl_attn_backward(a, &gr, b->dout, b->o, b->saved, &in, G) != RL_OK)
            tap_bail("backward: %s", rl_last_error());
    }
    rl_attn_free(a);
}

static double *widen(const float *x, size_t n)
{
    double *y = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++)
        y[i] = x[i];
    return y;
}

/* The kernel against the float64 reference, forward and gradients (tolerances as for
 * `ropelab attn`: 1e-4 and 1e-3 of each tensor's largest magnitude). */
static void check_vs_reference(const struct refcase *c, const char *what)
{
    struct run b;
    run_alloc(&b, 1, c);
    kernel(&b, 1, c, 0, 1);
    const size_t nq = (size_t)c->N * c->d, nv = (size_t)c->N * c->dv;
    double *q = widen(b.q, nq), *k = widen(b.k, nq), *v = widen(b.v, nv), *g = widen(b.dout, nv);
    struct refout r = {malloc(nv * 8), malloc(nq * 8), malloc(nq * 8), malloc(nv * 8)};
    ref_attn(&r, q, k, v, g, c);
    tap_close_scaled(b.o, r.o, nv, 1e-4, "%s: out vs float64", what);
    tap_close_scaled(b.dq, r.dq, nq, 1e-3, "%s: dq vs float64", what);
    tap_close_scaled(b.dk, r.dk, nq, 1e-3, "%s: dk vs float64", what);
    tap_close_scaled(b.dv, r.dv, nv, 1e-3, "%s: dv vs float64", what);
    free(q), free(k), free(v), free(g), free(r.o), free(r.dq), free(r.dk), free(r.dv);
    run_free(&b);
}

/* YaRN with s = 1 (and any yarn_orig) is plain RoPE, bit for bit. */
static void yarn_off_identical(int linear)
{
    struct refcase c = {300, 16, 8, 16, 1, 1, 10000, 1, 0, 0};
    struct run     b;
    run_alloc(&b, 2, &c);
    kernel(&b, 2, &c, linear, 1);
    size_t nq = (size_t)2 * c.N * c.d, nv = (size_t)2 * c.N * c.dv;
    float *o = malloc(nv * 4), *dq = malloc(nq * 4);
    memcpy(o, b.o, nv * 4), memcpy(dq, b.dq, nq * 4);
    c.yarn_orig = 77;
    kernel(&b, 2, &c, linear, 1);
    tap_ok(!memcmp(o, b.o, nv * 4) && !memcmp(dq, b.dq, nq * 4),
           "%s: rope_yarn = 1 with rope_yarn_orig = 77 gives plain RoPE's out and dq bit for bit",
           linear ? "linear" : "softmax");
    free(o), free(dq);
    run_free(&b);
}

/* Directional derivative of L = sum dout . o along a random u, by central differences of
 * the kernel's forward (float32, so h is large and the check loose), against dq . u etc. */
static void directional_fd(const struct refcase *c, int linear, const char *what)
{
    struct run b;
    run_alloc(&b, 1, c);
    kernel(&b, 1, c, linear, 1);
    const size_t nq = (size_t)c->N * c->d, nv = (size_t)c->N * c->dv;
    float       *x[3] = {b.q, b.k, b.v}, *g[3] = {b.dq, b.dk, b.dv};
    const float  h = 1e-2f;
    for (int t = 0; t < 3; t++) {
        size_t n    = t < 2 ? nq : nv;
        float *keep = malloc(n * 4), *u = malloc(n * 4), *o0 = malloc(nv * 4);
        memcpy(keep, x[t], n * 4);
        tap_fill_normal(u, n, 1.0);
        double gu = 0, l[2];
        for (size_t i = 0; i < n; i++)
            gu += (double)g[t][i] * u[i];
        memcpy(o0, b.o, nv * 4);
        for (int s = 0; s < 2; s++) {
            for (size_t i = 0; i < n; i++)
                x[t][i] = keep[i] + (s ? -h : h) * u[i];
            kernel(&b, 1, c, linear, 0);
            l[s] = 0;
            for (size_t i = 0; i < nv; i++)
                l[s] += (double)b.o[i] * b.dout[i];
        }
        memcpy(x[t], keep, n * 4), memcpy(b.o, o0, nv * 4);
        double fd = (l[0] - l[1]) / (2 * h);
        tap_ok(fabs(fd - gu) <= 2e-3 * fabs(gu) + 1e-4,
               "%s: d%c . u = %.6g, central difference %.6g", what, "qkv"[t], gu, fd);
        free(keep), free(u), free(o0);
    }
    run_free(&b);
}

/* xPos with gamma = 1e30 is plain RoPE up to rounding. */
static void xpos_infinite_gamma(void)
{
    struct refcase c = {300, 16, 8, 16, 0, 1, 10000, 1, 0, 0};
    struct run     b;
    run_alloc(&b, 2, &c);
    kernel(&b, 2, &c, 0, 1);
    size_t  nv = (size_t)2 * c.N * c.dv, nq = (size_t)2 * c.N * c.d;
    double *o = widen(b.o, nv), *dq = widen(b.dq, nq);
    c.gamma = 1e30;
    kernel(&b, 2, &c, 0, 1);
    tap_close_scaled(b.o, o, nv, 1e-6, "xPos with gamma = 1e30 equals plain RoPE (out)");
    tap_close_scaled(b.dq, dq, nq, 1e-5, "xPos with gamma = 1e30 equals plain RoPE (dq)");
    free(o), free(dq);
    run_free(&b);
}

/* Constant q and k rows make every score a function of position alone; with v_n = e_n the
 * output row is the probability row, so s[m,n] = log o[m,n] + lse[m].  xPos (with its per
 * block centres) must leave s depending on m - n only. */
static void xpos_relative(int halves)
{
    const int      N = 600, d = 16;
    struct refcase c = {N, d, N, d, halves, 1, 10000, 1, 16, 0};
    struct run     b;
    run_alloc(&b, 1, &c);
    float q[16], k[16];
    tap_fill_normal(q, d, 1.0), tap_fill_normal(k, d, 1.0);
    for (int m = 0; m < N; m++) {
        memcpy(b.q + (size_t)m * d, q, sizeof q), memcpy(b.k + (size_t)m * d, k, sizeof k);
        for (int n = 0; n < N; n++)
            b.v[(size_t)m * N + n] = (float)(m == n);
    }
    kernel(&b, 1, &c, 0, 0);
    double worst = 0;
    int    count = 0;
    for (int delta = 0; delta < N; delta += 13)
        for (int m = delta; m < N; m += 29) {
            double s0 = log(b.o[(size_t)delta * N + 0]) + b.saved[delta];
            double s  = log(b.o[(size_t)m * N + (m - delta)]) + b.saved[m];
            worst     = fmax(worst, fabs(s - s0));
            count++;
        }
    tap_ok(worst < 1e-4,
           "xPos %s, gamma 16, N %d (3 query blocks): s[m, m-delta] is the same "
           "for every m (%d pairs, max diff %.2g)",
           halves ? "halves" : "pairs", N, count, worst);
    run_free(&b);
}

static int all_finite(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

/* Long sequences.  A single centre c = N/2 needs factors zeta_0^(+-N/(2 gamma)): e^(+-80)
 * at N = 65536, gamma = 512 (still inside float32, 1.7e-35 .. 5.8e34), but e^(+-160) at
 * N / gamma = 256 (N = 65536, gamma = 256, or N = 131072, gamma = 512), where such a
 * kernel's dq and dk were measured non-finite.  make check runs N = 16384 with gamma = 64
 * (N / gamma = 256, 1/16 of the work of N = 65536); ROPELAB_LONG_TESTS=1 runs N = 65536,
 * gamma = 512 itself (~20 s).  Rows are checked against a float64 direct sum. */
static void xpos_long(int N, double gamma)
{
    const int      d = 8, dv = 2;
    struct refcase c = {N, d, dv, d, 0, 1, 10000, 1, gamma, 0};
    struct run     b;
    run_alloc(&b, 1, &c);
    kernel(&b, 1, &c, 0, 1);
    tap_ok(all_finite(b.o, (size_t)N * dv) && all_finite(b.saved, (size_t)N),
           "xPos N = %d, gamma %g: out and lse finite", N, gamma);
    tap_ok(all_finite(b.dq, (size_t)N * d) && all_finite(b.dk, (size_t)N * d) &&
               all_finite(b.dv, (size_t)N * dv),
           "xPos N = %d, gamma %g: dq, dk, dv finite", N, gamma);
    double lz[8], worst = 0, big = 0;
    for (int i = 0; i < d / 2; i++)
        lz[2 * i] = lz[2 * i + 1] = log((2.0 * i / d + 0.4) / 1.4);
    const int rows[] = {0, 1, 255, 256, N / 3, N / 2 - 1, N / 2, 3 * N / 4 + 1, N - 1};
    double   *s      = malloc(sizeof(double) * N), Q[8], K[8], x[8];
    for (int t = 0; t < (int)(sizeof rows / sizeof rows[0]); t++) {
        int m = rows[t];
        for (int f = 0; f < d; f++)
            x[f] = b.q[(size_t)m * d + f];
        ref_rot(Q, x, &c, m, 0);
        double mx = -INFINITY, sum = 0, o[2] = {0, 0};
        for (int n = 0; n <= m; n++) {
            for (int f = 0; f < d; f++)
                x[f] = b.k[(size_t)n * d + f];
            ref_rot(K, x, &c, n, 0);
            double acc = 0;
            for (int f = 0; f < d; f++)
                acc += Q[f] * K[f] * exp(lz[f] * (m - n) / gamma);
            s[n] = acc / sqrt((double)d);
            mx   = fmax(mx, s[n]);
        }
        for (int n = 0; n <= m; n++) {
            double p = exp(s[n] - mx);
            sum += p, o[0] += p * b.v[(size_t)n * dv], o[1] += p * b.v[(size_t)n * dv + 1];
        }
        for (int e = 0; e < dv; e++) {
            worst = fmax(worst, fabs(b.o[(size_t)m * dv + e] - o[e] / sum));
            big   = fmax(big, fabs(o[e] / sum));
        }
    }
    free(s);
    tap_ok(worst <= 1e-4 * big,
           "xPos N = %d: 9 rows (0 .. N-1) vs a float64 direct sum "
           "(max abs err %.2g, max |o| %.2g)",
           N, worst, big);
    run_free(&b);
}

static void option_errors(void)
{
    struct rl_attn_opts o;
    struct refcase      c = {8, 8, 8, 8, 0, 1, 10000, 1, 512, 0};
    opts_of(&o, &c, 0);
    rl_status st;
    o.causal = 0;
    st       = rl_attn_opts_check(&o, 1, 8, 8);
    tap_ok(st == RL_EINVAL, "xpos non-causal rejected: %s", rl_last_error());
    opts_of(&o, &c, 1);
    st = rl_attn_opts_check(&o, 1, 8, 8);
    tap_ok(st == RL_EINVAL, "xpos with linear attention rejected: %s", rl_last_error());
    opts_of(&o, &c, 0);
    o.pe = RL_ATTN_PE_ALIBI;
    st   = rl_attn_opts_check(&o, 1, 8, 8);
    tap_ok(st == RL_EINVAL, "xpos without RoPE rejected: %s", rl_last_error());
    opts_of(&o, &c, 0);
    o.xpos_scale_base = 0;
    st                = rl_attn_opts_check(&o, 1, 8, 8);
    tap_ok(st == RL_EINVAL, "xpos_scale_base = 0 rejected: %s", rl_last_error());
    c.gamma = 0, c.yarn = 2;
    opts_of(&o, &c, 0);
    o.rope.ntk = 2;
    st         = rl_attn_opts_check(&o, 1, 8, 8);
    tap_ok(st == RL_EINVAL, "rope_yarn with rope_ntk rejected: %s", rl_last_error());
}

int main(void)
{
    tap_seed(12);
    rl_threads_set(1);
    test_reference_fd();
    /* N d dv R halves causal base yarn gamma yarn_orig */
    const struct refcase cases[] = {
        {700, 16, 8, 16, 0, 1, 10000, 4, 64, 256}, /* YaRN + xPos, pairs */
        {700, 16, 8, 12, 1, 1, 500, 4, 64, 256},   /* halves, partial rotary */
        {700, 16, 8, 16, 0, 1, 10000, 1, 64, 0},   /* xPos alone */
        {300, 16, 8, 12, 0, 0, 100, 8, 0, 1000},   /* YaRN alone, non-causal, partial */
        {300, 16, 8, 16, 1, 1, 100, 8, 0, 1000},   /* YaRN alone, causal, halves */
    };
    const char *names[] = {"YaRN s=4 + xPos gamma 64, pairs, N 700",
                           "YaRN s=4 + xPos gamma 64, halves, R 12 of 16, N 700",
                           "xPos gamma 64, N 700", "YaRN s=8 non-causal, R 12 of 16",
                           "YaRN s=8 causal, halves"};
    for (int i = 0; i < 5; i++)
        check_vs_reference(&cases[i], names[i]);
    yarn_off_identical(0);
    yarn_off_identical(1);
    const struct refcase lin[] = {{200, 16, 8, 16, 0, 1, 100, 8, 0, 1000},
                                  {200, 16, 8, 12, 1, 0, 100, 8, 0, 1000}};
    directional_fd(&lin[0], 1, "linear YaRN s=8 causal pairs");
    directional_fd(&lin[1], 1, "linear YaRN s=8 non-causal halves R 12");
    directional_fd(&cases[0], 0, "softmax YaRN + xPos N 700");
    xpos_infinite_gamma();
    xpos_relative(0);
    xpos_relative(1);
    const char *lt = getenv("ROPELAB_LONG_TESTS");
    if (lt && atoi(lt) > 0)
        xpos_long(65536, 512);
    else
        xpos_long(16384, 64);
    option_errors();
    return tap_done();
}
