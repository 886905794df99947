/* t_attn_softmax.c -- tiled softmax attention (docs/attention_softmax.md) and the vectorised exp.
 *
 * Evidence: (1) rl_vexpf against exp() over the whole float range and special values;
 * (2) a float64 quadratic reference (materialised scores) for o and lse, and an analytic
 * float64 backward for dq, dk, dv, drel, itself checked against central finite
 * differences of the float64 forward; (3) invariants: rows of p sum to one (v = 1 gives
 * o = 1), a constant added to rel changes nothing, sum(drel) = 0 (each ds row sums to 0),
 * backward overwrites dq/dk/dv and accumulates drel.  Shapes cover N = 1, N not a
 * multiple of the 256 x 256 tiles, several tiles per row and column, dv != d, causal and
 * not, no bias / a random T5 table / an i.i.d. random rel / ALiBi, and |q|, |k| up to 30
 * (scores ~ 5e3).  The forget gate (scores += c[m] - c[n], c the cumulative log gate):
 * the reference and its dlogf against central differences, the kernel against both, a
 * constant gate against the ALiBi bias it equals, and the pieces (query blocks, key
 * blocks) against the whole-head calls bit for bit, with and without RoPE. */
#include "config.h"
#include "kernels/attn_softmax.h"
#include "core/threads.h"
#include "core/init.h"
#include "kernels/posbias.h"
#include "kernels/rope.h"
#include "tap.h"
#include "core/vexp.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- vectorised exp */

static double ulp_err(float got, double ref)
{
    if (ref < (double)FLT_MIN) /* subnormal result: in units of the smallest subnormal */
        return fabs((double)got - ref) / ldexp(1.0, -149);
    int e;
    frexp(ref, &e); /* ref = f 2^e, f in [0.5, 1) */
    return fabs((double)got - ref) / ldexp(1.0, e - 24);
}

/* rl_expf_ftz_inline, the score rows' exp: rl_expf_inline's float wherever that is
 * normal, below FLT_MIN less than FLT_MIN (0 or a subnormal: the kernels' flush-to-zero
 * makes both 0), +inf from 88.37 up, and the special values. */
static void compare_ftz(float x, int *diff, int *big_small)
{
    float a = rl_expf_ftz_inline(x), b = rl_expf_inline(x);
    if (b >= FLT_MIN)
        *diff += memcmp(&a, &b, sizeof a) != 0;
    else
        *big_small += !(a >= 0.0f && a < FLT_MIN);
}

static void test_vexp_ftz(void)
{
    const int n    = 600001;
    int       diff = 0, big_small = 0, bad_special = 0;
    for (int i = 0; i < n; i++) /* -110 .. 88.3 */
        compare_ftz((float)(-110.0 + 198.3 * i / (n - 1)), &diff, &big_small);
    for (float x = -87.5f; x < -87.2f; x = nextafterf(x, 0.0f)) /* every float at FLT_MIN */
        compare_ftz(x, &diff, &big_small);
    const float sx[7] = {-INFINITY, -1e30f, 0.0f, NAN, 88.5f, INFINITY, -NAN};
    bad_special += rl_expf_ftz_inline(sx[0]) != 0.0f || rl_expf_ftz_inline(sx[1]) != 0.0f;
    bad_special += rl_expf_ftz_inline(sx[2]) != 1.0f || !isnan(rl_expf_ftz_inline(sx[3]));
    bad_special += !isnan(rl_expf_ftz_inline(sx[6]));
    bad_special += !isinf(rl_expf_ftz_inline(sx[4])) || !isinf(rl_expf_ftz_inline(sx[5]));
    tap_ok(diff == 0 && big_small == 0,
           "exp for flush-to-zero: rl_expf_inline's bits on normal results (%d differ), "
           "below FLT_MIN below FLT_MIN (%d not)",
           diff, big_small);
    tap_ok(bad_special == 0,
           "exp for flush-to-zero: -inf, -1e30 -> 0, 0 -> 1, NaN and -NaN -> NaN, "
           "88.5 and +inf -> +inf");
}

/* rl_expf_ftz_inline compiled per instruction set, as the library's loops are (with or
 * without FMA) */
RL_SIMD_CLONES static void ftz_exps(float *y, const float *x, int n)
{
    for (int j = 0; j < n; j++)
        y[j] = rl_expf_ftz_inline(x[j]);
}

/* rl_vexpf_ftz_shift (the score rows' exp, AVX-512 where the CPU has it): exp(s - c) as
 * rl_expf_ftz_inline computes it (compare_ftz: the same bits on normal results; without
 * flush-to-zero here, results below FLT_MIN may be subnormal rather than 0), over rows of
 * 1 .. 47 floats so that every tail length is met, and the sum of the results in the
 * documented order: 16 lanes over the whole vectors, the tail into lane 0, the lanes in
 * order. */
static void test_vexp_shift(void)
{
    const int n = 600001;
    float    *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
    int       diff = 0, big_small = 0, bad_sum = 0, rows = 0;
    for (int i = 0; i < n; i++) /* -110 .. 88.3 plus the shifts below */
        x[i] = (float)(-110.0 + 198.3 * i / (n - 1));
    memcpy(y, x, sizeof(float) * n);
    for (int i0 = 0, len = 1; i0 < n; i0 += len, len = len % 47 + 1, rows++) {
        const int   m = i0 + len <= n ? len : n - i0;
        const float c = (float)(rows % 5) * -0.75f; /* s - c = x again, or within an ulp */
        float      *r = y + i0, lane[16] = {0.0f}, want = 0.0f;
        for (int j = 0; j < m; j++)
            r[j] = x[i0 + j] + c;
        float sub[47], ref[47];
        for (int j = 0; j < m; j++)
            sub[j] = r[j] - c;
        ftz_exps(ref, sub, m);
        const float got = rl_vexpf_ftz_shift(r, m, c);
        for (int j = 0; j < m; j++) {
            float a = ref[j];
            if (a >= FLT_MIN)
                diff += memcmp(&a, &r[j], sizeof a) != 0;
            else
                big_small += !(r[j] >= 0.0f && r[j] < FLT_MIN);
            lane[j < m / 16 * 16 ? j % 16 : 0] += r[j];
        }
        for (int l = 0; l < 16; l++)
            want += lane[l];
        bad_sum += memcmp(&want, &got, sizeof want) != 0;
    }
    tap_ok(diff == 0 && big_small == 0,
           "exp rows (%s): rl_expf_ftz_inline's bits on normal results (%d differ), below "
           "FLT_MIN below FLT_MIN (%d not), %d rows",
           rl_vexp_wide() ? "AVX-512" : "portable", diff, big_small, rows);
    tap_ok(bad_sum == 0, "exp rows: the sum in lane order (%d of %d rows differ)", bad_sum, rows);
    float sp[20] = {-INFINITY, 0.0f, NAN, -NAN, -1e30f};
    for (int j = 5; j < 20; j++)
        sp[j] = -1.0f;
    const float sum = rl_vexpf_ftz_shift(sp, 20, 0.0f);
    tap_ok(sp[0] == 0.0f && sp[1] == 1.0f && isnan(sp[2]) && isnan(sp[3]) && sp[4] == 0.0f &&
               isnan(sum),
           "exp rows: -inf, -1e30 -> 0, 0 -> 1, NaN and -NaN -> NaN, and the sum NaN");
    free(x), free(y);
}

