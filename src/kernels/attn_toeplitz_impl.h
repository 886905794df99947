/* attn_toeplitz_impl.h -- private to attn_toeplitz.c and attn_toeplitz_split.c: the
 * rl_toeplitz workspace and the feature / gradient plumbing of the FFT path, whole-head
 * and in pieces.
 *
 * Every path writes o_m = sum_f A[m,f] Y_f[m,:] / (sum_f A[m,f] Y'_f[m] + eps) with
 * Y, Y' sums over n of exp(rel) B[n,f] v[n,:] and exp(rel) B[n,f] (FFT Toeplitz
 * products). */
#ifndef RL_ATTN_TOEPLITZ_IMPL_H
#define RL_ATTN_TOEPLITZ_IMPL_H

#include "attn_toeplitz.h"
#include "featmap.h"
#include "../core/fft.h"
#include "../core/util.h"

struct rl_toeplitz {
    int          N, d, dv;
    rl_fft_conv *conv;                /* dv + 1 columns of length L */
    void        *pool;                /* every array below */
    float       *phq, *dph;           /* phi_q (featmap.h) and its gradient, N x d */
    double      *colmax;              /* softmax: c_f = max_n k[n,f] (d) */
    int         *cut_x, *cut_y;       /* causal magnitude segments (N + 1) */
    double      *E, *corr;            /* exp(rel), d E (2N-1) */
    double      *A, *B, *Z;           /* query weights, key features, Shen normaliser (N x d) */
    double      *dA, *dB;             /* their gradients (N x d) */
    double      *num, *dnum;          /* N x dv: numerator, d num */
    double      *vT, *numT, *dnumT;   /* dv x N: v^T, num^T (bwd: dv^T), dnum^T */
    double      *den, *dden;          /* N: denominator before eps, d den */
    double      *w, *wg;              /* N: segment magnitudes, adjoint row scale */
    double      *af, *bf, *gaf, *gbf; /* N: A[:,f], B[:,f] and their gradients */
};

/* dq, dk from t->dA, t->dB (the gradients of the loss w.r.t. A and B) */
void rl_toeplitz_features_backward(rl_toeplitz *t, float *dq, float *dk, const float *k,
                                   enum rl_fmap fm, int causal);
/* out = num / (den + eps) and den of rows m0 .. m1-1; returns the rows whose denominator
 * before eps is <= eps */
long rl_toeplitz_finish_rows(rl_toeplitz *t, float *out, float *den, float eps, int m0, int m1);

/* The FFT path by parts (attn_toeplitz.c), for the whole-head functions and the pieces
 * (attn_toeplitz_split.c).  A head's arrays (features, v^T, the adjoint inputs, dA, dB)
 * are in h; t is the calling thread's workspace: transforms, per-feature columns, E.
 * prepare: A, B (Z) and v^T; prepare_backward also dnum, dden, dnum^T and the row scales.
 * exp_rel: E = exp(rel) into h.  forward_feature: feature f's terms
 * added to numT (dv x N) and den; backward_feature: f's columns of h->dA, h->dB, its terms
 * of dv^T added to dvT, and (want_rel) its correlation into t's accumulator. */
void rl_toeplitz_prepare(rl_toeplitz *h, const struct rl_lin_head *hd,
                         const struct rl_attn_opts *o);
void rl_toeplitz_prepare_backward(rl_toeplitz *h, const struct rl_lin_head *hd, const float *dout,
                                  const float *out, const float *den, const struct rl_attn_opts *o);
void rl_toeplitz_exp_rel(rl_toeplitz *h, const float *rel);
void rl_toeplitz_forward_feature(rl_toeplitz *t, const rl_toeplitz *h, double *numT, double *den,
                                 int f, int causal);
void rl_toeplitz_backward_feature(rl_toeplitz *t, rl_toeplitz *h, double *dvT, int f, int causal,
                                  int want_rel);
/* d rel[r] += E[r] corr[r] over the lags T uses; dv (N x dvd floats) = dvT^T */
void rl_toeplitz_drel_add(double *drel, const double *E, const double *corr, int N, int causal);
void rl_toeplitz_dv_out(float *dv, const double *dvT, int N, int dvd);

#endif
