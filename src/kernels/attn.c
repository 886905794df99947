/* attn.c -- the attention dispatcher: options, plan (tables, FFT plans, scratch), and
 * the loop over heads that calls the per-head kernels (attn_softmax.c, attn_linear.c,
 * attn_toeplitz.c).  See attn.h for layout and ownership. */
#include "config.h"
#include "attn.h"
#include "attn_linear.h"
#include "attn_softmax.h"
#include "attn_toeplitz.h"
#include "../core/threads.h"
#include "posbias.h"
#include "../core/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

struct rl_attn {
    struct rl_attn_opts o;
    int                 H, N, d, dv, nthreads; /* nthreads: per-thread buffers allocated */
    int                 has_rope, has_bias; /* bias: t5 or alibi */
    struct rl_rope      rope;
    double             *slopes; /* H (alibi) */
    float              *xlam;   /* d (xpos): ln(zeta_f)/gamma per feature, 0 past rope_dims */
    float              *rel;    /* H x (2N-1): relative bias vectors */
    size_t              scratch_floats;
    float             **scratch;     /* per thread */
    double             *drel;        /* H x (2N-1) (t5 backward): head h's slice */
    rl_toeplitz       **toeplitz;    /* per thread (linear + bias) */
};

void rl_attn_opts_default(struct rl_attn_opts *o)
{
    memset(o, 0, sizeof *o);
    o->kind = RL_ATTN_SOFTMAX;
    o->fmap = RL_FMAP_ELU1;
    o->pe   = RL_ATTN_PE_NONE;
    o->eps  = 1e-6f;
    rl_rope_opts_default(&o->rope);
    o->t5_buckets      = 32;
    o->t5_max_distance = 128;
    o->alibi_scan      = 0;
    o->xpos            = 0;
    o->xpos_scale_base = 512.0;
}

