/* attn_step.c -- one decoding step of causal attention (attn_step.h).
 *
 * The linear modes follow attn_linear.c's table (A, B query features; C, E key features)
 * so that the recurrent sums are the training kernel's prefix sums taken one row at a time;
 * the Shen-with-RoPE features are the training kernel's own (attn_linear_shen.c, one row).
 * States are double, as the training kernels' carried states. */
#include "config.h"
#include "attn_step.h"
#include "attn.h"
#include "attn_linear_impl.h"
#include "featmap.h"
#include "posbias.h"
#include "../core/util.h"
#include "../core/vexp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum step_mode { PLAIN, ROT_NUM, ROT_BOTH, SHEN, SHEN_ROT_NUM, SHEN_ROT_BOTH, DECAY };

struct rl_attn_step {
    struct rl_attn_opts o;
    int                 H, d, dv, pos, cap;
    int                 softmax, input_rot, shen, D, Dd; /* D, Dd: widths of C and E */
    enum step_mode      mode;
    /* softmax: the cache (cap rows of H*d and H*dv), the scores (H rows of cap), the T5
     * bucket by distance, the rotated queries (H*d) and 1 / softmax sums (H) */
    float *K, *V, *score, *qr, *inv;
    /* xPos: per feature lam_f = ln(zeta_f)/gamma (d), and the decays exp(a lam_f) of every
     * distance a < cap (cap rows of d), so that a score is sum_f q_f k_f exp((m-n) lam_f) */
    float  *xlam, *xdec;
    double *cg; /* forget gate (softmax): c_h[n], the log gates' prefix sums (cap rows of H) */
    int    *bucket;
    double *slopes; /* H (alibi) */
    /* linear: per head S (D x dv), z (Dd); Shen: Z and the running max c (d each) */
    double *S, *z, *Z, *c;
    /* one row of scratch */
    float  *xq, *xk, *phq, *phk, *A, *C, *B, *E, *P;
    double *num;
};

int rl_attn_step_supported(const struct rl_attn_opts *o)
{
    return o->causal && !(o->kind == RL_ATTN_LINEAR && o->pe == RL_ATTN_PE_T5);
}

static enum step_mode step_mode(const struct rl_attn_opts *o)
{
    int feat = o->pe == RL_ATTN_PE_ROPE && o->rope_place == RL_ROPE_PLACE_FEATURE;
    int both = feat && o->rope_denominator == RL_ROPE_DENOM_ROTATED;
    if (o->pe == RL_ATTN_PE_ALIBI) return DECAY;
    if (o->fmap == RL_FMAP_SOFTMAX) return !feat ? SHEN : both ? SHEN_ROT_BOTH : SHEN_ROT_NUM;
    return !feat ? PLAIN : both ? ROT_BOTH : ROT_NUM;
}

void rl_attn_step_free(rl_attn_step *s)
{
    if (!s) return;
    free(s->K), free(s->V), free(s->score), free(s->bucket), free(s->slopes), free(s->cg);
    free(s->S), free(s->z), free(s->Z), free(s->c);
    free(s->xq), free(s->xk), free(s->phq), free(s->phk), free(s->A), free(s->C), free(s->B);
    free(s->E), free(s->P), free(s->num), free(s->qr), free(s->inv), free(s->xlam), free(s->xdec);
    free(s);
}

