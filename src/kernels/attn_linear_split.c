/* attn_linear_split.c -- linear attention cut into pieces by the problem: blocks of
 * RL_LIN_BLOCK rows of each head (attn_linear.h), for the feature maps elu1 and exp and
 * Shen's map (in calls of few heads), with or without RoPE and the forget gate (and ALiBi
 * beside the gate: its constant log gate).
 *
 * A causal scan carries a state from row to row; its value at a block's start is the sum
 * of the blocks before it.  So a call runs in phases, each a loop over pieces:
 *   sums     (head, block)  the block's own increment of every state: C^T V and sum E for
 *                           the forward (the gate weighs each term by its decay to the
 *                           block's end), V^T C, A^T dnum, sum dden B for the backward
 *                           (all from one build of the block's features);
 *   prefix   (head)         the states at every block start (an exclusive prefix in block
 *                           order, each carried state decayed across its block; run inside
 *                           the sums' region by the thread that ends the head's last block,
 *                           attn_run_linear.c), and for
 *                           the backward's reverse scans the suffixes at every block end,
 *                           or the totals (non-causal);
 *   rows     (head, block)  the block's rows from its start states: the scans of
 *                           attn_linear_scan.c, the denominators, the chain rule.
 * The float scan state of a block starts from the double state and the double states add
 * the blocks' increments in block order, so the sums are fixed by N and not by the thread
 * count.  Causal, a block's increments are read only by the blocks after it (the reverse
 * states' by those before it), so the last block makes no forward increments and the
 * first no reverse ones: at N <= RL_LIN_BLOCK the sums phases build nothing.
 *
 * The maps without Shen's normaliser keep each block's features (and, in the backward,
 * dnum and dden) in a store per call (rl_lin_head.store, within RL_ATTN_STORE_BYTES) from
 * the first phase that builds a side to the later ones, which read them instead of
 * building them again: the forward's rows phase builds only the queries, the backward's
 * nothing.  Either way a feature has the same bits.
 *
 * With the gate, the rows leave dc_m in dlogf and the caller takes the suffix sums per head
 * (rl_attn_gate_suffix).
 *
 * Shen's map adds a phase of column maxima before the sums, and in the backward a last
 * phase for dk and, causal, a phase of reverse increments after the prefix
 * (attn_linear.h).
 *
 * A head's states, st: nb + 1 slots (the last: non-causal totals, or the running sums) of
 *   [S: D x dv | z: Dd | G: D x dv | g: Dd | Shen: Z: d | W: d]  doubles
 * (the backward keeps V^T C, dv x D, in S), then for Shen nb + 1 rows of d floats: the
 * blocks' column maxima and the head's. */
#include "config.h"
#include "attn.h"
#include "attn_linear.h"
#include "attn_linear_impl.h"
#include "attn_linear_plan.h"
#include "featmap.h"
#include "rope.h"
#include "../core/gemm.h"
#include "../core/tilemm.h"

#include <math.h>
#include <string.h>

struct rl_attn_opts rl_attn_linear_kernel_opts(const struct rl_attn_opts *o)
{
    struct rl_attn_opts k = *o;
    if (o->kind != RL_ATTN_LINEAR || o->pe != RL_ATTN_PE_ALIBI) return k;
    if (o->forget || (o->alibi_scan && o->causal)) k.pe = RL_ATTN_PE_NONE, k.forget = 1;
    return k;
}

int rl_attn_linear_splits(const struct rl_attn_opts *o)
{
    const struct rl_attn_opts k = rl_attn_linear_kernel_opts(o);
    return k.kind == RL_ATTN_LINEAR && (k.pe == RL_ATTN_PE_NONE || k.pe == RL_ATTN_PE_ROPE);
}

int rl_attn_linear_shen(const struct rl_attn_opts *o)
{
    return rl_attn_linear_splits(o) && o->fmap == RL_FMAP_SOFTMAX;
}

/* elu1 and exp: every call (their pieces cost little more than a head's loop).  Shen's map:
 * calls of fewer than SHEN_SPLIT_HEADS heads only, where a piece per head would leave
 * threads idle; its causal pieces build a block's features up to four times (on one
 * thread 1.18x a head loop's forward time, 1.31x its backward's). */
#define SHEN_SPLIT_HEADS 16

