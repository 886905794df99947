/* t_attn_forget.c -- the forget gate through the attention entry points (attn.h), for every
 * attention kind, feature map and position encoding, against a float64 evaluation written
 * here from the math:
 *
 *   c[m] = sum_{l<=m} logf[l],   g(m,n) = c[m] - c[n]   (n <= m; causal only)
 *   softmax:  s[m,n] = (R_m q_m).(R_n k_n)/sqrt(d) + b(m,n) + g(m,n),  o_m = sum_n p v_n
 *   linear:   every pair's numerator and denominator weight times exp(b(m,n) + g(m,n)),
 *             eq. 19 rotating the feature-mapped q, k in the numerator only, the input
 *             placement rotating q, k first, the rotated denominator rotating both; the
 *             causal Shen map's positional normaliser is not decayed.
 *
 * Gradients (dq, dk, dv, dlogf, and dt5 for T5) against central differences of that
 * evaluation: every element at N = 7, sampled elements and a directional derivative at
 * N = 300 (two 256-row blocks).  Also: 1, 2 and 3 threads give the same bits; a constant
 * gate equals ALiBi; ALiBi's decayed scan (alibi_scan: the gate's scan with the constant
 * log gate -slope) in 4 and 16 heads a call against float64, central differences and the
 * FFT Toeplitz products, and with q, k up to 30; linear attention's features store (its
 * heads give the bits of the same heads in a call too large for the store) and the keep
 * that carries them from a forward to its backward (the same bits; the backward reads it;
 * its size); the gate is refused without causality or without its input. */
#include "config.h"
#include "kernels/attn.h"
#include "kernels/attn_linear.h"
#include "kernels/posbias.h"
#include "core/init.h"
#include "core/threads.h"
#include "tap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum pe { PE_NONE, PE_ROPE, PE_INPUT, PE_ROTDEN, PE_T5, PE_ALIBI };
static const char *pe_name[] = {"none", "rope", "rope-input", "rope-rotden", "t5", "alibi"};
static const char *fm_name[] = {"elu1", "softmax", "exp"};

struct tcase {
    enum rl_attn_kind kind;
    enum rl_fmap      fm;
    enum pe           pe;
    int               H, N, d, dv;
    double            gate;      /* log gates uniform in [-gate, 0]; 0: no gate */
    int               noncausal; /* (without the gate) */
    int               scan;      /* ALiBi by the decayed scan (alibi_scan) */
};

enum { NB = 8, MAXN = 640 };

struct data {
    int     G, N, d, dv;
    double *q, *k, *v, *w, *lf, *t5; /* w: the loss weights (dout) */
};

/* ---- float64 evaluation ---------------------------------------------------------------- */

/* cos and sin of pos theta_i, theta_i = 10000^(-2i/d), in double (pairs (2i, 2i+1)) */
static double rope_c[MAXN][32], rope_s[MAXN][32];

static void rope_table(int N, int d)
{
    for (int m = 0; m < N; m++)
        for (int i = 0; i < d / 2; i++) {
            double a     = m * pow(10000.0, -2.0 * i / d);
            rope_c[m][i] = cos(a), rope_s[m][i] = sin(a);
        }
}

static void rot(double *y, const double *x, int pos, int d)
{
    memcpy(y, x, sizeof(double) * d);
    for (int i = 0; pos && i < d / 2; i++) {
        double c = rope_c[pos][i], s = rope_s[pos][i];
        y[2 * i]     = x[2 * i] * c - x[2 * i + 1] * s;
        y[2 * i + 1] = x[2 * i] * s + x[2 * i + 1] * c;
    }
}

static void fmap_q(double *p, const double *x, int d, enum rl_fmap f)
{
    double mx = -INFINITY, z = 0;
    for (int j = 0; j < d; j++)
        mx = fmax(mx, x[j]);
    for (int j = 0; j < d; j++)
        p[j] = f == RL_FMAP_ELU1 ? (x[j] > 0 ? x[j] + 1 : exp(x[j])) : exp(x[j] - mx);
    for (int j = 0; j < d; j++)
        z += p[j];
    for (int j = 0; f != RL_FMAP_ELU1 && j < d; j++)
        p[j] /= z;
}

/* b(m, n) of head h for n <= m: T5 through the library's bucket map (rel: 2N-1),
 * ALiBi's -slope (m - n). */
static void bias_vector(double *b, const struct tcase *c, const struct data *D, int h)
{
    const int    N = D->N;
    double       s[16];
    static float rel[2 * MAXN];
    float        tab[NB];
    rl_alibi_slopes(s, c->H);
    for (int i = 0; i < NB; i++) /* a table of the bucket numbers: rel gives the bucket */
        tab[i] = (float)i;
    rl_t5_rel(rel, tab, 0, N, NB, 16, 1);
    for (int r = 0; r < N; r++) /* r = m - n >= 0; the table's value in double */
        b[r] = c->pe == PE_ALIBI ? -s[h] * r
               : c->pe == PE_T5  ? D->t5[h * NB + (int)rel[N - 1 - r]]
                                 : 0.0;
}

