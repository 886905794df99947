/* attn_run_linear.c -- linear attention over G heads (attn_impl.h).
 *
 * ALiBi's causal weight e^{-slope (m-n)} is a constant log gate -slope per row: ALiBi with
 * the forget gate is the gate with log gates lambda - slope, and causal ALiBi by the
 * decayed scan (alibi_scan) the gate with log gates 0 - slope and no gate gradient
 * (rl_attn_linear_kernel_opts).  The maps without Shen's normaliser (elu1, exp), with no PE
 * or RoPE in any placement, with or without the gate (so with ALiBi as a gate too), are
 * cut into (head, block of rows) pieces run in phases (attn_linear_split.c): as many
 * pieces as blocks, whatever the thread count.  So is Shen's map in a call of fewer than
 * 16 heads (rl_attn_linear_pieces), with more phases.  The FFT Toeplitz products (T5,
 * ALiBi) of a call of fewer than 16 heads run in (head, group of features) pieces
 * (attn_toeplitz_split.c), and T5 with the gate in a call of fewer than 16 heads in
 * (head, query block) and (head, key block) pieces (attn_linear_quad.c; T5's gradient in
 * a part per query block, added by (bias head, 256 lags) pieces).  Everything else runs
 * one piece per head:
 *   Shen's map in 16 heads or more, no bias PE   attn_linear.c, scans over the rows (the
 *   or ALiBi as a gate                           gate's decayed scans with it; ALiBi's
 *                                                log gates lambda - slope)
 *   T5, ALiBi in 16 heads or more                attn_toeplitz.c, FFT Toeplitz products
 *   the forget gate with T5 in 16 heads or       quadratic tiles (attn_linear_quad.c): the
 *   more (or parts over the budget of attn.h)    weights have no recurrence
 * T5's relative gradient: in the FFT pieces, a last phase of one piece per bias head adds
 * the heads' correlations in g order; where a call runs one piece per head, each head
 * writes its own part (2N-1 doubles) and (bias head, range of lags) pieces add the parts
 * of heads h, h + H, ... in order (rl_attn_run_linear_t5_parts; over the budget of attn.h,
 * head h's owner sums them into drel in order, one piece per bias head). */
#include "config.h"
#include "attn_impl.h"
#include "attn_linear.h"
#include "attn_toeplitz.h"
#include "../core/threads.h"
#include "../core/util.h"

#include <math.h>
#include <string.h>

int rl_attn_linear_uses_toeplitz(const rl_attn *a)
{
    return a->o.kind == RL_ATTN_LINEAR && a->has_bias && !rl_attn_linear_kernel_opts(&a->o).forget;
}

/* The generic kernels' options: features without a bias PE (ALiBi moved into the gate). */
static struct rl_attn_opts lin_opts(const rl_attn *a) { return rl_attn_linear_kernel_opts(&a->o); }

size_t rl_attn_run_linear_scratch_floats(const rl_attn *a)
{
    if (rl_attn_linear_uses_toeplitz(a)) return 0; /* the Toeplitz plan owns its buffers */
    struct rl_attn_opts o = lin_opts(a);
    size_t k = (rl_attn_linear_scratch_floats(&o, a->N, a->d, a->dv) + 15) & ~(size_t)15;
    return k + (o.forget && a->o.pe == RL_ATTN_PE_ALIBI ? (size_t)a->N : 0); /* ALiBi's gates */
}

/* Head g's operands for attn_linear.c; ALiBi with the gate, a whole head: lambda - slope
 * in scratch.  pieces: the call runs in the pieces form, whose first phases make the gate's
 * decays (ALiBi's slope subtracted there) and Shen's column maxima for the later ones. */