/* A row's value j: mostly uniform in [-30, 30), with the special values that a maximum
 * must order (+-0, -inf, large negatives, and now and then a NaN of either sign). */
static float row_value(int nan_ok)
{
    const double u = tap_uniform();
    if (u < 0.04) return -0.0f;
    if (u < 0.08) return 0.0f;
    if (u < 0.11) return -INFINITY;
    if (u < 0.13) return -1e30f;
    if (nan_ok && u < 0.135) return u < 0.1325 ? NAN : -NAN;
    return (float)(60.0 * tap_uniform() - 30.0);
}

/* the largest of x[0..n) and init by a scalar walk, +0 above -0 (no NaN in x or init) */
static float plain_max(const float *x, int n, float init)
{
    float m = init;
    for (int j = 0; j < n; j++)
        if (x[j] > m || (x[j] == m && signbit(m) && !signbit(x[j]))) m = x[j];
    return m;
}

/* rl_vexpf_ftz_online (the forward's score row: maximum, masked columns, exps and their
 * sum in one call) against its three steps -- rl_maxf_inline, -inf on columns nc .. nv-1,
 * rl_vexpf_ftz_shift -- bit for bit, on rows of 0 .. 79 valid columns (every tail length
 * of the 16-wide and 32-wide loops) and nv = nc or nc rounded up to 16, with running maxima
 * -inf, +-0 and random; and its maximum against a scalar walk on the rows without NaN. */
static void test_vexp_online(void)
{
    int rows = 0, bad_bits = 0, bad_max = 0, plain = 0;
    for (int rep = 0; rep < 60; rep++)
        for (int nc = 0; nc < 80; nc++)
            for (int pad = 0; pad < 2; pad++) {
                const int nv = pad ? (nc + 15) & ~15 : nc;
                float     x[80], a[80], b[80];
                int       has_nan = 0;
                for (int j = 0; j < 80; j++) {
                    x[j] = a[j] = b[j] = row_value(rep % 3 == 2);
                    has_nan |= j < nc && isnan(x[j]);
                }
                const float init   = rep % 4 == 0   ? -INFINITY
                                     : rep % 4 == 1 ? (rep % 8 == 1 ? -0.0f : 0.0f)
                                                    : (float)(60.0 * tap_uniform() - 30.0);
                float       want_m = rl_maxf_inline(b, nc, init), got_m;
                for (int j = nc; j < nv; j++)
                    b[j] = -INFINITY;
                const float want = rl_vexpf_ftz_shift(b, nv, want_m);
                const float got  = rl_vexpf_ftz_online(a, nc, nv, init, &got_m);
                bad_bits += memcmp(&got_m, &want_m, sizeof got_m) != 0 ||
                            memcmp(&got, &want, sizeof got) != 0 ||
                            memcmp(a, b, sizeof(float) * 80) != 0;
                if (!has_nan) {
                    const float m = plain_max(x, nc, init);
                    bad_max += memcmp(&got_m, &m, sizeof m) != 0;
                    plain++;
                }
                rows++;
            }
    tap_ok(bad_bits == 0,
           "score row in one call (%s): the maximum, the exps and their sum are rl_maxf_inline "
           "+ rl_vexpf_ftz_shift's bits (%d of %d rows differ)",
           rl_vexp_wide() ? "AVX-512" : "portable", bad_bits, rows);
    tap_ok(bad_max == 0 && plain > rows / 2,
           "score row in one call: its maximum is a scalar walk's, +0 above -0 (%d of %d rows "
           "without NaN differ)",
           bad_max, plain);
}

/* rl_vexpf_ftz_grad (the backward's row: p = exp(p - c), ds = p (dp - D) in one pass)
 * against rl_vexpf_ftz_shift and a plain loop, bit for bit, on rows of 1 .. 79, with NaN,
 * +-inf and -1e30 among the scores. */
static void test_vexp_grad(void)
{
    int rows = 0, bad = 0;
    for (int rep = 0; rep < 40; rep++)
        for (int n = 1; n < 80; n++) {
            float p[80], dp[80], rp[80], rdp[80];
            for (int j = 0; j < 80; j++) {
                p[j] = rp[j] = row_value(rep % 2);
                dp[j] = rdp[j] = (float)tap_normal();
            }
            const float c = (float)(10.0 * tap_uniform()), D = (float)tap_normal();
            (void)rl_vexpf_ftz_shift(rp, n, c);
            for (int j = 0; j < n; j++)
                rdp[j] = rp[j] * (rdp[j] - D);
            rl_vexpf_ftz_grad(p, dp, n, c, D);
            bad += memcmp(p, rp, sizeof p) != 0 || memcmp(dp, rdp, sizeof dp) != 0;
            rows++;
        }
    tap_ok(bad == 0,
           "backward row in one pass (%s): p and ds are rl_vexpf_ftz_shift's and p (dp - D)'s "
           "bits (%d of %d rows differ)",
           rl_vexp_wide() ? "AVX-512" : "portable", bad, rows);
}

static void test_vexp(void)
{
    const int n = 400001;
    float    *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
    for (int i = 0; i < n; i++)
        x[i] = (float)(-110.0 + 200.0 * i / (n - 1)); /* -110 .. 90 */
    rl_vexpf(y, x, (size_t)n);
    double worst = 0, worst_sub = 0;
    int    bad_special = 0;
    for (int i = 0; i < n; i++) {
        double ref = exp((double)x[i]);
        if (ref > (double)FLT_MAX)
            bad_special += !isinf(y[i]);
        else if (ref >= (double)FLT_MIN)
            worst = fmax(worst, ulp_err(y[i], ref));
        else
            worst_sub = fmax(worst_sub, ulp_err(y[i], ref));
    }
    tap_ok(worst <= 2.0, "vexp: max error %.2f ulp over normal results in [-87.3, 88.7]", worst);
    tap_ok(worst_sub <= 1.0, "vexp: subnormal results within %.2f of the smallest subnormal",
           worst_sub);
    tap_ok(bad_special == 0, "vexp: x > log(FLT_MAX) gives +inf");
    /* 16 values: the vector loop of every instruction set sees them, not only its tail */
    float sx[16] = {-INFINITY, -1e30f, -104.5f, 0.0f, INFINITY, NAN, -NAN, 1e30f}, sy[16];
    rl_vexpf(sy, sx, 16);
    tap_ok(sy[0] == 0.0f && sy[1] == 0.0f && sy[2] == 0.0f, "vexp: -inf, -1e30, -104.5 -> 0");
    tap_ok(sy[3] == 1.0f && isinf(sy[4]) && sy[4] > 0 && isinf(sy[7]) && isnan(sy[5]) &&
               isnan(sy[6]),
           "vexp: exp(0) = 1 exactly, +inf and 1e30 -> +inf, NaN and -NaN -> NaN");
    /* fine sweep near 0, where softmax probabilities live */
    for (int i = 0; i < n; i++)
        x[i] = (float)(-1.0 + 2.0 * i / (n - 1));
    rl_vexpf(y, x, (size_t)n);
    worst = 0;
    for (int i = 0; i < n; i++)
        worst = fmax(worst, ulp_err(y[i], exp((double)x[i])));
    tap_ok(worst <= 2.0, "vexp: max error %.2f ulp on [-1, 1]", worst);
    free(x), free(y);
}

