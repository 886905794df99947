/* attn.c -- the attention dispatcher: options, plan (tables, FFT plans, scratch), and
 * the loop over heads that calls the per-head kernels (attn_softmax.c, attn_linear.c,
 * attn_toeplitz.c).  See attn.h for layout and ownership. */
#include "config.h"
#include "attn_impl.h"
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
    o->forget          = 0;
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
        RL_FAIL(RL_EINVAL, "t5_buckets=%d must be >= 2 and t5_max_distance=%d >= 1", o->t5_buckets,
                o->t5_max_distance);
    if (o->pe == RL_ATTN_PE_T5 && o->t5_max_distance <= o->t5_buckets / (o->causal ? 2 : 4))
        RL_FAIL(RL_EINVAL, "t5_max_distance=%d must exceed the exact-bucket range %d",
                o->t5_max_distance, o->t5_buckets / (o->causal ? 2 : 4));
    if (o->kind == RL_ATTN_LINEAR && !(o->eps >= 0))
        RL_FAIL(RL_EINVAL, "eps=%g must be >= 0", (double)o->eps);
    if (o->forget && !o->causal)
        RL_FAIL(RL_EINVAL, "the forget gate needs causal attention (it weighs n <= m only)");
    if (o->alibi_scan && !(o->pe == RL_ATTN_PE_ALIBI && o->causal && o->kind == RL_ATTN_LINEAR))
        RL_FAIL(RL_EINVAL, "the decayed ALiBi scan needs linear attention, pe=alibi and causal");
    return RL_OK;
}

const char *rl_attn_describe(const struct rl_attn_opts *o, char *buf, int len)
{
    /* names through the tables: an option out of range reads "unknown", never past them */
    const char *kind = rl_choice_name(rl_attn_kinds, (int)o->kind);
    const char *pe   = rl_choice_name(rl_attn_pes, (int)o->pe);
    const char *gate = o->forget ? "+forget" : "";
    if (o->kind == RL_ATTN_SOFTMAX)
        snprintf(buf, (size_t)len, "%s %s%s %s", kind, pe, gate,
                 o->causal ? "causal" : "non-causal");
    else
        snprintf(buf, (size_t)len, "%s(%s) %s%s%s%s %s", kind,
                 rl_choice_name(rl_fmaps, (int)o->fmap), pe,
                 o->pe == RL_ATTN_PE_ROPE && o->rope_place == RL_ROPE_PLACE_INPUT ? "/input" : "",
                 o->rope_denominator == RL_ROPE_DENOM_ROTATED ? "/rotated-den" : "", gate,
                 o->causal ? "causal" : "non-causal");
    return buf;
}

static size_t kernel_scratch(const struct rl_attn *a)
{
    if (a->o.kind == RL_ATTN_SOFTMAX) return rl_attn_run_softmax_scratch_floats(a);
    return rl_attn_run_linear_scratch_floats(a);
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
    rl_free(a->rowbuf);
    rl_free(a->linst), rl_free(a->prep), free(a->pending);
    rl_free(a->cum), rl_free(a->dec), free(a->zeros), rl_free(a->t5part);
    rl_free(a->quad), rl_free(a->lstore), rl_free(a->lhave);
    free(a->toeplitz);
    for (int h = 0; h < a->tstore_n; h++)
        rl_toeplitz_free(a->tstore[h]);
    free(a->tstore);
    rl_free(a->tpart);
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
            RL_FAIL(RL_ENOMEM, "attention: cannot allocate %zu floats of scratch",
                    a->scratch_floats);
        if (rl_attn_linear_uses_toeplitz(a))
            RL_TRY(rl_toeplitz_create(&a->toeplitz[t], a->N, a->d, a->dv));
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
    a->nthreads  = rl_threads_get();
    a->has_rope  = o->pe == RL_ATTN_PE_ROPE;
    a->has_bias  = o->pe == RL_ATTN_PE_T5 || o->pe == RL_ATTN_PE_ALIBI;
    rl_status st = RL_OK;
    if (a->has_rope) st = rl_rope_init(&a->rope, N, d, &o->rope);
    if (st == RL_OK && a->has_rope && o->kind == RL_ATTN_SOFTMAX) /* YaRN: a R_m q, a R_n k */
        rl_rope_scale(&a->rope, rl_rope_yarn_mscale(&o->rope));
    if (st == RL_OK && o->xpos) st = xpos_init(a);
    if (st == RL_OK && a->has_bias) {
        a->rel    = rl_alloc((size_t)H * (2 * (size_t)N - 1) * sizeof(float));
        a->slopes = calloc((size_t)H, sizeof(double));
        if (!a->rel || !a->slopes)
            st = rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "attention: out of memory");
        else if (o->pe == RL_ATTN_PE_ALIBI) {
            rl_alibi_slopes(a->slopes, H);
            for (int h = 0; h < H; h++)
                rl_alibi_rel(a->rel + (size_t)h * (2 * N - 1), a->slopes[h], N);
        }
    }
    if (st == RL_OK && rl_attn_linear_kernel_opts(o).forget && !o->forget &&
        !(a->zeros = calloc((size_t)N, sizeof(float)))) /* a constant gate's log gates */
        st = rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "attention: out of memory");
    if (st == RL_OK) st = alloc_per_thread(a);
    if (rl_attn_linear_splits(o)) a->linst_head = rl_attn_linear_state_doubles(o, N, d, dv);
    a->lstore_head = rl_attn_linear_store_floats(o, N, d, dv);
    if (o->kind == RL_ATTN_SOFTMAX)
        a->prep_head = rl_attn_softmax_prepared_floats(N, d, dv, o->xpos, a->has_rope);
    if (st == RL_OK) st = rl_attn_reserve(a, H);
    if (st != RL_OK) {
        rl_attn_free(a);
        return st;
    }
    *out = a;
    return RL_OK;
}