static struct rl_lin_head lin_head(const rl_attn *a, const struct rl_attn_in *in, int g, float *scr,
                                   int pieces)
{
    const size_t       sq = (size_t)a->N * a->d, sv = (size_t)a->N * a->dv;
    struct rl_lin_head h = {.q    = in->q + g * sq,
                            .k    = in->k + g * sq,
                            .v    = in->v + g * sv,
                            .rope = a->has_rope ? &a->rope : NULL,
                            .logf = in->logf ? in->logf + (size_t)g * a->N : a->zeros,
                            .N    = a->N,
                            .d    = a->d,
                            .dv   = a->dv,
                            .rel  = in->logf && a->o.pe == RL_ATTN_PE_T5
                                        ? a->rel + (size_t)(g % a->H) * (2 * a->N - 1)
                                        : NULL};
    if (h.logf && a->o.pe == RL_ATTN_PE_ALIBI && !pieces) {
        struct rl_attn_opts o = lin_opts(a);
        float              *lam =
            scr + ((rl_attn_linear_scratch_floats(&o, a->N, a->d, a->dv) + 15) & ~(size_t)15);
        const float s = (float)a->slopes[g % a->H];
        for (int m = 0; m < a->N; m++)
            lam[m] = h.logf[m] - s;
        h.logf = lam;
        return h; /* ALiBi's gates differ from the call's: the plan sums them */
    }
    if (pieces && rl_attn_linear_shen(&a->o)) { /* made by the MAX phase */
        const double *st = a->linst + (size_t)g * a->linst_head;
        h.colmax         = rl_attn_linear_colmax(st, &a->o, a->N, a->d, a->dv);
        h.ztot           = a->o.causal ? NULL : rl_attn_linear_ztot(st, &a->o, a->N, a->d, a->dv);
    }
    if (pieces && a->lstore_on) { /* the blocks' features, kept from phase to phase */
        const int nb = rl_attn_linear_blocks(a->N);
        h.store      = a->lcur + (size_t)g * a->lstore_head;
        h.have       = a->lhave + (size_t)g * nb;
    }
    if (h.logf && pieces) /* decays made in phase_piece */
        h.dec = a->dec + (size_t)g * a->N;
    else if (h.rel) /* T5's tiles read c, made for the call */
        h.cum = a->cum + (size_t)g * a->N;
    return h;
}

/* Head g for the FFT Toeplitz path and the ALiBi scan: its operands and its row of the
 * relative bias. */
static struct rl_lin_head toeplitz_head(const rl_attn *a, const struct rl_attn_in *in, int g)
{
    const size_t sq = (size_t)a->N * a->d, sv = (size_t)a->N * a->dv;
    return (struct rl_lin_head){.q  = in->q + g * sq,
                                .k  = in->k + g * sq,
                                .v  = in->v + g * sv,
                                .N  = a->N,
                                .d  = a->d,
                                .dv = a->dv,
                                .rel =
                                    a->rel ? a->rel + (size_t)(g % a->H) * (2 * a->N - 1) : NULL};
}

static long head_forward(rl_attn *a, float *o, float *saved, const struct rl_attn_in *in, int g,
                         float *scr, rl_toeplitz *tp)
{
    long bad = 0;
    if (rl_attn_linear_uses_toeplitz(a)) {
        const struct rl_lin_head th = toeplitz_head(a, in, g);
        rl_attn_toeplitz_forward(tp, o, saved, &bad, &th, &a->o);
    } else {
        struct rl_attn_opts      op = lin_opts(a);
        const struct rl_lin_head lh = lin_head(a, in, g, scr, 0);
        rl_attn_linear_forward(o, saved, &bad, &lh, &op, scr);
    }
    return bad;
}

/* ---- a call in pieces, run phase by phase ---- */

/* One call in pieces (the split form here, the FFT pieces below): its operands, its G
 * heads and the pieces per head of its sums phase (blocks of rows, or groups of features). */
struct call {
    rl_attn                    *a;
    const struct rl_attn_in    *in;
    const struct rl_attn_grads *gr;
    float                      *o, *saved;
    const float                *dout;
    int                         G, per;
};

/* A piece of phase k: p indexes the phase's pieces (for a per-head phase, p is the head). */
typedef long (*piece_fn)(const struct call *c, int k, long p);

/* 1 for the caller that ends the last of head g's pending pieces (seq_cst: the others'
 * writes are visible to it) */
static int ends_head(int *pending, int g)
{
    int left;
#pragma omp atomic capture seq_cst
    left = --pending[g];
    return left == 0;
}

/* Phase k's np pieces fn(c, k, p), booked as a region of np pieces.  then >= 0 (np = G per,
 * head p / per): the per-head phase that needs all of a head's pieces of this one, run by
 * the thread that ends the head's last piece -- within this region, rather than in a
 * region of G pieces between two of G per, whose idle threads may have gone to sleep by
 * the next (on the 16-core machine the rows phase after such a region got slower from 8
 * threads to 16).  Which thread runs a head's per-head piece does not change its sums.
 * The serial fraction books the per-head pieces' time as a region of G pieces. */