/* ---------------------------------------------------------------- float64 reference */

struct ref {
    double *o, *lse, *dq, *dk, *dv, *drel; /* outputs of ref_forward / ref_backward */
    double *dlogf;                         /* with a gate (else NULL) */
};

/* The gate's cumulative log gate c[m] = sum_{l<=m} logf[l] (a static buffer, N <= 1024). */
static const double *ref_cum(const double *logf, int N)
{
    static double c[1024];
    if (!logf) return NULL;
    for (int m = 0; m < N; m++)
        c[m] = (m ? c[m - 1] : 0.0) + logf[m];
    return c;
}

/* p (N x N, row-major) = softmax of the materialised scores; masked entries are 0. */
static void ref_probs(double *p, double *lse, const double *q, const double *k, const double *rel,
                      const double *logf, int N, int d, int causal)
{
    const double *cum = ref_cum(logf, N);
    for (int m = 0; m < N; m++) {
        double mx = -INFINITY, sum = 0;
        int    nn = causal ? m + 1 : N;
        for (int n = 0; n < nn; n++) {
            double s = 0;
            for (int c = 0; c < d; c++)
                s += q[(size_t)m * d + c] * k[(size_t)n * d + c];
            s = s / sqrt((double)d) + (rel ? rel[n - m + N - 1] : 0.0) +
                (cum ? cum[m] - cum[n] : 0.0);
            p[(size_t)m * N + n] = s;
            mx                   = fmax(mx, s);
        }
        for (int n = 0; n < N; n++) {
            double *pe = p + (size_t)m * N + n;
            *pe        = n < nn ? exp(*pe - mx) : 0.0;
            sum += *pe;
        }
        for (int n = 0; n < N; n++)
            p[(size_t)m * N + n] /= sum;
        lse[m] = mx + log(sum);
    }
}

static void ref_forward(double *o, double *lse, double *p, const double *q, const double *k,
                        const double *v, const double *rel, const double *logf, int N, int d,
                        int dv, int causal)
{
    ref_probs(p, lse, q, k, rel, logf, N, d, causal);
    for (int m = 0; m < N; m++)
        for (int c = 0; c < dv; c++) {
            double acc = 0;
            for (int n = 0; n < N; n++)
                acc += p[(size_t)m * N + n] * v[(size_t)n * dv + c];
            o[(size_t)m * dv + c] = acc;
        }
}

/* Analytic backward of ref_forward given its p and o; drel accumulated (2N-1); with a
 * gate (r->dlogf), s[m,n] += c[m] - c[n] gives dc[m] += ds, dc[n] -= ds and dlogf[l] =
 * sum_{m >= l} dc[m]. */
static void ref_backward(struct ref *r, const double *p, const double *dout, const double *q,
                         const double *k, const double *v, int N, int d, int dv)
{
    double is = 1.0 / sqrt((double)d);
    memset(r->dq, 0, sizeof(double) * N * d);
    memset(r->dk, 0, sizeof(double) * N * d);
    memset(r->dv, 0, sizeof(double) * N * dv);
    memset(r->drel, 0, sizeof(double) * (2 * N - 1));
    if (r->dlogf) memset(r->dlogf, 0, sizeof(double) * N);
    for (int m = 0; m < N; m++) {
        double D = 0;
        for (int c = 0; c < dv; c++)
            D += dout[(size_t)m * dv + c] * r->o[(size_t)m * dv + c];
        for (int n = 0; n < N; n++) {
            double pm = p[(size_t)m * N + n], dp = 0;
            for (int c = 0; c < dv; c++) {
                dp += dout[(size_t)m * dv + c] * v[(size_t)n * dv + c];
                r->dv[(size_t)n * dv + c] += pm * dout[(size_t)m * dv + c];
            }
            double ds = pm * (dp - D);
            r->drel[n - m + N - 1] += ds;
            if (r->dlogf) r->dlogf[m] += ds, r->dlogf[n] -= ds;
            for (int c = 0; c < d; c++) {
                r->dq[(size_t)m * d + c] += ds * k[(size_t)n * d + c] * is;
                r->dk[(size_t)n * d + c] += ds * q[(size_t)m * d + c] * is;
            }
        }
    }
    for (int l = N - 2; r->dlogf && l >= 0; l--)
        r->dlogf[l] += r->dlogf[l + 1];
}

/* The error allowed in ref_backward's ds-made gradients (dq, dk, drel, dlogf).  Each sums
 * ds = p (dp - D) times a factor f (k / sqrt(d), q / sqrt(d) or 1), and where p is nearly
 * one-hot dp - D cancels: the float64 gradient is near 0 and a float32 kernel's is its
 * rounding, so no tolerance relative to the gradient holds.  With A_n = |dout_m| . |v_n|
 * (>= |dp|) and B = sum_n p A_n (>= |D|), each term (m, n) carries
 *   tol a |f|,  a = p (A_n + B) >= |ds|,
 * for the relative rounding of the term (u |s| from p's exp, u from the products and D), and
 *   z (1 + |f|),  z = FLT_MIN (1 + A_n + B)  (drel, dlogf: 2 z),
 * for the values float32 flushes to 0 on the way (p below FLT_MIN, as exp(-200) is to the
 * kernel and not to the reference; ds and ds f below it).  An element's allowance sums its
 * terms'.  b->dlogf may be NULL. */
struct bounds {
    double *dq, *dk, *drel, *dlogf;
};