int rl_attn_linear_pieces(const struct rl_attn_opts *o, int G)
{
    return rl_attn_linear_splits(o) && (!rl_attn_linear_shen(o) || G < SHEN_SPLIT_HEADS);
}

int rl_attn_linear_state_heads(const struct rl_attn_opts *o, int G)
{
    if (!rl_attn_linear_splits(o)) return 0;
    return rl_attn_linear_shen(o) && G >= SHEN_SPLIT_HEADS ? SHEN_SPLIT_HEADS - 1 : G;
}

int rl_attn_linear_blocks(int N) { return (N + RL_LIN_BLOCK - 1) / RL_LIN_BLOCK; }

size_t rl_attn_linear_store_floats(const struct rl_attn_opts *o, int N, int d, int dv)
{
    const struct rl_attn_opts k = rl_attn_linear_kernel_opts(o);
    if (!rl_attn_linear_splits(o)) return 0;
    return (size_t)rl_attn_linear_blocks(N) *
           rl_lin_block_store_floats(&k, k.pe == RL_ATTN_PE_ROPE, N, d, dv);
}

void rl_attn_linear_store_begin(unsigned char *have, int G, int N, int kept)
{
    memset(have, kept ? SIDE_K | SIDE_Q : 0, (size_t)G * rl_attn_linear_blocks(N));
}

double rl_attn_linear_store_bytes(const struct rl_attn_opts *o, int G, int N, int d, int dv)
{
    if (!rl_attn_linear_pieces(o, G) || rl_attn_linear_blocks(N) < 2) return 0;
    const double n = 4.0 * G * (double)rl_attn_linear_store_floats(o, N, d, dv);
    return n <= RL_ATTN_STORE_BYTES ? n : 0;
}

void rl_attn_linear_decays(double *dec, const float *logf, float slope, int b, int N)
{
    const int t0 = b * RL_LIN_BLOCK, t1 = t0 + rl_lin_block_rows(N, t0);
    for (int m = t0; m < t1; m++) /* logf - 0 is logf, bit for bit */
        dec[m] = exp((double)(logf[m] - slope));
}

/* A slot's doubles: S, z, G, g and, with Shen's map (zd = d), Z and W. */
static size_t slot_doubles(int D, int Dd, int dv, int zd)
{
    return 2 * ((size_t)D * dv + (size_t)Dd + (size_t)zd);
}

/* One slot's doubles from the options (the widths of attn_linear.c's table: causal Shen
 * with RoPE at the feature place doubles the numerator's features, and the rotated
 * denominator's). */
static size_t opts_slot_doubles(const struct rl_attn_opts *o, int d, int dv)
{
    const int shen = rl_attn_linear_shen(o);
    const int feat =
        shen && o->causal && o->pe == RL_ATTN_PE_ROPE && o->rope_place == RL_ROPE_PLACE_FEATURE;
    const int D  = feat ? 2 * d : d,
              Dd = feat && o->rope_denominator == RL_ROPE_DENOM_ROTATED ? D : d;
    return slot_doubles(D, Dd, dv, shen ? d : 0);
}

/* The nb + 1 slots' doubles, and the column maxima's (nb + 1 rows of d floats) after them. */
static size_t slots_doubles(const struct rl_attn_opts *o, int N, int d, int dv, size_t *maxima)
{
    const int nb = rl_attn_linear_blocks(N);
    *maxima      = rl_attn_linear_shen(o) ? ((size_t)(nb + 1) * d + 1) / 2 : 0;
    return (size_t)(nb + 1) * opts_slot_doubles(o, d, dv);
}

size_t rl_attn_linear_state_doubles(const struct rl_attn_opts *o, int N, int d, int dv)
{
    size_t maxima, slots = slots_doubles(o, N, d, dv, &maxima);
    return slots + maxima;
}

/* Shen's column maxima of k: block b's in row b, the head's in row nb. */
static float *maxima_of(const double *st, const struct rl_attn_opts *o, int N, int d, int dv)
{
    size_t maxima;
    return (float *)(st + slots_doubles(o, N, d, dv, &maxima));
}

const float *rl_attn_linear_colmax(const double *st, const struct rl_attn_opts *o, int N, int d,
                                   int dv)
{
    return maxima_of(st, o, N, d, dv) + (size_t)rl_attn_linear_blocks(N) * d;
}