static long run_pieces(const struct call *c, piece_fn fn, int k, long np, int then,
                       const char *name)
{
    int   *pending = c->a->pending;
    long   bad     = 0;
    double t0 = rl_region_begin(), tail = 0; /* tail: the per-head pieces' ms, booked */
    for (int g = 0; then >= 0 && g < c->G; g++)
        pending[g] = c->per;
#pragma omp parallel for schedule(dynamic, 1) reduction(+ : bad, tail)                             \
    num_threads(rl_attn_team(c->a, np))
    for (long p = 0; p < np; p++) {
        bad += fn(c, k, p);
        if (then < 0 || !ends_head(pending, (int)(p / c->per))) continue;
        const double h0 = t0 >= 0 ? rl_now_ms() : 0;
        bad += fn(c, then, p / c->per);
        if (t0 >= 0) tail += rl_now_ms() - h0;
    }
    rl_region_end_tail(t0, np, name, tail, c->G);
    return bad;
}

/* ---- the split form: phases of (head, block) pieces ---- */

enum phase_kind {
    F_SUMS,
    F_PREFIX,
    F_ROWS,
    B_SUMS,
    B_PREFIX,
    B_ROWS,
    B_GATE, /* Shen: dZ's suffix or dk's column sums; the gate: dlogf's suffix */
    MAX,    /* Shen's column maxima, forward and backward */
    MAXIMA,
    B_RSUMS, /* Shen's backward */
    B_SUFFIX,
    B_FIX
};

/* ALiBi with the gate: head g's slope, the constant log gate it adds to the gate's (the
 * float logf - slope, as lin_head makes for a whole head); else 0. */
static float alibi_gate(const rl_attn *a, int g)
{
    return a->o.pe == RL_ATTN_PE_ALIBI ? (float)a->slopes[g % a->H] : 0.0f;
}

static long phase_piece(const struct call *f, enum phase_kind k, int g, int b, float *scr)
{
    rl_attn                 *a  = f->a;
    struct rl_attn_opts      op = lin_opts(a);
    const struct rl_lin_head h  = lin_head(a, f->in, g, scr, 1);
    const size_t             sv = (size_t)a->N * a->dv, sq = (size_t)a->N * a->d;
    double                  *st = a->linst + (size_t)g * a->linst_head;
    float                   *o = f->o + g * sv, *den = f->saved + (size_t)g * a->N;
    const float             *dout = f->dout ? f->dout + g * sv : NULL;
    if (h.dec && (k == F_SUMS || k == B_SUMS)) /* the first phase: the block's decays */
        rl_attn_linear_decays((double *)h.dec, h.logf, alibi_gate(a, g), b, a->N);
    switch (k) {
    case MAX:
        rl_attn_linear_max(st, &h, &op, b, scr);
        break;
    case MAXIMA:
        rl_attn_linear_maxima(st, &h, &op);
        break;
    case F_SUMS:
        rl_attn_linear_fwd_sums(st, &h, &op, b, scr);
        break;
    case F_PREFIX:
        rl_attn_linear_fwd_prefix(st, &h, &op, scr);
        break;
    case F_ROWS:
        return rl_attn_linear_fwd_rows(o, den, st, &h, &op, b, scr);
    case B_SUMS:
        rl_attn_linear_bwd_sums(st, dout, o, den, &h, &op, b, scr);
        break;
    case B_PREFIX:
        rl_attn_linear_bwd_prefix(st, &h, &op, scr);
        break;
    case B_ROWS: {
        const struct rl_lin_grads lg = {f->gr->dq + g * sq, f->gr->dk + g * sq, f->gr->dv + g * sv,
                                        f->in->logf ? f->gr->dlogf + (size_t)g * a->N : NULL, NULL};
        rl_attn_linear_bwd_rows(&lg, st, dout, o, den, &h, &op, b, scr);
        break;
    }
    case B_GATE:
        if (rl_attn_linear_shen(&a->o)) rl_attn_linear_shen_tail(st, &h, &op, scr);
        if (f->in->logf) rl_attn_gate_suffix(f->gr->dlogf + (size_t)g * a->N, a->N);
        break;
    case B_RSUMS:
        rl_attn_linear_bwd_rsums(st, dout, o, den, &h, &op, b, scr);
        break;
    case B_SUFFIX:
        rl_attn_linear_bwd_suffix(st, &h, &op, scr);
        break;
    case B_FIX:
        rl_attn_linear_bwd_fix(f->gr->dk + g * sq, st, &h, &op, b, scr);
        break;
    }
    return 0;
}