static void ref_bounds(const struct bounds *b, double tol, const double *p, const double *dout,
                       const double *q, const double *k, const double *v, int N, int d, int dv)
{
    const double is = 1.0 / sqrt((double)d);
    double      *A  = malloc(sizeof(double) * N);
    memset(b->dq, 0, sizeof(double) * N * d);
    memset(b->dk, 0, sizeof(double) * N * d);
    memset(b->drel, 0, sizeof(double) * (2 * N - 1));
    if (b->dlogf) memset(b->dlogf, 0, sizeof(double) * N);
    for (int m = 0; m < N; m++) {
        double B = 0;
        for (int n = 0; n < N; n++) {
            A[n] = 0;
            for (int c = 0; c < dv; c++)
                A[n] += fabs(dout[(size_t)m * dv + c]) * fabs(v[(size_t)n * dv + c]);
            B += p[(size_t)m * N + n] * A[n];
        }
        for (int n = 0; n < N; n++) {
            const double a = p[(size_t)m * N + n] * (A[n] + B), z = FLT_MIN * (1 + A[n] + B);
            b->drel[n - m + N - 1] += tol * a + 2 * z;
            if (b->dlogf) b->dlogf[m] += tol * a + 2 * z, b->dlogf[n] += tol * a + 2 * z;
            for (int c = 0; c < d; c++) {
                const double fk = fabs(k[(size_t)n * d + c]) * is,
                             fq = fabs(q[(size_t)m * d + c]) * is;
                b->dq[(size_t)m * d + c] += tol * a * fk + z * (1 + fk);
                b->dk[(size_t)n * d + c] += tol * a * fq + z * (1 + fq);
            }
        }
    }
    for (int l = N - 2; b->dlogf && l >= 0; l--)
        b->dlogf[l] += b->dlogf[l + 1];
    free(A);
}

/* ---------------------------------------------------------------- finite differences */

static double fd_loss(const double *q, const double *k, const double *v, const double *rel,
                      const double *logf, const double *dout, int N, int d, int dv, int causal)
{
    double *o = malloc(sizeof(double) * N * dv), *lse = malloc(sizeof(double) * N);
    double *p = malloc(sizeof(double) * N * N), L = 0;
    ref_forward(o, lse, p, q, k, v, rel, logf, N, d, dv, causal);
    for (int i = 0; i < N * dv; i++)
        L += o[i] * dout[i];
    free(o), free(lse), free(p);
    return L;
}

/* max |analytic - central difference| over every entry of x, relative to max |analytic| */
static double fd_check(double *x, const double *g, int n, const double *q, const double *k,
                       const double *v, const double *rel, const double *logf, const double *dout,
                       int N, int d, int dv, int causal)
{
    const double h   = 1e-5; /* truncation h^2 ~ 1e-10, rounding 1e-16/h ~ 1e-11 */
    double       err = 0, gmax = 0;
    for (int i = 0; i < n; i++) {
        double x0 = x[i];
        x[i]      = x0 + h;
        double lp = fd_loss(q, k, v, rel, logf, dout, N, d, dv, causal);
        x[i]      = x0 - h;
        double lm = fd_loss(q, k, v, rel, logf, dout, N, d, dv, causal);
        x[i]      = x0;
        err       = fmax(err, fabs((lp - lm) / (2 * h) - g[i]));
        gmax      = fmax(gmax, fabs(g[i]));
    }
    return err / gmax;
}

static double *dvec(int n, double scale)
{
    double *x = malloc(sizeof(double) * n);
    for (int i = 0; i < n; i++)
        x[i] = scale * tap_normal();
    return x;
}

/* The float64 backward used as the gradient reference is itself checked against central
 * differences of the float64 forward, on tiny shapes (every entry of q, k, v, rel, and
 * the log gates when gated). */
static void test_reference_fd(int causal, int gated)
{
    const int N = 6, d = 4, dv = 3;
    double   *q = dvec(N * d, 1), *k = dvec(N * d, 1), *v = dvec(N * dv, 1);
    double   *rel = dvec(2 * N - 1, 0.5), *dout = dvec(N * dv, 1),
           *p = malloc(sizeof(double) * N * N), *logf = NULL;
    struct ref r = {malloc(sizeof(double) * N * dv),          malloc(sizeof(double) * N),
                    malloc(sizeof(double) * N * d),           malloc(sizeof(double) * N * d),
                    malloc(sizeof(double) * N * dv),          malloc(sizeof(double) * (2 * N - 1)),
                    gated ? malloc(sizeof(double) * N) : NULL};
    if (gated) {
        logf = dvec(N, 0.5);
        for (int i = 0; i < N; i++)
            logf[i] = -fabs(logf[i]);
    }
    ref_forward(r.o, r.lse, p, q, k, v, rel, logf, N, d, dv, causal);
    ref_backward(&r, p, dout, q, k, v, N, d, dv);
    double e[5]  = {fd_check(q, r.dq, N * d, q, k, v, rel, logf, dout, N, d, dv, causal),
                    fd_check(k, r.dk, N * d, q, k, v, rel, logf, dout, N, d, dv, causal),
                    fd_check(v, r.dv, N * dv, q, k, v, rel, logf, dout, N, d, dv, causal),
                    fd_check(rel, r.drel, 2 * N - 1, q, k, v, rel, logf, dout, N, d, dv, causal),
                   gated ? fd_check(logf, r.dlogf, N, q, k, v, rel, logf, dout, N, d, dv, causal)
                          : 0};
    double worst = fmax(fmax(fmax(e[0], e[1]), fmax(e[2], e[3])), e[4]);
    tap_ok(worst < 1e-7,
           "float64 reference backward = central differences (%s%s): dq %.1e dk %.1e "
           "dv %.1e drel %.1e dlogf %.1e",
           causal ? "causal" : "non-causal", gated ? ", gated" : "", e[0], e[1], e[2], e[3], e[4]);
    free(q), free(k), free(v), free(rel), free(dout), free(p), free(logf);
    free(r.o), free(r.lse), free(r.dq), free(r.dk), free(r.dv), free(r.drel), free(r.dlogf);
}

/* ---------------------------------------------------------------- kernel vs reference */

enum bias { BIAS_NONE, BIAS_T5, BIAS_ALIBI, BIAS_RANDOM };
static const char *bias_name[] = {"rel=NULL", "T5 rel", "ALiBi rel", "i.i.d. rel"};

struct kcase {
    int       N, d, dv, causal;
    enum bias bias;
    double    scale; /* of q and k */
    double    gate;  /* 0: no gate; else log gates uniform in [-gate, 0] (causal) */
};

static double *to_double(const float *x, size_t n)
{
    double *y = malloc(sizeof(double) * n);
    for (size_t i = 0; i < n; i++)
        y[i] = x[i];
    return y;
}

