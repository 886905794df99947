/* attn_impl.h -- the attention plan, shared by the dispatcher (attn.c) and the runners that
 * cut a call into pieces for one kernel family (attn_run_softmax.c, ...).  Internal. */
#ifndef RL_ATTN_IMPL_H
#define RL_ATTN_IMPL_H

#include <stddef.h>
#include "attn.h"
#include "attn_toeplitz.h"
#include "rope.h"

struct rl_attn {
    struct rl_attn_opts o;
    int                 H, N, d, dv, nthreads; /* nthreads: per-thread buffers allocated */
    int                 has_rope, has_bias;    /* bias: t5 or alibi */
    struct rl_rope      rope;
    double             *slopes; /* H (alibi) */
    float              *xlam;   /* d (xpos): ln(zeta_f)/gamma per feature, 0 past rope_dims */
    float              *rel;    /* H x (2N-1): relative bias vectors */
    size_t              scratch_floats;
    float             **scratch;    /* per thread */
    double             *drel;       /* H x (2N-1) (t5 backward): head h's slice */
    rl_toeplitz       **toeplitz;   /* per thread (linear + bias) */
    rl_toeplitz       **tstore;     /* per head of a call in (head, feature group) pieces */
    int                 tstore_n;   /* heads with a store */
    double             *tpart;      /* those calls' parts (attn_toeplitz_split.c) */
    size_t              tpart_n;    /* bytes */
    int                 G_max;      /* heads a call may have (rl_attn_reserve) */
    float              *rowbuf;     /* G_max x N floats: per-row values shared by a call's pieces */
    double             *linst;      /* G_max heads' block states of split linear attention */
    size_t              linst_head; /* doubles per head (0: linear attention not split) */
    int                *pending;    /* G_max: a phase's pieces of each head still running */
    float              *prep;       /* G_max heads' prepared keys of softmax attention */
    size_t              prep_head;  /* floats per head (0: not prepared) */
    /* G_max x N each: the forget gate's cumulative log gates (softmax attention, linear
     * attention's T5 tiles) and its decays e^{logf} (split linear attention, made block by
     * block in a call's first phase) */
    double *cum, *dec;
    float  *zeros;    /* N zero log gates: ALiBi's decayed scan as a constant gate */
    float  *quad;     /* T5 with the gate in pieces: a store per head of a call */
    size_t  quad_n;   /* bytes */
    double *t5part;   /* the T5 gradient's parts of a call's heads */
    size_t  t5part_n; /* bytes */
    /* linear attention in pieces: the store of a call's blocks' features (rl_lin_head.store)
     * and, per head and block, the sides it holds; lstore_on: the current call keeps its
     * features in lcur, this store or the caller's keep (rl_attn_in.keep) */
    float         *lstore, *lcur;
    size_t         lstore_head; /* floats per head (rl_attn_linear_store_floats) */
    size_t         lstore_n;    /* bytes */
    unsigned char *lhave;
    size_t         lhave_n; /* bytes */
    int            lstore_on;
    int            caller_keeps; /* rl_attn_caller_keeps: no lstore */
};

/* The team of a region with `pieces` pieces: rl_team's, at most the threads the plan has
 * buffers for. */
int rl_attn_team(const rl_attn *a, long pieces);

/* The forget gate's cumulative log gate of one head, c[m] = sum_{l<=m} logf[l] in double. */
void rl_attn_gate_cumsum(double *cum, const float *logf, int N);
/* The same for the G heads of a call into a->cum (one piece per head), before the pieces
 * that read it. */
void rl_attn_gate_cumsums(rl_attn *a, const float *logf, int G);
/* dlogf[l] = sum_{m >= l} dc[m]: on entry dlogf holds dc (= d loss / d c[m]) per row, on
 * return the gradient of the log gates (the suffix sums, in double). */
void rl_attn_gate_suffix(float *dlogf, int N);

/* Softmax attention over G heads, cut into (head, query block) and (head, key block)
 * pieces (attn_run_softmax.c). */
void   rl_attn_run_softmax_forward(rl_attn *a, float *o, float *saved, const struct rl_attn_in *in,
                                   int G);
void   rl_attn_run_softmax_backward(rl_attn *a, const struct rl_attn_grads *gr, const float *dout,
                                    const float *o, const float *saved, const struct rl_attn_in *in,
                                    int G);
size_t rl_attn_run_softmax_scratch_floats(const rl_attn *a);
/* The doubles of the T5 gradient's parts a call of G heads sums into (one part per head
 * and query block, attn_softmax.h), or 0: not T5, or over the budget, where each bias
 * head's owner sums its heads in order instead. */
size_t rl_attn_run_softmax_t5_parts(const rl_attn *a, int G);

/* Linear attention over G heads (attn_run_linear.c): the eq. 19 family (attn_linear.c),
 * the FFT Toeplitz products and ALiBi's decayed scan, with or without the gate.  The
 * forward returns the rows whose denominator before eps was <= eps. */
/* Whether a call of G heads runs T5 with the gate in (head, block) pieces. */
int    rl_attn_quad_call(const rl_attn *a, int G);
long   rl_attn_run_linear_forward(rl_attn *a, float *o, float *saved, const struct rl_attn_in *in,
                                  int G);
void   rl_attn_run_linear_backward(rl_attn *a, const struct rl_attn_grads *gr, const float *dout,
                                   const float *o, const float *saved, const struct rl_attn_in *in,
                                   int G);
size_t rl_attn_run_linear_scratch_floats(const rl_attn *a);
/* The same as rl_attn_run_softmax_t5_parts for linear attention: one part of 2N-1 doubles
 * per head where a call runs one piece per head (the FFT products of 16 heads or more, T5
 * with the gate). */
size_t rl_attn_run_linear_t5_parts(const rl_attn *a, int G);
/* 1 when the plan's heads go through the Toeplitz plans (a bias PE without the gate; the
 * FFT products among them: rl_toeplitz_fft). */
int rl_attn_linear_uses_toeplitz(const rl_attn *a);
/* The groups of features per head of a call of G heads whose FFT products run in (head,
 * group) pieces (attn_toeplitz_split.c); 0: one piece per head. */
int rl_attn_fft_groups(const rl_attn *a, int G);

#endif
