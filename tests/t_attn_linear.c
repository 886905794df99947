/* t_attn_linear.c -- linear attention without a bias PE (RoFormer eq. 18, 19), one head.
 *
 * Evidence: (1) a float64 quadratic reference written from the formulas -- sim(m, n)
 * materialised per pair, Shen's normaliser summed per query over its own prefix, R_m
 * built from cos/sin in double -- for every feature map x causal x {none, RoPE at the
 * feature place (eq. 19), at the input, feature place with the rotated denominator} x
 * {pairs, halves} and a partial rope_dims; (2) gradients against central differences of
 * that reference (all elements at N = 7; sampled elements plus a directional derivative at
 * N = 70, at N = 300 -- two of the kernel's 256-row blocks, causal and not -- at d = 40,
 * where the scan's state rows span two 32-lane tiles, and at d = dv = 32, where its rows
 * are whole tiles and read and written in place); (3) invariants: a causal row equals
 * the non-causal kernel on its prefix, the rotated-denominator instability is counted row
 * by row, N = 1, dv != d, |q|, |k| up to 30 (also keys rising along the sequence, so that
 * the Shen column max grows from block to block).  The forget gate: every pair's weight
 * times exp(c_m - c_n) in the reference, dlogf by central differences too, for every map
 * and RoPE placement, weak and strong gates, across the 256-row blocks. */
#include "config.h"
#include "kernels/attn_linear.h"
#include "kernels/featmap.h"
#include "core/threads.h"
#include "core/init.h"
#include "tap.h"
#include "core/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum pe_kind { PE_NONE, PE_FEATURE, PE_INPUT, PE_ROTATED };
static const char *pe_names[]   = {"none", "rope-feature", "rope-input", "rope-feature+rot-den"};
static const char *fmap_names[] = {"elu1", "softmax", "exp"};

struct cfg {
    enum rl_fmap fmap;
    int          causal;
    enum pe_kind pe;
    int          halves, dims; /* dims: rotated features R (0 = d) */
    double       gate;         /* 0: none; else log gates uniform in [-gate, 0] (causal) */
};

/* The log gates of the problem at hand (the reference reads them; NULL: no gate). */
static double *ref_logf;

static void cfg_name(char *buf, size_t len, const struct cfg *c)
{
    snprintf(buf, len, "%s %s %s%s%s%s", fmap_names[c->fmap], c->causal ? "causal" : "full",
             pe_names[c->pe],
             c->pe == PE_NONE ? ""
             : c->halves      ? " halves"
                              : " pairs",
             c->dims ? " partial" : "", c->gate > 0 ? " gated" : "");
}

/* ---- float64 reference --------------------------------------------------------------- */

/* cos / sin of m theta_i in double for m < N, i < R/2 (theta_i = 10000^(-2i/R)) */
struct ref_rope {
    int     R, halves;
    double *c, *s;
};

static void ref_rope_init(struct ref_rope *t, const struct cfg *c, int N, int d)
{
    t->R = c->dims ? c->dims : d, t->halves = c->halves;
    int h = t->R / 2;
    t->c  = malloc(sizeof(double) * (size_t)(N * h + 1)),
    t->s  = malloc(sizeof(double) * (size_t)(N * h + 1));
    for (int m = 0; m < N; m++)
        for (int i = 0; i < h; i++) {
            double a        = m * pow(10000.0, -2.0 * i / t->R);
            t->c[m * h + i] = cos(a), t->s[m * h + i] = sin(a);
        }
}

/* y = R_m x: the pairs (2i, 2i+1) or (i, i + R/2) written out */
static void ref_rotate(double *y, const double *x, int m, const struct ref_rope *t, int d)
{
    int h = t->R / 2;
    for (int j = 0; j < d; j++)
        y[j] = x[j];
    for (int i = 0; i < h; i++) {
        double cs = t->c[m * h + i], sn = t->s[m * h + i];
        int    p = t->halves ? i : 2 * i, q = t->halves ? i + h : 2 * i + 1;
        y[p] = x[p] * cs - x[q] * sn;
        y[q] = x[p] * sn + x[q] * cs;
    }
}