rl_status rl_attn_opts_check(const struct rl_attn_opts *o, int H, int d, int dv)
{
    if (H <= 0 || d <= 0 || dv <= 0)
        RL_FAIL(RL_EINVAL, "heads=%d, d=%d, dv=%d must be positive", H, d, dv);
    if (o->kind != RL_ATTN_SOFTMAX && o->kind != RL_ATTN_LINEAR)
        RL_FAIL(RL_EINVAL, "unknown attention kind %d", (int)o->kind);
    if (o->pe == RL_ATTN_PE_ROPE) {
        int R = o->rope.dims > 0 ? o->rope.dims : d;
        if (o->rope.dims == 0 && d % 2)
            RL_FAIL(RL_EINVAL, "pe=rope needs an even head dimension, got d=%d", d);
        if (R % 2 || R > d) RL_FAIL(RL_EINVAL, "rope_dims=%d must be even and <= d=%d", R, d);
        if (!(o->rope.base > 0)) RL_FAIL(RL_EINVAL, "rope_base=%g must be > 0", o->rope.base);
        if (!(o->rope.scale > 0)) RL_FAIL(RL_EINVAL, "rope_scale=%g must be > 0", o->rope.scale);
        if (!(o->rope.ntk > 0)) RL_FAIL(RL_EINVAL, "rope_ntk=%g must be > 0", o->rope.ntk);
        if (o->rope.ntk != 1.0 && R <= 2)
            RL_FAIL(RL_EINVAL, "rope_ntk needs rope_dims > 2, got %d", R);
        if (!(o->rope.yarn >= 1)) RL_FAIL(RL_EINVAL, "rope_yarn=%g must be >= 1", o->rope.yarn);
        if (o->rope.yarn != 1.0 && (o->rope.scale != 1.0 || o->rope.ntk != 1.0))
            RL_FAIL(RL_EINVAL, "rope_yarn excludes rope_scale != 1 and rope_ntk != 1");
        if (o->rope.yarn_orig < 0)
            RL_FAIL(RL_EINVAL, "rope_yarn_orig=%d must be >= 0", o->rope.yarn_orig);
    }
    if (o->xpos) {
        if (o->kind != RL_ATTN_SOFTMAX || !o->causal || o->pe != RL_ATTN_PE_ROPE)
            RL_FAIL(RL_EINVAL, "xpos needs softmax attention, causal, pe=rope");
        if (!(o->xpos_scale_base > 0))
            RL_FAIL(RL_EINVAL, "xpos_scale_base=%g must be > 0", o->xpos_scale_base);
    }
    if (o->kind == RL_ATTN_SOFTMAX) {
        if (o->rope_place != RL_ROPE_PLACE_FEATURE)
            RL_FAIL(RL_EINVAL, "rope_place=input applies to linear attention only");
        if (o->rope_denominator != RL_ROPE_DENOM_PLAIN)
            RL_FAIL(RL_EINVAL, "rope_denominator=rotated applies to linear attention only");
    }
    if (o->rope_denominator == RL_ROPE_DENOM_ROTATED &&
        (o->pe != RL_ATTN_PE_ROPE || o->rope_place != RL_ROPE_PLACE_FEATURE))
        RL_FAIL(RL_EINVAL, "rope_denominator=rotated needs pe=rope with rope_place=feature");
    if (o->rope_place == RL_ROPE_PLACE_INPUT && o->pe != RL_ATTN_PE_ROPE)
        RL_FAIL(RL_EINVAL, "rope_place=input needs pe=rope");
    if (o->pe == RL_ATTN_PE_T5 && (o->t5_buckets < 2 || o->t5_max_distance < 1))
        RL_FAIL(RL_EINVAL, "t5_buckets=%d must be >= 2 and t5_max_distance=%d >= 1",
                o->t5_buckets, o->t5_max_distance);
    if (o->pe == RL_ATTN_PE_T5 && o->t5_max_distance <= o->t5_buckets / (o->causal ? 2 : 4))
        RL_FAIL(RL_EINVAL, "t5_max_distance=%d must exceed the exact-bucket range %d",
                o->t5_max_distance, o->t5_buckets / (o->causal ? 2 : 4));
    if (o->kind == RL_ATTN_LINEAR && !(o->eps >= 0))
        RL_FAIL(RL_EINVAL, "eps=%g must be >= 0", (double)o->eps);
    if (o->alibi_scan && !(o->pe == RL_ATTN_PE_ALIBI && o->causal && o->kind == RL_ATTN_LINEAR))
        RL_FAIL(RL_EINVAL, "the decayed ALiBi scan needs linear attention, pe=alibi and causal");
    return RL_OK;
}

const char *rl_attn_describe(const struct rl_attn_opts *o, char *buf, int len)
{
    /* names through the tables: an option out of range reads "unknown", never past them */
    const char *kind = rl_choice_name(rl_attn_kinds, (int)o->kind);
    const char *pe   = rl_choice_name(rl_attn_pes, (int)o->pe);
    if (o->kind == RL_ATTN_SOFTMAX)
        snprintf(buf, (size_t)len, "%s %s %s", kind, pe, o->causal ? "causal" : "non-causal");
    else
        snprintf(buf, (size_t)len, "%s(%s) %s%s%s %s", kind, rl_choice_name(rl_fmaps, (int)o->fmap),
                 pe,
                 o->pe == RL_ATTN_PE_ROPE && o->rope_place == RL_ROPE_PLACE_INPUT ? "/input" : "",
                 o->rope_denominator == RL_ROPE_DENOM_ROTATED ? "/rotated-den" : "",
                 o->causal ? "causal" : "non-causal");
    return buf;
}

static int use_toeplitz(const struct rl_attn *a)
{
    return a->o.kind == RL_ATTN_LINEAR && a->has_bias;
}

static size_t kernel_scratch(const struct rl_attn *a)
{
    if (a->o.kind == RL_ATTN_SOFTMAX) /* + rotated q and k copies (+ the xPos tiles) */
        return rl_attn_softmax_scratch_floats(a->N, a->d, a->dv) +
               (a->o.xpos ? rl_attn_softmax_xpos_scratch_floats(a->N, a->d) : 0) +
               (a->has_rope ? 2 * (size_t)a->N * a->d : 0);
    if (use_toeplitz(a)) return 0; /* the Toeplitz plan owns its buffers */
    return rl_attn_linear_scratch_floats(&a->o, a->N, a->d, a->dv);
}