/* The gate's cumulative sums c are read by softmax attention and by linear attention's T5
 * tiles; the pieces form of linear attention reads the decays e^{logf} (a->dec). */
static int needs_cum(const rl_attn *a)
{
    return a->o.forget && (a->o.kind == RL_ATTN_SOFTMAX || a->o.pe == RL_ATTN_PE_T5);
}

/* A call's buffer of at least n bytes (*have: the bytes buf holds): buf, or a new one in
 * its place (made at the first call that needs it, grown for one with more heads); on
 * failure NULL and *have 0. */
static void *regrow(void *buf, size_t *have, size_t n)
{
    if (n <= *have) return buf;
    rl_free(buf);
    void *p = rl_alloc(n);
    *have   = p ? n : 0;
    return p;
}

/* The FFT path's stores and parts for a call of G heads in pieces (attn_toeplitz_split.c),
 * made at the first such call: a plan whose calls have 16 heads or more never needs them. */
static rl_status reserve_toeplitz(rl_attn *a, int G)
{
    const int ng = rl_attn_fft_groups(a, G);
    if (!ng) return RL_OK;
    const size_t parts = (size_t)G * ng * rl_toeplitz_part_doubles(a->N, a->dv) * sizeof(double);
    a->tpart           = regrow(a->tpart, &a->tpart_n, parts);
    if (a->tpart_n < parts)
        RL_FAIL(RL_ENOMEM, "attention: cannot allocate the FFT parts of %d heads", G);
    if (G <= a->tstore_n) return RL_OK;
    rl_toeplitz **s = realloc(a->tstore, (size_t)G * sizeof *s);
    if (!s) RL_FAIL(RL_ENOMEM, "attention: out of memory");
    a->tstore = s;
    for (; a->tstore_n < G; a->tstore_n++)
        RL_TRY(rl_toeplitz_create_store(&a->tstore[a->tstore_n], a->N, a->d, a->dv));
    return RL_OK;
}

/* T5 with the gate in pieces: the heads' stores */
static rl_status reserve_quad(rl_attn *a, int G)
{
    if (!rl_attn_quad_call(a, G)) return RL_OK;
    const size_t n =
        (size_t)G * rl_attn_linear_quad_store_floats(a->N, a->d, a->dv) * sizeof(float);
    a->quad = regrow(a->quad, &a->quad_n, n);
    if (a->quad_n < n)
        RL_FAIL(RL_ENOMEM, "attention: cannot allocate the tiles' stores of %d heads", G);
    return RL_OK;
}

size_t rl_attn_keep_floats(const struct rl_attn_opts *o, int G, int N, int d, int dv)
{
    return rl_attn_linear_pieces(o, G) ? (size_t)G * rl_attn_linear_store_floats(o, N, d, dv) : 0;
}

