/* api_opts.c -- attention options by name (api.h): one row per option, the field of
 * struct rl_attn_opts it sets and what it accepts.  The names of the options and of each
 * choice's values are choice tables (core/choice.h), so every refusal reads "expected one
 * of ..." from the same place as the configuration and the command line. */
#include "config.h"
#include "api_impl.h"
#include "../core/util.h"
#include "../kernels/attn.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum opt_type { T_CHOICE, T_INT, T_DOUBLE, T_FLOAT, T_FLAG };

enum opt_id {
    O_ATTENTION,
    O_FEATURE_MAP,
    O_PE,
    O_CAUSAL,
    O_EPS,
    O_ROPE_BASE,
    O_ROPE_LAYOUT,
    O_ROPE_DIMS,
    O_ROPE_SCALE,
    O_ROPE_NTK,
    O_ROPE_YARN,
    O_ROPE_YARN_ORIG,
    O_ROPE_PLACE,
    O_ROPE_DENOMINATOR,
    O_T5_BUCKETS,
    O_T5_MAX_DISTANCE,
    O_ALIBI_SCAN,
    O_XPOS,
    O_XPOS_SCALE_BASE,
    O_FORGET_GATE,
    O_COUNT
};

/* An option: where its value goes and what it accepts.  Numbers lie in [lo, hi], or
 * (lo, hi] with gt. */
struct opt_row {
    enum opt_type           type;
    size_t                  off; /* into struct rl_attn_opts */
    double                  lo, hi;
    int                     gt;
    const struct rl_choice *choices; /* T_CHOICE */
};

/* the field's offset, checked to have the row's type (enums and ints by size) */
#define OPT_OFF(f, type)                                                                           \
    _Generic(((struct rl_attn_opts *)0)->f, type : offsetof(struct rl_attn_opts, f))
#define OPT_OFF_INT(f)                                                                             \
    (offsetof(struct rl_attn_opts, f) +                                                            \
     0 * sizeof(char[sizeof(((struct rl_attn_opts *)0)->f) == sizeof(int) ? 1 : -1]))
#define CHOICE(f, t)                                                                               \
    {                                                                                              \
        T_CHOICE, OPT_OFF_INT(f), 0, 0, 0, (t)                                                     \
    }
#define INT(f, l, h)                                                                               \
    {                                                                                              \
        T_INT, OPT_OFF(f, int), (l), (h), 0, NULL                                                  \
    }
#define DBL(f, l, gt)                                                                              \
    {                                                                                              \
        T_DOUBLE, OPT_OFF(f, double), (l), INFINITY, (gt), NULL                                    \
    }
#define FLAG(f)                                                                                    \
    {                                                                                              \
        T_FLAG, OPT_OFF(f, int), 0, 1, 0, NULL                                                     \
    }

static const struct opt_row rows[O_COUNT] = {
    [O_ATTENTION]        = CHOICE(kind, rl_attn_kinds),
    [O_FEATURE_MAP]      = CHOICE(fmap, rl_fmaps),
    [O_PE]               = CHOICE(pe, rl_attn_pes),
    [O_CAUSAL]           = FLAG(causal),
    [O_EPS]              = {T_FLOAT, OPT_OFF(eps, float), 0, 1e30, 0, NULL},
    [O_ROPE_BASE]        = DBL(rope.base, 0, 1),
    [O_ROPE_LAYOUT]      = CHOICE(rope.layout, rl_rope_layouts),
    [O_ROPE_DIMS]        = INT(rope.dims, 0, 1 << 20),
    [O_ROPE_SCALE]       = DBL(rope.scale, 0, 1),
    [O_ROPE_NTK]         = DBL(rope.ntk, 0, 1),
    [O_ROPE_YARN]        = DBL(rope.yarn, 1, 0),
    [O_ROPE_YARN_ORIG]   = INT(rope.yarn_orig, 0, 1 << 30),
    [O_ROPE_PLACE]       = CHOICE(rope_place, rl_rope_places),
    [O_ROPE_DENOMINATOR] = CHOICE(rope_denominator, rl_rope_denoms),
    [O_T5_BUCKETS]       = INT(t5_buckets, 2, 1 << 20),
    [O_T5_MAX_DISTANCE]  = INT(t5_max_distance, 1, 1 << 30),
    [O_ALIBI_SCAN]       = FLAG(alibi_scan),
    [O_XPOS]             = FLAG(xpos),
    [O_XPOS_SCALE_BASE]  = DBL(xpos_scale_base, 0, 1),
    [O_FORGET_GATE]      = FLAG(forget),
};