/* Per-row features of head g: softmax qa, ka (rotated); linear pq = phi_q(x_q), rq = R pq
 * (eq. 19) and ek = phi_k's numerator (elu1 + 1, or exp) of x_k (rotated at the input). */
struct feats {
    double qa[MAXN][32], ka[MAXN][32], pq[MAXN][32], rq[MAXN][32], ek[MAXN][32];
};

static void ref_features(struct feats *F, const struct tcase *c, const double *q, const double *k,
                         int N, int d)
{
    double x[32];
    int    in = c->pe == PE_INPUT, ft = c->pe == PE_ROPE || c->pe == PE_ROTDEN;
    for (int m = 0; m < N; m++) {
        rot(F->qa[m], q + (size_t)m * d, c->pe == PE_ROPE ? m : 0, d);
        rot(F->ka[m], k + (size_t)m * d, c->pe == PE_ROPE ? m : 0, d);
        rot(x, q + (size_t)m * d, in ? m : 0, d);
        fmap_q(F->pq[m], x, d, c->fm);
        rot(F->rq[m], F->pq[m], ft ? m : 0, d);
        rot(x, k + (size_t)m * d, in ? m : 0, d);
        for (int f = 0; f < d; f++)
            F->ek[m][f] = c->fm == RL_FMAP_ELU1 ? (x[f] > 0 ? x[f] + 1 : exp(x[f])) : exp(x[f]);
    }
}

/* The score (softmax) or the numerator and denominator similarities (linear) of (m, n),
 * before the weight; Z: Shen's prefix normaliser of row m. */
static void ref_pair(double *sn, double *sd, const struct tcase *c, const struct feats *F,
                     const double *Z, int m, int n, int d)
{
    double y[32] = {0}, ka[32];
    *sn = *sd = 0;
    if (c->kind == RL_ATTN_SOFTMAX) {
        for (int f = 0; f < d; f++)
            *sn += F->qa[m][f] * F->ka[n][f];
        *sn /= sqrt((double)d);
        return;
    }
    for (int f = 0; f < d; f++)
        y[f] = F->ek[n][f] / (c->fm == RL_FMAP_SOFTMAX ? Z[f] : 1.0);
    rot(ka, y, c->pe == PE_ROPE || c->pe == PE_ROTDEN ? n : 0, d);
    for (int f = 0; f < d; f++)
        *sn += F->rq[m][f] * ka[f], *sd += F->pq[m][f] * y[f];
    if (c->pe == PE_ROTDEN) *sd = *sn;
}

/* o of head g (N x dv) */
static void ref_head(double *o, const struct tcase *c, const struct data *D, int g)
{
    const int           N = D->N, d = D->d, dv = D->dv, h = g % c->H;
    const double       *q = D->q + (size_t)g * N * d, *k = D->k + (size_t)g * N * d;
    const double       *v = D->v + (size_t)g * N * dv, *lf = D->lf + (size_t)g * N;
    static struct feats F;
    double              cum[MAXN], b[MAXN], Z[32] = {0}, num[64];
    ref_features(&F, c, q, k, N, d);
    bias_vector(b, c, D, h);
    for (int m = 0; m < N; m++)
        cum[m] = (m ? cum[m - 1] : 0) + lf[m];
    const int nc = c->noncausal;
    for (int m = 0; nc && m < N; m++) /* non-causal Shen: the normaliser over every row */
        for (int f = 0; f < d; f++)
            Z[f] += F.ek[m][f];
    for (int m = 0; m < N; m++) {
        double    mx = -INFINITY, den = 0, sn, sd;
        const int last = nc ? N - 1 : m;
        for (int f = 0; !nc && f < d; f++) /* Shen: the prefix normaliser, not decayed */
            Z[f] += F.ek[m][f];
        memset(num, 0, sizeof num);
        for (int n = 0; c->kind == RL_ATTN_SOFTMAX && n <= last; n++) {
            ref_pair(&sn, &sd, c, &F, Z, m, n, d);
            mx = fmax(mx, sn + (n <= m ? b[m - n] + cum[m] - cum[n] : 0));
        }
        for (int n = 0; n <= last; n++) {
            double wgt = n <= m ? b[m - n] + cum[m] - cum[n] : 0; /* no bias PE when non-causal */
            ref_pair(&sn, &sd, c, &F, Z, m, n, d);
            if (c->kind == RL_ATTN_SOFTMAX)
                sn = sd = exp(sn + wgt - mx);
            else
                sn *= exp(wgt), sd *= exp(wgt);
            for (int j = 0; j < dv; j++)
                num[j] += sn * v[(size_t)n * dv + j];
            den += sd;
        }
        for (int j = 0; j < dv; j++)
            o[(size_t)m * dv + j] = num[j] / (den + (c->kind == RL_ATTN_LINEAR ? 1e-6 : 0));
    }
}

