/* api.c -- the C API's versions, errors, threads and plans (api.h): a plan wraps the
 * kernels' rl_attn for one shape and checks every call's arguments before the kernels see
 * them, so that a caller's mistake is an error code and a message, never a crash. */
#include "config.h"
#include "api_impl.h"
#include "../core/init.h"
#include "../core/threads.h"
#include "../core/util.h"
#include "../kernels/attn.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* the codes are the library's status values, so a status passes through unchanged */
_Static_assert(RL_API_OK == (int)RL_OK && RL_API_EINVAL == (int)RL_EINVAL &&
                   RL_API_ENOMEM == (int)RL_ENOMEM && RL_API_EIO == (int)RL_EIO &&
                   RL_API_EFORMAT == (int)RL_EFORMAT && RL_API_ESHAPE == (int)RL_ESHAPE &&
                   RL_API_EFFT == (int)RL_EFFT,
               "enum rl_api_code must equal enum rl_status");

const char *rl_version(void) { return PACKAGE_VERSION; }

int rl_api_version(void) { return RL_API_VERSION; }

const char *rl_api_strerror(int code) { return rl_strerror((rl_status)code); }

const char *rl_api_last_error(void) { return rl_last_error(); }

static pthread_once_t rl_capi_once = PTHREAD_ONCE_INIT;

/* The host's OpenMP count, so that a program (PyTorch, NumPy code) keeps its own setting. */
static int host_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

static void start(void) { rl_init(host_threads()); }

void rl_capi_init(void) { pthread_once(&rl_capi_once, start); }

int rl_api_threads_set(int n)
{
    if (n < 0) RL_FAIL(RL_EINVAL, "threads: expected a count >= 1 (or 0: the default), got %d", n);
    rl_capi_init();
    rl_threads_set(n > 0 ? n : host_threads());
    return RL_API_OK;
}

int rl_api_threads_get(void)
{
    rl_capi_init();
    return rl_threads_get();
}

rl_status rl_capi_stat_index(const struct rl_choice *t, const char *what, const char *name,
                             int *index)
{
    char why[512];
    if (name && rl_choice_parse(t, name, index) == 0) return RL_OK;
    RL_FAIL(RL_EINVAL, "%s diagnostic: %s", what,
            rl_choice_refusal(t, name ? name : "(null)", why, sizeof why));
}

rl_status rl_capi_need(const void *p, const char *func, const char *arg)
{
    if (!p) RL_FAIL(RL_EINVAL, "%s: %s is NULL", func, arg);
    return RL_OK;
}

/* --- plans ------------------------------------------------------------------------------ */

struct rl_api_plan {
    rl_attn            *a;
    struct rl_attn_opts o;
    int                 H, N, d, dv;
    int                 G_room;        /* heads the plan and the scratch below are sized for */
    float              *saved, *dlogf; /* G_room*N each: where a NULL argument writes */
    long                bad;
    double              fwd_ms, bwd_ms;
};

enum plan_stat { P_BAD, P_FWD_MS, P_BWD_MS, P_THREADS, P_H, P_N, P_D, P_DV, P_COUNT };
static const struct rl_choice plan_stats[] = {
    {"bad_denominators", P_BAD, "rows of the last forward whose linear denominator <= eps"},
    {"forward_ms", P_FWD_MS, "wall time of the last forward"},
    {"backward_ms", P_BWD_MS, "wall time of the last backward"},
    {"threads", P_THREADS, "the threads the plan runs on at most"},
    {"H", P_H, "heads of position-encoding parameters"},
    {"N", P_N, "positions"},
    {"d", P_D, "head dimension"},
    {"dv", P_DV, "value dimension"},
    {NULL, 0, NULL}};
RL_CHOICE_TABLE_CHECK(plan_stats, P_COUNT);

void rl_api_plan_free(rl_api_plan *p)
{
    if (!p) return;
    rl_attn_free(p->a);
    rl_free(p->saved), rl_free(p->dlogf);
    free(p);
}

int rl_api_plan_create(rl_api_plan **out, const rl_api_opts *o, int H, int N, int d, int dv)
{
    RL_TRY(rl_capi_need(out, "rl_api_plan_create", "out"));
    *out = NULL;
    RL_TRY(rl_capi_need(o, "rl_api_plan_create", "opts"));
    rl_capi_init();
    rl_api_plan *p = calloc(1, sizeof *p);
    if (!p) RL_FAIL(RL_ENOMEM, "attention plan: out of memory");
    p->o = o->o, p->H = H, p->N = N, p->d = d, p->dv = dv;
    rl_status st = rl_attn_create(&p->a, &o->o, H, N, d, dv);
    if (st != RL_OK) {
        rl_api_plan_free(p);
        return st;
    }
    p->G_room = H;
    *out      = p;
    return RL_API_OK;
}

/* Room for G heads: the kernels' per-call buffers, and the scratch that stands in for a
 * NULL saved or dlogf. */
static rl_status room(rl_api_plan *p, int G)
{
    if (G <= p->G_room && p->saved) return RL_OK;
    int n = G > p->G_room ? G : p->G_room;
    RL_TRY(rl_attn_reserve(p->a, n));
    float *s = rl_alloc((size_t)n * p->N * sizeof(float));
    float *l = p->o.forget ? rl_alloc((size_t)n * p->N * sizeof(float)) : NULL;
    if (!s || (p->o.forget && !l)) {
        rl_free(s), rl_free(l);
        RL_FAIL(RL_ENOMEM, "attention plan: cannot allocate the buffers of %d heads", n);
    }
    rl_free(p->saved), rl_free(p->dlogf);
    p->saved = s, p->dlogf = l, p->G_room = n;
    return RL_OK;
}

