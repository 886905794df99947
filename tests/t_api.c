/* t_api.c -- the C API (src/api/api.h) through the installed shared library's exports
 * alone (this test links libropelab.la, not the internal layers): versions, options by
 * name and their refusals, forward against a float64 evaluation written here from the
 * formulas, backward by a directional derivative of that evaluation, the call checks, the
 * diagnostics, and the decoding step against the forward's rows. */
#include "config.h"
#include "api/api.h"
#include "tap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { H = 2, B = 2, G = B * H, N = 11, D = 4, DV = 3 };

static int has(const char *msg, const char *part) { return strstr(msg, part) != NULL; }

static void test_versions(void)
{
    tap_ok(!strcmp(rl_version(), PACKAGE_VERSION), "rl_version() = %s", rl_version());
    tap_ok(rl_api_version() == RL_API_VERSION, "rl_api_version() = %d", rl_api_version());
    tap_ok(!strcmp(rl_api_strerror(RL_API_EINVAL), "invalid argument"), "rl_api_strerror");
    TAP_CHECK(rl_api_threads_set(-1) == RL_API_EINVAL, "threads -1 refused: %s",
              rl_api_last_error());
    tap_ok(rl_api_threads_set(1) == 0 && rl_api_threads_get() == 1, "threads set to 1");
}

/* Sets name=value and expects status want with a message containing part (or success). */
static void set_expect(rl_api_opts *o, const char *name, const char *value, int want,
                       const char *part)
{
    int st = rl_api_opts_set(o, name, value);
    tap_ok(st == want && (!part || has(rl_api_last_error(), part)), "set %s=%s -> %d%s%s", name,
           value, st, part ? ": " : "", part ? rl_api_last_error() : "");
}

static void expect_get(const rl_api_opts *o, const char *name, const char *want)
{
    char buf[64] = "";
    int  st      = rl_api_opts_get(o, name, buf, sizeof buf);
    tap_ok(st == 0 && !strcmp(buf, want), "get %s = '%s' (want '%s')", name, buf, want);
}

static void test_options(void)
{
    rl_api_opts *o = NULL;
    char         buf[512];
    tap_ok(rl_api_opts_create(&o) == 0 && o, "options created");
    expect_get(o, "attention", "softmax");
    expect_get(o, "eps", "1e-06");
    expect_get(o, "rope_base", "10000");
    expect_get(o, "causal", "false");
    set_expect(o, "feature_map", "exp", 0, NULL);
    expect_get(o, "feature_map", "exp");
    set_expect(o, "feature_map", "ex", RL_API_EINVAL,
               "feature_map: expected one of elu1, softmax, exp, got 'ex' (did you mean 'exp'?)");
    set_expect(o, "fature_map", "exp", RL_API_EINVAL, "(did you mean 'feature_map'?)");
    set_expect(o, "rope_dims", "2x", RL_API_EINVAL, "rope_dims: expected an integer in [0, ");
    set_expect(o, "rope_base", "0", RL_API_EINVAL, "rope_base: expected a number > 0, got '0'");
    set_expect(o, "causal", "maybe", RL_API_EINVAL, "causal: expected true or false");
    set_expect(o, "causal", "yes", 0, NULL);
    expect_get(o, "causal", "true");
    TAP_CHECK(rl_api_opts_set_number(o, "rope_dims", 2.5) == RL_API_EINVAL,
              "rope_dims 2.5 refused: %s", rl_api_last_error());
    TAP_CHECK(rl_api_opts_set_number(o, "pe", 1) == RL_API_EINVAL &&
                  has(rl_api_last_error(), "a name"),
              "a choice by number refused: %s", rl_api_last_error());
    tap_ok(rl_api_opts_set_number(o, "rope_base", 500) == 0, "rope_base = 500 by number");
    expect_get(o, "rope_base", "500");
    int n = 0, all_ok = 1;
    for (const char *name; (name = rl_api_opts_name(n)); n++)
        all_ok &= rl_api_opts_get(o, name, buf, sizeof buf) == 0 &&
                  rl_api_opts_help(name, buf, sizeof buf) == 0;
    tap_ok(n == 20 && all_ok, "%d options, each read back and with a help line", n);
    rl_api_opts_help("feature_map", buf, sizeof buf);
    tap_ok(has(buf, "one of elu1, softmax, exp (default elu1)"), "help: %s", buf);
    TAP_CHECK(rl_api_opts_get(o, "rope_base", buf, 2) == RL_API_EINVAL, "a short buffer refused");
    set_expect(o, "pe", "rope", 0, NULL);
    TAP_CHECK(rl_api_opts_check(o, H, 3, 3) == RL_API_EINVAL && has(rl_api_last_error(), "even"),
              "pe=rope with d=3 refused: %s", rl_api_last_error());
    rl_api_opts_describe(o, buf, sizeof buf);
    tap_ok(!strcmp(buf, "softmax rope causal"), "describe: %s", buf);
    rl_api_opts_free(o);
}