/* Causal Shen, Z: the sum of u over the block's rows (its prefix before the block, after
 * the prefix phase); W: the sum of dZ over the block's rows (its suffix after the block).
 * Non-causal Shen, Z: the sum of exp(k - the block's maxima) over its rows (the last
 * slot's: Ztot, the sum of u over all rows); W: the block's column sums of dk's first
 * part (the last slot's: their total). */
struct slot {
    double *S, *z, *G, *g, *Z, *W;
};

/* Z of slot b without a plan: the options' widths. */
static double *slot_Z(const double *st, const struct rl_attn_opts *o, int d, int dv, int b)
{
    const size_t slot = opts_slot_doubles(o, d, dv);
    return (double *)st + (size_t)(b + 1) * slot - 2 * (size_t)d; /* Z and W end the slot */
}

const double *rl_attn_linear_ztot(const double *st, const struct rl_attn_opts *o, int N, int d,
                                  int dv)
{
    return slot_Z(st, o, d, dv, rl_attn_linear_blocks(N));
}

static struct slot slot_of(const struct lin_plan *p, double *st, int b)
{
    const size_t Dv = (size_t)p->D * p->dv;
    const int    zd = p->shen ? p->d : 0;
    double      *x  = st + (size_t)b * slot_doubles(p->D, p->Dd, p->dv, zd);
    double      *Z  = x + 2 * (Dv + (size_t)p->Dd);
    return (struct slot){x, x + Dv, x + Dv + p->Dd, x + 2 * Dv + p->Dd, Z, Z + zd};
}

static int rows_of(const struct lin_plan *p, int b)
{
    return rl_lin_block_rows(p->N, b * RL_LIN_BLOCK);
}

/* ---- Shen's column maxima ------------------------------------------------------------- */

/* Non-causal too: the block's sum of exp(k - its maxima), which the head's step rescales
 * to the head's maxima. */
void rl_attn_linear_max(double *st, const struct rl_lin_head *h, const struct rl_attn_opts *o,
                        int b, float *scratch)
{
    const int    d = h->d, t0 = b * RL_LIN_BLOCK;
    const int    l  = rl_lin_block_rows(h->N, t0);
    const float *k  = h->k + (size_t)t0 * d;
    float       *cm = maxima_of(st, o, h->N, d, h->dv) + (size_t)b * d;
    if (h->rope && o->rope_place == RL_ROPE_PLACE_INPUT) /* the map reads R_n k_n */
        rl_rope_rotate(h->rope, scratch, d, k, d, l, t0, 0), k = scratch;
    if (o->causal) {
        rl_fmap_colmax(cm, k, l, d);
        return;
    }
    float  *u = scratch + (size_t)l * d;
    double *Z = slot_Z(st, o, d, h->dv, b);
    rl_fmap_k_forward(u, cm, k, l, d, RL_FMAP_SOFTMAX); /* exp(k - the block's maxima) */
    memset(Z, 0, (size_t)d * sizeof(double));
    rl_lin_sum_rows(Z, u, l, d);
}

/* The head's maxima (a max: the same in any order) and, non-causal, Ztot = sum over the
 * blocks, in block order, of each block's sum rescaled to them. */
void rl_attn_linear_maxima(double *st, const struct rl_lin_head *h, const struct rl_attn_opts *o)
{
    const int nb = rl_attn_linear_blocks(h->N), d = h->d;
    float    *cm = maxima_of(st, o, h->N, d, h->dv), *head = cm + (size_t)nb * d;
    rl_fmap_colmax(head, cm, nb, d); /* the blocks' maxima are rows of the table */
    if (o->causal) return;
    double *tot = slot_Z(st, o, d, h->dv, nb);
    memset(tot, 0, (size_t)d * sizeof(double));
    for (int b = 0; b < nb; b++) {
        const double *Z = slot_Z(st, o, d, h->dv, b);
        for (int f = 0; f < d; f++)
            tot[f] += Z[f] * exp((double)cm[(size_t)b * d + f] - (double)head[f]);
    }
}

/* Causal Shen: the block's increment of Z (u = p->phk, built) */
static void z_increment(const struct lin_plan *p, struct slot s, int l)
{
    if (!p->shen || !p->causal) return;
    memset(s.Z, 0, (size_t)p->d * sizeof(double));
    rl_lin_sum_rows(s.Z, p->phk, l, p->d);
}

