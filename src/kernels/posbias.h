/* posbias.h -- attention-level relative biases: T5 buckets and ALiBi slopes.
 *
 * Kernels see a bias through its relative vector: rel[(n - m) + (N - 1)] = b_h(m, n),
 * length 2N-1, r = n - m in [-(N-1), N-1].  T5: rel[r] = B[h, bucket(r)];
 * ALiBi: rel[r] = -slope_h * |r|.  The T5 gradient is gathered back from d rel. */
#ifndef RL_POSBIAS_H
#define RL_POSBIAS_H

/* T5 relative-position bucket of r = n - m (exactly the T5 reference's rule). */
int rl_t5_bucket(int r, int bidirectional, int num_buckets, int max_distance);

/* ALiBi slopes for H heads (Press et al. 2022; non-powers of two by the reference rule). */
void rl_alibi_slopes(double *slopes, int H);

/* rel (2N-1) for head h of a T5 table B (H x nb, row-major). */
void rl_t5_rel(float *rel, const float *B, int h, int N, int nb, int max_distance, int causal);
/* dB[h, bucket(r)] += drel[r] for every r (accumulates). */
void rl_t5_rel_backward(float *dB, const double *drel, int h, int N, int nb, int max_distance,
                        int causal);
/* rel (2N-1) for an ALiBi slope. */
void rl_alibi_rel(float *rel, double slope, int N);

#endif