rl_status rl_capi_check_logf(const float *logf, size_t rows, size_t cols, const char *func)
{
    for (size_t i = 0; i < rows * cols; i++) {
        if (logf[i] <= 0.0f && isfinite(logf[i])) continue;
        char at[48];
        if (rows > 1)
            snprintf(at, sizeof at, "%zu, %zu", i / cols, i % cols);
        else
            snprintf(at, sizeof at, "%zu", i);
        RL_FAIL(RL_EINVAL, "%s%slogf[%s] = %g: log forget values must be finite and <= 0",
                func ? func : "", func ? ": " : "", at, (double)logf[i]);
    }
    return RL_OK;
}

/* What every forward and backward checks: the plan, G, and the optional inputs present
 * exactly when the options use them. */
static rl_status check_inputs(const rl_api_plan *p, const char *func, const float *q,
                              const float *k, const float *v, const float *t5, const float *logf,
                              int G)
{
    RL_TRY(rl_capi_need(p, func, "plan"));
    RL_TRY(rl_capi_need(q, func, "q"));
    RL_TRY(rl_capi_need(k, func, "k"));
    RL_TRY(rl_capi_need(v, func, "v"));
    if (G < 1) RL_FAIL(RL_EINVAL, "%s: G=%d heads, expected at least 1", func, G);
    if (p->o.pe == RL_ATTN_PE_T5 && !t5)
        RL_FAIL(RL_EINVAL, "%s: pe=t5 needs the bias table t5 (H x t5_buckets)", func);
    if (p->o.pe != RL_ATTN_PE_T5 && t5)
        RL_FAIL(RL_EINVAL, "%s: a T5 table was given, but pe=%s", func,
                rl_choice_name(rl_attn_pes, (int)p->o.pe));
    if (p->o.forget && !logf)
        RL_FAIL(RL_EINVAL, "%s: forget_gate needs the log forget values logf (G x N)", func);
    if (!p->o.forget && logf)
        RL_FAIL(RL_EINVAL, "%s: log forget values were given, but forget_gate is off", func);
    return logf ? rl_capi_check_logf(logf, (size_t)G, (size_t)p->N, NULL) : RL_OK;
}

int rl_api_forward(rl_api_plan *p, float *out, float *saved, const float *q, const float *k,
                   const float *v, const float *t5, const float *logf, int G)
{
    RL_TRY(check_inputs(p, "rl_api_forward", q, k, v, t5, logf, G));
    RL_TRY(rl_capi_need(out, "rl_api_forward", "out"));
    RL_TRY(room(p, G));
    const struct rl_attn_in in = {q, k, v, t5, logf, NULL};
    struct rl_attn_stats    st = {0, 0.0};
    RL_TRY(rl_attn_forward(p->a, out, saved ? saved : p->saved, &in, G, &st));
    p->bad = st.bad_denominators, p->fwd_ms = st.ms;
    return RL_API_OK;
}

int rl_api_backward(rl_api_plan *p, float *dq, float *dk, float *dv, float *dt5, float *dlogf,
                    const float *dout, const float *out, const float *saved, const float *q,
                    const float *k, const float *v, const float *t5, const float *logf, int G)
{
    static const char f[] = "rl_api_backward";
    RL_TRY(check_inputs(p, f, q, k, v, t5, logf, G));
    RL_TRY(rl_capi_need(dq, f, "dq"));
    RL_TRY(rl_capi_need(dk, f, "dk"));
    RL_TRY(rl_capi_need(dv, f, "dv"));
    RL_TRY(rl_capi_need(dout, f, "dout"));
    RL_TRY(rl_capi_need(out, f, "out"));
    RL_TRY(rl_capi_need(saved, f, "saved (the forward's)"));
    RL_TRY(room(p, G));
    const double               t0 = rl_now_ms();
    const struct rl_attn_in    in = {q, k, v, t5, logf, NULL};
    const struct rl_attn_grads gr = {dq, dk, dv, p->o.pe == RL_ATTN_PE_T5 ? dt5 : NULL,
                                     p->o.forget ? (dlogf ? dlogf : p->dlogf) : NULL};
    RL_TRY(rl_attn_backward(p->a, &gr, dout, out, saved, &in, G));
    p->bwd_ms = rl_now_ms() - t0;
    return RL_API_OK;
}

int rl_api_plan_stat(const rl_api_plan *p, const char *name, double *value)
{
    int i = 0;
    RL_TRY(rl_capi_need(p, "rl_api_plan_stat", "plan"));
    RL_TRY(rl_capi_need(value, "rl_api_plan_stat", "value"));
    RL_TRY(rl_capi_stat_index(plan_stats, "plan", name, &i));
    const double v[P_COUNT] = {[P_BAD]     = (double)p->bad,
                               [P_FWD_MS]  = p->fwd_ms,
                               [P_BWD_MS]  = p->bwd_ms,
                               [P_THREADS] = rl_attn_threads(p->a),
                               [P_H]       = p->H,
                               [P_N]       = p->N,
                               [P_D]       = p->d,
                               [P_DV]      = p->dv};
    *value                  = v[i];
    return RL_API_OK;
}