/* X (l x nx) with its rows weighted by w into p->Kw (the gate), or X itself. */
static const float *weighted(struct lin_plan *p, const float *X, int l, int nx, const double *w)
{
    if (!w) return X;
    rl_lin_weight_rows(p->Kw, X, w, l, nx);
    return p->Kw;
}

/* The increments of block b: S += X^T Y (X weighted), z += sum E (weighted). */
static void increment(struct lin_plan *p, struct slot s, const float *X, int nx, const float *Y,
                      int ny, int l, const double *w)
{
    memset(s.S, 0, (size_t)nx * ny * sizeof(double));
    memset(s.z, 0, (size_t)p->Dd * sizeof(double));
    rl_lin_gemm_acc(s.S, p->Gf, weighted(p, X, l, nx, w), nx, Y, ny, l);
    if (w)
        rl_lin_sum_rows_decay(s.z, p->E, l, p->Dd, w, 1.0);
    else
        rl_lin_sum_rows(s.z, p->E, l, p->Dd);
}

/* Causal scans read a block's increments only in the blocks after it (the forward states,
 * an exclusive prefix) or before it (the reverse states, an exclusive suffix): the last
 * block's forward increments and the first block's reverse ones are never read, and at
 * N <= RL_LIN_BLOCK (one block) no increment is.  Their pieces skip them. */
static int unread_forward(const struct lin_plan *p, int b) { return p->causal && b == p->nb - 1; }
static int unread_reverse(const struct lin_plan *p, int b) { return p->causal && b == 0; }

/* One step of an exclusive scan: x (the block's increment) becomes the state before the
 * block, run the state after it -- or, on the last block the scan visits (whose increment
 * was never made), x the state before it and run left as it is. */
static void carry_step(double *x, double *run, size_t n, double bd, int causal, int last)
{
    if (causal && last)
        memcpy(x, run, n * sizeof *x);
    else
        rl_lin_carry(x, run, n, bd, causal);
}

/* ---- forward ---------------------------------------------------------------------------- */

/* The start of a phase on block b: the features of side (causal Shen's queries from Z
 * before the block, in slot s) and, in the backward (dout given) with the queries, dnum
 * and dden. */
static void block_begin(struct lin_plan *p, const struct rl_lin_head *h, struct slot s, int b,
                        int side, const float *dout, const float *out, const float *den)
{
    const int t0 = b * RL_LIN_BLOCK, l = rows_of(p, b), dv = p->dv;
    if (p->shen && p->causal && (side & SIDE_Q))
        memcpy(p->Zrun, s.Z, (size_t)p->d * sizeof(double));
    int build = side; /* the sides to build: those the store lacks */
    int dn    = dout && (side & SIDE_Q) ? SIDE_DOUT : 0; /* dnum, dden with the queries */
    if (h->store) {
        rl_lin_plan_to_block(p, h->store, b);
        build = side & ~h->have[b];
        dn &= ~h->have[b];
        h->have[b] |= (unsigned char)(side | dn);
    }
    rl_lin_build_block(p, h->q, h->k, t0, l, build);
    if (p->input_rot) { /* a stored side's rotated inputs are in the store too */
        if (side & ~build & SIDE_Q) p->q = p->xq;
        if (side & ~build & SIDE_K) p->k = p->xk;
    }
    if (dn) /* the backward's first phase with the queries makes dnum, dden */
        rl_lin_output_backward(p->dnum, p->dden, dout + (size_t)t0 * dv, out + (size_t)t0 * dv,
                               den + t0, l, dv);
}

void rl_attn_linear_fwd_sums(double *st, const struct rl_lin_head *h, const struct rl_attn_opts *o,
                             int b, float *scratch)
{
    struct lin_plan p;
    rl_lin_plan_make(&p, h, o, scratch);
    if (unread_forward(&p, b)) return;
    const int t0 = b * RL_LIN_BLOCK, l = rows_of(&p, b);
    block_begin(&p, h, slot_of(&p, st, b), b, SIDE_K, NULL, NULL, NULL);
    if (h->logf) rl_lin_gate_fold_weights(&p, t0, l, 0);
    increment(&p, slot_of(&p, st, b), p.C, p.D, h->v + (size_t)t0 * p.dv, p.dv, l,
              h->logf ? p.wk : NULL);
    z_increment(&p, slot_of(&p, st, b), l);
}