static double ref_loss(const struct tcase *c, const struct data *D)
{
    double L = 0, *o = malloc(sizeof(double) * D->N * D->dv);
    for (int g = 0; g < D->G; g++) {
        ref_head(o, c, D, g);
        for (int i = 0; i < D->N * D->dv; i++)
            L += o[i] * D->w[(size_t)g * D->N * D->dv + i];
    }
    free(o);
    return L;
}

/* ---- the kernel ------------------------------------------------------------------------- */

struct run {
    float *q, *k, *v, *w, *lf, *t5, *o, *saved, *dq, *dk, *dv, *dlf, *dt5;
};

static float *fl(const double *x, size_t n)
{
    float *y = malloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; i < n; i++)
        y[i] = (float)x[i];
    return y;
}

static struct rl_attn_opts opts_of(const struct tcase *c)
{
    struct rl_attn_opts o;
    rl_attn_opts_default(&o);
    o.kind             = c->kind;
    o.fmap             = c->fm;
    o.causal           = !c->noncausal;
    o.forget           = c->gate > 0;
    o.pe               = c->pe == PE_T5      ? RL_ATTN_PE_T5
                         : c->pe == PE_ALIBI ? RL_ATTN_PE_ALIBI
                         : c->pe == PE_NONE  ? RL_ATTN_PE_NONE
                                             : RL_ATTN_PE_ROPE;
    o.rope_place       = c->pe == PE_INPUT ? RL_ROPE_PLACE_INPUT : RL_ROPE_PLACE_FEATURE;
    o.rope_denominator = c->pe == PE_ROTDEN ? RL_ROPE_DENOM_ROTATED : RL_ROPE_DENOM_PLAIN;
    o.alibi_scan       = c->scan;
    o.t5_buckets       = NB;
    o.t5_max_distance  = 16;
    return o;
}

/* How run_kernel passes a keep (rl_attn_in.keep) from the forward to the backward: none,
 * as it is, or with every float set to NaN between them; or, from a plan declared to be
 * given keeps (rl_attn_caller_keeps, which then holds no store of its own), as it is or
 * none. */
enum keep { KEEP_NONE, KEEP, KEEP_POISONED, KEEP_DECLARED, KEEP_DECLARED_NONE };

static void run_kernel_keep(struct run *r, const struct tcase *c, const struct data *D, int threads,
                            enum keep kp)
{
    const size_t nq = (size_t)D->G * D->N * D->d, nv = (size_t)D->G * D->N * D->dv;
    const size_t nl = (size_t)D->G * D->N;
    r->q = fl(D->q, nq), r->k = fl(D->k, nq), r->v = fl(D->v, nv), r->w = fl(D->w, nv);
    r->lf = fl(D->lf, nl), r->t5 = fl(D->t5, (size_t)c->H * NB);
    r->o = calloc(nv, 4), r->saved = calloc(nl, 4), r->dq = calloc(nq, 4), r->dk = calloc(nq, 4);
    r->dv = calloc(nv, 4), r->dlf = calloc(nl, 4), r->dt5 = calloc((size_t)c->H * NB, 4);
    struct rl_attn_opts o = opts_of(c);
    rl_attn            *a = NULL;
    rl_threads_set(threads);
    if (rl_attn_create(&a, &o, c->H, D->N, D->d, D->dv) != RL_OK ||
        rl_attn_reserve(a, D->G) != RL_OK)
        tap_bail("create: %s", rl_last_error());
    if (kp == KEEP_DECLARED || kp == KEEP_DECLARED_NONE) rl_attn_caller_keeps(a);
    const size_t nk = rl_attn_keep_floats(&o, D->G, D->N, D->d, D->dv);
    float *keep = kp != KEEP_NONE && kp != KEEP_DECLARED_NONE ? malloc(4 * (nk ? nk : 1)) : NULL;
    const struct rl_attn_in    in = {r->q, r->k, r->v, r->t5, c->gate > 0 ? r->lf : NULL, keep};
    const struct rl_attn_grads gr = {r->dq, r->dk, r->dv, r->dt5, c->gate > 0 ? r->dlf : NULL};
    if (rl_attn_forward(a, r->o, r->saved, &in, D->G, NULL) != RL_OK)
        tap_bail("kernel: %s", rl_last_error());
    for (size_t i = 0; kp == KEEP_POISONED && i < nk; i++)
        keep[i] = NAN;
    if (rl_attn_backward(a, &gr, r->w, r->o, r->saved, &in, D->G) != RL_OK)
        tap_bail("kernel: %s", rl_last_error());
    free(keep);
    rl_attn_free(a);
    rl_threads_set(1);
}