/* the block phases' names in the region profile (core/threads.h): a head's prefix runs in
 * its sums phase, the gate's suffix in the backward's rows phase */
static const char *phase_name(enum phase_kind k)
{
    static const char *const names[B_FIX + 1] = {"linear: forward sums and prefix",
                                                 "",
                                                 "linear: forward rows",
                                                 "linear: backward sums and prefix",
                                                 "",
                                                 "linear: backward rows",
                                                 "",
                                                 "linear (Shen): column maxima",
                                                 "",
                                                 "linear (Shen): backward reverse sums",
                                                 "",
                                                 "linear (Shen): backward dk"};
    return names[k];
}

/* piece p of phase k of the split form: (head, block), or the head of a per-head phase */
static long split_piece(const struct call *f, int k, long p)
{
    const int per_head =
        k == F_PREFIX || k == B_PREFIX || k == B_GATE || k == MAXIMA || k == B_SUFFIX;
    const int g = per_head ? (int)p : (int)(p / f->per), b = per_head ? -1 : (int)(p % f->per);
    return phase_piece(f, (enum phase_kind)k, g, b, f->a->scratch[rl_thread_slot()]);
}

/* A block phase of the split form; then: the per-head phase run at each head's end, or -1. */
static long run_phase(const struct call *f, enum phase_kind k, int then)
{
    return run_pieces(f, split_piece, k, (long)f->G * f->per, then, phase_name(k));
}

static int split_call(const rl_attn *a, int G) { return rl_attn_linear_pieces(&a->o, G); }

static long split_forward(rl_attn *a, float *o, float *saved, const struct rl_attn_in *in, int G)
{
    const struct call f = {a, in, NULL, o, saved, NULL, G, rl_attn_linear_blocks(a->N)};
    if (rl_attn_linear_shen(&a->o)) run_phase(&f, MAX, MAXIMA);
    run_phase(&f, F_SUMS, F_PREFIX);
    return run_phase(&f, F_ROWS, -1);
}

static void split_backward(rl_attn *a, const struct rl_attn_grads *gr, const float *dout,
                           const float *o, const float *saved, const struct rl_attn_in *in, int G)
{
    const struct call f = {
        a, in, gr, (float *)o, (float *)saved, dout, G, rl_attn_linear_blocks(a->N)};
    const int shen = rl_attn_linear_shen(&a->o);
    if (shen) run_phase(&f, MAX, MAXIMA);
    run_phase(&f, B_SUMS, B_PREFIX);
    if (shen && a->o.causal) run_phase(&f, B_RSUMS, B_SUFFIX);
    run_phase(&f, B_ROWS, in->logf || shen ? B_GATE : -1);
    if (shen) run_phase(&f, B_FIX, -1);
}

/* ---- T5 with the gate in a call of few heads: (head, block) pieces ---- */

enum quad_phase { Q_FEATURES, Q_ROWS, Q_QUERY, Q_KEY, Q_HEAD };

static const char *const quad_names[Q_HEAD + 1] = {
    "linear T5 + gate: features", "linear T5 + gate: forward rows",
    "linear T5 + gate: backward query blocks", "linear T5 + gate: backward key blocks", ""};

int rl_attn_quad_call(const rl_attn *a, int G)
{
    return rl_attn_linear_quad_pieces(&a->o, G, a->N);
}