void rl_lin_carry(double *x, double *run, size_t n, double bd, int exclusive)
{
    for (size_t i = 0; i < n; i++) {
        double inc = x[i];
        if (exclusive) x[i] = run[i];
        run[i] = bd * run[i] + inc;
    }
}

/* Exclusive prefix (causal; the gate decays a carried state across each block) or the
 * totals into the last slot (non-causal), of each slot's S and z (contiguous). */
static void prefix(struct lin_plan *p, double *st, int causal, const float *logf)
{
    const int    nb  = rl_attn_linear_blocks(p->N);
    const size_t n   = (size_t)p->D * p->dv + (size_t)p->Dd; /* S and z */
    struct slot  run = slot_of(p, st, nb);
    memset(run.S, 0, n * sizeof(double));
    const int cz = p->shen && causal; /* causal Shen's Z (non-causal: Ztot is kept) */
    if (cz) memset(run.Z, 0, (size_t)p->d * sizeof(double));
    for (int b = 0; b < nb; b++) {
        double bd = 1.0; /* the decay across block b (the gate) */
        if (logf) bd = rl_lin_gate_block_decay(p, b * RL_LIN_BLOCK, rows_of(p, b), 0);
        carry_step(slot_of(p, st, b).S, run.S, n, bd, causal, b == nb - 1);
        if (cz) /* Z is not decayed */
            carry_step(slot_of(p, st, b).Z, run.Z, (size_t)p->d, 1.0, causal, b == nb - 1);
    }
}

void rl_attn_linear_fwd_prefix(double *st, const struct rl_lin_head *h,
                               const struct rl_attn_opts *o, float *scratch)
{
    struct lin_plan p;
    rl_lin_plan_make(&p, h, o, scratch);
    prefix(&p, st, o->causal, h->logf);
}

long rl_attn_linear_fwd_rows(float *out, float *den, const double *st, const struct rl_lin_head *h,
                             const struct rl_attn_opts *o, int b, float *scratch)
{
    struct lin_plan p;
    rl_lin_plan_make(&p, h, o, scratch);
    const int    t0 = b * RL_LIN_BLOCK, l = rows_of(&p, b), dv = p.dv;
    struct slot  s  = slot_of(&p, (double *)st, o->causal ? b : rl_attn_linear_blocks(p.N));
    float       *ob = out + (size_t)t0 * dv;
    const float *vb = h->v + (size_t)t0 * dv;
    memcpy(p.z, s.z, (size_t)p.Dd * sizeof(double));
    /* non-causal: the totals hold the keys */
    block_begin(&p, h, s, b, o->causal ? SIDE_K | SIDE_Q : SIDE_Q, NULL, NULL, NULL);
    const struct rl_lin_den dn = rl_lin_den_of(&p, l);
    if (!o->causal) { /* num = A S with the totals */
        for (size_t i = 0; i < (size_t)p.D * dv; i++)
            p.Sf[i] = (float)s.S[i];
        rl_tile_gemm(l, dv, p.D, 1.0f, p.A, p.D, 1, p.Sf, dv, 0.0f, ob, dv);
        return rl_lin_den_rows(den + t0, ob, dv, &dn, 0, o->eps);
    }
    struct rl_lin_scan sc;
    rl_lin_scan_init(&sc, p.scan[0], p.D, dv, s.S);
    if (!h->logf) {
        rl_lin_scan_rows(&sc, ob, p.A, p.C, vb, l, 0, 0);
        return rl_lin_den_rows(den + t0, ob, dv, &dn, 1, o->eps);
    }
    rl_lin_gate_decays(&p, t0, l);
    rl_lin_scan_rows_decay(&sc, ob, p.A, p.C, vb, l, 0, p.af);
    return rl_lin_den_rows_decay(den + t0, ob, dv, &dn, o->eps);
}

/* ---- backward --------------------------------------------------------------------------- */

/* Causal: the block's increments of the reverse states, G = sum A^T dnum and g = sum dden B
 * (the gate weighs each row by its decay from the block's first row). */