/* The names, in the order of the rows, with a line of help each. */
static const struct rl_choice names[] = {
    {"attention", O_ATTENTION, "the kernel"},
    {"feature_map", O_FEATURE_MAP, "linear attention's feature map"},
    {"pe", O_PE, "the attention-level position encoding"},
    {"causal", O_CAUSAL, "position m attends to n <= m only"},
    {"eps", O_EPS, "linear attention: added to the denominator"},
    {"rope_base", O_ROPE_BASE, "RoPE: theta_i = base^(-2i/R)"},
    {"rope_layout", O_ROPE_LAYOUT, "RoPE: the features that rotate together"},
    {"rope_dims", O_ROPE_DIMS, "RoPE: rotate the first R features only (0: all d)"},
    {"rope_scale", O_ROPE_SCALE, "RoPE: position interpolation m -> m/scale"},
    {"rope_ntk", O_ROPE_NTK, "RoPE: NTK-aware base scaling by alpha^(R/(R-2))"},
    {"rope_yarn", O_ROPE_YARN, "RoPE: YaRN factor s (1: off)"},
    {"rope_yarn_orig", O_ROPE_YARN_ORIG, "RoPE: YaRN's trained context L (0: N of the plan)"},
    {"rope_place", O_ROPE_PLACE, "linear attention: RoPE on the features (eq. 19) or the input"},
    {"rope_denominator", O_ROPE_DENOMINATOR,
     "linear attention: eq. 19's plain denominator "
     "or the rotated one"},
    {"t5_buckets", O_T5_BUCKETS, "T5: buckets of the bias table (its second dimension)"},
    {"t5_max_distance", O_T5_MAX_DISTANCE, "T5: the distance of the last bucket"},
    {"alibi_scan", O_ALIBI_SCAN, "linear causal ALiBi by the O(N) decayed scan, else FFT"},
    {"xpos", O_XPOS, "xPos decay on RoPE (softmax, causal)"},
    {"xpos_scale_base", O_XPOS_SCALE_BASE, "xPos: gamma"},
    {"forget_gate", O_FORGET_GATE, "causal: the data-dependent forget gate (log gates logf)"},
    {NULL, 0, NULL}};
RL_CHOICE_TABLE_CHECK(names, O_COUNT);

int rl_api_opts_create(rl_api_opts **out)
{
    RL_TRY(rl_capi_need(out, "rl_api_opts_create", "out"));
    if (!(*out = malloc(sizeof **out))) RL_FAIL(RL_ENOMEM, "options: out of memory");
    rl_attn_opts_default(&(*out)->o);
    return RL_API_OK;
}

void rl_api_opts_free(rl_api_opts *o) { free(o); }

const char *rl_api_opts_name(int i) { return i >= 0 && i < O_COUNT ? names[i].name : NULL; }

/* The row of option `name`, or RL_EINVAL listing the names. */
static rl_status find(const char *name, int *id)
{
    char why[1024];
    if (name && rl_choice_parse(names, name, id) == 0) return RL_OK;
    RL_FAIL(RL_EINVAL, "option name: %s",
            rl_choice_refusal(names, name ? name : "(null)", why, sizeof why));
}

/* What a row accepts, for help and refusals: "one of a, b", "a number > 0", ... */
static const char *expectation(const struct opt_row *r, char *buf, size_t len)
{
    if (r->type == T_CHOICE) {
        char list[256];
        snprintf(buf, len, "one of %s", rl_choice_list(r->choices, ", ", list, sizeof list));
    } else if (r->type == T_INT)
        rl_int_expectation(buf, len, (long long)r->lo, (long long)r->hi);
    else if (r->type == T_FLAG)
        snprintf(buf, len, "true or false");
    else
        snprintf(buf, len, "a number %s %g", r->gt ? ">" : ">=", r->lo);
    return buf;
}

static void *field(struct rl_attn_opts *o, const struct opt_row *r) { return (char *)o + r->off; }

/* Stores a number into a numeric row, checked against the row's range. */
static rl_status store(struct rl_attn_opts *o, int id, double x, const char *text)
{
    const struct opt_row *r = &rows[id];
    char                  e[256];
    int                   ok = isfinite(x) && (r->gt ? x > r->lo : x >= r->lo) && x <= r->hi;
    if (ok && (r->type == T_INT || r->type == T_FLAG)) ok = x == floor(x);
    if (!ok)
        RL_FAIL(RL_EINVAL, "%s: expected %s, got '%s'", names[id].name, expectation(r, e, sizeof e),
                text);
    if (r->type == T_DOUBLE)
        *(double *)field(o, r) = x;
    else if (r->type == T_FLOAT)
        *(float *)field(o, r) = (float)x;
    else
        *(int *)field(o, r) = (int)x;
    return RL_OK;
}

/* A flag's words, as the configuration files read them. */
static int flag_word(const char *s, double *x)
{
    static const char *const yes[] = {"true", "yes", "on", "1"}, *const no[] = {"false", "no",
                                                                                "off", "0"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, yes[i]) || !strcmp(s, no[i])) return *x = !strcmp(s, yes[i]), 1;
    return 0;
}

