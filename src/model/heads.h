/* heads.h -- the layout copies between the (T, H*d) rows of the projections and the
 * (B, H, N, d) heads of the attention kernels (docs/model.md, "Heads"): permutations, whose
 * backward is the inverse permutation.  Row loops cut into pieces by the problem
 * (core/threads.h, rl_pieces); inside a parallel region on the calling thread. */
#ifndef RL_HEADS_H
#define RL_HEADS_H

#include <stddef.h>

/* Where token t (position t mod N of sequence t / N) of head h starts in a (B, H, N, d)
 * heads layout (d = 1: a per-head value such as the forget gate's log gates). */
size_t rl_heads_offset(long t, int h, int N, int H, int d);

/* qkv (T = B*N, 3C) rows [q | k | v] (one GEMM with the stacked Wq, Wk, Wv) plus bias
 * (3C) -> q, k, v each (B, H, N, d) with d = C/H (head h = features h*d .. h*d+d-1). */
void rl_heads_split(float *q, float *k, float *v, const float *qkv, const float *bias, int B, int N,
                    int H, int d);
/* dqkv (T, 3C) = the inverse gather of dq, dk, dv (overwrites). */
void rl_heads_merge3(float *dqkv, const float *dq, const float *dk, const float *dv, int B, int N,
                     int H, int d);
/* (B, H, N, d) -> (B, N, H*d) and back (both overwrite). */
void rl_heads_merge(float *out, const float *x, int B, int N, int H, int d);
void rl_heads_split1(float *out, const float *x, int B, int N, int H, int d);
/* The same for the token rows [t0, t0 + n) of the batch alone (rows of length N): qkv,
 * dqkv and the (T, H*d) side point at row t0, q, k, v and the (B, H, N, d) side at the
 * whole tensor. */
void rl_heads_split_rows(float *q, float *k, float *v, const float *qkv, const float *bias, long t0,
                         long n, int N, int H, int d);
void rl_heads_merge3_rows(float *dqkv, const float *dq, const float *dk, const float *dv, long t0,
                          long n, int N, int H, int d);
void rl_heads_merge_rows(float *out, const float *x, long t0, long n, int N, int H, int d);
void rl_heads_split1_rows(float *out, const float *x, long t0, long n, int N, int H, int d);

#endif