/* Grows the softmax cache to hold at least `need` positions (doubling). */
static rl_status grow(rl_attn_step *s, int need)
{
    if (need <= s->cap) return RL_OK;
    int    cap = s->cap * 2 > need ? s->cap * 2 : need;
    size_t hd = (size_t)s->H * s->d, hv = (size_t)s->H * s->dv;
    float *K = realloc(s->K, (size_t)cap * hd * sizeof(float));
    if (K) s->K = K;
    float *V = realloc(s->V, (size_t)cap * hv * sizeof(float));
    if (V) s->V = V;
    float *sc = realloc(s->score, (size_t)cap * s->H * sizeof(float)); /* scratch: not kept */
    if (sc) s->score = sc;
    int *bk = realloc(s->bucket, (size_t)cap * sizeof(int));
    if (bk) s->bucket = bk;
    float *xd = s->xlam ? realloc(s->xdec, (size_t)cap * s->d * sizeof(float)) : s->xdec;
    if (xd) s->xdec = xd;
    double *cg = s->o.forget ? realloc(s->cg, (size_t)cap * s->H * sizeof(double)) : s->cg;
    if (cg) s->cg = cg;
    if (!K || !V || !sc || !bk || (s->xlam && !xd) || (s->o.forget && !cg))
        RL_FAIL(RL_ENOMEM, "attention step: cannot grow the key/value cache to %d positions", cap);
    for (int a = s->cap; s->xlam && a < cap; a++)
        for (int f = 0; f < s->d; f++)
            s->xdec[(size_t)a * s->d + f] = (float)exp((double)a * (double)s->xlam[f]);
    for (int a = s->cap; a < cap; a++) /* causal bucket of r = n - m = -a */
        s->bucket[a] = s->o.pe == RL_ATTN_PE_T5
                           ? rl_t5_bucket(-a, 0, s->o.t5_buckets, s->o.t5_max_distance)
                           : 0;
    s->cap = cap;
    return RL_OK;
}

static rl_status alloc_linear(rl_attn_step *s)
{
    const size_t H = (size_t)s->H, d = (size_t)s->d;
    s->S  = calloc(H * s->D * s->dv, sizeof(double));
    s->z  = calloc(H * s->Dd, sizeof(double));
    s->Z  = calloc(H * d, sizeof(double));
    s->c  = calloc(H * d, sizeof(double));
    s->xq = calloc(d, sizeof(float)), s->xk = calloc(d, sizeof(float));
    s->phq = calloc(d, sizeof(float)), s->phk = calloc(d, sizeof(float));
    s->A = calloc(2 * d, sizeof(float)), s->C = calloc(2 * d, sizeof(float));
    s->B = calloc(2 * d, sizeof(float)), s->E = calloc(2 * d, sizeof(float));
    s->P   = calloc(d, sizeof(float));
    s->num = calloc((size_t)s->dv, sizeof(double));
    s->qr  = calloc(H * d, sizeof(float));
    s->inv = calloc(H, sizeof(float));
    if (!s->S || !s->z || !s->Z || !s->c || !s->xq || !s->xk || !s->phq || !s->phk || !s->A ||
        !s->C || !s->B || !s->E || !s->P || !s->num || !s->qr || !s->inv)
        RL_FAIL(RL_ENOMEM, "attention step: out of memory");
    return RL_OK;
}

/* xPos (softmax, causal; x-transformers' rotary_xpos): pair i of the R rotated features
 * decays by zeta_i = (2i/R + 0.4)/1.4 per gamma positions, both features of the pair. */
static rl_status xpos_init(rl_attn_step *s)
{
    const int R = s->o.rope.dims > 0 ? s->o.rope.dims : s->d, h = R / 2;
    if (!(s->xlam = calloc((size_t)s->d, sizeof(float))))
        RL_FAIL(RL_ENOMEM, "attention step: out of memory");
    for (int i = 0; i < h; i++) {
        float lam = (float)(log((2.0 * i / R + 0.4) / 1.4) / s->o.xpos_scale_base);
        if (s->o.rope.layout == RL_ROPE_LAYOUT_PAIRS)
            s->xlam[2 * i] = s->xlam[2 * i + 1] = lam;
        else
            s->xlam[i] = s->xlam[i + h] = lam;
    }
    return RL_OK;
}