static void ref_fmap_q(double *p, const double *x, int d, enum rl_fmap f)
{
    if (f == RL_FMAP_ELU1) {
        for (int j = 0; j < d; j++)
            p[j] = x[j] > 0 ? x[j] + 1 : exp(x[j]);
        return;
    }
    double mx = x[0], s = 0;
    for (int j = 1; j < d; j++)
        mx = fmax(mx, x[j]);
    for (int j = 0; j < d; j++)
        s += p[j] = exp(x[j] - mx);
    for (int j = 0; j < d; j++)
        p[j] /= s;
}

struct ref_out {
    double *o, *den, *raw; /* o (N, dv); den incl. eps; raw = before eps */
};

/* o_m = sum_n sim_num(m,n) v_n / (sum_n sim_den(m,n) + eps), sims straight from the formulas. */
static void ref_forward(struct ref_out *r, const double *q, const double *k, const double *v,
                        const struct cfg *c, int N, int d, int dv, double eps)
{
    double         *xq = malloc(sizeof(double) * N * d), *xk = malloc(sizeof(double) * N * d);
    double         *pq = malloc(sizeof(double) * N * d), *ek = malloc(sizeof(double) * N * d);
    double         *Z = malloc(sizeof(double) * d), t[64], kap[64], kr[64], rq[64];
    struct ref_rope rt;
    ref_rope_init(&rt, c, N, d);
    for (int n = 0; n < N; n++) {
        if (c->pe == PE_INPUT) { /* phi(R q), phi(R k) */
            ref_rotate(xq + n * d, q + n * d, n, &rt, d);
            ref_rotate(xk + n * d, k + n * d, n, &rt, d);
        } else
            memcpy(xq + n * d, q + n * d, sizeof(double) * d),
                memcpy(xk + n * d, k + n * d, sizeof(double) * d);
        ref_fmap_q(pq + n * d, xq + n * d, d, c->fmap);
        for (int f = 0; f < d; f++) {
            double x      = xk[n * d + f];
            ek[n * d + f] = c->fmap == RL_FMAP_ELU1 ? (x > 0 ? x + 1 : exp(x)) : exp(x);
        }
    }
    int     rot = c->pe == PE_FEATURE || c->pe == PE_ROTATED;
    double *cum = malloc(sizeof(double) * N);
    for (int m = 0; m < N; m++) /* the gate: c_m = sum_{l<=m} lambda_l */
        cum[m] = (m ? cum[m - 1] : 0.0) + (ref_logf ? ref_logf[m] : 0.0);
    for (int m = 0; m < N; m++) {
        int last = c->causal ? m : N - 1;
        for (int f = 0; f < d; f++) { /* Shen: phi_k over the positions this query sees */
            Z[f] = 0;
            for (int n = 0; n <= last; n++)
                Z[f] += ek[n * d + f];
        }
        if (rot)
            ref_rotate(rq, pq + m * d, m, &rt, d);
        else
            memcpy(rq, pq + m * d, sizeof(double) * d);
        double sden = 0;
        for (int j = 0; j < dv; j++)
            t[j] = 0;
        for (int n = 0; n <= last; n++) {
            for (int f = 0; f < d; f++)
                kap[f] = ek[n * d + f] / (c->fmap == RL_FMAP_SOFTMAX ? Z[f] : 1);
            if (rot)
                ref_rotate(kr, kap, n, &rt, d);
            else
                memcpy(kr, kap, sizeof(double) * d);
            double sn = 0, sd = 0;
            for (int f = 0; f < d; f++)
                sn += rq[f] * kr[f], sd += pq[m * d + f] * kap[f];
            if (c->pe == PE_ROTATED) sd = sn;
            double wg = exp(cum[m] - cum[n]); /* 1 without a gate */
            sn *= wg, sd *= wg;
            for (int j = 0; j < dv; j++)
                t[j] += sn * v[n * dv + j];
            sden += sd;
        }
        r->raw[m] = sden, r->den[m] = sden + eps;
        for (int j = 0; j < dv; j++)
            r->o[m * dv + j] = t[j] / (sden + eps);
    }
    free(xq), free(xk), free(pq), free(ek), free(Z), free(rt.c), free(rt.s), free(cum);
}