static void run_kernel(struct run *r, const struct tcase *c, const struct data *D, int threads)
{
    run_kernel_keep(r, c, D, threads, KEEP_NONE);
}

/* Whether two runs of case c give the same bits in the first G heads: outputs and every
 * gradient (dlogf and dt5 too; they stay zero where the case has no gate or T5). */
static int same_bits(const struct run *a, const struct run *b, const struct tcase *c, int G)
{
    const size_t nq = (size_t)G * c->N * c->d, nv = (size_t)G * c->N * c->dv;
    const size_t nl = (size_t)G * c->N, nt = (size_t)c->H * NB;
    return !memcmp(a->o, b->o, 4 * nv) && !memcmp(a->dq, b->dq, 4 * nq) &&
           !memcmp(a->dk, b->dk, 4 * nq) && !memcmp(a->dv, b->dv, 4 * nv) &&
           !memcmp(a->dlf, b->dlf, 4 * nl) && !memcmp(a->dt5, b->dt5, 4 * nt);
}

static void run_free(struct run *r)
{
    free(r->q), free(r->k), free(r->v), free(r->w), free(r->lf), free(r->t5), free(r->o);
    free(r->saved), free(r->dq), free(r->dk), free(r->dv), free(r->dlf), free(r->dt5);
}

static double *dvec(size_t n, double lo, double hi)
{
    double *x = malloc(sizeof(double) * (n ? n : 1));
    for (size_t i = 0; i < n; i++)
        x[i] = lo + (hi - lo) * tap_uniform();
    return x;
}

static void data_make(struct data *D, const struct tcase *c, int G)
{
    D->G = G, D->N = c->N, D->d = c->d, D->dv = c->dv;
    const size_t nq = (size_t)G * c->N * c->d, nv = (size_t)G * c->N * c->dv;
    D->q = dvec(nq, -1.5, 1.5), D->k = dvec(nq, -1.5, 1.5), D->v = dvec(nv, -1, 1);
    D->w = dvec(nv, -1, 1), D->lf = dvec((size_t)G * c->N, -c->gate, 0);
    D->t5 = dvec((size_t)c->H * NB, -1, 1);
}

static void data_free(struct data *D)
{
    free(D->q), free(D->k), free(D->v), free(D->w), free(D->lf), free(D->t5);
}

/* Central difference of the reference loss in x[i] (x a tensor of D). */
static double fd(const struct tcase *c, struct data *D, double *x, size_t i)
{
    const double h = 1e-5, x0 = x[i];
    x[i]      = x0 + h;
    double lp = ref_loss(c, D);
    x[i]      = x0 - h;
    double lm = ref_loss(c, D);
    x[i]      = x0;
    return (lp - lm) / (2 * h);
}

static void check_case(const struct tcase *c, int nsample)
{
    struct data D;
    struct run  r;
    char        nm[128];
    const int   G = 2 * c->H;
    snprintf(nm, sizeof nm, "%s%s%s %s%s N=%d gate %.3g, %d heads a call",
             c->kind == RL_ATTN_SOFTMAX ? "softmax" : "linear",
             c->kind == RL_ATTN_LINEAR ? " " : "", c->kind == RL_ATTN_LINEAR ? fm_name[c->fm] : "",
             pe_name[c->pe], c->scan ? " (scan)" : "", c->N, c->gate, G);
    data_make(&D, c, G);
    rope_table(c->N, c->d);
    run_kernel(&r, c, &D, 2);
    const size_t nv = (size_t)G * c->N * c->dv, nq = (size_t)G * c->N * c->d, nl = (size_t)G * c->N;
    double      *o = malloc(sizeof(double) * nv);
    for (int g = 0; g < G; g++)
        ref_head(o + (size_t)g * c->N * c->dv, c, &D, g);
    tap_close_scaled(r.o, o, nv, 1e-4, "%s: o vs float64", nm);
    double     *xs[5] = {D.q, D.k, D.v, D.lf, D.t5};
    float      *gs[5] = {r.dq, r.dk, r.dv, r.dlf, r.dt5};
    size_t      ns[5] = {nq, nq, nv, nl, (size_t)c->H * NB};
    const char *tn[5] = {"dq", "dk", "dv", "dlogf", "dt5"};
    for (int t = 0; t < (c->pe == PE_T5 ? 5 : 4); t++) {
        if (t == 3 && c->gate <= 0) continue; /* no gate: no dlogf */
        size_t  cnt = nsample && (size_t)nsample < ns[t] ? (size_t)nsample : ns[t];
        double *ref = malloc(sizeof(double) * cnt);
        float  *got = malloc(sizeof(float) * cnt);
        for (size_t s = 0; s < cnt; s++) {
            size_t i = cnt < ns[t] ? (size_t)(tap_uniform() * (double)ns[t]) : s;
            ref[s] = fd(c, &D, xs[t], i), got[s] = gs[t][i];
        }
        tap_close_scaled(got, ref, cnt, 1e-3, "%s: %s vs central differences (%s)", nm, tn[t],
                         cnt < ns[t] ? "sampled" : "all");
        free(ref), free(got);
    }
    /* 1 and 3 threads: the same bits as 2 */
    for (int th = 1; th <= 3; th += 2) {
        struct run r2;
        run_kernel(&r2, c, &D, th);
        tap_ok(same_bits(&r2, &r, c, D.G), "%s: %d thread%s give the bits of 2", nm, th,
               th > 1 ? "s" : "");
        run_free(&r2);
    }
    free(o);
    run_free(&r);
    data_free(&D);
}