static void reverse_increment(struct lin_plan *p, struct slot s, int t0, int l, int gated)
{
    const double *w = NULL;
    if (gated) rl_lin_gate_fold_weights(p, t0, l, 1), w = p->wk;
    memset(s.G, 0, (size_t)p->D * p->dv * sizeof(double));
    memset(s.g, 0, (size_t)p->Dd * sizeof(double));
    rl_lin_gemm_acc(s.G, p->Gf, weighted(p, p->A, l, p->D, w), p->D, p->dnum, p->dv, l);
    for (int i = 0; w && i < l; i++) /* the weights of sum dden B */
        p->eg[i] = p->dden[i] * w[i];
    rl_lin_wsum_rows(s.g, w ? p->eg : p->dden, p->B, l, p->Dd);
}

/* Every increment of block b, from one build of its features.  Causal: the dA state's
 * (V^T C, dv x D) and z's, then the reverse states' (reverse_increment; Shen's map: its
 * queries need Z before the block, so they wait for rl_attn_linear_bwd_rsums, and Z's
 * increment is taken instead).  Non-causal: the totals' (S = C^T V, z, G = A^T dnum,
 * g = sum dden B). */
void rl_attn_linear_bwd_sums(double *st, const float *dout, const float *out, const float *den,
                             const struct rl_lin_head *h, const struct rl_attn_opts *o, int b,
                             float *scratch)
{
    struct lin_plan p;
    rl_lin_plan_make(&p, h, o, scratch);
    const int    t0 = b * RL_LIN_BLOCK, l = rows_of(&p, b), dv = p.dv;
    const float *vb    = h->v + (size_t)t0 * dv;
    struct slot  s     = slot_of(&p, st, b);
    const int    cshen = p.shen && o->causal;
    /* causal: the forward increments, unless unread; the reverse ones (Shen's: in their
     * own phase), unless unread */
    const int fwd = !unread_forward(&p, b), rev = !cshen && !unread_reverse(&p, b);
    if (o->causal && !fwd && !rev) return;
    block_begin(&p, h, s, b, cshen ? SIDE_K : SIDE_K | SIDE_Q, dout, out, den);
    if (o->causal) {
        if (fwd) {
            if (h->logf) rl_lin_gate_fold_weights(&p, t0, l, 0);
            increment(&p, s, vb, dv, p.C, p.D, l, h->logf ? p.wk : NULL);
            z_increment(&p, s, l); /* Shen's Z */
        }
        if (rev) reverse_increment(&p, s, t0, l, h->logf != NULL);
        return;
    }
    increment(&p, s, p.C, p.D, vb, dv, l, NULL);
    memset(s.G, 0, (size_t)p.D * dv * sizeof(double));
    memset(s.g, 0, (size_t)p.Dd * sizeof(double));
    rl_lin_gemm_acc(s.G, p.Gf, p.A, p.D, p.dnum, dv, l);
    rl_lin_wsum_rows(s.g, p.dden, p.B, l, p.Dd);
}

/* Non-causal: G and g totals into the last slot, in block order. */
static void totals_g(struct lin_plan *p, double *st)
{
    const int    nb = rl_attn_linear_blocks(p->N);
    const size_t n  = (size_t)p->D * p->dv + (size_t)p->Dd; /* G and g */
    struct slot  t  = slot_of(p, st, nb);
    memset(t.G, 0, n * sizeof(double));
    for (int b = 0; b < nb; b++)
        rl_lin_carry(slot_of(p, st, b).G, t.G, n, 1.0, 0);
}

/* Causal: the reverse states after every block (an exclusive suffix; the gate decays a
 * carried state across each block), of each slot's G and g (contiguous). */
static void suffix(struct lin_plan *p, double *st, int gated)
{
    const int    nb  = rl_attn_linear_blocks(p->N);
    const size_t n   = (size_t)p->D * p->dv + (size_t)p->Dd; /* G and g */
    struct slot  run = slot_of(p, st, nb);
    memset(run.G, 0, n * sizeof(double));
    for (int b = nb - 1; b >= 0; b--) {
        double bd = 1.0; /* the decay from block b + 1's first row to block b's */
        if (gated) bd = rl_lin_gate_block_decay(p, b * RL_LIN_BLOCK, rows_of(p, b), 1);
        carry_step(slot_of(p, st, b).G, run.G, n, bd, 1, b == 0);
    }
}