/* --- a float64 evaluation of the cases below, from the formulas ------------------------- */

struct ref_case {
    const char *name;
    int         linear, rope, alibi, causal, gate;
};

static void rope_row(double *x, int m)
{
    for (int i = 0; i < D / 2; i++) {
        double th = pow(10000.0, -2.0 * i / D), c = cos(m * th), s = sin(m * th);
        double a = x[2 * i], b = x[2 * i + 1];
        x[2 * i] = a * c - b * s, x[2 * i + 1] = a * s + b * c;
    }
}

static double elu1(double x) { return x > 0 ? x + 1 : exp(x); }

/* One head: o (N, DV). Softmax: s = q.k/sqrt(D) (RoPE on q, k) + ALiBi + gate; linear
 * (elu1), RoFormer eq. 19: numerator (R_m phi q_m).(R_n phi k_n) w, denominator
 * phi q_m . phi k_n w, w = exp(gate). */
static void ref_head(const struct ref_case *c, double *o, const double *q, const double *k,
                     const double *v, const double *logf, double slope)
{
    double cum[N], w[N], a[D], b[D], ra[D], rb[D];
    for (int m = 0; m < N; m++)
        cum[m] = (m ? cum[m - 1] : 0) + (c->gate ? logf[m] : 0);
    for (int m = 0; m < N; m++) {
        double num[DV] = {0}, den = 0, mx = -INFINITY;
        for (int n = 0; n < N; n++) {
            w[n] = -INFINITY;
            if (c->causal && n > m) continue;
            for (int f = 0; f < D; f++)
                a[f] = c->linear ? elu1(q[m * D + f]) : q[m * D + f],
                b[f] = c->linear ? elu1(k[n * D + f]) : k[n * D + f];
            memcpy(ra, a, sizeof a), memcpy(rb, b, sizeof b);
            if (c->rope) rope_row(ra, m), rope_row(rb, n);
            double dot = 0, plain = 0, g = cum[m] - cum[n] - slope * fabs((double)(m - n));
            for (int f = 0; f < D; f++)
                dot += ra[f] * rb[f], plain += a[f] * b[f];
            if (c->linear) {
                den += plain * exp(g);
                for (int j = 0; j < DV; j++)
                    num[j] += dot * exp(g) * v[n * DV + j];
            } else
                w[n] = dot / sqrt((double)D) + g, mx = fmax(mx, w[n]);
        }
        for (int n = 0; !c->linear && n < N; n++) {
            double e = exp(w[n] - mx);
            den += e;
            for (int j = 0; j < DV; j++)
                num[j] += e * v[n * DV + j];
        }
        for (int j = 0; j < DV; j++)
            o[m * DV + j] = num[j] / (den + (c->linear ? 1e-6 : 0));
    }
}

static void ref_forward(const struct ref_case *c, double *o, const double *q, const double *k,
                        const double *v, const double *logf)
{
    for (int g = 0; g < G; g++) {
        double slope = c->alibi ? pow(2.0, -8.0 * (g % H + 1) / H) : 0;
        ref_head(c, o + g * N * DV, q + g * N * D, k + g * N * D, v + g * N * DV, logf + g * N,
                 slope);
    }
}

/* --- plans ------------------------------------------------------------------------------ */

struct data {
    float  q[G * N * D], k[G * N * D], v[G * N * DV], logf[G * N], dout[G * N * DV];
    float  o[G * N * DV], saved[G * N], dq[G * N * D], dk[G * N * D], dv[G * N * DV];
    float  dlogf[G * N];
    double x[G * N * (2 * D + DV + 1)]; /* q, k, v, logf in double, in that order */
};

static void fill(struct data *X)
{
    tap_fill_normal(X->q, G * N * D, 1), tap_fill_normal(X->k, G * N * D, 1);
    tap_fill_normal(X->v, G * N * DV, 1), tap_fill_normal(X->dout, G * N * DV, 1);
    for (int i = 0; i < G * N; i++)
        X->logf[i] = (float)-log1p(exp(-(1.0 + 1.5 * tap_normal()))); /* log sigmoid */
    double *p = X->x;
    for (int i = 0; i < G * N * D; i++)
        p[i] = X->q[i], p[G * N * D + i] = X->k[i];
    for (int i = 0; i < G * N * DV; i++)
        p[2 * G * N * D + i] = X->v[i];
    for (int i = 0; i < G * N; i++)
        p[G * N * (2 * D + DV) + i] = X->logf[i];
}