/* Linear attention in pieces keeps each block's features from the phase that builds them
 * to the later ones in a store of the call (attn_linear.h), within RL_ATTN_STORE_BYTES: the
 * same heads in a call too large for the store (every phase builds again) give the same
 * bits, forward and backward. */
static void check_store_bits(const struct tcase *c)
{
    const struct rl_attn_opts o  = opts_of(c);
    const int                 G  = 2 * c->H;
    int                       Gb = G;
    while (rl_attn_linear_store_bytes(&o, Gb, c->N, c->d, c->dv) > 0)
        Gb += c->H;
    struct data D, Db;
    struct run  r, rb;
    data_make(&D, c, G), data_make(&Db, c, Gb);
    const size_t nq = (size_t)G * c->N * c->d, nv = (size_t)G * c->N * c->dv;
    const size_t nl = (size_t)G * c->N;
    memcpy(Db.q, D.q, 8 * nq), memcpy(Db.k, D.k, 8 * nq), memcpy(Db.v, D.v, 8 * nv);
    memcpy(Db.w, D.w, 8 * nv), memcpy(Db.lf, D.lf, 8 * nl);
    run_kernel(&r, c, &D, 2), run_kernel(&rb, c, &Db, 2);
    tap_ok(same_bits(&r, &rb, c, G) && rl_attn_linear_store_bytes(&o, G, c->N, c->d, c->dv) > 0,
           "linear %s %s%s N=%d gate %.3g: %d heads with the features' store give the bits of "
           "the same heads in a call of %d (no store)",
           fm_name[c->fm], pe_name[c->pe], c->noncausal ? " non-causal" : "", c->N, c->gate, G, Gb);
    run_free(&r), run_free(&rb);
    data_free(&D), data_free(&Db);
}

/* A keep (rl_attn_in.keep) carries the forward's block features to the backward: the
 * same bits as a call that builds them again, with one block of rows or more; the backward
 * reads them (NaN written into the keep between the calls reaches dq and dk); and the keep
 * holds (4 d + dv + 2) floats per head and row of whole blocks with RoPE on the features or
 * the inputs, (2 d + dv + 2) without. */
static void check_keep(const struct tcase *c)
{
    const struct rl_attn_opts o = opts_of(c);
    const int                 G = 2 * c->H;
    struct data               D;
    struct run                r, rk, rp;
    data_make(&D, c, G);
    const size_t nq = (size_t)G * c->N * c->d;
    run_kernel_keep(&r, c, &D, 2, KEEP_NONE), run_kernel_keep(&rk, c, &D, 2, KEEP);
    run_kernel_keep(&rp, c, &D, 2, KEEP_POISONED);
    const int same = same_bits(&r, &rk, c, G);
    size_t    nan  = 0;
    for (size_t i = 0; i < nq; i++)
        nan += isnan(rp.dq[i]) && isnan(rp.dk[i]);
    const int    rows = rl_attn_linear_blocks(c->N) * (c->N < 256 ? c->N : 256);
    const int    feat = c->pe == PE_NONE || c->pe == PE_ALIBI ? 2 : 4;
    const size_t want = (size_t)G * rows * (feat * c->d + c->dv + 2);
    tap_ok(same && nan == nq && rl_attn_keep_floats(&o, G, c->N, c->d, c->dv) == want,
           "linear %s %s%s N=%d gate %.3g: the forward's features kept for the backward give "
           "the same bits (%zu of %zu dq, dk NaN from a poisoned keep; %zu floats)",
           fm_name[c->fm], pe_name[c->pe], c->noncausal ? " non-causal" : "", c->N, c->gate, nan,
           nq, rl_attn_keep_floats(&o, G, c->N, c->d, c->dv));
    run_free(&r), run_free(&rk), run_free(&rp);
    data_free(&D);
}