/* L = sum_m w_m . o_m in float64 */
static double ref_loss(const double *q, const double *k, const double *v, const double *w,
                       const struct cfg *c, int N, int d, int dv, double eps, double *scr)
{
    struct ref_out r = {scr, scr + N * dv, scr + N * dv + N};
    ref_forward(&r, q, k, v, c, N, d, dv, eps);
    double L = 0;
    for (int i = 0; i < N * dv; i++)
        L += w[i] * r.o[i];
    return L;
}

/* ---- the kernel ---------------------------------------------------------------------- */

struct problem {
    int    N, d, dv;
    float *q, *k, *v, *w; /* inputs and the loss weights (= dout) */
    float *o, *den, *dq, *dk, *dvv;
    float *logf, *dlogf; /* the gate's, when the case has one */
    long   bad;
};

static void problem_alloc(struct problem *p, int N, int d, int dv)
{
    p->N = N, p->d = d, p->dv = dv;
    size_t nd = (size_t)N * d, nv = (size_t)N * dv;
    p->q = calloc(nd, 4), p->k = calloc(nd, 4), p->dq = calloc(nd, 4), p->dk = calloc(nd, 4);
    p->v = calloc(nv, 4), p->w = calloc(nv, 4), p->o = calloc(nv, 4), p->dvv = calloc(nv, 4);
    p->den  = calloc((size_t)N, 4);
    p->logf = calloc((size_t)N, 4), p->dlogf = calloc((size_t)N, 4);
}

static void problem_free(struct problem *p)
{
    free(p->q), free(p->k), free(p->v), free(p->w), free(p->o), free(p->den);
    free(p->dq), free(p->dk), free(p->dvv), free(p->logf), free(p->dlogf);
    free(ref_logf), ref_logf = NULL;
}

static void problem_fill(struct problem *p, double qk_scale, double gate)
{
    free(ref_logf), ref_logf = NULL;
    if (gate > 0) {
        ref_logf = malloc(sizeof(double) * p->N);
        for (int i = 0; i < p->N; i++)
            p->logf[i] = (float)(-gate * tap_uniform()), ref_logf[i] = p->logf[i];
    }
    tap_fill_normal(p->q, (size_t)p->N * p->d, qk_scale);
    tap_fill_normal(p->k, (size_t)p->N * p->d, qk_scale);
    tap_fill_normal(p->v, (size_t)p->N * p->dv, 1.0);
    tap_fill_normal(p->w, (size_t)p->N * p->dv, 1.0);
}

static void make_opts(struct rl_attn_opts *o, const struct cfg *c)
{
    memset(o, 0, sizeof *o);
    rl_rope_opts_default(&o->rope);
    o->kind             = RL_ATTN_LINEAR;
    o->fmap             = c->fmap;
    o->pe               = c->pe == PE_NONE ? RL_ATTN_PE_NONE : RL_ATTN_PE_ROPE;
    o->causal           = c->causal;
    o->eps              = 1e-6f;
    o->rope.layout      = c->halves ? RL_ROPE_LAYOUT_HALVES : RL_ROPE_LAYOUT_PAIRS;
    o->rope.dims        = c->dims;
    o->rope_place       = c->pe == PE_INPUT ? RL_ROPE_PLACE_INPUT : RL_ROPE_PLACE_FEATURE;
    o->rope_denominator = c->pe == PE_ROTATED ? RL_ROPE_DENOM_ROTATED : RL_ROPE_DENOM_PLAIN;
    o->forget           = c->gate > 0;
}