/* The states every block's rows start from: the dA state's prefix and the reverse states'
 * suffix (causal), or the four totals (non-causal). */
void rl_attn_linear_bwd_prefix(double *st, const struct rl_lin_head *h,
                               const struct rl_attn_opts *o, float *scratch)
{
    struct lin_plan p;
    rl_lin_plan_make(&p, h, o, scratch);
    prefix(&p, st, o->causal, h->logf);
    if (!o->causal)
        totals_g(&p, st);
    else if (!p.shen) /* Shen's: rl_attn_linear_bwd_suffix, after its reverse increments */
        suffix(&p, st, h->logf != NULL);
}

/* Shen's map: the reverse states' increments of block b, its queries from Z before it. */
void rl_attn_linear_bwd_rsums(double *st, const float *dout, const float *out, const float *den,
                              const struct rl_lin_head *h, const struct rl_attn_opts *o, int b,
                              float *scratch)
{
    struct lin_plan p;
    rl_lin_plan_make(&p, h, o, scratch);
    if (unread_reverse(&p, b)) return;
    const int   t0 = b * RL_LIN_BLOCK, l = rows_of(&p, b);
    struct slot s = slot_of(&p, st, b);
    block_begin(&p, h, s, b, SIDE_K | SIDE_Q, dout, out, den);
    reverse_increment(&p, s, t0, l, h->logf != NULL);
}

void rl_attn_linear_bwd_suffix(double *st, const struct rl_lin_head *h,
                               const struct rl_attn_opts *o, float *scratch)
{
    struct lin_plan p;
    rl_lin_plan_make(&p, h, o, scratch);
    suffix(&p, st, h->logf != NULL);
}

/* Shen's map: the suffix of the blocks' dZ sums after each block (causal), or the total of
 * their column sums (non-causal), W. */
void rl_attn_linear_shen_tail(double *st, const struct rl_lin_head *h, const struct rl_attn_opts *o,
                              float *scratch)
{
    struct lin_plan p;
    rl_lin_plan_make(&p, h, o, scratch);
    const int nb  = rl_attn_linear_blocks(p.N);
    double   *run = slot_of(&p, st, nb).W;
    memset(run, 0, (size_t)p.d * sizeof(double));
    for (int i = 0; i < nb; i++) { /* causal: in reverse block order */
        const int b = o->causal ? nb - 1 - i : i;
        rl_lin_carry(slot_of(&p, st, b).W, run, (size_t)p.d, 1.0, o->causal);
    }
}

/* Shen's map, the rest of dk: causal, dk_n += u_n W (W: the sum of dZ_m over the blocks
 * after block b, which du_n = ... + sum_{m >= n} dZ_m lacked in the rows phase);
 * non-causal, the column softmax's dk_n -= phi_k(k_n) colsum (colsum: the total of W).  The
 * input placement rotates it back, as the rows phase did the rest of dk. */
void rl_attn_linear_bwd_fix(float *dk, const double *st, const struct rl_lin_head *h,
                            const struct rl_attn_opts *o, int b, float *scratch)
{
    struct lin_plan p;
    rl_lin_plan_make(&p, h, o, scratch);
    const int     t0 = b * RL_LIN_BLOCK, l = rows_of(&p, b), d = p.d;
    const double *W = slot_of(&p, (double *)st, o->causal ? b : p.nb).W;
    float        *x = p.phk, *dkb = dk + (size_t)t0 * d;
    if (o->causal && b == p.nb - 1) return; /* nothing after the last block */
    rl_lin_build_block(&p, h->q, h->k, t0, l, SIDE_K);
    for (int i = 0; i < l; i++) /* as attn_linear.c's per-head passes round them */
        for (int f = 0; f < d; f++)
            x[(size_t)i * d + f] = o->causal ? (float)((double)x[(size_t)i * d + f] * W[f])
                                             : x[(size_t)i * d + f] * (float)W[f];
    if (p.input_rot) rl_rope_rotate(p.rope, x, d, x, d, l, t0, 1);
    for (size_t i = 0; i < (size_t)l * d; i++)
        dkb[i] += o->causal ? x[i] : -x[i];
}