/* piece p of phase k: (head, block), or the head of Q_FEATURES and Q_HEAD */
static long quad_piece(const struct call *c, int k, long p)
{
    rl_attn     *a   = c->a;
    const int    per = k == Q_FEATURES || k == Q_HEAD, g = per ? (int)p : (int)(p / c->per);
    const int    b  = per ? -1 : (int)(p % c->per);
    const size_t sq = (size_t)a->N * a->d, sv = (size_t)a->N * a->dv;
    float       *scr            = a->scratch[rl_thread_slot()];
    const struct rl_attn_opts o = lin_opts(a);
    const struct rl_lin_head  h = lin_head(a, c->in, g, scr, 0);
    const struct rl_lin_quad  s = rl_attn_linear_quad_store(
         a->quad + g * rl_attn_linear_quad_store_floats(a->N, a->d, a->dv),
        c->dout && c->gr->dt5 ? a->t5part + g * rl_attn_linear_quad_part_doubles(a->N) : NULL, a->N,
         a->d, a->dv);
    switch (k) {
    case Q_FEATURES:
        rl_attn_linear_quad_features(&s, &h, &o, scr);
        break;
    case Q_ROWS:
        return rl_attn_linear_quad_fwd_rows(c->o + g * sv, c->saved + (size_t)g * a->N, &s, &h, &o,
                                            b, scr);
    case Q_QUERY:
        rl_attn_linear_quad_bwd_query(&s, c->dout + g * sv, c->o + g * sv,
                                      c->saved + (size_t)g * a->N, &h, &o, b, scr);
        break;
    case Q_KEY:
        rl_attn_linear_quad_bwd_key(c->gr->dv + g * sv, &s, &h, &o, b, scr);
        break;
    case Q_HEAD: {
        const struct rl_lin_grads lg = {c->gr->dq + g * sq, c->gr->dk + g * sq, c->gr->dv + g * sv,
                                        c->gr->dlogf + (size_t)g * a->N, NULL};
        rl_attn_linear_quad_bwd_head(&lg, &s, &h, &o, scr);
        break;
    }
    }
    return 0;
}

static long quad_phase(const struct call *c, enum quad_phase k, int then)
{
    const long np = k == Q_FEATURES ? c->G : (long)c->G * c->per;
    return run_pieces(c, quad_piece, k, np, then, quad_names[k]);
}

static long quad_forward(rl_attn *a, float *o, float *saved, const struct rl_attn_in *in, int G)
{
    const struct call c = {a, in, NULL, o, saved, NULL, G, rl_attn_linear_blocks(a->N)};
    quad_phase(&c, Q_FEATURES, -1);
    return quad_phase(&c, Q_ROWS, -1);
}

/* T5's parts into each bias head's drel: (bias head, 256 lags) pieces */
static void quad_drel(rl_attn *a, int G)
{
    const int  N = a->N, nr = (N + 255) / 256, nh = G < a->H ? G : a->H;
    const long np = (long)nh * nr;
    double     t0 = rl_region_begin();
#pragma omp parallel for schedule(static) num_threads(rl_attn_team(a, np))
    for (long p = 0; p < np; p++) {
        const int h = (int)(p / nr), r0 = (int)(p % nr) * 256, r1 = r0 + 256 < N ? r0 + 256 : N;
        rl_attn_linear_quad_drel(a->drel + (size_t)h * (2 * N - 1), a->t5part,
                                 rl_attn_linear_quad_part_doubles(N), G, a->H, h, N, r0, r1);
    }
    rl_region_end(t0, np);
}

static void quad_backward(rl_attn *a, const struct rl_attn_grads *gr, const float *dout,
                          const float *o, const float *saved, const struct rl_attn_in *in, int G)
{
    const struct call c = {
        a, in, gr, (float *)o, (float *)saved, dout, G, rl_attn_linear_blocks(a->N)};
    quad_phase(&c, Q_FEATURES, -1);
    quad_phase(&c, Q_QUERY, -1);
    quad_phase(&c, Q_KEY, Q_HEAD);
    if (gr->dt5) quad_drel(a, G);
}

/* ---- the FFT products of few heads: (head, group of features) pieces ---- */

enum fft_phase { T_PREPARE, T_SUMS, T_ROWS, T_GRADS, T_DREL };

static const char *const fft_names[2][T_DREL + 1] = {
    {"FFT: forward features", "FFT: forward sums", "FFT: forward rows", "", ""},
    {"FFT: backward features", "FFT: backward sums and grads", "", "", "FFT: T5 bias gradient"}};