static void make_rel(float *rel, enum bias b, int N, int causal)
{
    if (b == BIAS_T5) { /* a random table through the real bucket map */
        float B[32];
        tap_fill_normal(B, 32, 1.0);
        rl_t5_rel(rel, B, 0, N, 32, 128, causal);
    } else if (b == BIAS_RANDOM) { /* every diagonal distinct: catches an off-by-one in r */
        tap_fill_normal(rel, 2 * (size_t)N - 1, 1.0);
    } else if (b == BIAS_ALIBI) {
        double slopes[8];
        rl_alibi_slopes(slopes, 8);
        rl_alibi_rel(rel, slopes[2], N); /* 2^-3: a strong decay */
    }
}

static int all_finite(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

struct kbuf {
    float  *q, *k, *v, *dout, *rel, *o, *lse, *dq, *dk, *dv, *scr, *logf, *dlogf;
    double *drel, *cum, *dcum;
    size_t  nscr;
};

static void kbuf_alloc(struct kbuf *b, const struct kcase *c)
{
    const size_t N = (size_t)c->N, nq = N * c->d, nv = N * c->dv;
    b->nscr = rl_attn_softmax_scratch_floats(c->N, c->d, c->dv, 0);
    b->q = malloc(sizeof(float) * nq), b->k = malloc(sizeof(float) * nq);
    b->dq = malloc(sizeof(float) * nq), b->dk = malloc(sizeof(float) * nq);
    b->v = malloc(sizeof(float) * nv), b->dout = malloc(sizeof(float) * nv);
    b->o = malloc(sizeof(float) * nv), b->dv = malloc(sizeof(float) * nv);
    b->lse  = malloc(sizeof(float) * N);
    b->rel  = c->bias == BIAS_NONE ? NULL : malloc(sizeof(float) * (2 * N - 1));
    b->drel = calloc(2 * N - 1, sizeof(double));
    b->scr  = malloc(sizeof(float) * (b->nscr + 16)); /* 16 guard floats past the end */
    b->logf = b->dlogf = NULL, b->cum = b->dcum = NULL;
    if (c->gate > 0) {
        b->logf = malloc(sizeof(float) * N), b->dlogf = malloc(sizeof(float) * N);
        b->cum = malloc(sizeof(double) * N), b->dcum = malloc(sizeof(double) * N);
        for (size_t i = 0; i < N; i++)
            b->logf[i] = (float)(-c->gate * tap_uniform());
        double acc = 0;
        for (size_t i = 0; i < N; i++)
            b->cum[i] = acc += (double)b->logf[i];
    }
    tap_fill_normal(b->q, nq, c->scale);
    tap_fill_normal(b->k, nq, c->scale);
    tap_fill_normal(b->v, nv, 1.0);
    tap_fill_normal(b->dout, nv, 1.0);
    if (b->rel) make_rel(b->rel, c->bias, c->N, c->causal);
    for (int i = 0; i < 16; i++)
        b->scr[b->nscr + i] = 1234.5f;
}

static void kbuf_free(struct kbuf *b)
{
    free(b->q), free(b->k), free(b->v), free(b->dout), free(b->rel), free(b->o), free(b->lse);
    free(b->dq), free(b->dk), free(b->dv), free(b->scr), free(b->drel);
    free(b->logf), free(b->dlogf), free(b->cum), free(b->dcum);
}

static struct rl_sm_head head_of(const struct kbuf *b, const struct kcase *c)
{
    return (struct rl_sm_head){.q      = b->q,
                               .k      = b->k,
                               .v      = b->v,
                               .rel    = b->rel,
                               .cum    = b->cum,
                               .N      = c->N,
                               .d      = c->d,
                               .dv     = c->dv,
                               .causal = c->causal};
}

/* forward + backward of the kernel; dq/dk/dv start as garbage (must be overwritten) and
 * drel starts at drel0 (must be accumulated into: drel0 is subtracted again here).  drel0 = 1
 * checks the accumulation but resolves drel only to ~1e-16 (1 + x - 1); the saturated cases,
 * whose drel is checked down to terms of 1e-30, start at 0. */
static void kernel_run(struct kbuf *b, const struct kcase *c, double drel0)
{
    const size_t            nq = (size_t)c->N * c->d, nv = (size_t)c->N * c->dv;
    const struct rl_sm_head h = head_of(b, c);
    rl_attn_softmax_forward(b->o, b->lse, &h, b->scr);
    for (size_t i = 0; i < nq; i++)
        b->dq[i] = b->dk[i] = 7.0f;
    for (size_t i = 0; i < nv; i++)
        b->dv[i] = -3.0f;
    for (int i = 0; i < 2 * c->N - 1; i++)
        b->drel[i] = drel0;
    const struct rl_sm_grads g = {b->dq, b->dk, b->dv, b->rel ? b->drel : NULL, b->dcum, NULL};
    rl_attn_softmax_backward(&g, b->dout, b->o, b->lse, &h, b->scr);
    for (int i = 0; i < 2 * c->N - 1; i++)
        b->drel[i] -= drel0;
    if (b->dcum) { /* dlogf[l] = sum_{m >= l} dc[m] */
        double acc = 0;
        for (int l = c->N - 1; l >= 0; l--)
            b->dlogf[l] = (float)(acc += b->dcum[l]);
    }
}

/* A gradient made of ds terms: within tol of ref's largest magnitude, or, given the error
 * allowed in each element (ref_bounds), within that. */
static void check_ds_grad(const float *got, const double *ref, const double *allowed, size_t n,
                          double tol, const char *what, const char *name)
{
    if (allowed)
        tap_close_bound(got, ref, allowed, n, "%s: %s (to its terms)", what, name);
    else
        tap_close_scaled(got, ref, n, tol, "%s: %s", what, name);
}

/* tol_f, tol_g: normally 1e-4 forward, 1e-3 gradients, relative to the largest magnitude.
 * tol_terms > 0: dq, dk, drel and dlogf are instead checked element by element against the
 * error ref_bounds allows for tol_terms (saturated softmax, where those gradients cancel). */
static void check_case(const struct kcase *c, double tol_f, double tol_g, double tol_terms)
{
    const int    N = c->N, d = c->d, dv = c->dv;
    const size_t nq = (size_t)N * d, nv = (size_t)N * dv, nr = 2 * (size_t)N - 1;
    struct kbuf  b;
    kbuf_alloc(&b, c);
    kernel_run(&b, c, tol_terms > 0 ? 0.0 : 1.0);

    double    *q = to_double(b.q, nq), *k = to_double(b.k, nq), *v = to_double(b.v, nv);
    double    *dout = to_double(b.dout, nv), *rel = b.rel ? to_double(b.rel, nr) : NULL;
    double    *p = malloc(sizeof(double) * N * N), *logf = b.logf ? to_double(b.logf, N) : NULL;
    struct ref r = {malloc(sizeof(double) * nv),
                    malloc(sizeof(double) * N),
                    malloc(sizeof(double) * nq),
                    malloc(sizeof(double) * nq),
                    malloc(sizeof(double) * nv),
                    malloc(sizeof(double) * nr),
                    logf ? malloc(sizeof(double) * N) : NULL};
    ref_forward(r.o, r.lse, p, q, k, v, rel, logf, N, d, dv, c->causal);
    ref_backward(&r, p, dout, q, k, v, N, d, dv);

    char what[128];
    snprintf(what, sizeof what, "N=%d d=%d dv=%d %s %s |q|,|k|~%g%s", N, d, dv,
             c->causal ? "causal" : "non-causal", bias_name[c->bias], c->scale,
             c->gate > 0 ? " gated" : "");
    int fin = all_finite(b.o, nv) && all_finite(b.lse, (size_t)N) && all_finite(b.dq, nq) &&
              all_finite(b.dk, nq) && all_finite(b.dv, nv);
    int guard = 1;
    for (int i = 0; i < 16; i++)
        guard &= b.scr[b.nscr + i] == 1234.5f;
    tap_ok(fin && guard, "%s: outputs finite, scratch (%zu floats) respected", what, b.nscr);
    tap_close_scaled(b.o, r.o, nv, tol_f, "%s: o", what);
    if (!logf) /* with the gate the kernel's lse leaves out the row's own c[m] - c[r] */
        tap_close_scaled(b.lse, r.lse, (size_t)N, tol_f, "%s: lse", what);
    struct bounds bd = {NULL, NULL, NULL, NULL};
    if (tol_terms > 0) {
        bd = (struct bounds){malloc(sizeof(double) * nq), malloc(sizeof(double) * nq),
                             malloc(sizeof(double) * nr), logf ? malloc(sizeof(double) * N) : NULL};
        ref_bounds(&bd, tol_terms, p, dout, q, k, v, N, d, dv);
    }
    if (logf) check_ds_grad(b.dlogf, r.dlogf, bd.dlogf, (size_t)N, tol_g, what, "dlogf");
    check_ds_grad(b.dq, r.dq, bd.dq, nq, tol_g, what, "dq");
    check_ds_grad(b.dk, r.dk, bd.dk, nq, tol_g, what, "dk");
    tap_close_scaled(b.dv, r.dv, nv, tol_g, "%s: dv", what);
    if (rel) {
        float *g = malloc(sizeof(float) * nr);
        for (size_t i = 0; i < nr; i++)
            g[i] = (float)b.drel[i];
        check_ds_grad(g, r.drel, bd.drel, nr, tol_g, what, "drel");
        free(g);
    }
    free(bd.dq), free(bd.dk), free(bd.drel), free(bd.dlogf);
    free(q), free(k), free(v), free(dout), free(rel), free(p), free(logf);
    free(r.o), free(r.lse), free(r.dq), free(r.dk), free(r.dv), free(r.drel), free(r.dlogf);
    kbuf_free(&b);
}

/* ---------------------------------------------------------------- invariants */

static void test_invariants(int causal)
{
    const struct kcase c = {300, 16, 8, causal, BIAS_T5, 1.0, 0};
    struct rl_sm_head  h;
    const size_t       nv = (size_t)c.N * c.dv, nr = 2 * (size_t)c.N - 1;
    struct kbuf        b;
    kbuf_alloc(&b, &c);
    kernel_run(&b, &c, 1.0);
    /* sum_n ds[m,n] = sum_n p (dp - D) = D - D = 0, so drel sums to 0 */
    double sum = 0, sabs = 0;
    for (size_t i = 0; i < nr; i++)
        sum += b.drel[i], sabs += fabs(b.drel[i]);
    tap_ok(fabs(sum) <= 1e-5 * sabs, "%s: sum(drel) = %.2e (sum |drel| = %.2e)",
           causal ? "causal" : "non-causal", sum, sabs);
    /* a constant added to every score cancels in the softmax; lse moves by it */
    float  *o0 = malloc(sizeof(float) * nv), *lse0 = malloc(sizeof(float) * c.N);
    double *ref = malloc(sizeof(double) * nv);
    memcpy(o0, b.o, sizeof(float) * nv);
    memcpy(lse0, b.lse, sizeof(float) * c.N);
    for (size_t i = 0; i < nr; i++)
        b.rel[i] += 5.0f;
    h = head_of(&b, &c);
    rl_attn_softmax_forward(b.o, b.lse, &h, b.scr);
    for (size_t i = 0; i < nv; i++)
        ref[i] = o0[i];
    tap_close_scaled(b.o, ref, nv, 1e-5, "rel + 5: o unchanged");
    for (int i = 0; i < c.N; i++)
        ref[i] = (double)lse0[i] + 5.0;
    tap_close(b.lse, ref, (size_t)c.N, 1e-6, 1e-5, "rel + 5: lse + 5");
    /* v = 1: every row of p sums to one, so o = 1 */
    for (size_t i = 0; i < nv; i++)
        b.v[i] = 1.0f, ref[i] = 1.0;
    rl_attn_softmax_forward(b.o, b.lse, &h, b.scr);
    tap_close(b.o, ref, nv, 0, 2e-6, "v = 1 gives o = 1 (rows of p sum to 1)");
    free(o0), free(lse0), free(ref);
    kbuf_free(&b);
}

/* A constant log gate -slope is ALiBi's causal bias -slope (m - n): the gated kernel
 * without a bias equals the ungated kernel with ALiBi's relative vector. */
static void test_gate_is_alibi(void)
{
    const struct kcase c = {600, 16, 16, 1, BIAS_NONE, 1.0, 0.1};
    struct kbuf        b;
    kbuf_alloc(&b, &c);
    double slopes[4];
    rl_alibi_slopes(slopes, 4);
    for (int i = 0; i < c.N; i++)
        b.logf[i] = (float)-slopes[1];
    double acc = 0;
    for (int i = 0; i < c.N; i++)
        b.cum[i] = acc += (double)b.logf[i];
    struct rl_sm_head h = head_of(&b, &c);
    rl_attn_softmax_forward(b.o, b.lse, &h, b.scr);
    const size_t nv = (size_t)c.N * c.dv;
    float  *rel = malloc(sizeof(float) * (2 * (size_t)c.N - 1)), *o2 = malloc(sizeof(float) * nv);
    double *ref = malloc(sizeof(double) * nv);
    rl_alibi_rel(rel, slopes[1], c.N);
    struct rl_sm_head ha = h;
    ha.cum = NULL, ha.rel = rel;
    rl_attn_softmax_forward(o2, b.lse, &ha, b.scr);
    for (size_t i = 0; i < nv; i++)
        ref[i] = o2[i];
    tap_close_scaled(b.o, ref, nv, 1e-6, "a constant log gate -slope equals ALiBi's bias (N=%d)",
                     c.N);
    free(rel), free(o2), free(ref);
    kbuf_free(&b);
}

/* The same with the keys prepared once for the head (rl_attn_softmax_prepare, tiles in
 * reverse order): the pieces and the whole-head backward give the unprepared whole-head
 * bits in b. */
static void test_prepared(const struct rl_sm_head *h0, const struct kbuf *b, int N, int nb, int nk)
{
    const size_t pf = rl_attn_softmax_prepared_floats(N, h0->d, h0->dv, 0, h0->rope != NULL);
    if (pf == 0) return;
    const size_t nq = (size_t)N * h0->d, nv = (size_t)N * h0->dv;
    float       *prep = malloc(4 * pf), *o = malloc(4 * nv), *l = malloc(4 * (size_t)N),
          *dq = malloc(4 * nq), *dk = malloc(4 * nq), *dv = malloc(4 * nv),
          *D = malloc(4 * (size_t)N), *dc = malloc(4 * (size_t)N);
    for (int t = nk - 1; t >= 0; t--)
        rl_attn_softmax_prepare(prep, h0, t, 1);
    struct rl_sm_head h = *h0;
    h.prep              = prep;
    for (int i = nb - 1; i >= 0; i--)
        rl_attn_softmax_forward_block(o, l, &h, i, b->scr);
    for (int i = 0; i < nb; i++)
        rl_attn_softmax_row_dots(D, b->dout, o, &h, i);
    for (int j = nk - 1; j >= 0; j--)
        rl_attn_softmax_backward_kv(dk, dv, dc, b->dout, l, D, &h, j, b->scr);
    for (int i = nb - 1; i >= 0; i--)
        rl_attn_softmax_backward_q(dq, NULL, b->dout, l, D, &h, i, b->scr);
    int same = !memcmp(o, b->o, 4 * nv) && !memcmp(l, b->lse, 4 * (size_t)N) &&
               !memcmp(dq, b->dq, 4 * nq) && !memcmp(dk, b->dk, 4 * nq) &&
               !memcmp(dv, b->dv, 4 * nv);
    for (int n = 0; h.cum && n < N; n++)
        same &= dc[n] == (float)b->dcum[n];
    double                  *dcum = malloc(8 * (size_t)N);
    const struct rl_sm_grads g    = {dq, dk, dv, NULL, dcum, NULL};
    rl_attn_softmax_backward(&g, b->dout, o, l, &h, b->scr); /* whole head, prepared */
    same &= !memcmp(dq, b->dq, 4 * nq) && !memcmp(dk, b->dk, 4 * nq) && !memcmp(dv, b->dv, 4 * nv);
    same &= !h.cum || !memcmp(dcum, b->dcum, 8 * (size_t)N);
    tap_ok(same, "N=%d: the pieces and the whole-head backward on prepared keys give the same bits",
           N);
    free(prep), free(o), free(l), free(dq), free(dk), free(dv), free(D), free(dc), free(dcum);
}

/* The pieces -- forward by query block, backward by key block (dk, dv, dc) and by query
 * block (dq) -- give the whole-head calls' bits, in any order of the pieces. */
static void test_pieces(int N, int causal, double gate, int rope_on)
{
    const struct kcase c = {N, 16, 24, causal, BIAS_NONE, 1.0, gate};
    struct kbuf        b;
    kbuf_alloc(&b, &c);
    struct rl_rope      rope;
    struct rl_rope_opts ro;
    rl_rope_opts_default(&ro);
    if (rope_on && rl_rope_init(&rope, N, c.d, &ro) != RL_OK) tap_bail("%s", rl_last_error());
    struct rl_sm_head h = head_of(&b, &c);
    h.rope              = rope_on ? &rope : NULL;
    const size_t nq = (size_t)N * c.d, nv = (size_t)N * c.dv;
    float       *o1 = malloc(4 * nv), *l1 = malloc(4 * (size_t)N), *dq1 = malloc(4 * nq),
          *dk1 = malloc(4 * nq), *dv1 = malloc(4 * nv), *D = malloc(4 * (size_t)N),
          *dc = malloc(4 * (size_t)N);
    rl_attn_softmax_forward(b.o, b.lse, &h, b.scr);
    const struct rl_sm_grads g = {b.dq, b.dk, b.dv, NULL, b.dcum, NULL};
    rl_attn_softmax_backward(&g, b.dout, b.o, b.lse, &h, b.scr);
    const int nb = rl_attn_softmax_blocks(N, causal, NULL, c.d), nk = rl_attn_softmax_key_blocks(N);
    for (int i = nb - 1; i >= 0; i--) /* reversed: no piece may lean on another */
        rl_attn_softmax_forward_block(o1, l1, &h, i, b.scr);
    for (int i = 0; i < nb; i++)
        rl_attn_softmax_row_dots(D, b.dout, o1, &h, i);
    for (int j = nk - 1; j >= 0; j--)
        rl_attn_softmax_backward_kv(dk1, dv1, dc, b.dout, l1, D, &h, j, b.scr);
    for (int i = nb - 1; i >= 0; i--)
        rl_attn_softmax_backward_q(dq1, NULL, b.dout, l1, D, &h, i, b.scr);
    int same = !memcmp(o1, b.o, 4 * nv) && !memcmp(l1, b.lse, 4 * (size_t)N) &&
               !memcmp(dq1, b.dq, 4 * nq) && !memcmp(dk1, b.dk, 4 * nq) &&
               !memcmp(dv1, b.dv, 4 * nv);
    for (int n = 0; gate > 0 && n < N; n++)
        same &= dc[n] == (float)b.dcum[n];
    tap_ok(same, "N=%d %s%s%s: %d query and %d key block pieces give the whole-head bits", N,
           causal ? "causal" : "non-causal", gate > 0 ? " gated" : "", rope_on ? " RoPE" : "", nb,
           nk);
    test_prepared(&h, &b, N, nb, nk);
    if (rope_on) rl_rope_free(&rope);
    free(o1), free(l1), free(dq1), free(dk1), free(dv1), free(D), free(dc);
    kbuf_free(&b);
}

/* T5's gradient in parts (one per query block): the whole-head backward and the pieces
 * (in reverse order) write the same parts bit for bit, the other gradients are the bits
 * of the backward into one drel, and the parts summed lag by lag equal that drel to
 * double rounding. */
static void test_t5_parts(int N, int causal)
{
    const struct kcase c = {N, 16, 24, causal, BIAS_T5, 1.0, 0};
    struct kbuf        b;
    kbuf_alloc(&b, &c);
    const struct rl_sm_head h  = head_of(&b, &c);
    const size_t            nq = (size_t)N * c.d, nv = (size_t)N * c.dv, nr = 2 * (size_t)N - 1;
    const int nb = rl_attn_softmax_blocks(N, causal, NULL, c.d), nk = rl_attn_softmax_key_blocks(N);
    size_t    len, np = rl_attn_softmax_drel_part(N, causal, NULL, c.d, nb, &len);
    double   *pa = malloc(8 * np), *pb = malloc(8 * np), *sum = calloc(nr, 8);
    float    *dq = malloc(4 * nq), *dk = malloc(4 * nq), *dv = malloc(4 * nv), *D = malloc(4 * N);
    rl_attn_softmax_forward(b.o, b.lse, &h, b.scr);
    const struct rl_sm_grads g1 = {b.dq, b.dk, b.dv, b.drel, NULL, NULL};
    rl_attn_softmax_backward(&g1, b.dout, b.o, b.lse, &h, b.scr); /* into one drel */
    const struct rl_sm_grads g2 = {dq, dk, dv, NULL, NULL, pa};
    rl_attn_softmax_backward(&g2, b.dout, b.o, b.lse, &h, b.scr); /* into the parts */
    int same = !memcmp(dq, b.dq, 4 * nq) && !memcmp(dk, b.dk, 4 * nq) && !memcmp(dv, b.dv, 4 * nv);
    for (int i = 0; i < nb; i++)
        rl_attn_softmax_row_dots(D, b.dout, b.o, &h, i);
    for (int j = nk - 1; j >= 0; j--)
        rl_attn_softmax_backward_kv(dk, dv, NULL, b.dout, b.lse, D, &h, j, b.scr);
    for (int i = nb - 1; i >= 0; i--)
        rl_attn_softmax_backward_q(dq, pb, b.dout, b.lse, D, &h, i, b.scr);
    same &= !memcmp(pa, pb, 8 * np) && !memcmp(dq, b.dq, 4 * nq) && !memcmp(dk, b.dk, 4 * nq);
    tap_ok(same, "N=%d %s T5: %d query blocks' parts, whole head and pieces, the same bits", N,
           causal ? "causal" : "non-causal", nb);
    double err = 0, mx = 0;
    for (int i = 0; i < nb; i++) {
        int          i0, mb;
        const size_t off = rl_attn_softmax_drel_part(N, causal, NULL, c.d, i, &len);
        rl_attn_softmax_block_rows(N, causal, NULL, c.d, i, &i0, &mb);
        for (size_t e = 0; e < len; e++) /* entry e: lag e - (i0 + mb - 1) */
            sum[e + (size_t)(N - i0 - mb)] += pa[off + e];
    }
    for (size_t r = 0; r < nr; r++)
        err = fmax(err, fabs(sum[r] - b.drel[r])), mx = fmax(mx, fabs(b.drel[r]));
    tap_ok(err <= 1e-12 * mx, "N=%d %s T5: the parts summed equal drel (%.2g of max %.3g)", N,
           causal ? "causal" : "non-causal", err / mx, mx);
    free(pa), free(pb), free(sum), free(dq), free(dk), free(dv), free(D);
    kbuf_free(&b);
}

int main(void)
{
    rl_init(1);
    tap_seed(20240521);
    test_vexp();
    test_vexp_ftz();
    test_vexp_shift();
    test_reference_fd(0, 0);
    test_reference_fd(1, 0);
    test_reference_fd(1, 1);
    static const struct kcase cases[] = {
        {1, 8, 8, 0, BIAS_NONE, 1, 0},
        {1, 8, 8, 1, BIAS_T5, 1, 0},
        {7, 8, 5, 0, BIAS_T5, 1, 0},
        {7, 8, 5, 1, BIAS_ALIBI, 1, 0},
        {65, 16, 24, 0, BIAS_NONE, 1, 0},
        {65, 16, 24, 1, BIAS_NONE, 1, 0},
        {130, 32, 32, 0, BIAS_ALIBI, 1, 0},
        {130, 32, 32, 1, BIAS_T5, 1, 0},
        {300, 32, 16, 0, BIAS_T5, 1, 0},
        {300, 32, 16, 1, BIAS_ALIBI, 1, 0},
        {300, 16, 32, 1, BIAS_NONE, 2, 0},
        {600, 32, 32, 1, BIAS_T5, 1, 0},
        {600, 8, 24, 0, BIAS_ALIBI, 1, 0},
        {65, 8, 8, 0, BIAS_RANDOM, 1, 0},
        {300, 16, 8, 1, BIAS_RANDOM, 1, 0},
        {600, 16, 16, 0, BIAS_RANDOM, 1, 0},
        /* the forget gate: weak and strong decays, alone and with every bias */
        {1, 8, 8, 1, BIAS_NONE, 1, 0.5},
        {7, 8, 5, 1, BIAS_T5, 1, 0.5},
        {65, 16, 24, 1, BIAS_NONE, 1, 0.05},
        {300, 32, 16, 1, BIAS_ALIBI, 1, 0.2},
        {300, 16, 32, 1, BIAS_NONE, 2, 3.0},
        {600, 32, 32, 1, BIAS_T5, 1, 0.01},
        {600, 16, 16, 1, BIAS_RANDOM, 1, 1.0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_case(&cases[i], 1e-4, 1e-3, 0.0);
    test_invariants(0);
    test_invariants(1);
    test_gate_is_alibi();
    test_pieces(700, 1, 0.1, 1);
    test_pieces(700, 0, 0, 1);
    test_pieces(200, 1, 0.5, 0);
    test_pieces(1100, 1, 0, 0);
    test_t5_parts(700, 1);
    test_t5_parts(600, 0);
    /* |q|, |k| ~ 30: scores ~ 5e3 and p nearly one-hot; the running max keeps everything
     * finite.  A float32 score that large carries an absolute rounding error ~ u |s| ~ 3e-4
     * (u = 6e-8), which the softmax turns into a relative error of p of the same size: no
     * float32 kernel meets the usual 1e-4 / 1e-3 there for every GEMM summation order
     * (measured: o <= 7e-5, gradients up to 1.6e-3 across BLIS's skx, haswell and
     * sandybridge kernels), so o and lse check against 1e-3 and dv against 1e-2.  dq, dk and drel
     * sum p (dp - D), which cancels where p is one-hot: relative to themselves they are rounding,
     * so each element checks against 2e-3 of the magnitudes of its terms (ref_bounds;
     * measured up to 5.3e-4 over 30 seeds of these three cases). */
    static const struct kcase big[] = {
        {130, 32, 32, 0, BIAS_NONE, 30, 0},
        {300, 32, 32, 1, BIAS_ALIBI, 30, 0},
        {65, 8, 8, 1, BIAS_T5, 30, 0},
    };
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
        check_case(&big[i], 1e-3, 1e-2, 2e-3);
    /* (last: the cases above keep their data) query blocks of 63 rows, an odd number of
     * rows of d = 16, whose last rl_rope_rotate takes in its vector loop's tail: the pieces
     * must group the rows as the whole head does */
    test_pieces(250, 1, 0.2, 1);
    /* the score rows' fused steps (after everything above, which keeps its data) */
    test_vexp_online();
    test_vexp_grad();
    return tap_done();
}