/* Forward (and backward when grads) on the first n rows of p (n <= p->N). */
static void run_kernel(struct problem *p, const struct cfg *c, int n, int grads)
{
    struct rl_attn_opts o;
    struct rl_rope      rope;
    make_opts(&o, c);
    if (c->pe != PE_NONE && rl_rope_init(&rope, p->N, p->d, &o.rope) != RL_OK)
        tap_bail("rope init: %s", rl_last_error());
    const struct rl_rope *r = c->pe != PE_NONE ? &rope : NULL;
    float *s = rl_alloc(rl_attn_linear_scratch_floats(&o, n, p->d, p->dv) * sizeof(float));
    if (!s) tap_bail("out of memory");
    const struct rl_lin_head h = {.q    = p->q,
                                  .k    = p->k,
                                  .v    = p->v,
                                  .rope = r,
                                  .logf = c->gate > 0 ? p->logf : NULL,
                                  .N    = n,
                                  .d    = p->d,
                                  .dv   = p->dv};
    rl_attn_linear_forward(p->o, p->den, &p->bad, &h, &o, s);
    if (grads) {
        const struct rl_lin_grads g = {.dq = p->dq, .dk = p->dk, .dv = p->dvv, .dlogf = p->dlogf};
        rl_attn_linear_backward(&g, p->w, p->o, p->den, &h, &o, s);
    }
    rl_free(s);
    if (r) rl_rope_free(&rope);
}

static double *to_double(const float *x, size_t n)
{
    double *y = malloc(sizeof(double) * n);
    for (size_t i = 0; i < n; i++)
        y[i] = x[i];
    return y;
}

/* ---- checks -------------------------------------------------------------------------- */

static const double EPS = 1e-6;

/* Forward against the float64 reference: o, den (incl. eps) and the bad-row count. */
static void check_forward(const struct cfg *c, int N, int d, int dv, double qk_scale)
{
    char           nm[128];
    struct problem p;
    cfg_name(nm, sizeof nm, c);
    problem_alloc(&p, N, d, dv);
    problem_fill(&p, qk_scale, c->gate);
    run_kernel(&p, c, N, 0);
    double        *q = to_double(p.q, (size_t)N * d), *k = to_double(p.k, (size_t)N * d);
    double        *v   = to_double(p.v, (size_t)N * dv);
    double        *buf = malloc(sizeof(double) * (N * dv + 2 * N));
    struct ref_out r   = {buf, buf + N * dv, buf + N * dv + N};
    ref_forward(&r, q, k, v, c, N, d, dv, EPS);
    tap_close_scaled(p.o, r.o, (size_t)N * dv, 1e-4, "forward %s N=%d d=%d dv=%d: o", nm, N, d, dv);
    double scale = 0;
    long   bad   = 0;
    for (int m = 0; m < N; m++)
        scale = fmax(scale, fabs(r.den[m])), bad += r.raw[m] <= EPS;
    tap_close(p.den, r.den, (size_t)N, 1e-4, 1e-5 * scale, "forward %s N=%d: den incl. eps", nm, N);
    tap_ok(p.bad == bad, "forward %s N=%d: n_bad %ld == reference %ld", nm, N, p.bad, bad);
    free(q), free(k), free(v), free(buf);
    problem_free(&p);
}

/* Central difference of the reference loss along direction u (or element i when u = NULL). */
static double fd(double *x, size_t i, const double *u, size_t n, double h, double *q, double *k,
                 double *v, const double *w, const struct cfg *c, int N, int d, int dv, double *scr)
{
    double save = u ? 0 : x[i], Lp, Lm;
    if (u)
        for (size_t j = 0; j < n; j++)
            x[j] += h * u[j];
    else
        x[i] = save + h;
    Lp = ref_loss(q, k, v, w, c, N, d, dv, EPS, scr);
    if (u)
        for (size_t j = 0; j < n; j++)
            x[j] -= 2 * h * u[j];
    else
        x[i] = save - h;
    Lm = ref_loss(q, k, v, w, c, N, d, dv, EPS, scr);
    if (u)
        for (size_t j = 0; j < n; j++)
            x[j] += h * u[j];
    else
        x[i] = save;
    return (Lp - Lm) / (2 * h);
}

