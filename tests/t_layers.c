/* t_layers.c -- every dense layer of the model (layers.h): forward against a float64
 * reference written here, backward against float64 central finite differences of that
 * reference (loss = sum(w_out * out) with random w_out, so dout = w_out), plus the exact
 * properties (head split/merge are inverse permutations, accumulate semantics). */
#include "config.h"
#include "core/threads.h"
#include "core/init.h"
#include "core/vexp.h"
#include "model/layers.h"
#include "tap.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FWD_TOL 1e-4
#define GRAD_TOL 1e-3

static double *dalloc(size_t n) { return calloc(n, sizeof(double)); }
static float  *falloc(size_t n) { return calloc(n, sizeof(float)); }

static void to_double(double *d, const float *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        d[i] = f[i];
}

/* A float64 function of the parameter vectors in ctx, returning sum(w_out * out). */
typedef double (*loss_fn)(void *ctx);

/* Central differences of f w.r.t. each element of x (perturbed in place). */
static void fd_grad(double *g, double *x, size_t n, loss_fn f, void *ctx)
{
    for (size_t i = 0; i < n; i++) {
        double x0 = x[i], h = 1e-6 * (1.0 + fabs(x0));
        x[i]      = x0 + h;
        double lp = f(ctx);
        x[i]      = x0 - h;
        double lm = f(ctx);
        x[i]      = x0;
        g[i]      = (lp - lm) / (2 * h);
    }
}

