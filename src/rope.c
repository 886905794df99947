/* rope.c -- RoPE table and rotation.  See rope.h for the conventions. */
#include "config.h"
#include "rope.h"

#include <math.h>
#include <stdlib.h>

void rl_rope_opts_default(struct rl_rope_opts *o)
{
    o->base   = 10000.0;
    o->layout = RL_ROPE_LAYOUT_PAIRS;
    o->dims   = 0;
    o->scale  = 1.0;
    o->ntk    = 1.0;
}

double rl_rope_theta(const struct rl_rope_opts *o, int dims, int i)
{
    double base = o->base;
    if (o->ntk != 1.0) base *= pow(o->ntk, (double)dims / (double)(dims - 2));
    return pow(base, -2.0 * i / (double)dims);
}

rl_status rl_rope_init(struct rl_rope *r, int n_pos, int d, const struct rl_rope_opts *o)
{
    r->cos = r->sin = NULL;
    int R = o->dims > 0 ? o->dims : d;
    if (d <= 0 || n_pos <= 0) RL_FAIL(RL_EINVAL, "rope: d=%d and n_pos=%d must be positive", d, n_pos);
    if (o->dims == 0 && d % 2) RL_FAIL(RL_EINVAL, "rope: head dimension d=%d must be even", d);
    if (R % 2 || R > d) RL_FAIL(RL_EINVAL, "rope: rope_dims=%d must be even and <= d=%d", R, d);
    if (!(o->base > 0)) RL_FAIL(RL_EINVAL, "rope: rope_base=%g must be > 0", o->base);
    if (!(o->scale > 0)) RL_FAIL(RL_EINVAL, "rope: rope_scale=%g must be > 0", o->scale);
    if (!(o->ntk > 0)) RL_FAIL(RL_EINVAL, "rope: rope_ntk=%g must be > 0", o->ntk);
    if (o->ntk != 1.0 && R <= 2) RL_FAIL(RL_EINVAL, "rope: rope_ntk needs rope_dims > 2 (got %d)", R);
    int    h  = R / 2;
    size_t nt = (size_t)n_pos * h;
    r->cos    = malloc((nt ? nt : 1) * sizeof(float));
    r->sin    = malloc((nt ? nt : 1) * sizeof(float));
    if (!r->cos || !r->sin) {
        rl_rope_free(r);
        RL_FAIL(RL_ENOMEM, "rope: cannot allocate a %d x %d table", n_pos, h);
    }
    r->n_pos = n_pos, r->d = d, r->dims = R, r->layout = o->layout;
    for (int i = 0; i < h; i++) {
        double th = rl_rope_theta(o, R, i);
        for (int m = 0; m < n_pos; m++) {
            double a                    = ((double)m / o->scale) * th; /* SPEC 5: angles in double */
            r->cos[(size_t)m * h + i]   = (float)cos(a);
            r->sin[(size_t)m * h + i]   = (float)sin(a);
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

void rl_rope_rotate(const struct rl_rope *r, float *out, int ldo, const float *x, int ldx,
                    int n_rows, int pos0, int inverse)
{
    RL_ASSERT(pos0 >= 0 && pos0 + n_rows <= r->n_pos);
    const int   h     = r->dims / 2, d = r->d;
    const int   step  = r->layout == RL_ROPE_LAYOUT_PAIRS ? 2 : 1; /* a = i*step */
    const int   off   = r->layout == RL_ROPE_LAYOUT_PAIRS ? 1 : h;  /* b = a + off */
    const float sgn   = inverse ? -1.0f : 1.0f;
    for (int n = 0; n < n_rows; n++) {
        const float *xr = x + (size_t)n * ldx;
        float       *orow = out + (size_t)n * ldo;
        const float *c = r->cos + (size_t)(pos0 + n) * h, *s = r->sin + (size_t)(pos0 + n) * h;
        for (int i = 0; i < h; i++) {
            int   a = i * step, b = a + off;
            float xa = xr[a], xb = xr[b], si = sgn * s[i];
            orow[a] = xa * c[i] - xb * si;
            orow[b] = xa * si + xb * c[i];
        }
        if (orow != xr)
            for (int j = r->dims; j < d; j++) orow[j] = xr[j];
    }
}