/* dq, dk, dv against central differences of the float64 reference: every element when
 * nsample = 0, else nsample random elements per tensor plus one directional derivative. */
static void check_grads(const struct cfg *c, int N, int d, int dv, int nsample)
{
    char           nm[128];
    struct problem p;
    cfg_name(nm, sizeof nm, c);
    problem_alloc(&p, N, d, dv);
    problem_fill(&p, 1.0, c->gate);
    run_kernel(&p, c, N, 1);
    double     *q = to_double(p.q, (size_t)N * d), *k = to_double(p.k, (size_t)N * d);
    double     *v = to_double(p.v, (size_t)N * dv), *w = to_double(p.w, (size_t)N * dv);
    double     *scr = malloc(sizeof(double) * (N * dv + 2 * N)), h = 1e-5;
    double     *xs[4] = {q, k, v, ref_logf};
    float      *gs[4] = {p.dq, p.dk, p.dvv, p.dlogf};
    size_t      ns[4] = {(size_t)N * d, (size_t)N * d, (size_t)N * dv, (size_t)N};
    const char *tn[4] = {"dq", "dk", "dv", "dlogf"};
    for (int t = 0; t < (ref_logf ? 4 : 3); t++) {
        size_t  cnt = nsample ? (size_t)nsample : ns[t];
        double *ref = malloc(sizeof(double) * cnt);
        float  *got = malloc(sizeof(float) * cnt);
        for (size_t s = 0; s < cnt; s++) {
            size_t i = nsample ? (size_t)(tap_uniform() * (double)ns[t]) : s;
            ref[s]   = fd(xs[t], i, NULL, ns[t], h, q, k, v, w, c, N, d, dv, scr);
            got[s]   = gs[t][i];
        }
        if (N > 1)
            tap_close_scaled(got, ref, cnt, 1e-3,
                             "grad %s N=%d d=%d dv=%d: %s vs central differences (%s)", nm, N, d,
                             dv, tn[t], nsample ? "sampled" : "all");
        else /* o_0 = v_0 den'/(den' + eps): dq, dk are O(eps), so compare absolutely */
            tap_close(got, ref, cnt, 1e-3, 1e-6, "grad %s N=1: %s vs central differences", nm,
                      tn[t]);
        if (nsample) { /* KANN's directional check covers every element at once */
            double *u = malloc(sizeof(double) * ns[t]), dot = 0, mag = 0;
            for (size_t i = 0; i < ns[t]; i++)
                u[i] = tap_normal();
            for (size_t i = 0; i < ns[t]; i++)
                dot += (double)gs[t][i] * u[i], mag += fabs((double)gs[t][i] * u[i]);
            double dd = fd(xs[t], 0, u, ns[t], h, q, k, v, w, c, N, d, dv, scr);
            tap_ok(fabs(dd - dot) <= 1e-3 * mag,
                   "grad %s N=%d d=%d dv=%d: %s directional: %.9g vs fd %.9g", nm, N, d, dv, tn[t],
                   dot, dd);
            free(u);
        }
        free(ref), free(got);
    }
    free(q), free(k), free(v), free(w), free(scr);
    problem_free(&p);
}

/* A causal row m depends on rows 0..m only and equals the non-causal kernel run on them
 * (for Shen that is the prefix normaliser's definition). */