static double dot(const double *a, const double *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* --- LayerNorm -------------------------------------------------------------------------- */

struct ln_ctx {
    int     T, C;
    double *x, *w, *b, *wout, *out;
};

static void ref_layernorm(double *out, const double *x, const double *w, const double *b, int T,
                          int C)
{
    for (int t = 0; t < T; t++) {
        const double *r  = x + (size_t)t * C;
        double        mu = 0, var = 0;
        for (int c = 0; c < C; c++)
            mu += r[c];
        mu /= C;
        for (int c = 0; c < C; c++)
            var += (r[c] - mu) * (r[c] - mu);
        var /= C;
        double rs = 1.0 / sqrt(var + 1e-5);
        for (int c = 0; c < C; c++)
            out[(size_t)t * C + c] = (r[c] - mu) * rs * w[c] + b[c];
    }
}

static double ln_loss(void *p)
{
    struct ln_ctx *c = p;
    ref_layernorm(c->out, c->x, c->w, c->b, c->T, c->C);
    return dot(c->out, c->wout, (size_t)c->T * c->C);
}

static void test_layernorm(int T, int C)
{
    size_t n = (size_t)T * C;
    float *x = falloc(n), *w = falloc(C), *b = falloc(C), *out = falloc(n), *dout = falloc(n);
    float *mean = falloc(T), *rstd = falloc(T), *dx = falloc(n), *dw = falloc(C), *db = falloc(C);
    tap_fill_normal(x, n, 2.0);
    for (size_t i = 0; i < n; i++)
        x[i] += 0.5f; /* a nonzero mean */
    tap_fill_normal(w, C, 1.0);
    tap_fill_normal(b, C, 1.0);
    tap_fill_normal(dout, n, 1.0);
    struct ln_ctx c = {T, C, dalloc(n), dalloc(C), dalloc(C), dalloc(n), dalloc(n)};
    to_double(c.x, x, n), to_double(c.w, w, C), to_double(c.b, b, C), to_double(c.wout, dout, n);
    rl_layernorm_forward(out, mean, rstd, x, w, b, T, C);
    ref_layernorm(c.out, c.x, c.w, c.b, T, C);
    tap_close_scaled(out, c.out, n, FWD_TOL, "layernorm forward T=%d C=%d", T, C);
    /* accumulate semantics: start dx, dw, db at 1 and subtract it afterwards */
    for (size_t i = 0; i < n; i++)
        dx[i] = 1.0f;
    for (int i = 0; i < C; i++)
        dw[i] = db[i] = 1.0f;
    rl_layernorm_backward(dx, dw, db, dout, x, mean, rstd, w, T, C);
    for (size_t i = 0; i < n; i++)
        dx[i] -= 1.0f;
    for (int i = 0; i < C; i++)
        dw[i] -= 1.0f, db[i] -= 1.0f;
    double *g = dalloc(n);
    fd_grad(g, c.x, n, ln_loss, &c);
    tap_close_scaled(dx, g, n, GRAD_TOL, "layernorm dx vs finite differences");
    fd_grad(g, c.w, C, ln_loss, &c);
    tap_close_scaled(dw, g, C, GRAD_TOL, "layernorm dw vs finite differences");
    fd_grad(g, c.b, C, ln_loss, &c);
    tap_close_scaled(db, g, C, GRAD_TOL, "layernorm db vs finite differences");
    free(g), free(c.x), free(c.w), free(c.b), free(c.wout), free(c.out);
    free(x), free(w), free(b), free(out), free(dout), free(mean), free(rstd), free(dx), free(dw);
    free(db);
}

/* --- linear ----------------------------------------------------------------------------- */

struct lin_ctx {
    int     T, C, OC;
    double *x, *W, *b, *wout, *out;
};

static double lin_loss(void *p)
{
    struct lin_ctx *c = p;
    for (int t = 0; t < c->T; t++)
        for (int o = 0; o < c->OC; o++) {
            double s = c->b[o];
            for (int i = 0; i < c->C; i++)
                s += c->x[(size_t)t * c->C + i] * c->W[(size_t)o * c->C + i];
            c->out[(size_t)t * c->OC + o] = s;
        }
    return dot(c->out, c->wout, (size_t)c->T * c->OC);
}

static void test_linear(int T, int C, int OC)
{
    size_t nx = (size_t)T * C, nw = (size_t)OC * C, no = (size_t)T * OC;
    float *x = falloc(nx), *W = falloc(nw), *b = falloc(OC), *out = falloc(no), *dout = falloc(no);
    float *dx = falloc(nx), *dW = falloc(nw), *db = falloc(OC);
    tap_fill_normal(x, nx, 1.0), tap_fill_normal(W, nw, 0.5), tap_fill_normal(b, OC, 1.0);
    tap_fill_normal(dout, no, 1.0);
    struct lin_ctx c = {T, C, OC, dalloc(nx), dalloc(nw), dalloc(OC), dalloc(no), dalloc(no)};
    to_double(c.x, x, nx), to_double(c.W, W, nw), to_double(c.b, b, OC);
    to_double(c.wout, dout, no);
    lin_loss(&c);
    rl_linear_forward(out, x, W, b, T, C, OC, 0);
    tap_close_scaled(out, c.out, no, FWD_TOL, "linear forward T=%d C=%d OC=%d", T, C, OC);
    for (size_t i = 0; i < no; i++)
        out[i] = 2.0f; /* accumulate: out = 2 + x W^T + b */
    rl_linear_forward(out, x, W, b, T, C, OC, 1);
    for (size_t i = 0; i < no; i++)
        out[i] -= 2.0f;
    tap_close_scaled(out, c.out, no, FWD_TOL, "linear forward, accumulating");
    rl_linear_forward(out, x, W, NULL, T, C, OC, 0);
    for (size_t i = 0; i < no; i++)
        out[i] += b[i % OC];
    tap_close_scaled(out, c.out, no, FWD_TOL, "linear forward without bias");
    for (size_t i = 0; i < nw; i++)
        dW[i] = 0.5f;
    rl_linear_backward(dx, dW, db, dout, x, W, T, C, OC, 0);
    for (size_t i = 0; i < nw; i++)
        dW[i] -= 0.5f;
    double *g = dalloc(nw > nx ? nw : nx);
    fd_grad(g, c.x, nx, lin_loss, &c);
    tap_close_scaled(dx, g, nx, GRAD_TOL, "linear dx vs finite differences");
    fd_grad(g, c.W, nw, lin_loss, &c);
    tap_close_scaled(dW, g, nw, GRAD_TOL, "linear dW (accumulated) vs finite differences");
    fd_grad(g, c.b, OC, lin_loss, &c);
    tap_close_scaled(db, g, OC, GRAD_TOL, "linear db vs finite differences");
    rl_linear_backward(dx, dW, NULL, dout, x, W, T, C, OC, 1); /* dx now doubled */
    for (size_t i = 0; i < nx; i++)
        dx[i] *= 0.5f;
    fd_grad(g, c.x, nx, lin_loss, &c);
    tap_close_scaled(dx, g, nx, GRAD_TOL, "linear dx, accumulating");
    free(g), free(c.x), free(c.W), free(c.b), free(c.wout), free(c.out);
    free(x), free(W), free(b), free(out), free(dout), free(dx), free(dW), free(db);
}

/* --- GELU ------------------------------------------------------------------------------- */

static double ref_gelu(double x)
{
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

static void test_gelu(int T, int C)
{
    size_t  n = (size_t)T * C;
    float  *h = falloc(n), *g = falloc(n), *b = falloc(C), *dg = falloc(n), *dh = falloc(n);
    float  *gp = falloc(n), *g2 = falloc(n);
    double *ref = dalloc(n), *dref = dalloc(n);
    tap_fill_normal(h, n, 3.0);
    h[0] = 40.0f, h[1] = -40.0f, h[2] = 0.0f, h[3] = 1e-4f; /* saturated, zero, tiny */
    tap_fill_normal(b, C, 0.5);
    b[0] = b[1] = b[2] = b[3] = 0.0f;
    tap_fill_normal(dg, n, 1.0);
    for (size_t i = 0; i < n; i++) {
        double x = (double)h[i] + b[i % C], e = 1e-5 * (1 + fabs(x));
        ref[i]  = ref_gelu(x);
        dref[i] = dg[i] * (ref_gelu(x + e) - ref_gelu(x - e)) / (2 * e);
    }
    float *hin = falloc(n);
    memcpy(hin, h, n * sizeof *h);
    rl_bias_gelu_forward(g, gp, h, b, T, C);
    tap_close_scaled(g, ref, n, FWD_TOL, "bias+gelu forward (tanh approximation) n=%zu", n);
    tap_ok(!memcmp(h, hin, n * sizeof *h), "bias+gelu leaves its input h as it is");
    rl_bias_gelu_forward(g2, NULL, hin, b, T, C); /* inference: no derivative */
    tap_ok(!memcmp(g, g2, n * sizeof *g) && !memcmp(h, hin, n * sizeof *h),
           "bias+gelu without the derivative (decoding): the training forward's bits");
    rl_gelu_backward(dh, dg, gp, n);
    tap_close_scaled(dh, dref, n, GRAD_TOL, "gelu backward vs finite differences");
    double worst = 0;
    for (size_t i = 0; i < 4; i++)
        worst = fmax(worst, fabs(dh[i] - dref[i]) / (fabs(dg[i]) + 1e-30));
    tap_ok(worst < 1e-4 && isfinite(g[0]) && g[1] == 0.0f,
           "gelu at +-40, 0, 1e-4: finite, exact saturation (rel err %.2g)", worst);
    /* the fused pass: dh in place, column sums of dh (before the in-place check below
     * overwrites dg) */
    float  *dh3 = falloc(n), *db = falloc(C);
    double *dbref = dalloc(C);
    memcpy(dh3, dg, n * sizeof *dg);
    for (int c = 0; c < C; c++)
        db[c] = 0.25f, dbref[c] = 0.25;
    for (size_t i = 0; i < n; i++)
        dbref[i % C] += dh[i];
    rl_gelu_backward_sum(dh3, db, gp, T, C);
    tap_ok(!memcmp(dh3, dh, n * sizeof *dh), "fused gelu backward: the unfused pass's bits");
    tap_close_scaled(dh3, dref, n, GRAD_TOL, "fused gelu backward vs finite differences");
    tap_close_scaled(db, dbref, C, FWD_TOL, "fused gelu backward: column sums of dh accumulated");
    free(dh3), free(db), free(dbref);
    rl_gelu_backward(dg, dg, gp, n); /* in place */
    tap_close_scaled(dg, dref, n, GRAD_TOL, "gelu backward in place");
    free(h), free(g), free(b), free(dg), free(dh), free(ref), free(dref), free(hin), free(gp),
        free(g2);
}

/* The training forward's AVX-512 rows against the compiler's vectorised rows (the x86-64-v4
 * clone on this CPU), bit for bit: g and gp on a sweep of x = h + b over [-20, 20] (the
 * exp's clamps of -2u to [-104, 88.8] lie at x = 10.681 and -10.064), wide normals, and
 * the special values, those two points among them; rows of
 * C = 512 (the model's 4 D) and 509 (a masked tail). A NaN only needs to stay NaN. */
static void test_gelu_wide(int C)
{
    if (!rl_vexp_wide()) {
        tap_skip("no AVX-512 on this CPU, or a build without it", "bias+gelu AVX-512 rows, C = %d",
                 C);
        return;
    }
    const int T = 2048;
    size_t    n = (size_t)T * C, bad = 0;
    float    *h = falloc(n), *b = falloc(C), *g[2], *gp[2];
    for (int w = 0; w < 2; w++)
        g[w] = falloc(n), gp[w] = falloc(n);
    tap_fill_normal(b, C, 0.5);
    for (size_t i = 0; i < n; i++) /* the sweep in x, then normals of scale 30 */
        h[i] = i < n / 2 ? (float)(-20.0 + 40.0 * (double)i / (double)(n / 2)) - b[i % C]
                         : (float)(30.0 * tap_normal());
    const float sp[] = {0.0f,    -0.0f,    1e-30f,   -1e-30f,  1e-40f,    -1e-40f, 88.0f,
                        -88.0f,  1e30f,    -1e30f,   INFINITY, -INFINITY, NAN,     -NAN,
                        FLT_MAX, -FLT_MAX, -10.064f, -10.065f, 10.681f,   10.682f};
    for (size_t j = 0; j < sizeof sp / sizeof sp[0]; j++)
        h[n - 1 - 3 * j] = sp[j] - b[(n - 1 - 3 * j) % C];
    rl_bias_gelu_forward_wide(g[0], gp[0], h, b, T, C, 0);
    rl_bias_gelu_forward_wide(g[1], gp[1], h, b, T, C, 1);
    for (size_t i = 0; i < n; i++) {
        const int nan = isnan(g[0][i]) || isnan(g[1][i]) || isnan(gp[0][i]) || isnan(gp[1][i]);
        if (nan)
            bad += !(isnan(g[0][i]) == isnan(g[1][i]) && isnan(gp[0][i]) == isnan(gp[1][i]));
        else
            bad += memcmp(&g[0][i], &g[1][i], 4) != 0 || memcmp(&gp[0][i], &gp[1][i], 4) != 0;
    }
    tap_ok(bad == 0,
           "bias+gelu AVX-512 rows, C = %d: the vectorised clone's g and gp bits (%zu of %zu "
           "differ)",
           C, bad, n);
    for (int w = 0; w < 2; w++)
        free(g[w]), free(gp[w]);
    free(h), free(b);
}

/* --- embedding, sinusoid ---------------------------------------------------------------- */

static void test_embed(int B, int N, int C, int V)
{
    size_t   T   = (size_t)B * N;
    int32_t *tok = malloc(T * sizeof *tok);
    for (size_t t = 0; t < T; t++)
        tok[t] = (int32_t)(tap_uniform() * V); /* with repeats */
    float  *wte = falloc((size_t)V * C), *pos = falloc((size_t)N * C), *out = falloc(T * C);
    float  *dout = falloc(T * C), *dwte = falloc((size_t)V * C), *dpos = falloc((size_t)N * C);
    double *ref = dalloc(T * C), *rw = dalloc((size_t)V * C), *rp = dalloc((size_t)N * C);
    tap_fill_normal(wte, (size_t)V * C, 1.0), tap_fill_normal(pos, (size_t)N * C, 1.0);
    tap_fill_normal(dout, T * C, 1.0);
    for (size_t t = 0; t < T; t++)
        for (int c = 0; c < C; c++) {
            ref[t * C + c] = (double)wte[(size_t)tok[t] * C + c] + pos[(t % N) * C + c];
            rw[(size_t)tok[t] * C + c] += dout[t * C + c]; /* d/dwte of sum(dout * out) */
            rp[(t % N) * C + c] += dout[t * C + c];
        }
    rl_embed_forward(out, tok, wte, pos, 1.0f, B, N, C);
    tap_close_scaled(out, ref, T * C, FWD_TOL, "embedding + position forward B=%d N=%d", B, N);
    /* a gain on the table (the scaled sinusoid): out = wte[tok] + g pos, dg = sum dout pos */
    const float g  = 0.37f;
    double      dg = 0.0;
    for (size_t t = 0; t < T; t++)
        for (int c = 0; c < C; c++) {
            ref[t * C + c] = (double)wte[(size_t)tok[t] * C + c] + (double)g * pos[(t % N) * C + c];
            dg += (double)dout[t * C + c] * pos[(t % N) * C + c];
        }
    rl_embed_forward(out, tok, wte, pos, g, B, N, C);
    tap_close_scaled(out, ref, T * C, FWD_TOL, "embedding + g * position forward B=%d N=%d", B, N);
    float  dgot[1] = {0.25f};
    double dref[1] = {0.25 + dg};
    rl_pos_scale_backward(dgot, dout, pos, B, N, C);
    tap_close(dgot, dref, 1, 1e-6, 0, "position gain backward accumulates sum(dout * pos): %g",
              (double)dgot[0]);
    rl_embed_backward(dwte, dpos, dout, tok, B, N, C, V);
    tap_close_scaled(dwte, rw, (size_t)V * C, GRAD_TOL, "embedding backward (repeated tokens)");
    tap_close_scaled(dpos, rp, (size_t)N * C, GRAD_TOL, "learned position backward");
    /* each table row is the float sum of its tokens' rows in token order, whatever the
     * pieces, the blocks of the token scan and the threads */
    float *ordered = falloc((size_t)V * C);
    for (size_t t = 0; t < T; t++)
        for (int c = 0; c < C; c++)
            ordered[(size_t)tok[t] * C + c] += dout[t * C + c];
    tap_ok(memcmp(ordered, dwte, (size_t)V * C * sizeof *dwte) == 0,
           "embedding backward B=%d N=%d V=%d: rows summed in token order, bit for bit", B, N, V);
    free(ordered);
    rl_embed_forward(out, tok, wte, NULL, 1.0f, B, N, C);
    int ok = 1;
    for (size_t t = 0; t < T; t++)
        ok &= memcmp(out + t * C, wte + (size_t)tok[t] * C, C * 4) == 0;
    tap_ok(ok, "embedding without position table copies rows exactly");
    /* sinusoid: p[m,2t] = sin(m/10000^(2t/C)), p[m,2t+1] = cos(..) */
    for (int m = 0; m < N; m++)
        for (int c = 0; c < C; c++) {
            double a              = m / pow(10000.0, 2.0 * (c / 2) / C);
            rp[(size_t)m * C + c] = c % 2 ? cos(a) : sin(a);
        }
    rl_sinusoid_table(pos, N, C);
    tap_close(pos, rp, (size_t)N * C, 0, 1e-6, "sinusoidal table N=%d C=%d", N, C);
    free(tok), free(wte), free(pos), free(out), free(dout), free(dwte), free(dpos), free(ref);
    free(rw), free(rp);
}

/* --- heads, meanpool ------------------------------------------------------------------- */

static void test_heads(int B, int N, int H, int d)
{
    const int C = H * d;
    size_t    T = (size_t)B * N, n = T * C;
    float    *qkv = falloc(3 * n), *bias = falloc(3 * C), *q = falloc(n), *k = falloc(n);
    float    *v = falloc(n), *back = falloc(3 * n), *o = falloc(n), *o2 = falloc(n);
    tap_fill_normal(qkv, 3 * n, 1.0), tap_fill_normal(bias, 3 * C, 1.0);
    rl_heads_split(q, k, v, qkv, bias, B, N, H, d);
    int ok = 1;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int m = 0; m < N; m++)
                for (int i = 0; i < d; i++) {
                    size_t src = ((size_t)b * N + m) * 3 * C + (size_t)h * d + i;
                    size_t dst = (((size_t)b * H + h) * N + m) * d + i;
                    ok &= q[dst] == qkv[src] + bias[h * d + i];
                    ok &= k[dst] == qkv[src + C] + bias[C + h * d + i];
                    ok &= v[dst] == qkv[src + 2 * C] + bias[2 * C + h * d + i];
                }
    tap_ok(ok, "heads split: (B,N,3C) + bias -> 3 x (B,H,N,d), head h = features h*d..");
    memset(bias, 0, 3 * C * sizeof *bias);
    rl_heads_split(q, k, v, qkv, bias, B, N, H, d);
    rl_heads_merge3(back, q, k, v, B, N, H, d);
    tap_ok(memcmp(back, qkv, 3 * n * sizeof *back) == 0, "heads merge3 inverts split");
    rl_heads_merge(o, q, B, N, H, d);
    rl_heads_split1(o2, o, B, N, H, d);
    tap_ok(memcmp(o2, q, n * sizeof *o2) == 0, "heads split1 inverts merge");
    ok = 1;
    for (size_t t = 0; t < T; t++)
        for (int c = 0; c < C; c++)
            ok &= o[t * C + c] == qkv[t * 3 * C + c];
    tap_ok(ok, "heads merge of split q restores (B,N,C)");
    /* mean pooling */
    float  *pool = falloc((size_t)B * C), *dx = falloc(n);
    double *ref = dalloc((size_t)B * C), *rdx = dalloc(n);
    for (int b = 0; b < B; b++)
        for (int m = 0; m < N; m++)
            for (int c = 0; c < C; c++) {
                ref[(size_t)b * C + c] += (double)o[((size_t)b * N + m) * C + c] / N;
                rdx[((size_t)b * N + m) * C + c] = (double)bias[0] + qkv[(size_t)b * C + c] / N;
            }
    rl_meanpool_forward(pool, o, B, N, C);
    tap_close_scaled(pool, ref, (size_t)B * C, FWD_TOL, "mean over positions forward");
    rl_meanpool_backward(dx, qkv, B, N, C);
    tap_close_scaled(dx, rdx, n, GRAD_TOL, "mean over positions backward");
    free(qkv), free(bias), free(q), free(k), free(v), free(back), free(o), free(o2), free(pool);
    free(dx), free(ref), free(rdx);
}

/* --- softmax cross-entropy -------------------------------------------------------------- */

struct ce_ctx {
    int            rows, V;
    double        *logits;
    const int32_t *tgt;
    const uint8_t *mask;
};

static double ce_loss(void *p)
{
    struct ce_ctx *c = p;
    double         s = 0;
    for (int r = 0; r < c->rows; r++) {
        if (c->mask && !c->mask[r]) continue;
        const double *l  = c->logits + (size_t)r * c->V;
        double        mx = l[0], z = 0;
        for (int j = 1; j < c->V; j++)
            mx = fmax(mx, l[j]);
        for (int j = 0; j < c->V; j++)
            z += exp(l[j] - mx);
        s += mx + log(z) - l[c->tgt[r]];
    }
    return s;
}

static void test_ce(int rows, int V, int masked)
{
    size_t   n = (size_t)rows * V;
    float   *l = falloc(n), *lse = falloc(rows), *dl = falloc(n);
    double  *rl = dalloc(rows), *g = dalloc(n);
    int32_t *tgt  = malloc(rows * sizeof *tgt);
    uint8_t *mask = malloc(rows);
    tap_fill_normal(l, n, 3.0);
    l[5]        = 60.0f; /* a large logit: the log-sum-exp must not overflow */
    long want_t = 0, want_c = 0;
    for (int r = 0; r < rows; r++) {
        tgt[r]  = (int32_t)(tap_uniform() * V);
        mask[r] = !masked || tap_uniform() < 0.6;
        if (r % 3 == 0) l[(size_t)r * V + tgt[r]] += 8.0f; /* some correct predictions */
        int am = 0;
        for (int j = 1; j < V; j++)
            am = l[(size_t)r * V + j] > l[(size_t)r * V + am] ? j : am;
        want_t += mask[r], want_c += mask[r] && am == tgt[r];
    }
    struct ce_ctx c = {rows, V, dalloc(n), tgt, masked ? mask : NULL};
    to_double(c.logits, l, n);
    long     nt = 0, nc = 0, ok_rows = 0, ok_bad = 0;
    uint8_t *ok = malloc((size_t)rows);
    double s = rl_softmax_ce_forward(lse, rl, ok, &nt, &nc, l, tgt, masked ? mask : NULL, rows, V);
    double ref = ce_loss(&c);
    tap_ok(fabs(s - ref) <= 1e-5 * fabs(ref), "CE loss sum %.9g vs float64 %.9g (%s)", s, ref,
           masked ? "masked" : "all rows");
    tap_ok(nt == want_t && nc == want_c, "CE targets %ld/%ld and correct %ld/%ld", nt, want_t, nc,
           want_c);
    for (int r = 0; r < rows; r++) { /* row_ok: the scored rows' argmax == target, else 0 */
        int am = 0;
        for (int j = 1; j < V; j++)
            am = l[(size_t)r * V + j] > l[(size_t)r * V + am] ? j : am;
        ok_bad += ok[r] != (mask[r] && am == tgt[r]), ok_rows += ok[r];
    }
    tap_ok(ok_bad == 0 && ok_rows == nc, "CE row_ok: %ld rows right (= correct), %ld wrong flags",
           ok_rows, ok_bad);
    free(ok);
    const float scale = 0.37f;
    rl_softmax_ce_backward(dl, l, lse, tgt, masked ? mask : NULL, scale, rows, V);
    fd_grad(g, c.logits, n, ce_loss, &c);
    for (size_t i = 0; i < n; i++)
        g[i] *= scale;
    tap_close_scaled(dl, g, n, GRAD_TOL, "fused softmax-CE backward (scale %.2f) vs FD", scale);
    free(l), free(lse), free(dl), free(rl), free(g), free(tgt), free(mask), free(c.logits);
}

/* column sums in row order, across column chunks (C > 1024 on one thread, odd C on two) */
static void test_colsum(int T, int C)
{
    float  *x = falloc((size_t)T * C), *db = falloc(C);
    double *ref = dalloc(C);
    tap_fill_normal(x, (size_t)T * C, 1.0);
    for (int c = 0; c < C; c++) {
        db[c] = 0.5f, ref[c] = 0.5;
        for (int t = 0; t < T; t++)
            ref[c] += x[(size_t)t * C + c];
    }
    rl_colsum_add(db, x, T, C);
    tap_close_scaled(db, ref, C, FWD_TOL, "column sums (accumulated) T=%d C=%d", T, C);
    /* each column summed in row order from its first row, then added: the same floats */
    int same = 1;
    for (int c = 0; c < C; c++) {
        float a = x[c];
        for (int t = 1; t < T; t++)
            a += x[(size_t)t * C + c];
        same &= 0.5f + a == db[c];
    }
    tap_ok(same, "column sums T=%d C=%d: each column in row order, bit for bit", T, C);
    free(x), free(db), free(ref);
}

int main(void)
{
    rl_init(1);
    tap_seed(4);
    test_layernorm(7, 24);
    test_linear(9, 13, 11);
    test_linear(5, 16, 48);
    test_gelu(6, 40);
    test_gelu(3, 300); /* two column blocks in the fused backward */
    test_embed(3, 5, 8, 6);
    test_heads(2, 5, 3, 4);
    test_ce(11, 7, 0);
    test_ce(17, 9, 1);
    test_colsum(5, 1100);
    rl_init(2); /* the row loops on two threads give the same results */
    test_layernorm(33, 40);
    test_linear(37, 19, 23);
    test_colsum(7, 2500);
    test_embed(3, 211, 8, 70); /* tokens in three blocks of the scan; pieces of 1-2 rows */
    test_gelu_wide(512);       /* (last: the tests above keep their data) */
    test_gelu_wide(509);
    return tap_done();
}