/* Linear attention in pieces: the store of the blocks' features for calls of up to G heads
 * where it fits RL_ATTN_STORE_BYTES, and the flags of a store (the plan's or a caller's
 * keep).  Made with the plan's other buffers (rl_alloc touches its pages), not at the first
 * call, whose time would include it; where the store cannot be had, calls without a keep
 * build their features in every phase. */
static void reserve_store(rl_attn *a, int G)
{
    const double n = rl_attn_linear_store_bytes(&a->o, G, a->N, a->d, a->dv);
    if (rl_attn_keep_floats(&a->o, G, a->N, a->d, a->dv) > 0)
        a->lhave = regrow(a->lhave, &a->lhave_n, (size_t)G * rl_attn_linear_blocks(a->N));
    if (n > 0 && !a->caller_keeps) a->lstore = regrow(a->lstore, &a->lstore_n, (size_t)n);
}

void rl_attn_caller_keeps(rl_attn *a)
{
    a->caller_keeps = 1;
    rl_free(a->lstore);
    a->lstore = NULL, a->lstore_n = 0;
}

/* The store this call of G heads keeps its features in (lstore_on; then a->lcur): the
 * caller's keep, which a forward fills and its backward finds full; else the plan's, where
 * a later phase reads it (not a non-causal forward, whose rows phase builds only the
 * queries, which no later phase reads), empty at the start. */
static void begin_store(rl_attn *a, int G, int backward, float *keep)
{
    const double n     = rl_attn_linear_store_bytes(&a->o, G, a->N, a->d, a->dv);
    const size_t flags = (size_t)G * rl_attn_linear_blocks(a->N);
    const int    kept  = keep && rl_attn_keep_floats(&a->o, G, a->N, a->d, a->dv) > 0;
    a->lcur            = kept ? keep : a->lstore;
    a->lstore_on       = a->lhave_n >= flags &&
                   (kept || ((backward || a->o.causal) && n > 0 && a->lstore_n >= (size_t)n));
    if (a->lstore_on) rl_attn_linear_store_begin(a->lhave, G, a->N, kept && backward);
}

/* the T5 gradient's parts for a call of G heads */
static rl_status reserve_t5_parts(rl_attn *a, int G)
{
    const size_t n = a->o.kind == RL_ATTN_SOFTMAX ? rl_attn_run_softmax_t5_parts(a, G)
                                                  : rl_attn_run_linear_t5_parts(a, G);
    a->t5part      = regrow(a->t5part, &a->t5part_n, n * sizeof(double));
    if (a->t5part_n < n * sizeof(double))
        RL_FAIL(RL_ENOMEM, "attention: cannot allocate T5's gradient parts of %d heads", G);
    return RL_OK;
}

rl_status rl_attn_reserve(rl_attn *a, int G)
{
    if (G < 1) RL_FAIL(RL_EINVAL, "attention: %d heads per call must be positive", G);
    if (G <= a->G_max) return RL_OK;
    float  *r = rl_alloc((size_t)G * a->N * sizeof(float)), *p = NULL;
    double *l = NULL, *c = NULL, *e = NULL;
    /* the pieces' states and the gate's decays: of the heads a call in pieces has */
    int  ls  = rl_attn_linear_state_heads(&a->o, G);
    int  cum = needs_cum(a), dec = rl_attn_linear_kernel_opts(&a->o).forget && a->linst_head;
    int *n = malloc((size_t)G * sizeof *n);
    if (a->linst_head) l = rl_alloc((size_t)ls * a->linst_head * sizeof(double));
    if (a->prep_head) p = rl_alloc((size_t)G * a->prep_head * sizeof(float));
    if (cum) c = rl_alloc((size_t)G * a->N * sizeof(double));
    if (dec) e = rl_alloc((size_t)G * a->N * sizeof(double));
    if (!r || !n || (a->linst_head && !l) || (a->prep_head && !p) || (cum && !c) || (dec && !e)) {
        rl_free(r), rl_free(l), rl_free(p), rl_free(c), rl_free(e), free(n);
        RL_FAIL(RL_ENOMEM, "attention: cannot allocate the per-call buffers of %d heads", G);
    }
    rl_free(a->rowbuf), rl_free(a->linst), rl_free(a->prep), rl_free(a->cum), rl_free(a->dec);
    free(a->pending);
    a->rowbuf = r, a->linst = l, a->prep = p, a->cum = c, a->dec = e, a->pending = n;
    a->G_max = G;
    reserve_store(a, G);
    return RL_OK;
}