rl_status rl_attn_step_create(rl_attn_step **out, const struct rl_attn_opts *o, int H, int d,
                              int dv, int capacity)
{
    *out = NULL;
    RL_TRY(rl_attn_opts_check(o, H, d, dv));
    if (!o->causal) RL_FAIL(RL_EINVAL, "recurrent decoding needs causal attention");
    if (!rl_attn_step_supported(o))
        RL_FAIL(RL_EINVAL, "linear attention with T5 has no recurrent form (recompute instead)");
    rl_attn_step *s = calloc(1, sizeof *s);
    if (!s) RL_FAIL(RL_ENOMEM, "attention step: out of memory");
    s->o = *o, s->H = H, s->d = d, s->dv = dv;
    s->softmax   = o->kind == RL_ATTN_SOFTMAX;
    s->mode      = step_mode(o);
    s->input_rot = o->pe == RL_ATTN_PE_ROPE && o->rope_place == RL_ROPE_PLACE_INPUT;
    s->shen      = o->fmap == RL_FMAP_SOFTMAX;
    s->D         = s->mode == SHEN_ROT_NUM || s->mode == SHEN_ROT_BOTH ? 2 * d : d;
    s->Dd        = s->mode == SHEN_ROT_BOTH ? 2 * d : d;
    rl_status st = RL_OK;
    if (o->pe == RL_ATTN_PE_ALIBI) {
        if (!(s->slopes = calloc((size_t)H, sizeof(double))))
            st = rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "attention step: out of memory");
        else
            rl_alibi_slopes(s->slopes, H);
    }
    if (st == RL_OK && o->xpos) st = xpos_init(s);
    if (st == RL_OK) st = alloc_linear(s); /* softmax uses the row scratch only */
    if (st == RL_OK && s->softmax) st = grow(s, capacity > 0 ? capacity : 1);
    if (st != RL_OK) {
        rl_attn_step_free(s);
        return st;
    }
    rl_attn_step_reset(s);
    *out = s;
    return RL_OK;
}

void rl_attn_step_reset(rl_attn_step *s)
{
    s->pos = 0;
    if (s->softmax) return;
    const size_t H = (size_t)s->H, d = (size_t)s->d;
    memset(s->S, 0, H * s->D * s->dv * sizeof(double));
    memset(s->z, 0, H * s->Dd * sizeof(double));
    memset(s->Z, 0, H * d * sizeof(double));
    for (size_t i = 0; i < H * d; i++)
        s->c[i] = -INFINITY;
}

int rl_attn_step_position(const rl_attn_step *s) { return s->pos; }

size_t rl_attn_step_state_bytes(const rl_attn_step *s)
{
    if (s->softmax)
        return (size_t)s->pos * s->H *
               ((s->d + s->dv) * sizeof(float) + (s->o.forget ? sizeof(double) : 0));
    size_t per = (size_t)s->D * s->dv + s->Dd + (s->shen ? 2 * (size_t)s->d : 0);
    return (size_t)s->H * per * sizeof(double);
}

/* --- softmax ---------------------------------------------------------------------------- */

/* Scores of every head: sc[h*cap + n] = q_h.k_n/sqrt(d) + b_h(m, n), n <= m; one pass over
 * the key cache (rows of all heads are contiguous).  q already rotated. */
RL_SIMD_CLONES
static void softmax_scores(rl_attn_step *s, const float *q, const float *t5)
{
    const int    m = s->pos, d = s->d, H = s->H, hd = H * d, cap = s->cap;
    const float  scale = (float)(1.0 / sqrt((double)d));
    const float *K     = s->K;
    for (int n = 0; n <= m; n++) {
        const float *kr = K + (size_t)n * hd;
        const float *xd = s->xdec ? s->xdec + (size_t)(m - n) * d : NULL;
        for (int h = 0; h < H; h++) {
            const float *qh = q + (size_t)h * d, *kh = kr + (size_t)h * d;
            float        dot = 0.0f;
            if (xd) {
#pragma omp simd reduction(+ : dot)
                for (int i = 0; i < d; i++)
                    dot += qh[i] * kh[i] * xd[i];
            } else {
#pragma omp simd reduction(+ : dot)
                for (int i = 0; i < d; i++)
                    dot += qh[i] * kh[i];
            }
            s->score[(size_t)h * cap + n] = dot * scale;
        }
    }
    for (int h = 0; h < H && s->o.pe == RL_ATTN_PE_ALIBI; h++) {
        float *sc = s->score + (size_t)h * cap;
        for (int n = 0; n <= m; n++)
            sc[n] += (float)(-s->slopes[h] * (m - n));
    }
    for (int h = 0; h < H && s->o.pe == RL_ATTN_PE_T5; h++) {
        float       *sc = s->score + (size_t)h * cap;
        const float *B  = t5 + (size_t)h * s->o.t5_buckets;
        for (int n = 0; n <= m; n++)
            sc[n] += B[s->bucket[m - n]];
    }
    for (int h = 0; h < H && s->o.forget; h++) { /* the gate: + c_h[m] - c_h[n] */
        float       *sc = s->score + (size_t)h * cap;
        const double cm = s->cg[(size_t)m * H + h];
        for (int n = 0; n <= m; n++)
            sc[n] += (float)(cm - s->cg[(size_t)n * H + h]);
    }
}

