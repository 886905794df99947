/* rope.c -- RoPE table and rotation.  See rope.h for the conventions. */
#include "config.h"
#include "rope.h"
#include "../core/vexp.h"

#include <math.h>
#include <stdlib.h>

void rl_rope_opts_default(struct rl_rope_opts *o)
{
    o->base   = 10000.0;
    o->layout = RL_ROPE_LAYOUT_PAIRS;
    o->dims   = 0;
    o->scale  = 1.0;
    o->ntk    = 1.0;
    o->yarn      = 1.0;
    o->yarn_orig = 0;
}

/* YaRN's correction dimension: the pair index whose wavelength 2 pi / theta_i fits
 * n_rot times into the trained context L. */
static double yarn_corr_dim(double n_rot, int dims, double base, int L)
{
    const double pi = 3.14159265358979323846;
    return dims * log(L / (n_rot * 2.0 * pi)) / (2.0 * log(base));
}

/* YaRN's blend weight of theta_i / s for pair i (0: theta_i kept, 1: interpolated). */
static double yarn_ramp(const struct rl_rope_opts *o, int dims, int i)
{
    RL_ASSERT(o->yarn_orig > 0);
    double lo = floor(yarn_corr_dim(32.0, dims, o->base, o->yarn_orig));
    double hi = ceil(yarn_corr_dim(1.0, dims, o->base, o->yarn_orig));
    lo        = lo > 0 ? lo : 0;
    hi        = hi < dims - 1 ? hi : dims - 1;
    if (lo == hi) hi += 0.001;
    double r = (i - lo) / (hi - lo);
    return r < 0 ? 0 : r > 1 ? 1 : r;
}

double rl_rope_theta(const struct rl_rope_opts *o, int dims, int i)
{
    double base = o->base;
    if (o->ntk != 1.0) base *= pow(o->ntk, (double)dims / (double)(dims - 2));
    double th = pow(base, -2.0 * i / (double)dims);
    if (o->yarn != 1.0) {
        double w = yarn_ramp(o, dims, i);
        th       = (th / o->yarn) * w + th * (1.0 - w);
    }
    return th;
}

double rl_rope_yarn_mscale(const struct rl_rope_opts *o)
{
    return o->yarn > 1.0 ? 0.1 * log(o->yarn) + 1.0 : 1.0;
}

void rl_rope_scale(struct rl_rope *r, double a)
{
    size_t nt = (size_t)r->n_pos * (r->dims / 2);
    for (size_t t = 0; t < nt; t++) {
        r->cos[t] = (float)(r->cos[t] * a);
        r->sin[t] = (float)(r->sin[t] * a);
    }
    r->pass = (float)(r->pass * a);
}

rl_status rl_rope_init(struct rl_rope *r, int n_pos, int d, const struct rl_rope_opts *o)
{
    r->cos = r->sin = NULL;
    int R           = o->dims > 0 ? o->dims : d;
    if (d <= 0 || n_pos <= 0)
        RL_FAIL(RL_EINVAL, "rope: d=%d and n_pos=%d must be positive", d, n_pos);
    if (o->dims == 0 && d % 2) RL_FAIL(RL_EINVAL, "rope: head dimension d=%d must be even", d);
    if (R % 2 || R > d) RL_FAIL(RL_EINVAL, "rope: rope_dims=%d must be even and <= d=%d", R, d);
    if (!(o->base > 0)) RL_FAIL(RL_EINVAL, "rope: rope_base=%g must be > 0", o->base);
    if (!(o->scale > 0)) RL_FAIL(RL_EINVAL, "rope: rope_scale=%g must be > 0", o->scale);
    if (!(o->ntk > 0)) RL_FAIL(RL_EINVAL, "rope: rope_ntk=%g must be > 0", o->ntk);
    if (o->ntk != 1.0 && R <= 2) RL_FAIL(RL_EINVAL, "rope: rope_ntk needs rope_dims > 2 (got %d)", R);
    if (!(o->yarn >= 1)) RL_FAIL(RL_EINVAL, "rope: rope_yarn=%g must be >= 1", o->yarn);
    if (o->yarn != 1.0 && (o->scale != 1.0 || o->ntk != 1.0))
        RL_FAIL(RL_EINVAL, "rope: rope_yarn excludes rope_scale != 1 and rope_ntk != 1");
    if (o->yarn_orig < 0) RL_FAIL(RL_EINVAL, "rope: rope_yarn_orig=%d must be >= 0", o->yarn_orig);
    struct rl_rope_opts oy = *o; /* YaRN's L: the table's length unless given */
    if (!oy.yarn_orig) oy.yarn_orig = n_pos;
    int    h  = R / 2;
    size_t nt = (size_t)n_pos * h;
    r->cos    = malloc((nt ? nt : 1) * sizeof(float));
    r->sin    = malloc((nt ? nt : 1) * sizeof(float));
    if (!r->cos || !r->sin) {
        rl_rope_free(r);
        RL_FAIL(RL_ENOMEM, "rope: cannot allocate a %d x %d table", n_pos, h);
    }
    r->n_pos = n_pos, r->d = d, r->dims = R, r->layout = o->layout, r->pass = 1.0f;
    for (int i = 0; i < h; i++) {
        double th = rl_rope_theta(&oy, R, i);
        for (int m = 0; m < n_pos; m++) {
            /* angles in double: float m * theta loses digits at large m */
            double a = ((double)m / o->scale) * th;
            r->cos[(size_t)m * h + i] = (float)cos(a);
            r->sin[(size_t)m * h + i] = (float)sin(a);
        }
    }
    return RL_OK;
}