static void check_prefix(const struct cfg *c, int N, int d, int dv)
{
    char           nm[128];
    struct problem p;
    struct cfg     full   = *c;
    const int      rows[] = {0, 1, 100, 254, 255, 256, 257, N - 1};
    const int      nr     = (int)(sizeof rows / sizeof rows[0]);
    full.causal           = 0;
    cfg_name(nm, sizeof nm, c);
    problem_alloc(&p, N, d, dv);
    problem_fill(&p, 1.0, c->gate);
    run_kernel(&p, c, N, 0);
    float  *got = malloc(sizeof(float) * nr * dv);
    double *ref = malloc(sizeof(double) * nr * dv);
    for (int i = 0; i < nr; i++)
        for (int j = 0; j < dv; j++)
            got[i * dv + j] = p.o[rows[i] * dv + j];
    for (int i = 0; i < nr; i++) {
        run_kernel(&p, &full, rows[i] + 1, 0);
        for (int j = 0; j < dv; j++)
            ref[i * dv + j] = p.o[rows[i] * dv + j];
    }
    tap_close_scaled(got, ref, (size_t)nr * dv, 2e-5,
                     "invariant %s N=%d: causal row m == non-causal kernel on rows 0..m", nm, N);
    free(got), free(ref);
    problem_free(&p);
}

/* The rotated denominator (rope_denominator = rotated) with phi = 1: d = 2, q = k = 0,
 * elu1, so den_m = sum_{n<=m} 2 cos((m - n) theta_0), theta_0 = 1, which goes negative:
 * the kernel must count exactly those rows, and still compute them. */
static void check_bad_rows(int causal)
{
    const int      N = 300, d = 2, dv = 3;
    struct cfg     c = {RL_FMAP_ELU1, causal, PE_ROTATED, 0, 0, 0};
    struct problem p;
    problem_alloc(&p, N, d, dv);
    tap_fill_normal(p.v, (size_t)N * dv, 1.0);
    tap_fill_normal(p.w, (size_t)N * dv, 1.0);
    run_kernel(&p, &c, N, 1);
    double        *q = to_double(p.q, (size_t)N * d), *v = to_double(p.v, (size_t)N * dv);
    double        *buf = malloc(sizeof(double) * (N * dv + 2 * N));
    struct ref_out r   = {buf, buf + N * dv, buf + N * dv + N};
    ref_forward(&r, q, q, v, &c, N, d, dv, EPS);
    long   bad    = 0;
    double margin = INFINITY;
    for (int m = 0; m < N; m++)
        bad += r.raw[m] <= EPS, margin = fmin(margin, fabs(r.raw[m] - EPS));
    tap_ok(bad > 0 && margin > 1e-4,
           "bad rows (%s): the constructed case has %ld rows <= eps "
           "(closest %.3g from eps)",
           causal ? "causal" : "full", bad, margin);
    tap_ok(p.bad == bad, "bad rows (%s): kernel counts %ld, reference %ld",
           causal ? "causal" : "full", p.bad, bad);
    tap_close_scaled(p.o, r.o, (size_t)N * dv, 1e-4, "bad rows (%s): outputs still computed",
                     causal ? "causal" : "full");
    int finite = 1;
    for (int i = 0; i < N * d; i++)
        finite &= isfinite(p.dq[i]) && isfinite(p.dk[i]);
    tap_ok(finite, "bad rows (%s): gradients finite", causal ? "causal" : "full");
    free(q), free(v), free(buf);
    problem_free(&p);
}

/* |q|, |k| up to 30 (the supported range): no inf/NaN, forward matches the reference.  ramp: keys
 * rise from about -25 to 25 along the sequence, so the Shen column max grows from block to
 * block (the online rescale of the non-causal normaliser, the causal prefix over 1e-22). */