/* piece p of phase k: (head, group of the c->per), (head, row block) or a head */
static long fft_piece(const struct call *c, int k, long p)
{
    rl_attn                  *a  = c->a;
    const int                 nb = rl_toeplitz_row_blocks(a->N), N = a->N;
    const int                 g  = (int)(k == T_SUMS ? p / c->per : k == T_ROWS ? p / nb : p);
    const size_t              sq = (size_t)N * a->d, sv = (size_t)N * a->dv;
    const struct rl_lin_head  th = toeplitz_head(a, c->in, g);
    const struct rl_lin_grads lg = {
        c->dout ? c->gr->dq + g * sq : NULL, c->dout ? c->gr->dk + g * sq : NULL,
        c->dout ? c->gr->dv + g * sv : NULL, NULL,
        c->dout && c->gr->dt5 ? a->drel + (size_t)(g % a->H) * (2 * N - 1) : NULL};
    const struct rl_toeplitz_piece tp = {a->toeplitz[rl_thread_slot()],
                                         a->tstore[g],
                                         &th,
                                         &a->o,
                                         a->tpart + (size_t)g * c->per *
                                                        rl_toeplitz_part_doubles(N, a->dv),
                                         c->per,
                                         c->o + g * sv,
                                         c->saved + (size_t)g * N,
                                         c->dout ? c->dout + g * sv : NULL,
                                         &lg};
    switch (k) {
    case T_PREPARE:
        rl_toeplitz_split_prepare(&tp);
        break;
    case T_SUMS:
        rl_toeplitz_split_sums(&tp, (int)(p % c->per));
        break;
    case T_ROWS:
        return rl_toeplitz_split_rows(&tp, (int)(p % nb));
    case T_GRADS:
        rl_toeplitz_split_grads(&tp);
        break;
    case T_DREL:
        rl_toeplitz_split_drel(&tp, (c->G - g + a->H - 1) / a->H, a->H);
        break;
    }
    return 0;
}

/* Phase k of the FFT pieces; then = T_GRADS: each head's grads at the end of its sums */
static long fft_phase(const struct call *c, enum fft_phase k, int then)
{
    const long np = k == T_SUMS   ? (long)c->G * c->per
                    : k == T_ROWS ? (long)c->G * rl_toeplitz_row_blocks(c->a->N)
                    : k == T_DREL ? (c->G < c->a->H ? c->G : c->a->H)
                                  : c->G;
    return run_pieces(c, fft_piece, k, np, then, fft_names[c->dout != NULL][k]);
}

int rl_attn_fft_groups(const rl_attn *a, int G)
{
    return rl_toeplitz_fft(&a->o) ? rl_toeplitz_groups(G, a->N, a->d, a->dv) : 0;
}

static long fft_forward(rl_attn *a, float *o, float *saved, const struct rl_attn_in *in, int G)
{
    const struct call c = {a, in, NULL, o, saved, NULL, G, rl_attn_fft_groups(a, G)};
    fft_phase(&c, T_PREPARE, -1);
    fft_phase(&c, T_SUMS, -1);
    return fft_phase(&c, T_ROWS, -1);
}

static void fft_backward(rl_attn *a, const struct rl_attn_grads *gr, const float *dout,
                         const float *o, const float *saved, const struct rl_attn_in *in, int G)
{
    const struct call c = {
        a, in, gr, (float *)o, (float *)saved, dout, G, rl_attn_fft_groups(a, G)};
    fft_phase(&c, T_PREPARE, -1);
    fft_phase(&c, T_SUMS, T_GRADS);
    if (a->o.pe == RL_ATTN_PE_T5 && gr->dt5) fft_phase(&c, T_DREL, -1);
}

long rl_attn_run_linear_forward(rl_attn *a, float *o, float *saved, const struct rl_attn_in *in,
                                int G)
{
    if (rl_attn_fft_groups(a, G)) return fft_forward(a, o, saved, in, G);
    if (rl_attn_quad_call(a, G)) return quad_forward(a, o, saved, in, G);
    if (split_call(a, G)) return split_forward(a, o, saved, in, G);
    const size_t sv  = (size_t)a->N * a->dv;
    long         bad = 0;
    double       t0  = rl_region_begin();
#pragma omp parallel for schedule(dynamic, 1) reduction(+ : bad) num_threads(rl_attn_team(a, G))
    for (int g = 0; g < G; g++) {
        int t = rl_thread_slot();
        bad += head_forward(a, o + g * sv, saved + (size_t)g * a->N, in, g, a->scratch[t],
                            a->toeplitz[t]);
    }
    rl_region_end(t0, G);
    return bad;
}

