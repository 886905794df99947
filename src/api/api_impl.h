/* api_impl.h -- what the files of the C API share (api.c, api_opts.c, api_step.c): the
 * options behind the opaque handle, the one-time start-up, and the lookup of a diagnostic
 * by name.  Private: the helpers are named rl_capi_*, outside the exported rl_api_* names. */
#ifndef RL_API_IMPL_H
#define RL_API_IMPL_H

#include "api.h"
#include "../core/choice.h"
#include "../core/status.h"
#include "../kernels/attn_opts.h"

struct rl_api_opts {
    struct rl_attn_opts o;
};

/* Starts the library once (BLIS kernel set, thread count): the calling thread's OpenMP
 * count unless rl_api_threads_set chose one. */
void rl_capi_init(void);

/* The index of diagnostic `name` in the table t (value = index), or RL_EINVAL naming what
 * (e.g. "plan") and listing the names. */
rl_status rl_capi_stat_index(const struct rl_choice *t, const char *what, const char *name,
                             int *index);

/* NULL pointers where an argument is required: RL_EINVAL naming the function and argument. */
rl_status rl_capi_need(const void *p, const char *func, const char *arg);
/* Log forget values (rows x cols) must be finite and <= 0 (a gate in (0, 1]); the refusal
 * names the first other one, "logf[r, c]" (one row: "logf[c]"), after "func: " if given. */
rl_status rl_capi_check_logf(const float *logf, size_t rows, size_t cols, const char *func);

#endif
