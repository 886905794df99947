/* t_rope.c -- RoPE table and rotation (RoFormer sec. 3.2): against a float64 rotation built from
 * the formulas, both layouts, partial rotary, scale, NTK; invariants: norms kept,
 * <R_m q, R_n k> depends on m - n only, inverse(rotate(x)) = x.  YaRN: s = 1 is plain
 * RoPE bit for bit, the ramp by hand (R = 8) and in general against a float64 transcription
 * (pairs below lo keep theta, above hi get theta/s), rotations with the attention factor. */
#include "config.h"
#include "kernels/rope.h"
#include "tap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* float64 reference: pairs (2i, 2i+1) or (i, i+R/2) rotated by m theta_i, written out */
static void ref_rotate(double *out, const float *x, int d, int R, int halves, double base,
                       double scale, double ntk, int m)
{
    double b = base * (ntk != 1.0 ? pow(ntk, (double)R / (R - 2)) : 1.0);
    for (int j = 0; j < d; j++) out[j] = x[j];
    for (int i = 0; i < R / 2; i++) {
        double th = pow(b, -2.0 * i / R), a = (m / scale) * th;
        int    p = halves ? i : 2 * i, q = halves ? i + R / 2 : 2 * i + 1;
        out[p] = x[p] * cos(a) - x[q] * sin(a);
        out[q] = x[p] * sin(a) + x[q] * cos(a);
    }
}

static void check_config(int d, int R, int halves, double scale, double ntk)
{
    int                 N = 300;
    struct rl_rope_opts o;
    struct rl_rope      r;
    rl_rope_opts_default(&o);
    o.dims   = R == d ? 0 : R;
    o.layout = halves ? RL_ROPE_LAYOUT_HALVES : RL_ROPE_LAYOUT_PAIRS;
    o.scale  = scale;
    o.ntk    = ntk;
    if (rl_rope_init(&r, N, d, &o) != RL_OK) tap_bail("rope init: %s", rl_last_error());
    float  *x = malloc(sizeof(float) * N * d), *y = malloc(sizeof(float) * N * d);
    double *ref = malloc(sizeof(double) * N * d);
    tap_fill_normal(x, (size_t)N * d, 1.0);
    rl_rope_rotate(&r, y, d, x, d, N, 0, 0);
    for (int m = 0; m < N; m++) ref_rotate(ref + (size_t)m * d, x + (size_t)m * d, d, R, halves, 1e4, scale, ntk, m);
    tap_close(y, ref, (size_t)N * d, 0, 2e-6, "rotate d=%d R=%d %s scale=%g ntk=%g vs float64", d,
              R, halves ? "halves" : "pairs", scale, ntk);
    /* inverse(rotate(x)) = x, in place */
    rl_rope_rotate(&r, y, d, y, d, N, 0, 1);
    for (size_t i = 0; i < (size_t)N * d; i++) ref[i] = x[i];
    tap_close(y, ref, (size_t)N * d, 0, 2e-6, "inverse rotation restores x (in place)");
    free(x), free(y), free(ref);
    rl_rope_free(&r);
}

static void relative_invariance(int halves)
{
    int                 d = 16, N = 400;
    struct rl_rope_opts o;
    struct rl_rope      r;
    rl_rope_opts_default(&o);
    o.layout = halves ? RL_ROPE_LAYOUT_HALVES : RL_ROPE_LAYOUT_PAIRS;
    rl_rope_init(&r, N, d, &o);
    float q[16], k[16], rq[16], rk[16];
    tap_fill_normal(q, 16, 1.0);
    tap_fill_normal(k, 16, 1.0);
    double worst = 0, nq = 0, worst_norm = 0;
    for (int j = 0; j < d; j++) nq += (double)q[j] * q[j];
    for (int delta = -40; delta <= 40; delta += 7) {
        double first = 0;
        for (int shift = 0; shift < 5; shift++) {
            int m = 150 + 37 * shift, n = m - delta;
            rl_rope_rotate(&r, rq, d, q, d, 1, m, 0);
            rl_rope_rotate(&r, rk, d, k, d, 1, n, 0);
            double s = 0, nr = 0;
            for (int j = 0; j < d; j++) s += (double)rq[j] * rk[j], nr += (double)rq[j] * rq[j];
            if (shift == 0) first = s;
            worst      = fmax(worst, fabs(s - first));
            worst_norm = fmax(worst_norm, fabs(nr - nq));
        }
    }
    tap_ok(worst < 1e-4, "%s: <R_m q, R_n k> depends on m-n only (max diff %.2g)",
           halves ? "halves" : "pairs", worst);
    tap_ok(worst_norm < 1e-4, "%s: rotation keeps |q| (max diff %.2g)", halves ? "halves" : "pairs",
           worst_norm);
    rl_rope_free(&r);
}

/* ---- YaRN: frequencies theta'_i and the attention factor ---- */