int rl_attn_team(const rl_attn *a, long pieces)
{
    int t = rl_team(pieces);
    return t < a->nthreads ? t : a->nthreads;
}

void rl_attn_gate_cumsum(double *cum, const float *logf, int N)
{
    double c = 0.0;
    for (int m = 0; m < N; m++)
        cum[m] = c += (double)logf[m];
}

void rl_attn_gate_cumsums(rl_attn *a, const float *logf, int G)
{
    double t0 = rl_region_begin();
#pragma omp parallel for schedule(static) num_threads(rl_attn_team(a, G))
    for (int g = 0; g < G; g++)
        rl_attn_gate_cumsum(a->cum + (size_t)g * a->N, logf + (size_t)g * a->N, a->N);
    rl_region_end(t0, G);
}

void rl_attn_gate_suffix(float *dlogf, int N)
{
    double s = 0.0;
    for (int l = N - 1; l >= 0; l--)
        dlogf[l] = (float)(s += (double)dlogf[l]);
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

int rl_attn_threads(const rl_attn *a) { return a->nthreads; }

/* The gate's input: present exactly when the plan has a gate. */
static rl_status check_gate(const rl_attn *a, const float *logf)
{
    if (a->o.forget && !logf) RL_FAIL(RL_EINVAL, "the forget gate needs its log gates (G x N)");
    if (!a->o.forget && logf) RL_FAIL(RL_EINVAL, "log gates given to a plan without a forget gate");
    return RL_OK;
}

/* What a forward and a backward call of G heads start with: the inputs checked, T5's
 * relative vectors, the buffers of the call's pieces, and the gate's c (read by softmax
 * attention and linear attention's T5 tiles; the others take the decays e^{logf}). */
static rl_status begin_call(rl_attn *a, const struct rl_attn_in *in, int G, int backward)
{
    RL_TRY(check_gate(a, in->logf));
    RL_TRY(refresh_t5(a, in->t5));
    if (G > a->G_max)
        RL_FAIL(RL_EINVAL, "attention: %d heads, more than the %d reserved", G, a->G_max);
    RL_TRY(reserve_toeplitz(a, G));
    RL_TRY(reserve_quad(a, G));
    begin_store(a, G, backward, in->keep);
    if (in->logf && needs_cum(a)) rl_attn_gate_cumsums(a, in->logf, G);
    return RL_OK;
}

rl_status rl_attn_forward(rl_attn *a, float *o, float *saved, const struct rl_attn_in *in, int G,
                          struct rl_attn_stats *st)
{
    double t0 = rl_now_ms();
    RL_TRY(begin_call(a, in, G, 0));
    if (a->o.kind == RL_ATTN_SOFTMAX) {
        rl_attn_run_softmax_forward(a, o, saved, in, G);
        if (st) st->bad_denominators = 0, st->ms = rl_now_ms() - t0;
        return RL_OK;
    }
    long bad = rl_attn_run_linear_forward(a, o, saved, in, G);
    if (st) {
        st->bad_denominators = bad;
        st->ms               = rl_now_ms() - t0;
    }
    return RL_OK;
}

rl_status rl_attn_backward(rl_attn *a, const struct rl_attn_grads *gr, const float *dout,
                           const float *o, const float *saved, const struct rl_attn_in *in, int G)
{
    RL_TRY(begin_call(a, in, G, 1));
    const int t5 = a->o.pe == RL_ATTN_PE_T5 && gr->dt5;
    if (t5) RL_TRY(reserve_t5_parts(a, G));
    if (t5) memset(a->drel, 0, (size_t)a->H * (2 * (size_t)a->N - 1) * sizeof(double));
    if (a->o.kind == RL_ATTN_SOFTMAX)
        rl_attn_run_softmax_backward(a, gr, dout, o, saved, in, G);
    else
        rl_attn_run_linear_backward(a, gr, dout, o, saved, in, G);
    for (int h = 0; t5 && h < a->H; h++) /* head h's relative gradient into the table */
        rl_t5_rel_backward(gr->dt5, a->drel + (size_t)h * (2 * a->N - 1), h, a->N, a->o.t5_buckets,
                           a->o.t5_max_distance, a->o.causal);
    return RL_OK;
}
