/* api.h -- libropelab's interface for other programs: the attention kernels, forward and
 * backward, and the recurrent decoding step, on caller-owned float32 buffers.
 *
 * These functions (rl_version and rl_api_*) are the only symbols the shared library
 * exports.  Options, plans and decoding states are opaque and options are set by name, so
 * a caller (C, or Python through ctypes) never copies a struct layout: a new option is a
 * new name, and a caller built against an older header keeps working.  RL_API_VERSION
 * counts incompatible changes of this header; additions (functions, option names, choice
 * values, statistics) keep it.
 *
 * Conventions:
 * - Every function that can fail returns 0 (RL_API_OK) or an error code; then
 *   rl_api_last_error() holds a message naming the value and what was expected, until
 *   the next failure on the same thread.  The library never prints and never exits.
 * - Arrays are row-major float32.  A call takes G independent heads: q, k (G, N, d), v and
 *   the output (G, N, dv), head g contiguous, using the position-encoding parameters of
 *   head g mod H (T5 table row, ALiBi slope): a batch of B sequences of H heads is
 *   G = B*H with g = b*H + h.
 * - A plan serves one call at a time; different plans may be used from different threads.
 * - Results do not depend on the thread count. */
#ifndef RL_API_H
#define RL_API_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RL_API_VERSION 1

/* Error codes (the values of the library's internal status codes). */
enum rl_api_code {
    RL_API_OK      = 0,
    RL_API_EINVAL  = 1, /* an invalid argument, option name or value */
    RL_API_ENOMEM  = 2, /* allocation failed */
    RL_API_EIO     = 3, /* a file could not be read or written */
    RL_API_EFORMAT = 4, /* a malformed file */
    RL_API_ESHAPE  = 5, /* a shape that does not match */
    RL_API_EFFT    = 6  /* an FFT plan could not be made */
};

/* The package version ("0.1.0") and the RL_API_VERSION the library was built with (a caller
 * compares it with its header's). */
const char *rl_version(void);
int         rl_api_version(void);
/* A code's meaning ("invalid argument"), and the message of the last failure on this
 * thread ("" before any). */
const char *rl_api_strerror(int code);
const char *rl_api_last_error(void);

/* Threads of the kernels (OpenMP and BLIS): n >= 1, or 0 for the default, the calling
 * thread's OpenMP count (omp_get_max_threads: OMP_NUM_THREADS, or the cores).  A plan has
 * buffers for the count in effect when it is created and never runs on more.  Results do
 * not depend on the count. */
int rl_api_threads_set(int n);
int rl_api_threads_get(void);

/* --- attention options, by name ------------------------------------------------------- */

typedef struct rl_api_opts rl_api_opts;

/* Options at their defaults: softmax attention, no position encoding, non-causal. */
int  rl_api_opts_create(rl_api_opts **out);
void rl_api_opts_free(rl_api_opts *o);
/* Sets option `name` from text: a choice by its name ("feature_map", "exp"), a number
 * ("rope_base", "500"), a flag ("causal", "true"; also false, 1, 0, yes, no, on, off).
 * An unknown name or a bad value fails with RL_API_EINVAL and a message listing what is
 * accepted ("feature_map: expected one of elu1, softmax, exp, got 'ex'").  The value is
 * checked alone; combinations are checked when a plan is made (rl_api_opts_check). */
int rl_api_opts_set(rl_api_opts *o, const char *name, const char *value);
/* The same for a number or a flag (0 or 1) given as a double; an integer option takes an
 * integral value.  A choice takes a name only (RL_API_EINVAL). */
int rl_api_opts_set_number(rl_api_opts *o, const char *name, double value);
/* The value of option `name` as text into buf (a name, a number that reads back to the same
 * value, "true"/"false"); RL_API_EINVAL for an unknown name or a buffer too small. */
int rl_api_opts_get(const rl_api_opts *o, const char *name, char *buf, size_t len);
/* The name of option i = 0, 1, ..., NULL past the last: every name rl_api_opts_set takes. */
const char *rl_api_opts_name(int i);
/* One line on option `name`: what it accepts, its default and meaning, into buf. */
int rl_api_opts_help(const char *name, char *buf, size_t len);
/* Checks the options together for heads H, head dimension d and value dimension dv
 * (e.g. pe=rope with an odd d, rope_denominator=rotated without RoPE). */