/* theta'_i written out from the formulas (truncated correction range, beta 32 and 1) */
static double ref_yarn_theta(int i, int R, double base, double s, int L)
{
    const double pi     = 3.14159265358979323846;
    double       c_fast = R * log(L / (2 * pi * 32.0)) / (2 * log(base));
    double       c_slow = R * log(L / (2 * pi * 1.0)) / (2 * log(base));
    double       lo = fmax(floor(c_fast), 0.0), hi = fmin(ceil(c_slow), R - 1.0);
    if (lo == hi) hi += 0.001;
    double ramp = fmin(fmax((i - lo) / (hi - lo), 0.0), 1.0);
    double th   = pow(base, -2.0 * i / R);
    return th / s * ramp + th * (1.0 - ramp);
}

/* s = 1 is plain RoPE: the same table, bit for bit, whatever yarn_orig says */
static void yarn_off_is_plain(void)
{
    struct rl_rope_opts o;
    struct rl_rope      a, b;
    rl_rope_opts_default(&o);
    o.dims = 12;
    rl_rope_init(&a, 500, 16, &o);
    o.yarn = 1.0, o.yarn_orig = 37;
    rl_rope_init(&b, 500, 16, &o);
    size_t nt = (size_t)500 * 6;
    tap_ok(!memcmp(a.cos, b.cos, nt * sizeof(float)) && !memcmp(a.sin, b.sin, nt * sizeof(float)),
           "YaRN s = 1 (yarn_orig 37) gives the plain RoPE table bit for bit");
    rl_rope_free(&a), rl_rope_free(&b);
}

/* R = 8, base 10000, L = 4096 by hand: c(32) = 8 ln(4096/(64 pi)) / (2 ln 1e4) = 1.309, so
 * lo = 1; c(1) = 8 ln(4096/(2 pi)) / (2 ln 1e4) = 2.814, so hi = 3; ramp = 0, 0, 1/2, 1. */
static void yarn_ramp_by_hand(void)
{
    struct rl_rope_opts o;
    rl_rope_opts_default(&o);
    o.yarn = 4, o.yarn_orig = 4096;
    const double want[4] = {1.0, 0.1, 0.01 * (0.5 / 4 + 0.5), 0.001 / 4};
    double       worst   = 0;
    for (int i = 0; i < 4; i++)
        worst = fmax(worst, fabs(rl_rope_theta(&o, 8, i) / want[i] - 1));
    tap_ok(worst < 1e-13,
           "YaRN R=8 L=4096 s=4: theta' = theta, theta, theta (1/8 + 1/2), theta/4 "
           "(max rel err %.2g)",
           worst);
}

/* The ends of the ramp and everything between, for a wider case, against ref_yarn_theta;
 * the case is chosen so that pairs lie below lo, between, and above hi. */
static void yarn_ramp_general(int R, double base, double s, int L)
{
    struct rl_rope_opts o;
    rl_rope_opts_default(&o);
    o.base = base, o.yarn = s, o.yarn_orig = L;
    int    kept = 0, interp = 0, mid = 0;
    double worst = 0;
    for (int i = 0; i < R / 2; i++) {
        double th = pow(base, -2.0 * i / R), got = rl_rope_theta(&o, R, i);
        worst = fmax(worst, fabs(got / ref_yarn_theta(i, R, base, s, L) - 1));
        if (got == th)
            kept++;
        else if (fabs(got / (th / s) - 1) < 1e-14)
            interp++;
        else if (got < th && got > th / s)
            mid++;
    }
    tap_ok(worst < 1e-13 && kept > 0 && interp > 0 && mid > 0 && kept + interp + mid == R / 2,
           "YaRN R=%d base=%g s=%g L=%d: %d pairs keep theta, %d between, %d get theta/s "
           "(max rel err vs float64 %.2g)",
           R, base, s, L, kept, mid, interp, worst);
}

/* The table and the rotation with YaRN frequencies, both layouts, partial rotary, and
 * the attention factor (rl_rope_scale) on every feature, the pass-through ones included
 * (so that q.k scales by a^2): a R_m x out of place, then a R_m^T in place (the
 * backward's use, where the pass-through features used to be left alone). */
