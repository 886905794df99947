/* api_step.c -- recurrent decoding through the C API (api.h): the kernels' attention step
 * (kernels/attn_step.h) with the RoPE table it reads, which the state owns here and
 * grows by doubling as the position advances (its entries are the training kernels',
 * computed per position in double, so a table's size never changes a value). */
#include "config.h"
#include "api_impl.h"
#include "../kernels/attn_step.h"
#include "../kernels/rope.h"

#include <stdlib.h>

struct rl_api_step {
    rl_attn_step       *s;
    struct rl_attn_opts o;
    int                 H, d, dv;
    struct rl_rope      rope;
    int                 rope_n; /* positions the table covers (0: none yet) */
    long                bad;
};

enum step_stat { S_POSITION, S_BAD, S_BYTES, S_COUNT };
static const struct rl_choice step_stats[] = {
    {"position", S_POSITION, "tokens consumed (the position of the next step)"},
    {"bad_denominators", S_BAD, "heads of the last step whose linear denominator <= eps"},
    {"state_bytes", S_BYTES, "bytes of the key/value cache or of the linear states"},
    {NULL, 0, NULL}};
RL_CHOICE_TABLE_CHECK(step_stats, S_COUNT);

void rl_api_step_free(rl_api_step *s)
{
    if (!s) return;
    rl_attn_step_free(s->s);
    rl_rope_free(&s->rope);
    free(s);
}

int rl_api_step_create(rl_api_step **out, const rl_api_opts *o, int H, int d, int dv)
{
    RL_TRY(rl_capi_need(out, "rl_api_step_create", "out"));
    *out = NULL;
    RL_TRY(rl_capi_need(o, "rl_api_step_create", "opts"));
    const struct rl_attn_opts *a = &o->o;
    if (a->pe == RL_ATTN_PE_ROPE && a->rope.yarn != 1.0 && a->rope.yarn_orig <= 0)
        RL_FAIL(RL_EINVAL, "decoding with YaRN needs rope_yarn_orig (the trained context) set: "
                           "otherwise it follows the sequence length");
    rl_capi_init();
    rl_api_step *s = calloc(1, sizeof *s);
    if (!s) RL_FAIL(RL_ENOMEM, "decoding state: out of memory");
    s->o = *a, s->H = H, s->d = d, s->dv = dv;
    rl_status st = rl_attn_step_create(&s->s, a, H, d, dv, 256);
    if (st != RL_OK) {
        rl_api_step_free(s);
        return st;
    }
    *out = s;
    return RL_API_OK;
}

void rl_api_step_reset(rl_api_step *s)
{
    if (!s) return;
    rl_attn_step_reset(s->s);
    s->bad = 0;
}

/* The RoPE table covers positions 0 .. need-1. */
static rl_status ensure_rope(rl_api_step *s, int need)
{
    if (s->o.pe != RL_ATTN_PE_ROPE || need <= s->rope_n) return RL_OK;
    int n = s->rope_n * 2 > need ? s->rope_n * 2 : need < 256 ? 256 : need;
    rl_rope_free(&s->rope);
    s->rope_n = 0;
    RL_TRY(rl_rope_init(&s->rope, n, s->d, &s->o.rope));
    if (s->o.kind == RL_ATTN_SOFTMAX) /* YaRN: a R_m q, a R_n k (a = 1 without) */
        rl_rope_scale(&s->rope, rl_rope_yarn_mscale(&s->o.rope));
    s->rope_n = n;
    return RL_OK;
}

int rl_api_step_forward(rl_api_step *s, float *out, const float *q, const float *k, const float *v,
                        const float *t5, const float *logf)
{
    static const char f[] = "rl_api_step_forward";
    RL_TRY(rl_capi_need(s, f, "state"));
    RL_TRY(rl_capi_need(out, f, "out"));
    RL_TRY(rl_capi_need(q, f, "q"));
    RL_TRY(rl_capi_need(k, f, "k"));
    RL_TRY(rl_capi_need(v, f, "v"));
    if ((s->o.pe == RL_ATTN_PE_T5) != (t5 != NULL))
        RL_FAIL(RL_EINVAL, "%s: the T5 table t5 is needed with pe=t5 and only then", f);
    if (s->o.forget && !logf)
        RL_FAIL(RL_EINVAL, "%s: forget_gate needs the token's log forget values logf (H)", f);
    if (!s->o.forget && logf)
        RL_FAIL(RL_EINVAL, "%s: log forget values were given, but forget_gate is off", f);
    if (logf) RL_TRY(rl_capi_check_logf(logf, 1, (size_t)s->H, f));
    const int pos = rl_attn_step_position(s->s);
    if (pos == 1 << 30) RL_FAIL(RL_EINVAL, "%s: the state is at position 2^30, its last", f);
    RL_TRY(ensure_rope(s, pos + 1));
    long                         bad = 0;
    const struct rl_attn_step_in in  = {q, k, v, s->rope_n ? &s->rope : NULL, t5, logf};
    RL_TRY(rl_attn_step_forward(s->s, out, &bad, &in));
    s->bad = bad;
    return RL_API_OK;
}

int rl_api_step_stat(const rl_api_step *s, const char *name, double *value)
{
    int i = 0;
    RL_TRY(rl_capi_need(s, "rl_api_step_stat", "state"));
    RL_TRY(rl_capi_need(value, "rl_api_step_stat", "value"));
    RL_TRY(rl_capi_stat_index(step_stats, "decoding", name, &i));
    const double v[S_COUNT] = {[S_POSITION] = rl_attn_step_position(s->s),
                               [S_BAD]      = (double)s->bad,
                               [S_BYTES]    = (double)rl_attn_step_state_bytes(s->s)};
    *value                  = v[i];
    return RL_API_OK;
}
