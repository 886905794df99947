/* fft.h -- the only door to FFTW: Toeplitz matrix-vector products by FFT convolution.
 *
 * A Toeplitz matrix of order N is given by its relative vector E (2N-1 doubles),
 *     T[m,n] = E[(n - m) + N - 1],        m, n = 0 ... N-1
 * (the layout of posbias.h's rel vectors); causal zeroes it above the diagonal (n > m).
 * y = T x is the linear convolution y[m] = sum_n h[m-n] x[n] with h[t] = E[N-1-t], done
 * as a circular one of length L >= 2N-1 (a 2^a 3^b 5^c 7^d size, so no wrap-around
 * reaches the N outputs used) with double-precision real transforms (r2c / c2r).
 *
 * An rl_fft_conv works on `cols` columns at once, each of length L and contiguous
 * (column c of the input buffer starts at buf + c*L; rows 0..N-1 are the data, rows
 * N..L-1 are the zero padding, which callers never write; results go to a separate
 * output buffer of the same layout): one batched FFTW plan (fftw_plan_many_dft_r2c)
 * serves all columns.  It has two spectrum slots so that the backward can keep the spectrum of x
 * while it transforms dy.  Plans are FFTW_ESTIMATE (deterministic) and are created and
 * destroyed under a process-wide lock, because FFTW's planner is not thread-safe;
 * executing them is.  One rl_fft_conv is used by one thread at a time. */
#ifndef RL_FFT_H
#define RL_FFT_H

#include "status.h"

typedef struct rl_fft_conv rl_fft_conv;

/* Smallest 2^a 3^b 5^c 7^d >= n (n >= 1): the FFT sizes FFTW handles fastest. */
int rl_fft_good_size(int n);

rl_status rl_fft_conv_create(rl_fft_conv **out, int N, int cols);
void      rl_fft_conv_free(rl_fft_conv *c);

int     rl_fft_conv_length(const rl_fft_conv *c); /* L */
double *rl_fft_conv_buf(rl_fft_conv *c); /* input, cols x L: write rows 0..N-1 of each column */
double *rl_fft_conv_out(rl_fft_conv *c); /* output, cols x L: read rows 0..N-1 */

/* Kernel spectrum of T from E (2N-1); stored scaled by 1/L (FFTW is unnormalised). */
void rl_fft_conv_set_kernel(rl_fft_conv *c, const double *E, int causal);

/* out <- T buf (transpose = 0) or T^T buf (transpose = 1), every column, rows 0..N-1.
 * Uses spectrum slot 0; buf is kept. */
void rl_fft_conv_apply(rl_fft_conv *c, int transpose);

/* The steps of apply, for callers that keep a spectrum (slot 0 or 1):
 *   r2c: slot <- FFT(buf)
 *   mul: slot dst <- H * slot src (transpose: conj(H) *), dst may equal src
 *   c2r: out <- IFFT(slot) (destroys the slot) */
void rl_fft_conv_r2c(rl_fft_conv *c, int slot);
void rl_fft_conv_mul(rl_fft_conv *c, int dst, int src, int transpose);
void rl_fft_conv_c2r(rl_fft_conv *c, int slot);

/* Cross-correlation accumulator, summed over all columns (and calls) in the frequency
 * domain:  acc += sum_c conj(slot a[c]) * slot b[c].  With a = FFT(dy), b = FFT(x):
 * after rl_fft_conv_corr_read, out[r+N-1] = sum_c sum_m dy_c[m] x_c[m+r] for
 * r = -(N-1) ... N-1 -- the gradient of sum_m dy[m] (T x)[m] w.r.t. E[r+N-1]. */
void rl_fft_conv_corr_zero(rl_fft_conv *c);
void rl_fft_conv_corr_acc(rl_fft_conv *c, int a, int b);
/* out (2N-1 doubles) is overwritten; destroys the accumulator. */
void rl_fft_conv_corr_read(rl_fft_conv *c, double *out);

#endif
