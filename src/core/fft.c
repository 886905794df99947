/* fft.c -- Toeplitz products by double-precision FFTW convolution (fft.h).
 *
 * Why double (fftw3, not fftw3f): the attention outputs that use these products divide
 * two sums of positive terms; an FFT's rounding error is relative to the largest term of
 * the whole sequence, which in single precision costs ~1e-2 relative accuracy on causal
 * rows at N = 2048 (relative-bias linear attention).  Double keeps it near 1e-12. */
#include "config.h"
#include "fft.h"

#include <fftw3.h>
#include <pthread.h>
#include <string.h>

/* FFTW's planner (and plan destruction) touch global state: one lock for the process. */
static pthread_mutex_t rl_fft_planner_lock = PTHREAD_MUTEX_INITIALIZER;

struct rl_fft_conv {
    int           N, L, Lc, cols;
    double       *buf;        /* input: cols x L, column-contiguous; rows N..L-1 stay zero */
    double       *out;        /* output of c2r: cols x L */
    fftw_complex *spec[2];    /* cols x Lc each */
    fftw_complex *H;          /* kernel spectrum / L */
    fftw_complex *acc;        /* correlation accumulator (Lc) */
    double       *tmp;        /* one real column (L) */
    fftw_plan     r2c, c2r;   /* batched over cols: buf -> spec[0] -> out (new-array execute) */
    fftw_plan     r2c1, c2r1; /* one column: tmp -> H, acc -> tmp */
};

int rl_fft_good_size(int n)
{
    for (int L = n > 1 ? n : 1;; L++) {
        int r = L;
        while (r % 2 == 0)
            r /= 2;
        while (r % 3 == 0)
            r /= 3;
        while (r % 5 == 0)
            r /= 5;
        while (r % 7 == 0)
            r /= 7;
        if (r == 1) return L;
    }
}

static void conv_destroy_plans(rl_fft_conv *c)
{
    fftw_plan *p[4] = {&c->r2c, &c->c2r, &c->r2c1, &c->c2r1};
    pthread_mutex_lock(&rl_fft_planner_lock);
    for (int i = 0; i < 4; i++)
        if (*p[i]) fftw_destroy_plan(*p[i]), *p[i] = NULL;
    pthread_mutex_unlock(&rl_fft_planner_lock);
}

void rl_fft_conv_free(rl_fft_conv *c)
{
    if (!c) return;
    conv_destroy_plans(c);
    fftw_free(c->buf), fftw_free(c->out), fftw_free(c->spec[0]), fftw_free(c->spec[1]);
    fftw_free(c->H), fftw_free(c->acc), fftw_free(c->tmp);
    fftw_free(c);
}

static void conv_make_plans(rl_fft_conv *c)
{
    int L = c->L, Lc = c->Lc, C = c->cols;
    pthread_mutex_lock(&rl_fft_planner_lock);
    c->r2c  = fftw_plan_many_dft_r2c(1, &L, C, c->buf, NULL, 1, L, c->spec[0], NULL, 1, Lc,
                                     FFTW_ESTIMATE);
    c->c2r  = fftw_plan_many_dft_c2r(1, &L, C, c->spec[0], NULL, 1, Lc, c->out, NULL, 1, L,
                                     FFTW_ESTIMATE);
    c->r2c1 = fftw_plan_dft_r2c_1d(L, c->tmp, c->H, FFTW_ESTIMATE);
    c->c2r1 = fftw_plan_dft_c2r_1d(L, c->acc, c->tmp, FFTW_ESTIMATE);
    pthread_mutex_unlock(&rl_fft_planner_lock);
}

rl_status rl_fft_conv_create(rl_fft_conv **out, int N, int cols)
{
    *out = NULL;
    if (N < 1 || cols < 1) RL_FAIL(RL_EINVAL, "fft conv: N=%d, cols=%d must be >= 1", N, cols);
    if (N > (1 << 29) / 2) RL_FAIL(RL_EINVAL, "fft conv: N=%d too long", N);
    rl_fft_conv *c = fftw_malloc(sizeof *c);
    if (!c) RL_FAIL(RL_ENOMEM, "fft conv: out of memory");
    memset(c, 0, sizeof *c);
    c->N = N, c->cols = cols, c->L = rl_fft_good_size(2 * N - 1), c->Lc = c->L / 2 + 1;
    size_t nr = (size_t)c->L * cols, nc = (size_t)c->Lc * cols;
    c->buf     = fftw_alloc_real(nr);
    c->out     = fftw_alloc_real(nr);
    c->spec[0] = fftw_alloc_complex(nc);
    c->spec[1] = fftw_alloc_complex(nc);
    c->H       = fftw_alloc_complex((size_t)c->Lc);
    c->acc     = fftw_alloc_complex((size_t)c->Lc);
    c->tmp     = fftw_alloc_real((size_t)c->L);
    if (!c->buf || !c->out || !c->spec[0] || !c->spec[1] || !c->H || !c->acc || !c->tmp) {
        rl_fft_conv_free(c);
        RL_FAIL(RL_ENOMEM, "fft conv: out of memory for N=%d, cols=%d", N, cols);
    }
    memset(c->buf, 0, nr * sizeof(double));
    memset(c->acc, 0, (size_t)c->Lc * sizeof(fftw_complex));
    conv_make_plans(c);
    if (!c->r2c || !c->c2r || !c->r2c1 || !c->c2r1) {
        rl_fft_conv_free(c);
        RL_FAIL(RL_EFFT, "fft conv: FFTW plan failed for L=%d, cols=%d", c->L, cols);
    }
    *out = c;
    return RL_OK;
}