int rl_api_opts_check(const rl_api_opts *o, int H, int d, int dv);
/* A short description ("linear(elu1) rope causal") into buf. */
int rl_api_opts_describe(const rl_api_opts *o, char *buf, size_t len);

/* --- plans: forward and backward for one shape ---------------------------------------- */

typedef struct rl_api_plan rl_api_plan;

/* A plan for the options (copied: later changes to o do not reach it), H heads of
 * position-encoding parameters, N positions, head dimension d and value dimension dv:
 * RoPE tables, bias vectors, FFT plans and scratch are made here, once. */
int  rl_api_plan_create(rl_api_plan **out, const rl_api_opts *o, int H, int N, int d, int dv);
void rl_api_plan_free(rl_api_plan *p);

/* Forward for G heads (G >= 1; a call with more heads than any before allocates once):
 *   out (G, N, dv)   written
 *   saved (G*N)      written: what the backward reads back (the softmax log-sum-exp or the
 *                    linear denominator of each row); NULL when no backward follows
 *   q, k (G, N, d), v (G, N, dv)
 *   t5 (H, t5_buckets) with pe = t5, else NULL
 *   logf (G, N) with forget_gate: log forget values, each finite and <= 0, else NULL. */
int rl_api_forward(rl_api_plan *p, float *out, float *saved, const float *q, const float *k,
                   const float *v, const float *t5, const float *logf, int G);
/* Backward for the same G heads, from dout (G, N, dv) and the forward's out and saved:
 * dq, dk (G, N, d) and dv (G, N, dv) are overwritten; dt5 (H, t5_buckets) is accumulated
 * into (a table shared by layers), NULL when not wanted; dlogf (G, N) is overwritten with
 * forget_gate, NULL when not wanted. */
int rl_api_backward(rl_api_plan *p, float *dq, float *dk, float *dv, float *dt5, float *dlogf,
                    const float *dout, const float *out, const float *saved, const float *q,
                    const float *k, const float *v, const float *t5, const float *logf, int G);
/* A diagnostic of the plan by name:
 *   bad_denominators  rows of the last forward whose linear-attention denominator before
 *                     eps was <= eps, summed over heads (0 for softmax attention)
 *   forward_ms, backward_ms  wall time of the last forward and backward
 *   threads           the threads the plan runs on at most
 *   H, N, d, dv       its shape */
int rl_api_plan_stat(const rl_api_plan *p, const char *name, double *value);

/* --- recurrent decoding: one token at a time ------------------------------------------ */

typedef struct rl_api_step rl_api_step;

/* A decoding state for causal attention (causal must be set) over H heads: a key/value
 * cache for softmax attention (O(context) per token), the state S (d x dv) and z per head
 * for linear attention (O(1) per token); linear attention with pe = t5 has no recurrent
 * form and is refused.  YaRN needs rope_yarn_orig set.  The step for the token at
 * position m gives the row m of rl_api_forward over positions 0 .. m (up to rounding). */
int  rl_api_step_create(rl_api_step **out, const rl_api_opts *o, int H, int d, int dv);
void rl_api_step_free(rl_api_step *s);
/* Back to position 0. */
void rl_api_step_reset(rl_api_step *s);
/* One token: out (H, dv) from q, k (H, d) and v (H, dv); t5 (H, t5_buckets) with
 * pe = t5, else NULL; logf (H), the token's log forget values, with forget_gate, else
 * NULL. */
int rl_api_step_forward(rl_api_step *s, float *out, const float *q, const float *k, const float *v,
                        const float *t5, const float *logf);
/* A diagnostic by name: position (tokens consumed), bad_denominators (heads of the last
 * step whose linear denominator before eps was <= eps), state_bytes (the cache or state). */
int rl_api_step_stat(const rl_api_step *s, const char *name, double *value);

#ifdef __cplusplus
}
#endif

#endif