void rl_attn_free(rl_attn *a)
{
    if (!a) return;
    for (int t = 0; t < a->nthreads; t++) {
        if (a->scratch) rl_free(a->scratch[t]);
        if (a->toeplitz) rl_toeplitz_free(a->toeplitz[t]);
    }
    free(a->scratch);
    rl_free(a->drel);
    free(a->toeplitz);
    rl_rope_free(&a->rope);
    free(a->slopes);
    free(a->xlam);
    rl_free(a->rel);
    free(a);
}

static rl_status alloc_per_thread(rl_attn *a)
{
    size_t nrel = (size_t)a->H * (2 * (size_t)a->N - 1);
    a->scratch  = calloc((size_t)a->nthreads, sizeof *a->scratch);
    a->toeplitz = calloc((size_t)a->nthreads, sizeof *a->toeplitz);
    if (!a->scratch || !a->toeplitz) RL_FAIL(RL_ENOMEM, "attention: out of memory");
    a->scratch_floats = kernel_scratch(a);
    if (a->o.pe == RL_ATTN_PE_T5 && !(a->drel = rl_alloc(nrel * sizeof(double))))
        RL_FAIL(RL_ENOMEM, "attention: cannot allocate the T5 gradient buffer");
    for (int t = 0; t < a->nthreads; t++) {
        if (a->scratch_floats && !(a->scratch[t] = rl_alloc(a->scratch_floats * sizeof(float))))
            RL_FAIL(RL_ENOMEM, "attention: cannot allocate %zu floats of scratch", a->scratch_floats);
        if (use_toeplitz(a)) RL_TRY(rl_toeplitz_create(&a->toeplitz[t], a->N, a->d, a->dv));
    }
    return RL_OK;
}

/* xPos: pair i of the R rotated features decays by zeta_i = (2i/R + 0.4)/1.4 per gamma
 * positions (x-transformers' rotary_xpos; the pair's two features share zeta_i). */
static rl_status xpos_init(rl_attn *a)
{
    const int R = a->rope.dims, h = R / 2;
    if (!(a->xlam = calloc((size_t)a->d, sizeof(float))))
        RL_FAIL(RL_ENOMEM, "attention: out of memory");
    for (int i = 0; i < h; i++) {
        double z   = (2.0 * i / R + 0.4) / 1.4;
        float  lam = (float)(log(z) / a->o.xpos_scale_base);
        if (a->rope.layout == RL_ROPE_LAYOUT_PAIRS)
            a->xlam[2 * i] = a->xlam[2 * i + 1] = lam;
        else
            a->xlam[i] = a->xlam[i + h] = lam;
    }
    return RL_OK;
}

rl_status rl_attn_create(rl_attn **out, const struct rl_attn_opts *o, int H, int N, int d, int dv)
{
    *out = NULL;
    RL_TRY(rl_attn_opts_check(o, H, d, dv));
    if (N <= 0) RL_FAIL(RL_EINVAL, "sequence length N=%d must be positive", N);
    rl_attn *a = calloc(1, sizeof *a);
    if (!a) RL_FAIL(RL_ENOMEM, "attention: out of memory");
    a->o = *o, a->H = H, a->N = N, a->d = d, a->dv = dv;
    a->nthreads = rl_threads_get();
    a->has_rope = o->pe == RL_ATTN_PE_ROPE;
    a->has_bias = o->pe == RL_ATTN_PE_T5 || o->pe == RL_ATTN_PE_ALIBI;
    rl_status st = RL_OK;
    if (a->has_rope) st = rl_rope_init(&a->rope, N, d, &o->rope);
    if (st == RL_OK && a->has_rope && o->kind == RL_ATTN_SOFTMAX) /* YaRN: a R_m q, a R_n k */
        rl_rope_scale(&a->rope, rl_rope_yarn_mscale(&o->rope));
    if (st == RL_OK && o->xpos) st = xpos_init(a);
    if (st == RL_OK && a->has_bias) {
        a->rel    = rl_alloc((size_t)H * (2 * (size_t)N - 1) * sizeof(float));
        a->slopes = calloc((size_t)H, sizeof(double));
        if (!a->rel || !a->slopes) st = rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "attention: out of memory");
        else if (o->pe == RL_ATTN_PE_ALIBI) {
            rl_alibi_slopes(a->slopes, H);
            for (int h = 0; h < H; h++) rl_alibi_rel(a->rel + (size_t)h * (2 * N - 1), a->slopes[h], N);
        }
    }
    if (st == RL_OK) st = alloc_per_thread(a);
    if (st != RL_OK) {
        rl_attn_free(a);
        return st;
    }
    *out = a;
    return RL_OK;
}

