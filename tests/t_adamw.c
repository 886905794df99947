/* t_adamw.c -- AdamW (PyTorch torch.optim.AdamW semantics), the warm-up + cosine learning-rate
 * schedule, global-norm clipping: against float64 references written here from the
 * formulas, plus the decay set (decoupled decay only on flagged tensors). */
#include "config.h"
#include "model/adamw.h"
#include "core/threads.h"
#include "core/init.h"
#include "tap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* lr (s+1)/W during W warm-up updates, then cosine to r lr at T = steps - 1 */
static double ref_lr(long s, double lr, int W, double r, long steps)
{
    long T = steps - 1;
    if (s < W) return lr * (s + 1) / W;
    if (T <= W) return lr;
    return lr * (r + (1 - r) * 0.5 * (1 + cos(M_PI * (double)(s - W) / (double)(T - W))));
}

static void test_schedule(void)
{
    struct {
        int    W;
        double r;
        long   steps;
    } cases[] = {{0, 0.0, 100}, {10, 0.1, 100}, {5, 0.0, 6},
                 {8, 0.5, 4},   {0, 0.0, 1},    {3, 0.2, 50}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        double worst = 0;
        for (long s = 0; s < cases[c].steps; s++) {
            double got = rl_lr_schedule(s, 3e-3, cases[c].W, cases[c].r, cases[c].steps);
            worst =
                fmax(worst, fabs(got - ref_lr(s, 3e-3, cases[c].W, cases[c].r, cases[c].steps)));
        }
        tap_ok(worst <= 1e-15, "schedule W=%d r=%g steps=%ld matches the formula (max err %.2g)",
               cases[c].W, cases[c].r, cases[c].steps, worst);
    }
    /* landmarks */
    tap_ok(rl_lr_schedule(0, 1.0, 0, 0.0, 100) == 1.0, "no warm-up: update 0 at the full lr");
    tap_ok(fabs(rl_lr_schedule(99, 1.0, 0, 0.1, 100) - 0.1) < 1e-15,
           "last update T = steps-1 reaches r*lr");
    tap_ok(fabs(rl_lr_schedule(9, 1.0, 10, 0.0, 100) - 1.0) < 1e-15 &&
               fabs(rl_lr_schedule(10, 1.0, 10, 0.0, 100) - 1.0) < 1e-15,
           "warm-up ends at lr (update W-1) and the cosine starts at lr (update W)");
    tap_ok(fabs(rl_lr_schedule(55, 1.0, 10, 0.0, 101) - 0.5) < 1e-12,
           "cosine midpoint (s - W = (T - W)/2) is lr/2");
    tap_ok(rl_lr_schedule(500, 1.0, 0, 0.25, 100) == rl_lr_schedule(99, 1.0, 0, 0.25, 100),
           "updates beyond T keep r*lr");
}

static void test_clip(void)
{
    size_t n = 1001;
    float *g = malloc(n * sizeof *g), *g0 = malloc(n * sizeof *g0);
    tap_fill_normal(g, n, 0.3);
    memcpy(g0, g, n * sizeof *g);
    double ref = 0;
    for (size_t i = 0; i < n; i++)
        ref += (double)g[i] * g[i];
    ref         = sqrt(ref);
    double norm = rl_grad_norm(g, n);
    tap_ok(fabs(norm - ref) <= 1e-12 * ref, "grad norm %.12g vs float64 %.12g", norm, ref);
    rl_clip(g, n, 0.0, norm);
    tap_ok(memcmp(g, g0, n * sizeof *g) == 0, "clip c = 0 is off");
    rl_clip(g, n, 2 * norm, norm);
    tap_ok(memcmp(g, g0, n * sizeof *g) == 0, "clip with ||g|| < c leaves g unchanged");
    rl_clip(g, n, 1.0, norm);
    double *want = malloc(n * sizeof *want);
    for (size_t i = 0; i < n; i++)
        want[i] = g0[i] * (1.0 / (norm + 1e-6));
    tap_close(g, want, n, 1e-6, 0, "clip g * c/(||g|| + 1e-6) (||g|| = %.3g, c = 1)", norm);
    tap_ok(fabs(rl_grad_norm(g, n) - norm / (norm + 1e-6)) < 1e-6, "clipped norm ~ c");
    free(g), free(g0), free(want);
}