int rl_api_opts_set(rl_api_opts *o, const char *name, const char *value)
{
    int  id = 0;
    char why[512];
    RL_TRY(rl_capi_need(o, "rl_api_opts_set", "opts"));
    RL_TRY(find(name, &id));
    RL_TRY(rl_capi_need(value, "rl_api_opts_set", "value"));
    const struct opt_row *r = &rows[id];
    if (r->type == T_CHOICE) {
        if (rl_choice_parse(r->choices, value, (int *)field(&o->o, r)) == 0) return RL_API_OK;
        RL_FAIL(RL_EINVAL, "%s: %s", name, rl_choice_refusal(r->choices, value, why, sizeof why));
    }
    double x   = NAN;
    char  *end = NULL;
    if (r->type == T_FLAG) {
        if (!flag_word(value, &x)) x = NAN;
    } else {
        errno = 0;
        x     = strtod(value, &end);
        if (end == value || *end || errno == ERANGE) x = NAN;
    }
    return store(&o->o, id, x, value);
}

int rl_api_opts_set_number(rl_api_opts *o, const char *name, double value)
{
    int  id = 0;
    char text[64], e[256];
    RL_TRY(rl_capi_need(o, "rl_api_opts_set_number", "opts"));
    RL_TRY(find(name, &id));
    snprintf(text, sizeof text, "%.17g", value);
    if (rows[id].type == T_CHOICE)
        RL_FAIL(RL_EINVAL, "%s: expected a name, %s, got the number %s", name,
                expectation(&rows[id], e, sizeof e), text);
    return store(&o->o, id, value, text);
}

/* An integral value as an integer, else the shortest %g text that reads back to x (as a
 * float when single). */
static int shortest(char *buf, size_t len, double x, int single)
{
    char t[40];
    if (x == floor(x) && fabs(x) < 1e15) return snprintf(buf, len, "%.0f", x);
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(t, sizeof t, "%.*g", prec, x);
        double y = strtod(t, NULL);
        if (single ? (float)y == (float)x : y == x) break;
    }
    return snprintf(buf, len, "%s", t);
}

/* The value of row id in o as text. */
static int format(char *buf, size_t len, const struct rl_attn_opts *o, int id)
{
    const struct opt_row *r = &rows[id];
    const void           *p = (const char *)o + r->off;
    if (r->type == T_CHOICE)
        return snprintf(buf, len, "%s", rl_choice_name(r->choices, *(const int *)p));
    if (r->type == T_FLAG) return snprintf(buf, len, "%s", *(const int *)p ? "true" : "false");
    if (r->type == T_INT) return snprintf(buf, len, "%d", *(const int *)p);
    if (r->type == T_FLOAT) return shortest(buf, len, (double)*(const float *)p, 1);
    return shortest(buf, len, *(const double *)p, 0);
}

int rl_api_opts_get(const rl_api_opts *o, const char *name, char *buf, size_t len)
{
    int id = 0;
    RL_TRY(rl_capi_need(o, "rl_api_opts_get", "opts"));
    RL_TRY(rl_capi_need(buf, "rl_api_opts_get", "buf"));
    RL_TRY(find(name, &id));
    int n = format(buf, len, &o->o, id);
    if (n < 0 || (size_t)n >= len)
        RL_FAIL(RL_EINVAL, "rl_api_opts_get: %zu bytes are too few for %s (%d needed)", len, name,
                n + 1);
    return RL_API_OK;
}

int rl_api_opts_help(const char *name, char *buf, size_t len)
{
    int                 id = 0;
    char                e[256], def[64];
    struct rl_attn_opts d;
    RL_TRY(rl_capi_need(buf, "rl_api_opts_help", "buf"));
    RL_TRY(find(name, &id));
    rl_attn_opts_default(&d);
    format(def, sizeof def, &d, id);
    snprintf(buf, len, "%s: %s (default %s): %s", name, expectation(&rows[id], e, sizeof e), def,
             names[id].help);
    return RL_API_OK;
}

int rl_api_opts_check(const rl_api_opts *o, int H, int d, int dv)
{
    RL_TRY(rl_capi_need(o, "rl_api_opts_check", "opts"));
    return rl_attn_opts_check(&o->o, H, d, dv);
}

int rl_api_opts_describe(const rl_api_opts *o, char *buf, size_t len)
{
    RL_TRY(rl_capi_need(o, "rl_api_opts_describe", "opts"));
    RL_TRY(rl_capi_need(buf, "rl_api_opts_describe", "buf"));
    rl_attn_describe(&o->o, buf, len > 1 << 20 ? 1 << 20 : (int)len);
    return RL_API_OK;
}