static void check_large(const struct cfg *c, int ramp)
{
    const int      N = 300, d = 8, dv = 4;
    char           nm[128];
    struct problem p;
    cfg_name(nm, sizeof nm, c);
    problem_alloc(&p, N, d, dv);
    problem_fill(&p, 1.0, c->gate);
    for (int i = 0; i < N * d; i++)
        p.q[i] = (float)(60 * tap_uniform() - 30), p.k[i] = (float)(60 * tap_uniform() - 30);
    p.k[3] = 30.0f, p.k[4] = -30.0f, p.q[5] = 30.0f, p.q[6] = -30.0f;
    if (ramp)
        for (int i = 0; i < N * d; i++)
            p.k[i] = (float)(-25.0 + 50.0 * (i / d) / N + 10 * tap_uniform() - 5);
    run_kernel(&p, c, N, 1);
    double        *q = to_double(p.q, (size_t)N * d), *k = to_double(p.k, (size_t)N * d);
    double        *v   = to_double(p.v, (size_t)N * dv);
    double        *buf = malloc(sizeof(double) * (N * dv + 2 * N));
    struct ref_out r   = {buf, buf + N * dv, buf + N * dv + N};
    ref_forward(&r, q, k, v, c, N, d, dv, EPS);
    int finite = 1;
    for (int i = 0; i < N * dv; i++)
        finite &= isfinite(p.o[i]) && isfinite(p.dvv[i]);
    for (int i = 0; i < N * d; i++)
        finite &= isfinite(p.dq[i]) && isfinite(p.dk[i]);
    tap_ok(finite, "large |q|,|k| <= 30%s %s: outputs and gradients finite", ramp ? " ramp" : "",
           nm);
    tap_close_scaled(p.o, r.o, (size_t)N * dv, 1e-4, "large |q|,|k| <= 30%s %s: o vs float64",
                     ramp ? " ramp" : "", nm);
    free(q), free(k), free(v), free(buf);
    problem_free(&p);
}

/* elu1's backward takes its slope from phi alone (1 where phi > 1, phi elsewhere): on the
 * inputs where that could go wrong -- 0, -0, the tiny ones whose phi rounds to 1 from either
 * side, the infinities, NaN -- and on random floats of every magnitude, both sides' dx is
 * dphi * (x > 0 ? 1 : phi) bit for bit (NaN where x is NaN). */
static void check_elu1_slope(void)
{
    enum { N = 40000 };
    float *x = malloc(N * sizeof *x), *phi = malloc(N * sizeof *phi), *g = malloc(N * sizeof *g);
    float *dq = malloc(N * sizeof *dq), *dk = malloc(N * sizeof *dk);
    const float special[] = {0.0f,          -0.0f,          1e-30f,  -1e-30f,  1e-8f,    -1e-8f,
                             5.9604645e-8f, -5.9604645e-8f, 1.2e-7f, -1.2e-7f, INFINITY, -INFINITY,
                             NAN,           -NAN,           88.0f,   -104.0f,  -87.5f,   3.4e38f,
                             -3.4e38f,      1.0f,           -1.0f};
    const int   ns        = (int)(sizeof special / sizeof special[0]);
    for (int i = 0; i < N; i++) {
        if (i < ns)
            x[i] = special[i];
        else { /* sign and binary exponent uniform: every magnitude from 2^-40 to 2^8 */
            double m = ldexp(1.0 + tap_uniform(), (int)(tap_uniform() * 48) - 40);
            x[i]     = (float)(tap_uniform() < 0.5 ? -m : m);
        }
        g[i] = (float)(2 * tap_uniform() - 1);
    }
    rl_fmap_q_forward(phi, x, N / 8, 8, RL_FMAP_ELU1);
    rl_fmap_q_backward(dq, g, phi, N / 8, 8, RL_FMAP_ELU1);
    rl_fmap_k_backward(dk, g, phi, N / 8, 8, RL_FMAP_ELU1);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        const float want = g[i] * (x[i] > 0 ? 1.0f : phi[i]);
        const int   nan  = isnan(x[i]);
        bad += nan ? !isnan(dq[i]) || !isnan(dk[i])
                   : memcmp(&dq[i], &want, 4) != 0 || memcmp(&dk[i], &want, 4) != 0;
    }
    tap_ok(bad == 0,
           "elu1 backward from phi alone: %d of %d inputs differ from dphi (x > 0 ? 1 "
           ": phi)",
           bad, N);
    free(x), free(phi), free(g), free(dq), free(dk);
}

