/* attn.h -- attention kernels for G independent heads, one entry point.
 *
 * Layout: q, k (G, N, d), v, o (G, N, dv), row-major, head g contiguous.  Head g uses
 * the position-encoding parameters of head h = g % H (T5 table row, ALiBi slope), so a
 * batch of B sequences with H heads is G = B*H with g = b*H + h.
 *
 * An rl_attn is a plan for one (options, H, N, d, dv): RoPE tables, relative-bias
 * buffers, FFTW plans and per-thread scratch are made once in rl_attn_create; forward
 * and backward never allocate.  OpenMP runs over heads; GEMMs inside run single-threaded.
 * Called from inside a parallel region (a thread of a team, one call per thread at a
 * time), a call runs its heads on that thread alone with that thread's buffers; the team
 * must be at most rl_attn_threads() threads, and with pe=t5 (whose tables are refreshed
 * on every call) only one call may run at a time.
 *
 * Forget gate (opts.forget, causal only): in->logf (G, N) holds log forget values
 * lambda_g[l] <= 0; with c[m] = sum_{l <= m} lambda[l] the pair (m, n <= m) is weighted by
 * exp(c[m] - c[n]): a score term c[m] - c[n] in softmax attention (the Forgetting
 * Transformer), a decay of the prefix sums in linear attention (gated linear attention).
 *
 * Forward writes o and `saved` (G*N floats: the softmax log-sum-exp per row, or the
 * linear-attention denominator per row) which the backward reads back.
 * Backward *overwrites* dq, dk, dv and dlogf and *accumulates* into dt5 (H x t5_buckets),
 * which a model shares across layers.  dt5 may be NULL when the PE is not t5, dlogf when
 * there is no gate. */
#ifndef RL_ATTN_H
#define RL_ATTN_H

#include "../core/status.h"
#include "attn_opts.h"

/* T5's relative gradient is summed along diagonals over every pair, so no piece owns it:
 * the pieces of a call write parts (per head and query block in softmax attention, per
 * head where linear attention runs a piece per head) that are then added per bias head in
 * a fixed order.  The parts of one call may take at most this many bytes; above it, each
 * bias head's owner sums its heads into one drel in order (one piece per bias head). */
#define RL_ATTN_T5_PARTS_BYTES (256.0 * 1024 * 1024)

/* Linear attention in (head, block) pieces builds a block's features in each phase that
 * reads them; a call keeps them from the first such phase to the later ones in a store of
 * at most this many bytes, else every phase builds them again.  The store pays while it
 * stays in the last-level cache: N = 4096, 4 heads (10.7 MB) trained 4 % faster on two
 * threads; at N = 65536 (170 MB) it gave nothing measurable for 162 MB more memory. */
#define RL_ATTN_STORE_BYTES (32.0 * 1024 * 1024)

typedef struct rl_attn rl_attn;

void rl_attn_opts_default(struct rl_attn_opts *o);
/* Checks option consistency (e.g. odd d with RoPE, rotated denominator without RoPE);
 * returns RL_EINVAL with a message naming the option. */
rl_status   rl_attn_opts_check(const struct rl_attn_opts *o, int H, int d, int dv);
const char *rl_attn_describe(const struct rl_attn_opts *o, char *buf, int len);

rl_status rl_attn_create(rl_attn **out, const struct rl_attn_opts *o, int H, int N, int d, int dv);
void      rl_attn_free(rl_attn *a);
/* Room for calls of up to G heads (a plan starts with room for H: one sequence).  Call it
 * when the plan is made, e.g. with B*H for batches of B sequences: it allocates. */
rl_status rl_attn_reserve(rl_attn *a, int G);
/* The threads the plan has buffers for (the count in effect when it was created). */
int rl_attn_threads(const rl_attn *a);

/* What a call reads: q, k (G, N, d), v (G, N, dv); t5 (H, t5_buckets) with pe=t5, else
 * NULL; logf (G, N) with a forget gate, else NULL.
 *
 * keep: NULL, or rl_attn_keep_floats floats of the caller's that carry linear attention's
 * block features (phi(q), phi(k) and their rotations) from a forward to the backward of the
 * same inputs, which then reads them instead of building them again (the same bits either
 * way).  The backward also writes its own per-block work there.  A backward given a keep
 * must follow the forward that was given it, with the same plan, G, q and k; between them
 * the buffer must not be touched.  Ignored where rl_attn_keep_floats is 0. */
struct rl_attn_in {
    const float *q, *k, *v;
    const float *t5;
    const float *logf;
    float       *keep;
};

/* Declares that the plan's calls pass a keep wherever rl_attn_keep_floats is not 0 (a model
 * does): the plan gives back its own store of the block features and makes none for later
 * reserves.  A call without a keep is still right; it builds the features in each phase. */
void rl_attn_caller_keeps(rl_attn *a);

/* Floats of a keep (rl_attn_in.keep) for calls of G heads of length N: linear attention
 * with the maps elu1 and exp, in (head, block) pieces (no bias PE but ALiBi with the gate),
 * per head and row of its blocks (256 rows each, or N rows when N < 256), 4 d + dv + 2
 * with RoPE (on the features or the inputs), 2 d + dv + 2 without; 0 for every other kind,
 * which keeps nothing. */
size_t rl_attn_keep_floats(const struct rl_attn_opts *o, int G, int N, int d, int dv);

/* What a backward writes: dq, dk (G, N, d) and dv (G, N, dv), overwritten; dt5 (H,
 * t5_buckets), accumulated (NULL: not wanted); dlogf (G, N), overwritten (forget gate). */
struct rl_attn_grads {
    float *dq, *dk, *dv;
    float *dt5;
    float *dlogf;
};

RL_MUST_CHECK rl_status rl_attn_forward(rl_attn *a, float *o, float *saved,
                                        const struct rl_attn_in *in, int G,
                                        struct rl_attn_stats *st);
/* dout (G, N, dv) with the forward's o and saved. */
RL_MUST_CHECK rl_status rl_attn_backward(rl_attn *a, const struct rl_attn_grads *gr,
                                         const float *dout, const float *o, const float *saved,
                                         const struct rl_attn_in *in, int G);

#endif