static rl_api_plan *make_plan(const struct ref_case *c)
{
    rl_api_opts *o = NULL;
    rl_api_plan *p = NULL;
    rl_api_opts_create(&o);
    rl_api_opts_set(o, "attention", c->linear ? "linear" : "softmax");
    rl_api_opts_set(o, "pe", c->rope ? "rope" : c->alibi ? "alibi" : "none");
    rl_api_opts_set_number(o, "causal", c->causal);
    rl_api_opts_set_number(o, "forget_gate", c->gate);
    if (rl_api_plan_create(&p, o, H, N, D, DV))
        tap_bail("%s: rl_api_plan_create: %s", c->name, rl_api_last_error());
    rl_api_opts_free(o);
    return p;
}

/* sum(dout * ref(x + h u)) in double */
static double ref_loss(const struct ref_case *c, const struct data *X, const double *u, double h)
{
    static double x[G * N * (2 * D + DV + 1)], o[G * N * DV];
    const size_t  n = sizeof x / sizeof x[0];
    for (size_t i = 0; i < n; i++)
        x[i] = X->x[i] + h * u[i];
    const double *q = x, *k = q + G * N * D, *v = k + G * N * D, *lf = v + G * N * DV;
    ref_forward(c, o, q, k, v, lf);
    double s = 0;
    for (int i = 0; i < G * N * DV; i++)
        s += X->dout[i] * o[i];
    return s;
}

/* The backward's gradients along a random direction u against the central difference of
 * the float64 evaluation (KANN's directional check: two evaluations, any size). */
static void check_direction(const struct ref_case *c, const struct data *X)
{
    static double u[G * N * (2 * D + DV + 1)];
    const float  *gr[4]  = {X->dq, X->dk, X->dv, X->dlogf};
    const int     len[4] = {G * N * D, G * N * D, G * N * DV, c->gate ? G * N : 0};
    double        dot = 0, mag = 0;
    size_t        at = 0;
    for (int t = 0; t < 4; t++)
        for (int i = 0; i < len[t]; i++, at++) {
            u[at] = tap_normal();
            dot += gr[t][i] * u[at], mag += fabs(gr[t][i] * u[at]);
        }
    for (; at < sizeof u / sizeof u[0]; at++)
        u[at] = 0;
    const double h = 1e-5, fd = (ref_loss(c, X, u, h) - ref_loss(c, X, u, -h)) / (2 * h);
    tap_ok(fabs(dot - fd) <= 1e-4 * mag,
           "%s: backward along a random direction %.6g, float64 "
           "central difference %.6g",
           c->name, dot, fd);
}

static void test_case(const struct ref_case *c)
{
    static struct data X;
    static double      ref[G * N * DV];
    fill(&X);
    rl_api_plan *p  = make_plan(c);
    const float *lf = c->gate ? X.logf : NULL;
    int          st = rl_api_forward(p, X.o, X.saved, X.q, X.k, X.v, NULL, lf, G);
    tap_ok(st == 0, "%s: forward: %s", c->name, st ? rl_api_last_error() : "ok");
    ref_forward(c, ref, X.x, X.x + G * N * D, X.x + 2 * G * N * D, X.x + G * N * (2 * D + DV));
    tap_close_scaled(X.o, ref, G * N * DV, 1e-5, "%s: forward = float64 evaluation", c->name);
    st = rl_api_backward(p, X.dq, X.dk, X.dv, NULL, c->gate ? X.dlogf : NULL, X.dout, X.o, X.saved,
                         X.q, X.k, X.v, NULL, lf, G);
    tap_ok(st == 0, "%s: backward: %s", c->name, st ? rl_api_last_error() : "ok");
    check_direction(c, &X);
    rl_api_plan_free(p);
}

