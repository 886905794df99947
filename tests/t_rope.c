/* t_rope.c -- RoPE table and rotation (SPEC 2.3): against a float64 rotation built from
 * the formulas, both layouts, partial rotary, scale, NTK; invariants: norms kept,
 * <R_m q, R_n k> depends on m - n only, inverse(rotate(x)) = x. */
#include "config.h"
#include "kernels/rope.h"
#include "tap.h"

#include <math.h>
#include <stdlib.h>

/* float64 reference: the pairs of SPEC 2.3 written out directly */
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
    errors();
    return tap_done();
}