/* Causal rows: the scans from the block's states, the denominators, the chain rule. */
static void causal_rows(struct lin_plan *p, const struct rl_lin_grads *g, struct slot s,
                        const struct rl_lin_head *h, float eps, int t0, int l)
{
    const int          D = p->D, dv = p->dv;
    const float       *vb = h->v + (size_t)t0 * dv;
    const float       *af = NULL, *afn = NULL;
    struct rl_lin_scan sA, sG, sGT;
    for (int x = 0; x < D; x++) /* the transpose's state, for dC */
        for (int y = 0; y < dv; y++)
            p->Gd[(size_t)y * D + x] = s.G[(size_t)x * dv + y];
    rl_lin_scan_init(&sA, p->scan[0], dv, D, s.S);
    rl_lin_scan_init(&sG, p->scan[1], D, dv, s.G);
    rl_lin_scan_init(&sGT, p->scan[2], dv, D, p->Gd);
    if (h->logf) rl_lin_gate_decays(p, t0, l), af = p->af, afn = p->afn;
    rl_lin_scan_rows_decay(&sA, p->dA, p->dnum, vb, p->C, l, 0, af);
    rl_lin_scan_rows_decay(&sG, g->dv + (size_t)t0 * dv, p->C, p->A, p->dnum, l, 1, afn);
    rl_lin_scan_rows_decay(&sGT, p->dC, vb, p->dnum, p->A, l, 1, afn);
    rl_lin_den_block_backward(p, s.z, s.g, l, 1);
    if (h->logf && g->dlogf) /* a constant gate (ALiBi) has no gradient */
        rl_lin_gate_dc(g->dlogf + t0, p, h->v + (size_t)t0 * dv, g->dv + (size_t)t0 * dv, l, eps);
}

/* Non-causal rows: num = A S  =>  dA = dnum S^T, dC = V Gs^T, dV = C Gs; den = B . z. */
static void full_rows(struct lin_plan *p, const struct rl_lin_grads *g, struct slot t,
                      const struct rl_lin_head *h, int t0, int l)
{
    const int D = p->D, dv = p->dv;
    for (size_t i = 0; i < (size_t)D * dv; i++)
        p->Sf[i] = (float)t.S[i], p->Gf[i] = (float)t.G[i];
    rl_sgemm(RL_TRANS_N, RL_TRANS_T, l, D, dv, 1.0f, p->dnum, dv, p->Sf, dv, 0.0f, p->dA, D);
    rl_sgemm(RL_TRANS_N, RL_TRANS_T, l, D, dv, 1.0f, h->v + (size_t)t0 * dv, dv, p->Gf, dv, 0.0f,
             p->dC, D);
    rl_tile_gemm(l, dv, D, 1.0f, p->C, D, 1, p->Gf, dv, 0.0f, g->dv + (size_t)t0 * dv, dv);
    rl_lin_den_block_backward(p, t.z, t.g, l, 0);
}

void rl_attn_linear_bwd_rows(const struct rl_lin_grads *g, const double *st, const float *dout,
                             const float *out, const float *den, const struct rl_lin_head *h,
                             const struct rl_attn_opts *o, int b, float *scratch)
{
    struct lin_plan p;
    rl_lin_plan_make(&p, h, o, scratch);
    const int   t0 = b * RL_LIN_BLOCK, l = rows_of(&p, b), d = p.d;
    struct slot s     = slot_of(&p, (double *)st, o->causal ? b : rl_attn_linear_blocks(p.N));
    const int   cshen = p.shen && o->causal;
    block_begin(&p, h, s, b, SIDE_K | SIDE_Q, dout, out, den);
    if (o->causal)
        causal_rows(&p, g, s, h, o->eps, t0, l);
    else
        full_rows(&p, g, s, h, t0, l);
    if (cshen) memcpy(p.Zrun, s.Z, (size_t)d * sizeof(double)); /* Z before the block */
    if (p.shen) /* dZ's suffix from the block's end, or the block's column sums */
        memset(p.Zs, 0, (size_t)d * sizeof(double));
    rl_lin_chain_block(&p, g->dq, g->dk, t0, l, p.shen && !o->causal ? p.Zs : NULL);
    if (p.shen) /* the block's sum of dZ, or its column sums */
        memcpy(slot_of(&p, (double *)st, b).W, p.Zs, (size_t)d * sizeof(double));
}