/* PyTorch AdamW, float64: decay, moments, bias-corrected step */
static void ref_adamw(double *p, const double *g, double *m, double *v, size_t n, int decay,
                      double lr, const struct rl_adamw_opts *o, long t)
{
    for (size_t i = 0; i < n; i++) {
        p[i] *= 1 - lr * (decay ? o->weight_decay : 0);
        m[i]       = o->beta1 * m[i] + (1 - o->beta1) * g[i];
        v[i]       = o->beta2 * v[i] + (1 - o->beta2) * g[i] * g[i];
        double den = sqrt(v[i]) / sqrt(1 - pow(o->beta2, (double)t)) + o->eps;
        p[i] -= lr / (1 - pow(o->beta1, (double)t)) * m[i] / den;
    }
}

static void test_update(int decay)
{
    const size_t         n = 257;
    struct rl_adamw_opts o;
    rl_adamw_opts_default(&o);
    o.lr = 3e-3, o.weight_decay = 0.1;
    float  *p = malloc(n * 4), *g = malloc(n * 4), *m = calloc(n, 4), *v = calloc(n, 4);
    double *rp = malloc(n * 8), *rg = malloc(n * 8), *rm = calloc(n, 8), *rv = calloc(n, 8);
    tap_fill_normal(p, n, 1.0);
    for (size_t i = 0; i < n; i++)
        rp[i] = p[i];
    double worst = 0;
    for (long t = 1; t <= 8; t++) {
        tap_fill_normal(g, n, t % 2 ? 1e-2 : 1.0); /* gradient scale changes between steps */
        g[3] = 0.0f;
        for (size_t i = 0; i < n; i++)
            rg[i] = g[i];
        double lr = rl_lr_schedule(t - 1, o.lr, 2, 0.1, 8);
        rl_adamw_update(p, g, m, v, n, decay, lr, &o, t);
        ref_adamw(rp, rg, rm, rv, n, decay, lr, &o, t);
        /* per update, |p| <= ~3 rounds to 2.4e-7; 8 updates stay within a few ulps */
        for (size_t i = 0; i < n; i++)
            worst = fmax(worst, fabs(p[i] - rp[i]) / (fabs(rp[i]) + 1e-2));
    }
    tap_ok(worst <= 1e-6,
           "AdamW %s decay, 8 updates vs float64: max |p - p_ref|/(|p_ref| + 0.01) "
           "= %.2g",
           decay ? "with" : "without", worst);
    tap_close(m, rm, n, 1e-5, 1e-7, "first moments vs float64");
    tap_close(v, rv, n, 1e-5, 1e-10, "second moments vs float64");
    free(p), free(g), free(m), free(v), free(rp), free(rg), free(rm), free(rv);
}

/* Decay only on flagged tensors: with zero gradients a step is p * (1 - lr wd) exactly. */
static void test_decay_set(void)
{
    struct rl_tensor_info t[3] = {{"a.weight", 2, {3, 4}, 0, 12, 1},
                                  {"a.bias", 1, {3, 0}, 12, 3, 0},
                                  {"b.weight", 2, {2, 2}, 15, 4, 1}};
    float                 p[19], g[19] = {0}, m[19] = {0}, v[19] = {0}, p0[19];
    tap_fill_normal(p, 19, 1.0);
    memcpy(p0, p, sizeof p);
    struct rl_adamw_opts o;
    rl_adamw_opts_default(&o);
    rl_adamw_step(p, g, m, v, t, 3, 0.5, &o, 1);
    int ok = 1;
    for (int i = 0; i < 19; i++) {
        int   decay = i < 12 || i >= 15;
        float want  = decay ? p0[i] * (float)(1 - 0.5 * 0.01) : p0[i];
        ok &= p[i] == want;
    }
    tap_ok(ok, "zero gradient: decayed tensors shrink by (1 - lr wd), the bias is untouched");
}

int main(void)
{
    rl_init(1);
    tap_seed(7);
    test_schedule();
    test_clip();
    test_update(1);
    test_update(0);
    test_decay_set();
    rl_init(2);
    test_update(1);
    return tap_done();
}