/* p = exp(s - max) per head (in place); returns 1 / sum p in inv (H). */
RL_SIMD_CLONES
static void softmax_weights(rl_attn_step *s, float *inv)
{
    const int m = s->pos;
    for (int h = 0; h < s->H; h++) {
        float *sc = s->score + (size_t)h * s->cap, mx = rl_maxf_inline(sc, m + 1, sc[0]);
        double sum = 0.0;
#pragma omp simd reduction(+ : sum)
        for (int n = 0; n <= m; n++) {
            sc[n] = rl_expf_inline(sc[n] - mx);
            sum += (double)sc[n];
        }
        inv[h] = (float)(1.0 / sum);
    }
}

/* o_h = sum_n p_h[n] v_n / sum_n p_h[n]; one pass over the value cache. */
RL_SIMD_CLONES
static void softmax_values(rl_attn_step *s, float *o, const float *inv)
{
    const int m = s->pos, dv = s->dv, H = s->H, hv = H * dv, cap = s->cap;
    memset(o, 0, (size_t)hv * sizeof(float));
    for (int n = 0; n <= m; n++) {
        const float *vr = s->V + (size_t)n * hv;
        for (int h = 0; h < H; h++) {
            float        p  = s->score[(size_t)h * cap + n];
            float       *oh = o + (size_t)h * dv;
            const float *vh = vr + (size_t)h * dv;
#pragma omp simd
            for (int j = 0; j < dv; j++)
                oh[j] += p * vh[j];
        }
    }
    for (int h = 0; h < H; h++)
        for (int j = 0; j < dv; j++)
            o[(size_t)h * dv + j] *= inv[h];
}

static rl_status softmax_step(rl_attn_step *s, float *o, const struct rl_attn_step_in *in)
{
    RL_TRY(grow(s, s->pos + 1));
    const int             d = s->d, dv = s->dv, H = s->H, m = s->pos;
    const float          *q = in->q, *k = in->k, *v = in->v;
    const struct rl_rope *rope = in->rope;
    for (int h = 0; h < H && s->o.forget; h++) /* c_h[m] = c_h[m-1] + lambda_h[m] */
        s->cg[(size_t)m * H + h] = (m ? s->cg[(size_t)(m - 1) * H + h] : 0.0) + (double)in->logf[h];
    float *kr = s->K + (size_t)m * H * d;
    for (int h = 0; h < H; h++) { /* the cache holds R_n k_n: only the new row rotates */
        if (rope) {
            rl_rope_rotate(rope, kr + (size_t)h * d, d, k + (size_t)h * d, d, 1, m, 0);
            rl_rope_rotate(rope, s->qr + (size_t)h * d, d, q + (size_t)h * d, d, 1, m, 0);
        } else {
            memcpy(kr + (size_t)h * d, k + (size_t)h * d, (size_t)d * sizeof(float));
            memcpy(s->qr + (size_t)h * d, q + (size_t)h * d, (size_t)d * sizeof(float));
        }
    }
    memcpy(s->V + (size_t)m * H * dv, v, (size_t)H * dv * sizeof(float));
    softmax_scores(s, s->qr, in->t5);
    softmax_weights(s, s->inv);
    softmax_values(s, o, s->inv);
    return RL_OK;
}

/* --- linear ----------------------------------------------------------------------------- */

/* Shen keys: u = exp(k - c) with c the running per-feature maximum; when c grows, the
 * state rows of that feature (S rows f and d+f, z rows f and d+f where they exist, Z)
 * are rescaled by exp(c_old - c_new), which cancels in o as the shift does in training. */
