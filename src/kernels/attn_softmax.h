/* attn_softmax.h -- tiled (online-softmax, FlashAttention-style) softmax attention for
 * one head.  Internal to libropelab; rl_attn (attn.c) dispatches here.
 *
 *   s[m,n] = q_m . k_n / sqrt(d) + rel[(n-m)+N-1] + (c[m] - c[n]),
 *   o_m    = sum_n softmax_n(s[m,.]) v_n
 *
 * With RoPE, q_m and k_n enter as R_m q_m and R_n k_n: rotated block by block inside the
 * kernel (a key tile once per query block that uses it, or once per call: prepared keys,
 * below), and dq, dk are rotated back.  rel is the
 * relative bias vector (2N-1, see posbias.h) or NULL.  cum is the forget gate's cumulative log gate
 * c[m] = sum_{l<=m} lambda[l] (N doubles) or NULL. causal: n <= m.  Memory O(N*d): the N x N matrix
 * is never stored; tiles are Bq x Bk. lse (N): the log-sum-exp of each score row as the kernel
 * forms it, saved for the backward (with the gate, minus the row's own c[m] - c[r], r its block's
 * last row: the constant cancels in the softmax).
 *
 * Work is cut into query blocks (rl_attn_softmax_blocks of them, their size fixed by N
 * and causality only), each a piece of its own: the forward of one block, the query-side
 * backward (dq) of one block, the key-side backward (dk, dv and the gate's column sums)
 * of one key block.  The whole-head calls run every piece in order; attn.c may run them
 * in parallel.  A key block's sums over the query blocks run in query-block order and a
 * query block's over key blocks in key order, in both forms, so the pieces give the same
 * bits as the whole-head calls; so do T5's parts of drel, one per query block. */
#ifndef RL_ATTN_SOFTMAX_H
#define RL_ATTN_SOFTMAX_H

#include <stddef.h>

struct rl_rope;

/* One head's operands. */
struct rl_sm_head {
    const float          *q, *k, *v; /* (N, d), (N, d), (N, dv) */
    const struct rl_rope *rope;      /* RoPE: q and k rotated (R_m q_m, R_n k_n), or NULL */
    const float          *rel;       /* relative bias (2N-1) or NULL */
    const float          *xlam;      /* xPos: ln(zeta_f)/gamma per feature (d), or NULL (causal) */
    const double         *cum;       /* forget gate: c (N), or NULL (causal) */
    const float          *prep; /* the call's prepared keys (rl_attn_softmax_prepare) or NULL */
    int                   N, d, dv, causal;
};

/* One head's gradients: dq, dk (N, d), dv (N, dv) overwritten by the whole-head backward;
 * drel (2N-1 doubles) accumulated, may be NULL; dcum (N doubles): d loss / d c[n],
 * overwritten, needed when cum is set; drel_parts: instead of drel (NULL there), the head's
 * T5 parts (rl_attn_softmax_drel_part), overwritten. */
struct rl_sm_grads {
    float  *dq, *dk, *dv;
    double *drel, *dcum, *drel_parts;
};

size_t rl_attn_softmax_scratch_floats(int N, int d, int dv, int xpos);
/* Key blocks of a head (the key side's pieces): N / 256 rounded up. */
int rl_attn_softmax_key_blocks(int N);
/* Query blocks of a head, and the rows of block b: [*i0, *i0 + *mb). */
int  rl_attn_softmax_blocks(int N, int causal, const float *xlam, int d);
void rl_attn_softmax_block_rows(int N, int causal, const float *xlam, int d, int b, int *i0,
                                int *mb);
/* T5's relative gradient in parts, one per query block, so that the query blocks of a
 * head can run at once: block b's part sums its tiles' ds along the diagonals, lag
 * r = n - m at index r + i0 + mb - 1 for r from -(i0 + mb - 1) to jend - 1 - i0 (jend:
 * i0 + mb causal, else N).  Returns the part's first double within the head's parts and
 * its length in *len; b = the number of blocks: the head's parts' doubles. */
size_t rl_attn_softmax_drel_part(int N, int causal, const float *xlam, int d, int b, size_t *len);

/* Prepared keys.  Each query block visits every key tile it sees, so a tile's rotated
 * keys and its packed transposes would be made once per query block; a call can make them
 * once per head instead, tile by tile, into rl_attn_softmax_prepared_floats(...) floats
 * per head (0 where it does not pay: one key tile, N <= 256, or xPos, whose keys are
 * scaled per query block): [R_m q_m (N x d) | R_n k_n (N x d), both with RoPE only | each tile's
 * packed k^T | each tile's packed v^T].  A head whose `prep` points at them reads them
 * instead of making them; the bits are the same. */
size_t rl_attn_softmax_prepared_floats(int N, int d, int dv, int xpos, int rope);
/* Key tile t's share of the head's prepared keys (prep: the head's first float; h->prep
 * is not read); the packed v^T only with `values` (the forward does not read them). */
void rl_attn_softmax_prepare(float *prep, const struct rl_sm_head *h, int t, int values);

/* Whole head. */
void rl_attn_softmax_forward(float *o, float *lse, const struct rl_sm_head *h, float *scratch);
void rl_attn_softmax_backward(const struct rl_sm_grads *g, const float *dout, const float *o,
                              const float *lse, const struct rl_sm_head *h, float *scratch);

/* Pieces.  Forward of query block b (its rows of o and lse).  Backward: Drow (N floats)
 * must first hold D_m = dout_m . o_m for every row (rl_attn_softmax_row_dots, per block);
 * then the query side of block b writes its rows of dq, and the key side of key block b
 * writes its rows of dk, dv and, with the gate, of dc (d loss / d c[n], as float: the
 * caller's suffix sum turns it into the log gates' gradient); with T5 the query side
 * also writes block b's part of drel_parts (the head's parts, rl_attn_softmax_drel_part;
 * NULL: none). */
void rl_attn_softmax_forward_block(float *o, float *lse, const struct rl_sm_head *h, int b,
                                   float *scratch);
void rl_attn_softmax_row_dots(float *Drow, const float *dout, const float *o,
                              const struct rl_sm_head *h, int b);
void rl_attn_softmax_backward_q(float *dq, double *drel_parts, const float *dout, const float *lse,
                                const float *Drow, const struct rl_sm_head *h, int b,
                                float *scratch);
void rl_attn_softmax_backward_kv(float *dk, float *dv, float *dc, const float *dout,
                                 const float *lse, const float *Drow, const struct rl_sm_head *h,
                                 int b, float *scratch);

#endif