static void test_refusals(void)
{
    static struct data    X;
    const struct ref_case c = {"softmax alibi causal gate", 0, 0, 1, 1, 1};
    fill(&X);
    rl_api_plan *p = make_plan(&c);
    TAP_CHECK(rl_api_forward(p, X.o, NULL, X.q, X.k, X.v, NULL, NULL, G) == RL_API_EINVAL &&
                  has(rl_api_last_error(), "logf"),
              "no log gates refused: %s", rl_api_last_error());
    X.logf[1 * N + 3] = 0.5f;
    TAP_CHECK(rl_api_forward(p, X.o, NULL, X.q, X.k, X.v, NULL, X.logf, G) == RL_API_EINVAL &&
                  has(rl_api_last_error(), "logf[1, 3] = 0.5"),
              "a positive log gate refused, named: %s", rl_api_last_error());
    X.logf[1 * N + 3] = -0.5f;
    TAP_CHECK(rl_api_forward(p, X.o, NULL, X.q, X.k, X.v, X.q, X.logf, G) == RL_API_EINVAL,
              "a T5 table without pe=t5 refused: %s", rl_api_last_error());
    TAP_CHECK(rl_api_forward(p, X.o, NULL, NULL, X.k, X.v, NULL, X.logf, G) == RL_API_EINVAL &&
                  has(rl_api_last_error(), "q is NULL"),
              "NULL q refused: %s", rl_api_last_error());
    TAP_CHECK(rl_api_forward(p, X.o, NULL, X.q, X.k, X.v, NULL, X.logf, 0) == RL_API_EINVAL,
              "G = 0 refused: %s", rl_api_last_error());
    tap_ok(rl_api_forward(p, X.o, NULL, X.q, X.k, X.v, NULL, X.logf, G) == 0,
           "saved may be NULL without a backward");
    double v = 0;
    TAP_CHECK(rl_api_plan_stat(p, "N", &v) == 0 && v == N, "stat N = %g", v);
    TAP_CHECK(rl_api_plan_stat(p, "threads", &v) == 0 && v == 1, "stat threads = %g", v);
    TAP_CHECK(rl_api_plan_stat(p, "bad_denominator", &v) == RL_API_EINVAL &&
                  has(rl_api_last_error(), "did you mean 'bad_denominators'"),
              "unknown stat refused: %s", rl_api_last_error());
    rl_api_plan_free(p);
}

/* --- decoding ----------------------------------------------------------------------------- */

static void test_step(const struct ref_case *c)
{
    static struct data X;
    static float       row[H * DV], got[N * H * DV];
    static double      want[N * H * DV];
    fill(&X);
    rl_api_plan *p = make_plan(c);
    if (rl_api_forward(p, X.o, NULL, X.q, X.k, X.v, NULL, c->gate ? X.logf : NULL, G))
        tap_bail("forward: %s", rl_api_last_error());
    rl_api_plan_free(p);
    rl_api_opts *o = NULL;
    rl_api_step *s = NULL;
    rl_api_opts_create(&o);
    rl_api_opts_set(o, "attention", c->linear ? "linear" : "softmax");
    rl_api_opts_set(o, "pe", "rope");
    rl_api_opts_set(o, "causal", "true");
    rl_api_opts_set_number(o, "forget_gate", c->gate);
    if (rl_api_step_create(&s, o, H, D, DV)) tap_bail("step: %s", rl_api_last_error());
    float qm[H * D], km[H * D], vm[H * DV], lm[H];
    for (int m = 0; m < N; m++) {
        for (int h = 0; h < H; h++) { /* the first sequence's token m, heads side by side */
            memcpy(qm + h * D, X.q + (h * N + m) * D, sizeof(float) * D);
            memcpy(km + h * D, X.k + (h * N + m) * D, sizeof(float) * D);
            memcpy(vm + h * DV, X.v + (h * N + m) * DV, sizeof(float) * DV);
            lm[h] = X.logf[h * N + m];
            for (int j = 0; j < DV; j++)
                want[(m * H + h) * DV + j] = X.o[(h * N + m) * DV + j];
        }
        if (rl_api_step_forward(s, row, qm, km, vm, NULL, c->gate ? lm : NULL))
            tap_bail("step %d: %s", m, rl_api_last_error());
        memcpy(got + m * H * DV, row, sizeof row);
    }
    tap_close_scaled(got, want, N * H * DV, 1e-4, "%s: %d decoding steps = the forward's rows",
                     c->name, N);
    double pos = 0;
    TAP_CHECK(rl_api_step_stat(s, "position", &pos) == 0 && pos == N, "position %g", pos);
    rl_api_step_free(s);
    rl_api_opts_set(o, "pe", "t5");
    TAP_CHECK(!c->linear || rl_api_step_create(&s, o, H, D, DV) == RL_API_EINVAL,
              "%s: T5 without a recurrence refused: %s", c->name,
              c->linear ? rl_api_last_error() : "softmax has one");
    rl_api_opts_free(o);
}

int main(void)
{
    static const struct ref_case cases[] = {
        {"softmax rope", 0, 1, 0, 0, 0},
        {"softmax alibi causal gate", 0, 0, 1, 1, 1},
        {"linear elu1 rope (eq. 19)", 1, 1, 0, 0, 0},
        {"linear elu1 rope causal gate", 1, 1, 0, 1, 1},
    };
    tap_seed(7);
    test_versions();
    test_options();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        test_case(&cases[i]);
    test_refusals();
    test_step(&(struct ref_case){"softmax rope causal", 0, 1, 0, 1, 0});
    test_step(&(struct ref_case){"linear elu1 rope causal", 1, 1, 0, 1, 0});
    test_step(&(struct ref_case){"softmax rope causal gate", 0, 1, 0, 1, 1});
    test_step(&(struct ref_case){"linear elu1 rope causal gate", 1, 1, 0, 1, 1});
    return tap_done();
}