static void yarn_rotation(int d, int R, int halves)
{
    const int           N = 200, L = 1000;
    const double        s = 8, base = 100;
    struct rl_rope_opts o;
    struct rl_rope      r;
    rl_rope_opts_default(&o);
    o.dims = R, o.base = base, o.yarn = s, o.yarn_orig = L;
    o.layout = halves ? RL_ROPE_LAYOUT_HALVES : RL_ROPE_LAYOUT_PAIRS;
    if (rl_rope_init(&r, N, d, &o) != RL_OK) tap_bail("rope init: %s", rl_last_error());
    double a = rl_rope_yarn_mscale(&o);
    rl_rope_scale(&r, a);
    float  *x = malloc(sizeof(float) * N * d), *y = malloc(sizeof(float) * N * d);
    double *ref = malloc(sizeof(double) * N * d);
    tap_fill_normal(x, (size_t)N * d, 1.0);
    rl_rope_rotate(&r, y, d, x, d, N, 0, 0);
    for (int m = 0; m < N; m++) {
        const float *xr  = x + (size_t)m * d;
        double      *out = ref + (size_t)m * d;
        for (int j = 0; j < d; j++)
            out[j] = a * xr[j];
        for (int i = 0; i < R / 2; i++) {
            double ang = m * ref_yarn_theta(i, R, base, s, L);
            int    p = halves ? i : 2 * i, q = halves ? i + R / 2 : 2 * i + 1;
            out[p] = a * (xr[p] * cos(ang) - xr[q] * sin(ang));
            out[q] = a * (xr[p] * sin(ang) + xr[q] * cos(ang));
        }
    }
    tap_close(y, ref, (size_t)N * d, 0, 4e-6,
              "YaRN rotation d=%d R=%d %s (s=8, a=%.4f on every feature) vs float64", d, R,
              halves ? "halves" : "pairs", a);
    /* in place, inverse: y <- a R_m^T y = a^2 x */
    rl_rope_rotate(&r, y, d, y, d, N, 0, 1);
    for (size_t j = 0; j < (size_t)N * d; j++)
        ref[j] = a * a * x[j];
    tap_close(y, ref, (size_t)N * d, 0, 8e-6,
              "YaRN d=%d R=%d %s: a R_m^T in place after a R_m gives a^2 x", d, R,
              halves ? "halves" : "pairs");
    free(x), free(y), free(ref);
    rl_rope_free(&r);
}

static void errors(void)
{
    struct rl_rope_opts o;
    struct rl_rope      r;
    rl_rope_opts_default(&o);
    tap_ok(rl_rope_init(&r, 10, 7, &o) == RL_EINVAL, "odd d rejected: %s", rl_last_error());
    o.dims = 5;
    tap_ok(rl_rope_init(&r, 10, 8, &o) == RL_EINVAL, "odd rope_dims rejected: %s", rl_last_error());
    o.dims = 2, o.ntk = 4;
    tap_ok(rl_rope_init(&r, 10, 8, &o) == RL_EINVAL, "ntk with R=2 rejected: %s", rl_last_error());
    rl_rope_opts_default(&o);
    o.base = -1;
    tap_ok(rl_rope_init(&r, 10, 8, &o) == RL_EINVAL, "negative base rejected: %s", rl_last_error());
    rl_rope_opts_default(&o);
    o.yarn = 0.5;
    tap_ok(rl_rope_init(&r, 10, 8, &o) == RL_EINVAL, "rope_yarn < 1 rejected: %s", rl_last_error());
    o.yarn = 2, o.scale = 2;
    tap_ok(rl_rope_init(&r, 10, 8, &o) == RL_EINVAL, "rope_yarn with rope_scale rejected: %s",
           rl_last_error());
    o.scale = 1, o.ntk = 2;
    tap_ok(rl_rope_init(&r, 10, 8, &o) == RL_EINVAL, "rope_yarn with rope_ntk rejected: %s",
           rl_last_error());
}

int main(void)
{
    tap_seed(5);
    check_config(32, 32, 0, 1, 1);
    check_config(32, 32, 1, 1, 1);
    check_config(24, 8, 0, 1, 1);
    check_config(24, 8, 1, 1, 1);
    check_config(16, 16, 0, 4, 1);
    check_config(16, 12, 1, 1, 8);
    relative_invariance(0);
    relative_invariance(1);
    /* float32 cos/sin from double angles: at m = 60000 the angle is exact to ~1e-12 */
    {
        struct rl_rope_opts o;
        struct rl_rope      r;
        rl_rope_opts_default(&o);
        rl_rope_init(&r, 65536, 2, &o);
        double a = 65535.0;
        tap_ok(fabs(r.cos[65535] - cos(a)) < 1e-7 && fabs(r.sin[65535] - sin(a)) < 1e-7,
               "table at m=65535 uses double angles (cos err %.2g)", fabs(r.cos[65535] - cos(a)));
        rl_rope_free(&r);
    }
    yarn_off_is_plain();
    yarn_ramp_by_hand();
    yarn_ramp_general(64, 10000, 8, 2048);
    yarn_ramp_general(32, 500, 16, 1000);
    yarn_rotation(16, 16, 0);
    yarn_rotation(16, 16, 1);
    yarn_rotation(24, 12, 0);
    yarn_rotation(24, 12, 1);
    {
        struct rl_rope_opts o;
        rl_rope_opts_default(&o);
        o.yarn = 16;
        tap_ok(fabs(rl_rope_yarn_mscale(&o) - (0.1 * log(16.0) + 1)) < 1e-15 &&
                   (o.yarn = 1, rl_rope_yarn_mscale(&o) == 1.0),
               "YaRN attention factor 0.1 ln s + 1 (1 when off)");
    }
    errors();
    return tap_done();
}