static void shen_keys(rl_attn_step *s, float *u, const float *k, int h)
{
    const int d = s->d, dv = s->dv;
    double   *S = s->S + (size_t)h * s->D * dv, *z = s->z + (size_t)h * s->Dd;
    double   *Z = s->Z + (size_t)h * d, *c = s->c + (size_t)h * d;
    for (int f = 0; f < d; f++) {
        if ((double)k[f] > c[f]) {
            double r = s->pos ? exp(c[f] - (double)k[f]) : 0.0;
            for (int row = f; row < s->D; row += d)
                for (int j = 0; j < dv; j++)
                    S[(size_t)row * dv + j] *= r;
            for (int row = f; row < s->Dd; row += d)
                z[row] *= r;
            Z[f] *= r;
            c[f] = (double)k[f];
        }
        u[f] = (float)exp((double)k[f] - c[f]);
    }
}

/* C, E (key side) of the token at position m; phk holds phi_k (or Shen's u). */
static void key_features(rl_attn_step *s, const float *k, const struct rl_rope *rope, int h)
{
    const int d = s->d, m = s->pos;
    if (s->shen)
        shen_keys(s, s->phk, k, h);
    else
        rl_fmap_k_forward(s->phk, NULL, k, 1, d, s->o.fmap);
    switch (s->mode) {
    case ROT_NUM:
    case ROT_BOTH: /* eq. 19: R_m phi_k(k_m) */
        rl_rope_rotate(rope, s->C, d, s->phk, d, 1, m, 0);
        memcpy(s->E, s->mode == ROT_NUM ? s->phk : s->C, (size_t)d * sizeof(float));
        break;
    case SHEN_ROT_NUM:
    case SHEN_ROT_BOTH: {
        const struct rl_lin_shen_block sb = {rope, s->phk, NULL, NULL, 1, d, m};
        rl_lin_shen_rope_keys(s->C, &sb);
        memcpy(s->E, s->mode == SHEN_ROT_NUM ? s->phk : s->C, (size_t)s->Dd * sizeof(float));
        break;
    }
    default: /* PLAIN, SHEN, DECAY */
        memcpy(s->C, s->phk, (size_t)d * sizeof(float));
        memcpy(s->E, s->phk, (size_t)d * sizeof(float));
    }
}

/* A, B (query side); Shen advances Z by this token's u first (Z_m includes n = m). */
static void query_features(rl_attn_step *s, const float *q, const struct rl_rope *rope, int h)
{
    const int d = s->d, m = s->pos;
    double   *Z = s->Z + (size_t)h * d;
    rl_fmap_q_forward(s->phq, q, 1, d, s->o.fmap);
    switch (s->mode) {
    case PLAIN:
        memcpy(s->A, s->phq, (size_t)d * sizeof(float));
        memcpy(s->B, s->phq, (size_t)d * sizeof(float));
        break;
    case ROT_NUM:
    case ROT_BOTH:
        rl_rope_rotate(rope, s->A, d, s->phq, d, 1, m, 0);
        memcpy(s->B, s->mode == ROT_NUM ? s->phq : s->A, (size_t)d * sizeof(float));
        break;
    case SHEN_ROT_NUM:
    case SHEN_ROT_BOTH: {
        const struct rl_lin_shen_block sb = {rope, s->phk, Z, s->P, 1, d, m};
        rl_lin_shen_rope_queries(s->A, s->mode == SHEN_ROT_NUM ? s->B : NULL, s->phq, &sb);
        if (s->mode == SHEN_ROT_BOTH) memcpy(s->B, s->A, 2 * (size_t)d * sizeof(float));
        break;
    }
    default: /* SHEN, DECAY: A = phi_q, over Z_m for the Shen map */
        for (int f = 0; f < d; f++) {
            if (s->shen) Z[f] += (double)s->phk[f];
            s->A[f] = s->shen ? (float)((double)s->phq[f] / Z[f]) : s->phq[f];
        }
        memcpy(s->B, s->A, (size_t)d * sizeof(float));
    }
}

/* S = g S + C v^T, z = g z + E, then o = A^T S / (B . z + eps); returns 1 when B . z <= eps.
 * The decay g: exp(-slope_h) for causal ALiBi, times exp(lambda) of the forget gate (lf,
 * the head's log gate of this token; 0 without the gate), 1 otherwise. */