void rl_rope_free(struct rl_rope *r)
{
    free(r->cos);
    free(r->sin);
    r->cos = r->sin = NULL;
}

/* Written so that GCC vectorises it (the pair index is the only inner loop, each layout
 * spelled out) and compiled for AVX-512, AVX2 and the baseline (RL_SIMD_CLONES): the
 * softmax path rotates q and k of every head forward and backward plus dq and dk back, the
 * linear kernels every block's feature rows; the scalar loop was ~3 % of a training step.
 * A whole-width rotation of contiguous rows in the pairs layout is one flat loop over the
 * n_rows x h pairs (the tables' rows are h apart, the data's 2h). */
RL_SIMD_CLONES
void rl_rope_rotate(const struct rl_rope *r, float *out, int ldo, const float *x, int ldx,
                    int n_rows, int pos0, int inverse)
{
    RL_ASSERT(pos0 >= 0 && pos0 + n_rows <= r->n_pos);
    const int    h = r->dims / 2, d = r->d, pairs = r->layout == RL_ROPE_LAYOUT_PAIRS;
    const float  sgn = inverse ? -1.0f : 1.0f;
    const float *c0 = r->cos + (size_t)pos0 * h, *s0 = r->sin + (size_t)pos0 * h;
    if (pairs && r->dims == d && ldx == d && ldo == d) {
        const size_t np = (size_t)n_rows * h;
#pragma omp simd
        for (size_t i = 0; i < np; i++) {
            float xa = x[2 * i], xb = x[2 * i + 1], si = sgn * s0[i];
            out[2 * i]     = xa * c0[i] - xb * si;
            out[2 * i + 1] = xa * si + xb * c0[i];
        }
        return;
    }
    for (int n = 0; n < n_rows; n++) {
        const float *xr = x + (size_t)n * ldx, *c = c0 + (size_t)n * h, *s = s0 + (size_t)n * h;
        float       *o = out + (size_t)n * ldo;
        if (pairs) {
#pragma omp simd
            for (int i = 0; i < h; i++) {
                float xa = xr[2 * i], xb = xr[2 * i + 1], si = sgn * s[i];
                o[2 * i]     = xa * c[i] - xb * si;
                o[2 * i + 1] = xa * si + xb * c[i];
            }
        } else {
#pragma omp simd
            for (int i = 0; i < h; i++) {
                float xa = xr[i], xb = xr[i + h], si = sgn * s[i];
                o[i]     = xa * c[i] - xb * si;
                o[i + h] = xa * si + xb * c[i];
            }
        }
        if (r->pass != 1.0f)
            for (int j = r->dims; j < d; j++)
                o[j] = r->pass * xr[j];
        else if (o != xr)
            for (int j = r->dims; j < d; j++)
                o[j] = xr[j];
    }
}