/* T5: the relative vectors depend on the (learned) table, refreshed on every call. */
static rl_status refresh_t5(rl_attn *a, const float *t5)
{
    if (a->o.pe != RL_ATTN_PE_T5) return RL_OK;
    if (!t5) RL_FAIL(RL_EINVAL, "pe=t5 needs the bias table (H x t5_buckets)");
    for (int h = 0; h < a->H; h++)
        rl_t5_rel(a->rel + (size_t)h * (2 * a->N - 1), t5, h, a->N, a->o.t5_buckets,
                  a->o.t5_max_distance, a->o.causal);
    return RL_OK;
}

static void head_forward(rl_attn *a, float *o, float *saved, long *bad, const float *q,
                         const float *k, const float *v, int h, float *scr, rl_toeplitz *tp)
{
    const int    N = a->N, d = a->d, dv = a->dv;
    const float *rel = a->has_bias ? a->rel + (size_t)h * (2 * N - 1) : NULL;
    if (a->o.kind == RL_ATTN_SOFTMAX) {
        if (a->has_rope) { /* s = (R_m q_m).(R_n k_n)/sqrt(d) */
            float *qr = scr, *kr = scr + (size_t)N * d;
            rl_rope_rotate(&a->rope, qr, d, q, d, N, 0, 0);
            rl_rope_rotate(&a->rope, kr, d, k, d, N, 0, 0);
            q = qr, k = kr, scr += 2 * (size_t)N * d;
        }
        rl_attn_softmax_forward_xpos(o, saved, q, k, v, rel, a->xlam, N, d, dv, a->o.causal, scr);
    } else if (a->has_bias && a->o.alibi_scan) {
        rl_attn_decay_forward(tp, o, saved, bad, q, k, v, exp(-a->slopes[h]), &a->o, N, d, dv);
    } else if (a->has_bias) {
        rl_attn_toeplitz_forward(tp, o, saved, bad, q, k, v, rel, &a->o, N, d, dv);
    } else {
        rl_attn_linear_forward(o, saved, bad, q, k, v, a->has_rope ? &a->rope : NULL, &a->o, N,
                               d, dv, scr);
    }
}

/* The threads of a call: the count in effect now (the trainer may lower it while the
 * machine is busy), at most the count the per-thread buffers were made for; 1 when the
 * caller is itself a thread of a team, whose buffers (rl_thread_slot) the call then uses. */
static int team(const rl_attn *a)
{
    int t = rl_threads_get();
#ifdef _OPENMP
    if (omp_in_parallel()) return 1;
#endif
    return t < a->nthreads ? t : a->nthreads;
}

int rl_attn_threads(const rl_attn *a) { return a->nthreads; }

rl_status rl_attn_forward(rl_attn *a, float *o, float *saved, const float *q, const float *k,
                          const float *v, const float *t5, int G, struct rl_attn_stats *st)
{
    double t0 = rl_now_ms();
    RL_TRY(refresh_t5(a, t5));
    const size_t sq = (size_t)a->N * a->d, sv = (size_t)a->N * a->dv;
    long         bad = 0;
#pragma omp parallel for schedule(static) reduction(+ : bad) num_threads(team(a))
    for (int g = 0; g < G; g++) {
        int  t = rl_thread_slot();
        long b = 0;
        head_forward(a, o + g * sv, saved + (size_t)g * a->N, &b, q + g * sq, k + g * sq,
                     v + g * sv, g % a->H, a->scratch[t], a->toeplitz[t]);
        bad += b;
    }
    if (st) {
        st->bad_denominators = bad;
        st->ms               = rl_now_ms() - t0;
    }
    return RL_OK;
}