static int linear_head(rl_attn_step *s, float *o, const float *q, const float *k, const float *v,
                       const struct rl_rope *rope, float lf, int h)
{
    const int d = s->d, dv = s->dv, D = s->D, Dd = s->Dd, m = s->pos;
    double   *S = s->S + (size_t)h * D * dv, *z = s->z + (size_t)h * Dd;
    double    g = exp((s->mode == DECAY ? -s->slopes[h] : 0.0) + (double)lf);
    if (s->input_rot) { /* rope_place = input: phi(R_m q_m), phi(R_m k_m) */
        rl_rope_rotate(rope, s->xq, d, q, d, 1, m, 0);
        rl_rope_rotate(rope, s->xk, d, k, d, 1, m, 0);
        q = s->xq, k = s->xk;
    }
    key_features(s, k, rope, h);
    query_features(s, q, rope, h);
    for (int j = 0; j < dv; j++)
        s->num[j] = 0.0;
    for (int x = 0; x < D; x++) {
        double *Sx = S + (size_t)x * dv, cx = s->C[x], ax = s->A[x];
#pragma omp simd
        for (int j = 0; j < dv; j++) {
            Sx[j] = g * Sx[j] + cx * (double)v[j];
            s->num[j] += ax * Sx[j];
        }
    }
    double den = 0.0;
    for (int x = 0; x < Dd; x++) {
        z[x] = g * z[x] + (double)s->E[x];
        den += (double)s->B[x] * z[x];
    }
    int bad = den <= (double)s->o.eps;
    den += (double)s->o.eps;
    for (int j = 0; j < dv; j++)
        o[j] = (float)(s->num[j] / den);
    return bad;
}

rl_status rl_attn_step_forward(rl_attn_step *s, float *o, long *n_bad,
                               const struct rl_attn_step_in *in)
{
    const struct rl_rope *rope = in->rope;
    RL_ASSERT(!(s->o.pe == RL_ATTN_PE_ROPE) || (rope && rope->n_pos > s->pos && rope->d == s->d));
    RL_ASSERT(s->o.pe != RL_ATTN_PE_T5 || in->t5);
    RL_ASSERT(!s->o.forget == !in->logf);
    long bad = 0;
    if (s->softmax) {
        RL_TRY(softmax_step(s, o, in));
    } else {
        const int d = s->d, dv = s->dv;
        for (int h = 0; h < s->H; h++)
            bad += linear_head(s, o + (size_t)h * dv, in->q + (size_t)h * d, in->k + (size_t)h * d,
                               in->v + (size_t)h * dv, rope, in->logf ? in->logf[h] : 0.0f, h);
    }
    if (n_bad) *n_bad = bad;
    s->pos++;
    return RL_OK;
}

/* uniform in [-1, 1) from a splitmix64 stream */
static double next_u(unsigned long long *x)
{
    unsigned long long z = (*x += 0x9e3779b97f4a7c15ULL);
    z                    = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z                    = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

rl_status rl_attn_step_fill_random(rl_attn_step *s, int n, unsigned long long seed)
{
    if (n < 0) RL_FAIL(RL_EINVAL, "attention step: context %d must be >= 0", n);
    rl_attn_step_reset(s);
    if (s->softmax) {
        RL_TRY(grow(s, n + 1));
        for (size_t i = 0; i < (size_t)n * s->H * s->d; i++)
            s->K[i] = (float)next_u(&seed);
        for (size_t i = 0; i < (size_t)n * s->H * s->dv; i++)
            s->V[i] = (float)next_u(&seed);
        for (size_t i = 0; s->o.forget && i < (size_t)n * s->H; i++) /* gates around 0.99 */
            s->cg[i] = -0.01 * (double)(i / (size_t)s->H);
    } else {
        const size_t H = (size_t)s->H, d = (size_t)s->d;
        for (size_t i = 0; i < H * s->D * s->dv; i++)
            s->S[i] = n * next_u(&seed);
        for (size_t i = 0; i < H * s->Dd; i++) /* positive, like sums of positive features */
            s->z[i] = n * (1.5 + next_u(&seed));
        for (size_t i = 0; i < H * d; i++)
            s->Z[i] = s->z[i % (H * s->Dd)], s->c[i] = 1.0;
    }
    s->pos = n;
    return RL_OK;
}