/* A plan told that its calls pass keeps (rl_attn_caller_keeps, as the model's plans are)
 * gives the same bits as one that is not, with a keep and without one (then building the
 * features in each phase: it has no store of its own to fall back on), for calls of more
 * heads than it was made for. */
static void check_caller_keeps(const struct tcase *c)
{
    struct data D;
    struct run  r, rk, rn;
    data_make(&D, c, 2 * c->H);
    run_kernel_keep(&r, c, &D, 2, KEEP_NONE), run_kernel_keep(&rk, c, &D, 2, KEEP_DECLARED);
    run_kernel_keep(&rn, c, &D, 2, KEEP_DECLARED_NONE);
    tap_ok(same_bits(&r, &rk, c, D.G) && same_bits(&r, &rn, c, D.G),
           "linear %s %s%s N=%d gate %.3g: a plan told its calls pass keeps gives the same bits "
           "with a keep and without one",
           fm_name[c->fm], pe_name[c->pe], c->noncausal ? " non-causal" : "", c->N, c->gate);
    run_free(&r), run_free(&rk), run_free(&rn);
    data_free(&D);
}

/* The kinds that keep nothing: softmax attention, Shen's map, T5 and ALiBi's FFT products;
 * a keep given to them is not touched, and the results are the same. */
static void check_keep_none(void)
{
    static const struct tcase cases[] = {
        {RL_ATTN_SOFTMAX, RL_FMAP_ELU1, PE_ROPE, 2, 300, 8, 6, 0.5, 0, 0},
        {RL_ATTN_LINEAR, RL_FMAP_SOFTMAX, PE_ROPE, 2, 300, 8, 6, 0, 0, 0},
        {RL_ATTN_LINEAR, RL_FMAP_ELU1, PE_T5, 2, 300, 8, 6, 0, 0, 0},
        {RL_ATTN_LINEAR, RL_FMAP_ELU1, PE_ALIBI, 2, 300, 8, 6, 0, 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct tcase       *c = &cases[i];
        const struct rl_attn_opts o = opts_of(c);
        struct data               D;
        struct run                r, rk;
        data_make(&D, c, 2 * c->H);
        run_kernel_keep(&r, c, &D, 2, KEEP_NONE), run_kernel_keep(&rk, c, &D, 2, KEEP_POISONED);
        tap_ok(same_bits(&r, &rk, c, D.G) && rl_attn_keep_floats(&o, D.G, c->N, c->d, c->dv) == 0,
               "%s%s %s%s: keeps nothing, and a keep given to it changes nothing",
               c->kind == RL_ATTN_SOFTMAX ? "softmax" : "linear ",
               c->kind == RL_ATTN_SOFTMAX ? "" : fm_name[c->fm], pe_name[c->pe],
               c->noncausal ? " non-causal" : "");
        run_free(&r), run_free(&rk);
        data_free(&D);
    }
}

static double *dbl(const float *x, size_t n)
{
    double *y = malloc(sizeof(double) * (n ? n : 1));
    for (size_t i = 0; i < n; i++)
        y[i] = x[i];
    return y;
}

/* ALiBi's decayed scan (the gate's scan with a constant log gate) equals the same plan's
 * FFT Toeplitz products, forward and backward; and with keys and queries up to 30 its
 * outputs stay within 1e-4 of float64 and its gradients finite. */
static void check_scan_is_fft(const struct tcase *c)
{
    struct data  D;
    struct run   rs, rf;
    struct tcase cf = *c;
    const int    G  = 2 * c->H;
    const size_t nv = (size_t)G * c->N * c->dv, nq = (size_t)G * c->N * c->d;
    cf.scan = 0;
    data_make(&D, c, G);
    run_kernel(&rs, c, &D, 2), run_kernel(&rf, &cf, &D, 2);
    float  *got[4] = {rs.o, rs.dq, rs.dk, rs.dv}, *ref[4] = {rf.o, rf.dq, rf.dk, rf.dv};
    size_t  n[4] = {nv, nq, nq, nv};
    double *r;
    for (int t = 0; t < 4; t++) {
        tap_close_scaled(got[t], r = dbl(ref[t], n[t]), n[t], t ? 1e-4 : 1e-5,
                         "linear %s alibi, %d heads a call: the scan's %s equals the FFT's",
                         fm_name[c->fm], G, (const char *[]){"o", "dq", "dk", "dv"}[t]);
        free(r);
    }
    run_free(&rs), run_free(&rf);
    for (size_t i = 0; i < nq; i++) /* uniform in [-30, 30] */
        D.q[i] *= 20.0, D.k[i] *= 20.0;
    run_kernel(&rs, c, &D, 2);
    double *o = malloc(sizeof(double) * nv);
    for (int g = 0; g < G; g++)
        ref_head(o + (size_t)g * c->N * c->dv, c, &D, g);
    tap_close_scaled(rs.o, o, nv, 1e-4, "linear %s alibi (scan), q and k up to 30: o vs float64",
                     fm_name[c->fm]);
    int finite = 1;
    for (size_t i = 0; i < nq; i++)
        finite &= isfinite(rs.dq[i]) && isfinite(rs.dk[i]);
    for (size_t i = 0; i < nv; i++)
        finite &= isfinite(rs.dv[i]);
    tap_ok(finite, "linear %s alibi (scan), q and k up to 30: dq, dk, dv finite", fm_name[c->fm]);
    free(o), run_free(&rs), data_free(&D);
}

/* A constant log gate -slope_h (per head) equals ALiBi without the gate. */
static void check_constant_is_alibi(enum rl_attn_kind kind)
{
    const struct tcase c = {kind, RL_FMAP_ELU1, PE_NONE, 2, 300, 8, 8, 0.1, 0, 0};
    struct data        D;
    struct run         r, ra;
    data_make(&D, &c, 2);
    rope_table(c.N, c.d);
    double s[2];
    rl_alibi_slopes(s, 2);
    for (int g = 0; g < 2; g++)
        for (int m = 0; m < c.N; m++)
            D.lf[(size_t)g * c.N + m] = -s[g];
    run_kernel(&r, &c, &D, 1);
    struct tcase ca = c;
    ca.pe           = PE_ALIBI;
    memset(D.lf, 0, sizeof(double) * 2 * c.N); /* ALiBi with a zero gate */
    run_kernel(&ra, &ca, &D, 1);
    double *ref = malloc(sizeof(double) * 2 * c.N * c.dv);
    for (int i = 0; i < 2 * c.N * c.dv; i++)
        ref[i] = ra.o[i];
    tap_close_scaled(r.o, ref, (size_t)2 * c.N * c.dv, 1e-5,
                     "%s: a constant log gate -slope_h equals ALiBi",
                     kind == RL_ATTN_SOFTMAX ? "softmax" : "linear");
    free(ref);
    run_free(&r), run_free(&ra);
    data_free(&D);
}

static void check_refusals(void)
{
    struct rl_attn_opts o;
    rl_attn_opts_default(&o);
    o.forget = 1;
    tap_ok(rl_attn_opts_check(&o, 2, 8, 8) == RL_EINVAL && strstr(rl_last_error(), "causal"),
           "a non-causal plan with the gate is refused: %s", rl_last_error());
    o.causal                             = 1;
    rl_attn                *a            = NULL;
    float                   x[2 * 4 * 8] = {0}, out[2 * 4 * 8], sv[8];
    const struct rl_attn_in in           = {x, x, x, NULL, NULL, NULL};
    tap_ok(rl_attn_create(&a, &o, 2, 4, 8, 8) == RL_OK &&
               rl_attn_forward(a, out, sv, &in, 2, NULL) == RL_EINVAL,
           "a gated call without log gates is refused: %s", rl_last_error());
    rl_attn_free(a);
}

int main(void)
{
    rl_init(2);
    tap_seed(20261126);
    for (int pe = PE_NONE; pe <= PE_ALIBI; pe++) {
        if (pe == PE_INPUT || pe == PE_ROTDEN) continue; /* linear attention only */
        struct tcase c = {RL_ATTN_SOFTMAX, RL_FMAP_ELU1, (enum pe)pe, 2, 7, 4, 3, 0.7, 0, 0};
        check_case(&c, 0);
        c.N = 300, c.d = 8, c.dv = 6, c.gate = 0.05;
        check_case(&c, 10);
    }
    for (int f = 0; f < 3; f++)
        for (int pe = PE_NONE; pe <= PE_ALIBI; pe++) {
            struct tcase c = {RL_ATTN_LINEAR, (enum rl_fmap)f, (enum pe)pe, 2, 7, 4, 3, 0.7, 0, 0};
            check_case(&c, 0);
            c.N = 300, c.d = 8, c.dv = 6, c.gate = pe % 2 ? 2.0 : 0.05;
            check_case(&c, 10);
        }
    /* strong gates (log gates down to -30): the decayed scans' 4-row steps that decay past
     * 2^-32 run the per-row kernel, the others rescale their frame every step or two */
    for (int f = 0; f < 3; f++)
        for (int pe = PE_NONE; pe <= PE_ROPE; pe++) {
            struct tcase c = {
                RL_ATTN_LINEAR, (enum rl_fmap)f, (enum pe)pe, 2, 300, 8, 6, 30.0, 0, 0};
            check_case(&c, 10);
        }
    /* without the gate: the split pieces (every map: 2 heads are few enough for Shen's);
     * the rotated denominator, ill-conditioned where it nears 0, is t_attn_linear's */
    for (int f = 0; f < 3; f++)
        for (int pe = PE_NONE; pe <= PE_INPUT; pe++)
            for (int nc = 0; nc < 2; nc++) {
                struct tcase c = {
                    RL_ATTN_LINEAR, (enum rl_fmap)f, (enum pe)pe, 2, 300, 8, 6, 0, nc, 0};
                check_case(&c, 6);
            }
    /* 16 heads a call: Shen's map runs one piece per head, ALiBi as log gates lambda - slope
     * (with fewer heads, above, ALiBi's slope enters the pieces' decays) */
    for (int pe = PE_NONE; pe <= PE_ALIBI; pe += PE_ALIBI) {
        struct tcase c = {RL_ATTN_LINEAR, RL_FMAP_SOFTMAX, (enum pe)pe, 8, 300, 8, 6, 2.0, 0, 0};
        check_case(&c, 6);
    }
    /* T5 with the gate over three blocks of rows: in (head, block) pieces at 4 heads a call,
     * one piece per head at 16; a strong gate too (log gates down to -2: a block's rows decay
     * by up to e^-512), whose tiles below the diagonal take their weights as products of
     * factors, most of which underflow */
    for (int f = 0; f < 3; f++)
        for (int H = 2; H <= 8; H += 6) {
            struct tcase c = {RL_ATTN_LINEAR, (enum rl_fmap)f, PE_T5, H, 600, 8, 6, 0.05, 0, 0};
            check_case(&c, 6);
        }
    for (int H = 2; H <= 8; H += 6) {
        struct tcase c = {RL_ATTN_LINEAR, RL_FMAP_ELU1, PE_T5, H, 600, 8, 6, 2.0, 0, 0};
        check_case(&c, 6);
    }
    /* ALiBi's decayed scan without the gate: the gate's scan with the constant log gate
     * -slope (Shen's map: in pieces at 4 heads a call, one piece per head at 16) */
    for (int f = 0; f < 3; f++)
        for (int H = 2; H <= 8; H += 6) {
            struct tcase c = {RL_ATTN_LINEAR, (enum rl_fmap)f, PE_ALIBI, H, 300, 8, 6, 0, 0, 1};
            check_case(&c, 6);
            check_scan_is_fft(&c);
        }
    /* the features' store (two blocks of rows), every placement, gated and not, and the
     * non-causal backward's */
    for (int f = 0; f < 3; f += 2)
        for (int pe = PE_NONE; pe <= PE_ROTDEN; pe++)
            for (int v = 0; v < 3; v++) {
                struct tcase c = {RL_ATTN_LINEAR,
                                  (enum rl_fmap)f,
                                  (enum pe)pe,
                                  2,
                                  300,
                                  8,
                                  6,
                                  v == 1 ? 0.5 : 0,
                                  v == 2,
                                  0};
                check_store_bits(&c);
            }
    {
        struct tcase c = {RL_ATTN_LINEAR, RL_FMAP_ELU1, PE_ALIBI, 2, 300, 8, 6, 0, 0, 1};
        check_store_bits(&c);
        check_keep(&c);
    }
    /* the keep from the forward to the backward: two blocks and one, the same cases */
    for (int f = 0; f < 3; f += 2)
        for (int pe = PE_NONE; pe <= PE_ROTDEN; pe++)
            for (int v = 0; v < 3; v++)
                for (int N = 300; N >= 200; N -= 100) {
                    struct tcase c = {RL_ATTN_LINEAR,
                                      (enum rl_fmap)f,
                                      (enum pe)pe,
                                      2,
                                      N,
                                      8,
                                      6,
                                      v == 1 ? 0.5 : 0,
                                      v == 2,
                                      0};
                    check_keep(&c);
                }
    check_keep_none();
    check_constant_is_alibi(RL_ATTN_SOFTMAX);
    check_constant_is_alibi(RL_ATTN_LINEAR);
    check_refusals();
    /* last: the tests above keep their data */
    for (int pe = PE_NONE; pe <= PE_ROPE; pe++)
        for (int v = 0; v < 3; v++) {
            struct tcase c = {RL_ATTN_LINEAR,
                              RL_FMAP_ELU1,
                              (enum pe)pe,
                              2,
                              600,
                              8,
                              6,
                              v == 1 ? 0.5 : 0,
                              v == 2,
                              0};
            check_caller_keeps(&c);
        }
    return tap_done();
}