/* head g's backward; drel: the 2N-1 doubles its T5 gradient is added to, or NULL */
static void head_backward(rl_attn *a, const struct rl_attn_grads *gr, const float *dout,
                          const float *o, const float *saved, const struct rl_attn_in *in, int g,
                          double *drel, float *scr, rl_toeplitz *tp)
{
    const size_t              sq = (size_t)a->N * a->d, sv = (size_t)a->N * a->dv;
    const int                 N  = a->N;
    const struct rl_lin_grads lg = {gr->dq + g * sq, gr->dk + g * sq, gr->dv + g * sv,
                                    in->logf ? gr->dlogf + (size_t)g * N : NULL, drel};
    dout += g * sv, o += g * sv, saved += (size_t)g * N;
    if (rl_attn_linear_uses_toeplitz(a)) {
        const struct rl_lin_head th = toeplitz_head(a, in, g);
        rl_attn_toeplitz_backward(tp, &lg, dout, o, saved, &th, &a->o);
    } else {
        struct rl_attn_opts      op = lin_opts(a);
        const struct rl_lin_head lh = lin_head(a, in, g, scr, 0);
        rl_attn_linear_backward(&lg, dout, o, saved, &lh, &op, scr);
    }
}

/* T5's gradient of a call of G heads one piece per head: a part per head (2N-1 doubles,
 * its doubles returned), summed per bias head afterwards; 0 where the call does not run
 * one piece per head, or the parts would pass RL_ATTN_T5_PARTS_BYTES (then head h's owner
 * sums heads g = h, h + H, ... into drel in order, one piece per bias head). */
size_t rl_attn_run_linear_t5_parts(const rl_attn *a, int G)
{
    if (a->o.kind != RL_ATTN_LINEAR || a->o.pe != RL_ATTN_PE_T5 || split_call(a, G) ||
        rl_attn_fft_groups(a, G))
        return 0;
    if (rl_attn_quad_call(a, G)) return (size_t)G * rl_attn_linear_quad_part_doubles(a->N);
    const size_t n = (size_t)G * (2 * (size_t)a->N - 1);
    return 8.0 * (double)n <= RL_ATTN_T5_PARTS_BYTES ? n : 0;
}

/* The heads' T5 parts (a->t5part) into each bias head's drel: piece (h, range of 256 lags)
 * adds heads g = h, h + H, ... in order. */
static void reduce_heads(rl_attn *a, int G)
{
    const int  R = 2 * a->N - 1, nr = (R + 255) / 256;
    const long np = (long)a->H * nr;
    double     t0 = rl_region_begin();
#pragma omp parallel for schedule(static) num_threads(rl_attn_team(a, np))
    for (long p = 0; p < np; p++) {
        const int h = (int)(p / nr), r0 = (int)(p % nr) * 256, r1 = r0 + 256 < R ? r0 + 256 : R;
        double   *drel = a->drel + (size_t)h * R;
        for (int g = h; g < G; g += a->H)
            for (int r = r0; r < r1; r++)
                drel[r] += a->t5part[(size_t)g * R + r];
    }
    rl_region_end(t0, np);
}

void rl_attn_run_linear_backward(rl_attn *a, const struct rl_attn_grads *gr, const float *dout,
                                 const float *o, const float *saved, const struct rl_attn_in *in,
                                 int G)
{
    if (split_call(a, G)) {
        split_backward(a, gr, dout, o, saved, in, G);
        return;
    }
    if (rl_attn_fft_groups(a, G)) {
        fft_backward(a, gr, dout, o, saved, in, G);
        return;
    }
    if (rl_attn_quad_call(a, G)) {
        quad_backward(a, gr, dout, o, saved, in, G);
        return;
    }
    const size_t R     = 2 * (size_t)a->N - 1;
    const int    t5    = a->o.pe == RL_ATTN_PE_T5 && gr->dt5;
    const int    owner = t5 && !rl_attn_run_linear_t5_parts(a, G);
    const int    np    = owner ? a->H : G; /* head h's owner takes g = h, h + H, ... in order */
    double       t0    = rl_region_begin();
#pragma omp parallel for schedule(dynamic, 1) num_threads(rl_attn_team(a, np))
    for (int p = 0; p < np; p++) {
        int t = rl_thread_slot();
        for (int g = p; g < G; g += owner ? a->H : G) {
            double *drel = owner ? a->drel + (size_t)(g % a->H) * R : NULL;
            if (t5 && !owner) /* head g's own T5 gradient, summed per bias head below */
                memset(drel = a->t5part + (size_t)g * R, 0, R * sizeof(double));
            head_backward(a, gr, dout, o, saved, in, g, drel, a->scratch[t], a->toeplitz[t]);
        }
    }
    rl_region_end(t0, np);
    if (t5 && !owner) reduce_heads(a, G);
}