int main(void)
{
    rl_init(1);
    check_elu1_slope();
    tap_seed(20240611);
    const enum pe_kind pes[] = {PE_NONE, PE_FEATURE, PE_INPUT, PE_ROTATED};
    for (int f = 0; f < 3; f++)
        for (int causal = 0; causal < 2; causal++)
            for (int e = 0; e < 4; e++)
                for (int halves = 0; halves < (pes[e] == PE_NONE ? 1 : 2); halves++) {
                    struct cfg c = {(enum rl_fmap)f, causal, pes[e], halves, 0, 0};
                    check_forward(&c, 300, 8, 6, 1.0); /* 300 = one 256-row fold + 44 */
                    check_grads(&c, 7, 4, 3, 0);
                    if (!halves) check_grads(&c, 70, 8, 5, 12);
                    if (e != PE_NONE && !halves) { /* partial rotary: R = 4 of d = 8 */
                        struct cfg cp = c;
                        cp.dims       = 4;
                        check_forward(&cp, 100, 8, 5, 1.0);
                        check_grads(&cp, 6, 8, 3, 0);
                    }
                }
    for (int f = 0; f < 3; f++) { /* long causal grads, the benchmark shape, N = 1, dv != d */
        struct cfg c = {(enum rl_fmap)f, 1, PE_FEATURE, 0, 0, 0};
        check_grads(&c, 300, 8, 5, 8);
        c.pe = f == RL_FMAP_ELU1 ? PE_ROTATED : PE_INPUT;
        check_grads(&c, 300, 8, 5, 8);
        c.causal = 0; /* non-causal over two blocks: totals first, then rows */
        check_grads(&c, 300, 8, 5, 8);
        c.pe = PE_FEATURE, c.causal = 1;
        check_forward(&c, 280, 32, 32, 0.5);
        check_grads(&c, 40, 40, 36, 10); /* state rows of 36..80 lanes: two 32-lane tiles */
        check_grads(&c, 300, 32, 32, 8); /* whole 32-lane rows: the scans work in place */
        check_prefix(&c, 300, 8, 5);
        for (int causal = 0; causal < 2; causal++) {
            c.causal = causal;
            check_forward(&c, 1, 8, 3, 1.0);
            check_grads(&c, 1, 4, 3, 0);
            c.pe = PE_NONE;
            check_forward(&c, 1, 8, 3, 1.0);
            c.pe = PE_FEATURE;
        }
        c.pe = PE_INPUT, c.causal = 1;
        check_prefix(&c, 300, 8, 5);
    }
    for (int f = 0; f < 3; f++) /* the forget gate: every map and placement, causal */
        for (int e = 0; e < 4; e++) {
            struct cfg c = {(enum rl_fmap)f, 1, pes[e], 0, 0, 0.3};
            check_forward(&c, 300, 8, 6, 1.0);
            check_grads(&c, 7, 4, 3, 0);
            check_grads(&c, 300, 8, 5, 8);
            c.gate = 4.0; /* strong: e^{-2} per step on average */
            check_forward(&c, 300, 8, 6, 1.0);
            check_grads(&c, 70, 8, 5, 8);
            c.gate = 0.002, c.halves = e != PE_NONE;
            check_forward(&c, 600, 16, 8, 1.0);
            check_grads(&c, 6, 8, 3, 0);
        }
    check_bad_rows(1);
    check_bad_rows(0);
    for (int f = 0; f < 3; f++)
        for (int causal = 0; causal < 2; causal++)
            for (int e = 0; e < 2; e++) {
                struct cfg c = {(enum rl_fmap)f, causal, pes[e], 0, 0, 0};
                check_large(&c, 0);
                if (f == RL_FMAP_SOFTMAX) check_large(&c, 1);
            }
    return tap_done();
}