int     rl_fft_conv_length(const rl_fft_conv *c) { return c->L; }
double *rl_fft_conv_buf(rl_fft_conv *c) { return c->buf; }
double *rl_fft_conv_out(rl_fft_conv *c) { return c->out; }

void rl_fft_conv_set_kernel(rl_fft_conv *c, const double *E, int causal)
{
    int N = c->N, L = c->L;
    /* y[m] = sum_n h[m-n] x[n], h[t] = T[m, m-t] = E[N-1-t]; t < 0 lives at L + t */
    memset(c->tmp, 0, (size_t)L * sizeof(double));
    for (int t = 0; t < N; t++)
        c->tmp[t] = E[N - 1 - t];
    if (!causal)
        for (int t = 1; t < N; t++)
            c->tmp[L - t] = E[N - 1 + t];
    fftw_execute(c->r2c1);
    double s = 1.0 / L;
    for (int i = 0; i < c->Lc; i++)
        c->H[i][0] *= s, c->H[i][1] *= s;
}

void rl_fft_conv_r2c(rl_fft_conv *c, int slot)
{
    fftw_execute_dft_r2c(c->r2c, c->buf, c->spec[slot]);
}

void rl_fft_conv_mul(rl_fft_conv *c, int dst, int src, int transpose)
{
    const double *H  = (const double *)c->H;
    double        sg = transpose ? -1.0 : 1.0; /* T^T: correlation = conj(H) */
    for (int j = 0; j < c->cols; j++) {
        const double *x = (const double *)(c->spec[src] + (size_t)j * c->Lc);
        double       *y = (double *)(c->spec[dst] + (size_t)j * c->Lc);
#pragma omp simd
        for (int i = 0; i < c->Lc; i++) {
            double hr = H[2 * i], hi = sg * H[2 * i + 1], xr = x[2 * i], xi = x[2 * i + 1];
            y[2 * i]     = hr * xr - hi * xi;
            y[2 * i + 1] = hr * xi + hi * xr;
        }
    }
}

void rl_fft_conv_c2r(rl_fft_conv *c, int slot)
{
    fftw_execute_dft_c2r(c->c2r, c->spec[slot], c->out);
}

void rl_fft_conv_apply(rl_fft_conv *c, int transpose)
{
    rl_fft_conv_r2c(c, 0);
    rl_fft_conv_mul(c, 0, 0, transpose);
    rl_fft_conv_c2r(c, 0);
}

void rl_fft_conv_corr_zero(rl_fft_conv *c)
{
    memset(c->acc, 0, (size_t)c->Lc * sizeof(fftw_complex));
}

void rl_fft_conv_corr_acc(rl_fft_conv *c, int a, int b)
{
    double *acc = (double *)c->acc;
    for (int j = 0; j < c->cols; j++) {
        const double *p = (const double *)(c->spec[a] + (size_t)j * c->Lc);
        const double *q = (const double *)(c->spec[b] + (size_t)j * c->Lc);
#pragma omp simd
        for (int i = 0; i < c->Lc; i++) { /* conj(p) * q */
            acc[2 * i] += p[2 * i] * q[2 * i] + p[2 * i + 1] * q[2 * i + 1];
            acc[2 * i + 1] += p[2 * i] * q[2 * i + 1] - p[2 * i + 1] * q[2 * i];
        }
    }
}

void rl_fft_conv_corr_read(rl_fft_conv *c, double *out)
{
    int N = c->N, L = c->L;
    fftw_execute(c->c2r1);
    /* circular cross-correlation: lag r at index r mod L, unnormalised transform */
    double s = 1.0 / L;
    for (int r = -(N - 1); r < N; r++)
        out[r + N - 1] = s * c->tmp[r >= 0 ? r : L + r];
    rl_fft_conv_corr_zero(c);
}