static void head_backward(rl_attn *a, float *dq, float *dk, float *dv, double *drel,
                          const float *dout, const float *o, const float *saved, const float *q,
                          const float *k, const float *v, int h, float *scr, rl_toeplitz *tp)
{
    const int    N = a->N, d = a->d, dvd = a->dv;
    const float *rel = a->has_bias ? a->rel + (size_t)h * (2 * N - 1) : NULL;
    if (drel) drel += (size_t)h * (2 * N - 1);
    if (a->o.kind == RL_ATTN_SOFTMAX) {
        if (a->has_rope) {
            float *qr = scr, *kr = scr + (size_t)N * d;
            rl_rope_rotate(&a->rope, qr, d, q, d, N, 0, 0);
            rl_rope_rotate(&a->rope, kr, d, k, d, N, 0, 0);
            q = qr, k = kr, scr += 2 * (size_t)N * d;
        }
        rl_attn_softmax_backward_xpos(dq, dk, dv, drel, dout, o, saved, q, k, v, rel, a->xlam, N, d,
                                      dvd, a->o.causal, scr);
        if (a->has_rope) { /* d/dq of (R_m q_m) is R_m^T applied to the gradient */
            rl_rope_rotate(&a->rope, dq, d, dq, d, N, 0, 1);
            rl_rope_rotate(&a->rope, dk, d, dk, d, N, 0, 1);
        }
    } else if (a->has_bias && a->o.alibi_scan) {
        rl_attn_decay_backward(tp, dq, dk, dv, dout, o, saved, q, k, v, exp(-a->slopes[h]), &a->o,
                               N, d, dvd);
    } else if (a->has_bias) {
        rl_attn_toeplitz_backward(tp, dq, dk, dv, drel, dout, o, saved, q, k, v, rel, &a->o, N, d,
                                  dvd);
    } else {
        rl_attn_linear_backward(dq, dk, dv, dout, o, saved, q, k, v,
                                a->has_rope ? &a->rope : NULL, &a->o, N, d, dvd, scr);
    }
}

rl_status rl_attn_backward(rl_attn *a, float *dq, float *dk, float *dv, float *dt5,
                           const float *dout, const float *o, const float *saved, const float *q,
                           const float *k, const float *v, const float *t5, int G)
{
    RL_TRY(refresh_t5(a, t5));
    const int    t5_grad = a->o.pe == RL_ATTN_PE_T5 && dt5 != NULL;
    const size_t sq = (size_t)a->N * a->d, sv = (size_t)a->N * a->dv;
    const size_t nrel = (size_t)a->H * (2 * (size_t)a->N - 1);
    if (!t5_grad) {
#pragma omp parallel for schedule(static) num_threads(team(a))
        for (int g = 0; g < G; g++) {
            int t = rl_thread_slot();
            head_backward(a, dq + g * sq, dk + g * sq, dv + g * sv, NULL, dout + g * sv,
                          o + g * sv, saved + (size_t)g * a->N, q + g * sq, k + g * sq,
                          v + g * sv, g % a->H, a->scratch[t], a->toeplitz[t]);
        }
        return RL_OK;
    }
    /* T5: one thread owns head h and adds the rows g = h, h + H, ... to h's relative
     * gradient in that order, so the sum is the same for every thread count */
    memset(a->drel, 0, nrel * sizeof(double));
#pragma omp parallel for schedule(static) num_threads(team(a))
    for (int h = 0; h < a->H; h++) {
        int t = rl_thread_slot();
        for (int g = h; g < G; g += a->H)
            head_backward(a, dq + g * sq, dk + g * sq, dv + g * sv, a->drel, dout + g * sv,
                          o + g * sv, saved + (size_t)g * a->N, q + g * sq, k + g * sq,
                          v + g * sv, h, a->scratch[t], a->toeplitz[t]);
    }
    for (int h = 0; h < a->H; h++)
        rl_t5_rel_backward(dt5, a->drel + (size_t)h * (2 * a->N - 1), h, a->N, a->o.t5_buckets,
                           a->o.t5_max_distance, a->o.causal);
    return RL_OK;
}
