/* adamw.c -- AdamW, schedule, clipping; see adamw.h for the exact update order. */
#include "config.h"
#include "adamw.h"
#include "../core/threads.h"
#include "../core/vexp.h"

#include <math.h>

void rl_adamw_opts_default(struct rl_adamw_opts *o)
{
    o->lr           = 1e-3;
    o->beta1        = 0.9;
    o->beta2        = 0.999;
    o->eps          = 1e-8;
    o->weight_decay = 0.01;
}

double rl_lr_schedule(int64_t s, double lr, int warmup, double min_lr_ratio, int64_t total_steps)
{
    const int64_t T = total_steps - 1, W = warmup;
    if (s < W) return lr * (double)(s + 1) / (double)W;
    if (T <= W) return lr;
    if (s > T) s = T;
    const double r = min_lr_ratio;
    return lr * (r + (1.0 - r) * 0.5 *
                         (1.0 + cos(3.14159265358979323846 * (double)(s - W) / (double)(T - W))));
}

/* Element loops run in blocks of BLOCK floats (core/threads.h, rl_pieces), at most
 * MAX_BLOCKS of them (larger blocks beyond): the bounds depend on n alone, so the norm's
 * block sums, added in block order, are the same for every thread count. */
#define BLOCK 16384
#define MAX_BLOCKS 1024

static size_t block_len(size_t n)
{
    size_t b = (n + MAX_BLOCKS - 1) / MAX_BLOCKS;
    return b > BLOCK ? b : BLOCK;
}
static long n_blocks(size_t n) { return (long)((n + block_len(n) - 1) / block_len(n)); }

struct elem_ctx {
    float       *g, *p, *m, *v;
    const float *cg;
    size_t       n;
    float        factor;
    double      *part;
    /* the AdamW step over a tensor table */
    const struct rl_tensor_info *tensors;
    int                          n_tensors;
    float                        keep[2]; /* 1 - lr_t wd: [0] without decay, [1] with */
    float                        b1, b2, a1, a2, step, sq2, eps;
};

static void span(const struct elem_ctx *e, long k, size_t *i0, size_t *i1)
{
    *i0 = (size_t)k * block_len(e->n);
    *i1 = *i0 + block_len(e->n) < e->n ? *i0 + block_len(e->n) : e->n;
}

static void norm_piece(void *ctx, long k)
{
    struct elem_ctx *e = ctx;
    size_t           i0, i1;
    double           s = 0.0;
    span(e, k, &i0, &i1);
#pragma omp simd reduction(+ : s)
    for (size_t i = i0; i < i1; i++)
        s += (double)e->cg[i] * (double)e->cg[i];
    e->part[k] = s;
}

double rl_grad_norm(const float *g, size_t n)
{
    double          part[MAX_BLOCKS], s = 0.0;
    struct elem_ctx e = {.cg = g, .n = n, .part = part};
    rl_pieces(n_blocks(n), norm_piece, &e);
    for (long k = 0; k < n_blocks(n); k++)
        s += part[k];
    return sqrt(s);
}

static void clip_piece(void *ctx, long k)
{
    struct elem_ctx *e = ctx;
    size_t           i0, i1;
    const float      f = e->factor;
    span(e, k, &i0, &i1);
#pragma omp simd
    for (size_t i = i0; i < i1; i++)
        e->g[i] *= f;
}

void rl_clip(float *g, size_t n, double c, double norm)
{
    if (!(c > 0.0)) return;
    const double f = c / (norm + 1e-6);
    if (f >= 1.0) return;
    struct elem_ctx e = {.g = g, .n = n, .factor = (float)f};
    rl_pieces(n_blocks(n), clip_piece, &e);
}

/* The step's scalars, formed in double and rounded once. */
static void scalars(struct elem_ctx *e, double lr_t, const struct rl_adamw_opts *o, int64_t t)
{
    const double bc1 = 1.0 - pow(o->beta1, (double)t), bc2 = 1.0 - pow(o->beta2, (double)t);
    e->keep[0] = 1.0f;
    e->keep[1] = (float)(1.0 - lr_t * o->weight_decay);
    e->b1 = (float)o->beta1, e->b2 = (float)o->beta2;
    e->a1 = (float)(1.0 - o->beta1), e->a2 = (float)(1.0 - o->beta2);
    e->step = (float)(lr_t / bc1), e->sq2 = (float)sqrt(bc2), e->eps = (float)o->eps;
}

/* In clones for AVX-512 and AVX2 (core/vexp.h); vectorised because the build does not keep
 * errno for sqrtf (Makefile.am): scalar, this loop took 1.4 % of a 1-thread update. */
RL_SIMD_CLONES
static void update_range(const struct elem_ctx *e, size_t i0, size_t i1, int decay)
{
    float       *p = e->p, *m = e->m, *v = e->v;
    const float *g = e->cg, keep = e->keep[decay != 0];
    const float  b1 = e->b1, b2 = e->b2, a1 = e->a1, a2 = e->a2, step = e->step, sq2 = e->sq2;
    const float  eps = e->eps;
#pragma omp simd
    for (size_t i = i0; i < i1; i++) {
        float pi = p[i] * keep;                  /* 1. decoupled decay */
        float mi = b1 * m[i] + a1 * g[i];        /* 2. first moment */
        float vi = b2 * v[i] + a2 * g[i] * g[i]; /* 3. second moment */
        float dn = sqrtf(vi) / sq2 + eps;        /* 4. bias-corrected denominator */
        p[i]     = pi - step * (mi / dn);        /* 5. step (torch addcdiv) */
        m[i]     = mi;
        v[i]     = vi;
    }
}

static void update_piece(void *ctx, long k)
{
    const struct elem_ctx *e = ctx;
    size_t                 i0, i1;
    span(e, k, &i0, &i1);
    if (!e->tensors) { /* one tensor: keep[1] holds its factor */
        update_range(e, i0, i1, 1);
        return;
    }
    for (int j = 0; j < e->n_tensors; j++) { /* the tensors that overlap the block */
        const struct rl_tensor_info *ti = &e->tensors[j];
        size_t                       a  = ti->offset > i0 ? ti->offset : i0;
        size_t                       b  = ti->offset + ti->count < i1 ? ti->offset + ti->count : i1;
        if (a < b) update_range(e, a, b, ti->decay);
    }
}

void rl_adamw_update(float *p, const float *g, float *m, float *v, size_t n, int decay, double lr_t,
                     const struct rl_adamw_opts *o, int64_t t)
{
    struct elem_ctx      e  = {.p = p, .cg = g, .m = m, .v = v, .n = n};
    struct rl_adamw_opts od = *o;
    if (!decay) od.weight_decay = 0.0;
    scalars(&e, lr_t, &od, t);
    rl_pieces(n_blocks(n), update_piece, &e);
}

void rl_adamw_step(float *params, const float *grads, float *m, float *v,
                   const struct rl_tensor_info *tensors, int n_tensors, double lr_t,
                   const struct rl_adamw_opts *o, int64_t t)
{
    /* the tensors tile [0, n) in table order: one region over the whole buffer */
    const struct rl_tensor_info *last = &tensors[n_tensors - 1];
    struct elem_ctx              e    = {.p         = params,
                                         .cg        = grads,
                                         .m         = m,
                                         .v         = v,
                                         .tensors   = tensors,
                                         .n_tensors = n_tensors,
                                         .n         = last->offset + last->count};
    scalars(&e, lr_t, o, t);
    rl_pieces(n_blocks(e.n), update_piece, &e);
}
