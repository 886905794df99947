/* cfg_check.c -- combination checks, resolution of automatic values, the resolved INI
 * text and its comparison (resume), and the mapping onto task/model options; see cfg.h. */
#include "config.h"
#include "cfg.h"
#include "cfg_keys.h"
#include "../core/mpi.h"

#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Where the first of the named keys that was set got its value ("exp.ini:12",
 * "--set ..."), else the file: combination errors point at a line the user wrote. */
static const char *where_of(const struct rl_cfg *c, const char *s1, const char *k1, const char *s2,
                            const char *k2)
{
    int i = rl_cfg_find_key(s1, k1), j = s2 ? rl_cfg_find_key(s2, k2) : -1;
    RL_ASSERT(i >= 0);
    if (c->where[i][0]) return c->where[i];
    if (j >= 0 && c->where[j][0]) return c->where[j];
    return c->file[0] ? c->file : "(defaults)";
}

#define CHECK_FAIL(s1, k1, s2, k2, ...)                                                            \
    do {                                                                                           \
        char m_[512];                                                                              \
        snprintf(m_, sizeof m_, __VA_ARGS__);                                                      \
        RL_FAIL(RL_EINVAL, "%s: [%s] %s: %s", where_of(c, s1, k1, s2, k2), s1, k1, m_);            \
    } while (0)

static rl_status check_rope(const struct rl_cfg *c)
{
    int d = c->model.d_model / c->model.heads, R = c->model.rope_dims ? c->model.rope_dims : d;
    if (c->model.pe == RL_CFG_PE_ROPE) {
        if (!c->model.rope_dims && d % 2)
            CHECK_FAIL("model", "heads", "model", "d_model",
                       "head dim d_model/heads = %d is odd; RoPE needs it even (or an even "
                       "rope_dims for partial rotary)",
                       d);
        if (R % 2 || R > d)
            CHECK_FAIL("model", "rope_dims", NULL, NULL, "must be even and <= head dim %d, got %d",
                       d, R);
        if (c->model.rope_ntk != 1 && R <= 2)
            CHECK_FAIL("model", "rope_ntk", NULL, NULL, "NTK scaling needs rope_dims > 2 (got %d)",
                       R);
    }
    if (!(c->model.rope_yarn >= 1))
        CHECK_FAIL("model", "rope_yarn", NULL, NULL, "must be >= 1 (1 = off), got %g",
                   c->model.rope_yarn);
    if (c->model.rope_yarn != 1 && (c->model.rope_scale != 1 || c->model.rope_ntk != 1))
        CHECK_FAIL("model", "rope_yarn", "model", "rope_scale",
                   "YaRN excludes rope_scale != 1 and rope_ntk != 1");
    if (c->model.xpos && (c->model.attention != RL_ATTN_SOFTMAX || c->model.pe != RL_CFG_PE_ROPE ||
                          c->task.name == RL_TASK_LISTOPS))
        CHECK_FAIL("model", "xpos", NULL, NULL,
                   "xPos needs attention = softmax, pe = rope and a causal task (not listops)");
    if (c->model.forget_gate && c->task.name == RL_TASK_LISTOPS)
        CHECK_FAIL("model", "forget_gate", NULL, NULL,
                   "the forget gate weighs earlier positions only: it needs a causal task, and "
                   "listops is a non-causal classifier");
    int linear_rope = c->model.pe == RL_CFG_PE_ROPE && c->model.attention == RL_ATTN_LINEAR;
    if (c->model.rope_place == RL_ROPE_PLACE_INPUT && !linear_rope)
        CHECK_FAIL("model", "rope_place", NULL, NULL,
                   "'input' applies to linear attention with pe = rope only");
    if (c->model.rope_denominator == RL_ROPE_DENOM_ROTATED &&
        (!linear_rope || c->model.rope_place != RL_ROPE_PLACE_FEATURE))
        CHECK_FAIL("model", "rope_denominator", NULL, NULL,
                   "'rotated' needs attention = linear, pe = rope and rope_place = feature");
    return RL_OK;
}

/* Every line of the config.ini a run writes must read back: libinih holds INI_MAX_LINE
 * characters with the newline.  A longer value (a long --out or path, a long swept list,
 * possible through --out and --set) would leave the run unable to read its own config.ini
 * (report, eval, --resume) after training. */
rl_status rl_cfg_check_lines(const struct rl_cfg *c)
{
    char *text = malloc(1 << 16), sec[64] = "", key[128];
    if (!text) RL_FAIL(RL_ENOMEM, "out of memory");
    rl_cfg_render(c, text, 1 << 16, 0);
    size_t n = 0;
    for (char *line = text, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
        n = (size_t)(nl - line);
        if (line[0] == '[' && n >= 2) snprintf(sec, sizeof sec, "%.*s", (int)n - 2, line + 1);
        if (line[0] == '[' || n <= INI_MAX_LINE - 2) continue;
        const char *eq = strstr(line, " = ");
        snprintf(key, sizeof key, "%.*s", eq && eq < nl ? (int)(eq - line) : 0, line);
        break;
    }
    free(text);
    if (n <= INI_MAX_LINE - 2) return RL_OK;
    const char *where = c->file[0] ? c->file : "(defaults)";
    int         i     = rl_cfg_find_key(sec, key);
    if (i >= 0 && c->where[i][0]) where = c->where[i];
    for (int j = 0; j < c->sweep.n_keys && strcmp(sec, "sweep") == 0; j++)
        if (!strcmp(c->sweep.keys[j].key, key)) where = c->sweep.keys[j].where;
    RL_FAIL(RL_EINVAL,
            "%s: [%s] %s: the line '%s = ...' would be %zu characters in config.ini, more "
            "than the %d an INI line holds: shorten the value",
            where, sec, key, key, n, INI_MAX_LINE - 2);
}

rl_status rl_cfg_check(const struct rl_cfg *c)
{
    RL_TRY(rl_cfg_check_lines(c));
    if (c->model.d_model % c->model.heads)
        CHECK_FAIL("model", "heads", "model", "d_model",
                   "d_model = %d is not divisible by heads = %d", c->model.d_model, c->model.heads);
    RL_TRY(check_rope(c));
    if (c->train.batch % c->train.accumulate)
        CHECK_FAIL("train", "accumulate", "train", "batch",
                   "batch = %d is not divisible by accumulate = %d", c->train.batch,
                   c->train.accumulate);
    if (c->train.data_parallel && c->train.batch % (rl_mpi_size() * c->train.accumulate))
        CHECK_FAIL("train", "batch", "train", "data_parallel",
                   "batch = %d is not divisible by %d ranks x accumulate = %d (data_parallel: "
                   "every rank trains an equal share of each update's rows)",
                   c->train.batch, rl_mpi_size(), c->train.accumulate);
    if (c->task.name == RL_TASK_TOKENS && !c->task.path[0])
        CHECK_FAIL("task", "path", "task", "name", "the tokens task needs path (an .npy file)");
    if (c->model.pe == RL_CFG_PE_T5) {
        /* the bucket formula divides by log(max_distance / max_exact) */
        int exact =
            c->task.name == RL_TASK_LISTOPS ? c->model.t5_buckets / 4 : c->model.t5_buckets / 2;
        if (exact < 1 || c->model.t5_max_distance <= exact)
            CHECK_FAIL("model", "t5_max_distance", "model", "t5_buckets",
                       "must exceed the exact-bucket range %d (t5_buckets = %d%s)", exact,
                       c->model.t5_buckets,
                       c->task.name == RL_TASK_LISTOPS ? ", bidirectional" : "");
    }
    return RL_OK;
}

/* [eval] stride and rope_extend against the task and the trained RoPE (lengths resolved). */
static rl_status check_eval(const struct rl_cfg *c)
{
    int extend = 0, ntk = 0, yarn = 0;
    for (int i = 0; i < c->eval.n_extend; i++) {
        extend |= c->eval.extend[i] != RL_CFG_EXTEND_NONE;
        ntk |= c->eval.extend[i] == RL_CFG_EXTEND_NTK,
            yarn |= c->eval.extend[i] == RL_CFG_EXTEND_YARN;
    }
    if (c->eval.stride && !rl_task_kind_lm(c->task.name))
        CHECK_FAIL("eval", "stride", NULL, NULL,
                   "sliding windows apply to language-model tasks (charlm, tokens), not %s",
                   rl_task_kind_name(c->task.name));
    for (int i = 0; c->eval.stride && i < c->eval.n_lengths; i++)
        if (c->eval.stride >= c->eval.lengths[i])
            CHECK_FAIL("eval", "stride", "eval", "lengths",
                       "%d must be smaller than every evaluation length (%d); 0 = "
                       "non-overlapping windows",
                       c->eval.stride, c->eval.lengths[i]);
    if (!extend || c->model.pe != RL_CFG_PE_ROPE) return RL_OK; /* others: evaluated once */
    if (c->model.rope_scale != 1 || c->model.rope_ntk != 1 || c->model.rope_yarn != 1)
        CHECK_FAIL("eval", "rope_extend", NULL, NULL,
                   "the model is trained with rope_scale = %g, rope_ntk = %g, rope_yarn = %g: "
                   "extension methods apply to plain RoPE (use rope_extend = none)",
                   c->model.rope_scale, c->model.rope_ntk, c->model.rope_yarn);
    if (ntk && c->model.rope_dims <= 2)
        CHECK_FAIL("eval", "rope_extend", NULL, NULL, "ntk needs rope_dims > 2 (got %d)",
                   c->model.rope_dims);
    /* the kernels must take every method with this model's other options (xPos, ...) */
    for (int i = 0; i < c->eval.n_extend; i++) {
        const enum rl_cfg_extend e = c->eval.extend[i];
        struct rl_model_config   mc;
        rl_cfg_model_config(c, 2, c->task.name != RL_TASK_LISTOPS, 0, &mc); /* causal */
        if (e == RL_CFG_EXTEND_PI) mc.attn.rope.scale = 2;
        if (e == RL_CFG_EXTEND_NTK) mc.attn.rope.ntk = 2;
        if (e == RL_CFG_EXTEND_YARN) mc.attn.rope.yarn = 2, mc.attn.rope.yarn_orig = c->task.length;
        const int d = c->model.d_model / c->model.heads;
        if (rl_attn_opts_check(&mc.attn, c->model.heads, d, d) != RL_OK) {
            char why[256];
            snprintf(why, sizeof why, "%s", rl_last_error());
            CHECK_FAIL("eval", "rope_extend", NULL, NULL, "%s: %s", rl_cfg_extend_name(e), why);
        }
    }
    return RL_OK;
}

rl_status rl_cfg_resolve(struct rl_cfg *c, int task_length, int task_vocab, int task_max_length,
                         int task_min_length)
{
    RL_TRY(rl_cfg_check(c));
    if (!c->experiment.name[0])
        RL_FAIL(RL_EINVAL, "%s: [experiment] name: required", c->file[0] ? c->file : "(defaults)");
    if (c->task.length && task_length != c->task.length)
        CHECK_FAIL("task", "length", NULL, NULL, "the task's length is %d, not %d", task_length,
                   c->task.length);
    if (c->task.vocab && task_vocab != c->task.vocab)
        CHECK_FAIL("task", "vocab", NULL, NULL, "the task's vocabulary is %d, not %d", task_vocab,
                   c->task.vocab);
    if (!c->train.data_seed) c->train.data_seed = c->train.seed; /* explicit in config.ini */
    c->task.length = task_length;
    c->task.vocab  = task_vocab;
    if (!c->model.max_len) c->model.max_len = task_length;
    if (!c->model.rope_dims) c->model.rope_dims = c->model.d_model / c->model.heads;
    if (!c->model.rope_yarn_orig) c->model.rope_yarn_orig = task_length;
    if (!c->eval.n_lengths) c->eval.lengths[c->eval.n_lengths++] = task_length;
    if (c->model.pe == RL_CFG_PE_LEARNED && c->model.max_len < task_length)
        CHECK_FAIL("model", "max_len", NULL, NULL,
                   "the learned PE needs max_len >= the task length %d, got %d", task_length,
                   c->model.max_len);
    RL_TRY(check_eval(c));
    for (int i = 0; i < c->eval.n_lengths; i++) {
        if (task_max_length > 0 && c->eval.lengths[i] > task_max_length)
            CHECK_FAIL("eval", "lengths", NULL, NULL,
                       "length %d is longer than the task allows (%d: %s)", c->eval.lengths[i],
                       task_max_length,
                       c->task.name == RL_TASK_MQAR ? "mqar's length/16 key-value pairs need "
                                                      "distinct keys 1 .. vocab/2 - 1; raise "
                                                      "[task] vocab or set kv_pairs"
                                                    : "the data's length");
        if (c->eval.lengths[i] < task_min_length)
            CHECK_FAIL("eval", "lengths", NULL, NULL,
                       "length %d is shorter than the task allows (%d: %s)", c->eval.lengths[i],
                       task_min_length,
                       c->task.name == RL_TASK_PASSKEY
                           ? "passkey's KEY and digits, QUERY and answer"
                           : "mqar's kv_pairs pairs and a query slot per pair");
    }
    return RL_OK;
}

/* ---- rendering ---- */

static void fmt_double(char *buf, size_t len, double v)
{
    /* the shortest of %.15g .. %.17g that reads back exactly (1e-3, not 0.00100000000000000002) */
    for (int p = 15; p <= 17; p++) {
        snprintf(buf, len, "%.*g", p, v);
        if (strtod(buf, NULL) == v) return;
    }
}

static void fmt_value(const struct rl_cfg *c, int i, char *buf, size_t len)
{
    const struct rl_cfg_key *k = &rl_cfg_keys[i];
    const char              *p = (const char *)c + k->off;
    switch (k->type) {
    case RL_K_INT:
        snprintf(buf, len, "%d", *(const int *)p);
        return;
    case RL_K_U64:
        snprintf(buf, len, "%llu", (unsigned long long)*(const uint64_t *)p);
        return;
    case RL_K_DBL:
        fmt_double(buf, len, *(const double *)p);
        return;
    case RL_K_BOOL:
        snprintf(buf, len, "%s", *(const int *)p ? "true" : "false");
        return;
    case RL_K_ENUM:
        snprintf(buf, len, "%s", rl_choice_name(k->choices, *(const int *)p));
        return;
    case RL_K_STR:
        snprintf(buf, len, "%s",
                 *p || k->off != offsetof(struct rl_cfg, train.init_from) ? p : "none");
        return;
    case RL_K_LENGTHS: { /* the list at off, its count at lo */
        const int *v = (const int *)p, nv = *(const int *)((const char *)c + k->lo);
        size_t     n = 0;
        buf[0]       = 0;
        for (int j = 0; j < nv && n < len; j++)
            n += (size_t)snprintf(buf + n, len - n, "%s%d", j ? ", " : "", v[j]);
        return;
    }
    case RL_K_EXTEND: {
        size_t n = 0;
        for (int j = 0; j < c->eval.n_extend && n < len; j++)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", j ? ", " : "",
                                  rl_choice_name(k->choices, (int)c->eval.extend[j]));
        return;
    }
    case RL_K_BATCHES:
        if (*(const int *)p == 0)
            snprintf(buf, len, "all");
        else
            snprintf(buf, len, "%d", *(const int *)p);
        return;
    case RL_K_FACTOR:
        if (*(const double *)p == 0)
            snprintf(buf, len, "auto");
        else
            fmt_double(buf, len, *(const double *)p);
        return;
    }
}

static int is_runtime_key(const char *section, const char *key)
{
    if (!strcmp(section, "train")) return !strcmp(key, "checkpoint_minutes");
    return !strcmp(section, "experiment") && (!strcmp(key, "out") || !strcmp(key, "threads"));
}

int rl_cfg_render(const struct rl_cfg *c, char *buf, size_t len, int flags)
{
    size_t      n    = 0;
    const char *prev = "";
    char        v[RL_CFG_PATH + 64];
#define PUT(...)                                                                                   \
    do {                                                                                           \
        int w_ = snprintf(buf + (n < len ? n : len), n < len ? len - n : 0, __VA_ARGS__);          \
        n += (size_t)(w_ > 0 ? w_ : 0);                                                            \
    } while (0)
    if (len) buf[0] = 0;
    PUT("# ropelab resolved configuration: every key with its effective value\n");
    for (int i = 0; i < rl_cfg_nkeys; i++) {
        const struct rl_cfg_key *k = &rl_cfg_keys[i];
        if ((flags & RL_CFG_RENDER_NO_RUNTIME) && is_runtime_key(k->section, k->key)) continue;
        if (strcmp(prev, k->section)) PUT("%s[%s]\n", i ? "\n" : "", prev = k->section);
        fmt_value(c, i, v, sizeof v);
        PUT("%s = %s\n", k->key, v);
    }
    if (c->sweep.n_keys) PUT("\n[sweep]\n");
    for (int i = 0; i < c->sweep.n_keys; i++)
        PUT("%s = %s\n", c->sweep.keys[i].key, c->sweep.keys[i].values);
#undef PUT
    return (int)n;
}

/* ---- comparing two rendered texts (resume) ---- */

struct kv {
    char key[96];
    char value[RL_CFG_PATH + 64];
};

/* dst = a b c, truncated to cap (snprintf would warn about the truncation it handles) */
static void join3(char *dst, size_t cap, const char *a, const char *b, const char *c)
{
    const char *parts[3] = {a, b, c};
    size_t      n        = 0;
    for (int i = 0; i < 3; i++)
        for (const char *p = parts[i]; *p && n + 1 < cap; p++)
            dst[n++] = *p;
    dst[n] = 0;
}

/* "section.key" = value pairs of an INI text; comments and blank lines skipped. */
static int read_pairs(const char *text, struct kv *kv, int max)
{
    char        section[64] = "";
    int         n           = 0;
    const char *p           = text;
    while (*p && n < max) {
        const char *e   = strchr(p, '\n');
        size_t      len = e ? (size_t)(e - p) : strlen(p);
        char        line[RL_CFG_PATH + 160];
        if (len >= sizeof line) len = sizeof line - 1;
        memcpy(line, p, len);
        line[len] = 0;
        p += len + (e ? 1 : 0);
        char *eq = strchr(line, '=');
        if (line[0] == '[') {
            char *r = strchr(line, ']');
            if (r) *r = 0;
            join3(section, sizeof section, line + 1, "", "");
        } else if (eq && line[0] != '#' && line[0] != ';') {
            char *k = line, *v = eq + 1;
            *eq = 0;
            while (*v == ' ')
                v++;
            for (char *t = eq - 1; t >= k && *t == ' '; t--)
                *t = 0;
            if (is_runtime_key(section, k)) continue;
            join3(kv[n].key, sizeof kv[n].key, section, ".", k);
            join3(kv[n].value, sizeof kv[n].value, v, "", "");
            n++;
        }
    }
    return n;
}

static const struct kv *find_kv(const struct kv *kv, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(kv[i].key, key)) return &kv[i];
    return NULL;
}

/* A key that a newer ropelab added: absent from the older text a, and at its default in
 * b, is no difference (the older run behaved as the default does). */
static int added_at_default(const struct kv *kd, int nd, const struct kv *x)
{
    const struct kv *d = find_kv(kd, nd, x->key);
    return d && !strcmp(d->value, x->value);
}

int rl_cfg_text_diff(const char *a, const char *b, char *msg, size_t len)
{
    enum { MAX = 256 };
    struct kv     *ka = calloc(3 * MAX, sizeof *ka), *kb = ka + MAX, *kd = kb + MAX;
    struct rl_cfg *def   = malloc(sizeof *def);
    char          *dtext = malloc(1 << 16);
    if (!ka || !def || !dtext)
        return free(ka), free(def), free(dtext), snprintf(msg, len, "out of memory"), 1;
    rl_cfg_defaults(def);
    rl_cfg_render(def, dtext, 1 << 16, 0);
    int na = read_pairs(a, ka, MAX), nb = read_pairs(b, kb, MAX), nd = read_pairs(dtext, kd, MAX);
    int diff = 0;
    free(def), free(dtext);
    for (int pass = 0; pass < 2 && !diff; pass++) {
        const struct kv *x = pass ? kb : ka, *y = pass ? ka : kb;
        int              nx = pass ? nb : na, ny = pass ? na : nb;
        for (int i = 0; i < nx && !diff; i++) {
            const struct kv *o = find_kv(y, ny, x[i].key);
            if (o && !strcmp(o->value, x[i].value)) continue;
            if (!o && pass && added_at_default(kd, nd, &x[i])) continue;
            const char *va = pass ? (o ? o->value : "(absent)") : x[i].value;
            const char *vb = pass ? x[i].value : (o ? o->value : "(absent)");
            snprintf(msg, len, "%s: '%s' vs '%s'", x[i].key, va, vb);
            diff = 1;
        }
    }
    free(ka);
    return diff;
}

/* ---- options for the other modules ---- */

void rl_cfg_task_opts(const struct rl_cfg *c, struct rl_task_opts *o)
{
    rl_task_opts_default(o);
    o->kind = c->task.name, o->length = c->task.length, o->vocab = c->task.vocab;
    o->symbols = c->task.symbols, o->kv_pairs = c->task.kv_pairs;
    o->depth = c->task.depth, o->args = c->task.args;
    o->path       = c->task.path[0] ? c->task.path : NULL;
    o->valid_path = c->task.valid_path[0] ? c->task.valid_path : NULL;
    o->digits = c->task.digits, o->filler = c->task.filler;
    o->train_queries   = c->task.train_queries;
    o->n_train_lengths = c->task.n_train_lengths, o->train_lengths = c->task.train_lengths;
    o->seed = c->train.data_seed ? c->train.data_seed : c->train.seed;
}

void rl_cfg_model_config(const struct rl_cfg *c, int vocab, int causal, int n_classes,
                         struct rl_model_config *mc)
{
    memset(mc, 0, sizeof *mc);
    mc->vocab = vocab, mc->d_model = c->model.d_model, mc->heads = c->model.heads;
    mc->layers = c->model.layers, mc->n_classes = n_classes;
    mc->input_pe           = c->model.pe == RL_CFG_PE_SINUSOIDAL ? RL_INPUT_PE_SINUSOIDAL
                             : c->model.pe == RL_CFG_PE_LEARNED  ? RL_INPUT_PE_LEARNED
                                                                 : RL_INPUT_PE_NONE;
    mc->max_len            = c->model.max_len;
    mc->t5_per_layer       = c->model.t5_per_layer;
    struct rl_attn_opts *a = &mc->attn;
    rl_attn_opts_default(a);
    a->kind      = c->model.attention;
    a->fmap      = c->model.feature_map;
    a->pe        = c->model.pe == RL_CFG_PE_ROPE    ? RL_ATTN_PE_ROPE
                   : c->model.pe == RL_CFG_PE_T5    ? RL_ATTN_PE_T5
                   : c->model.pe == RL_CFG_PE_ALIBI ? RL_ATTN_PE_ALIBI
                                                    : RL_ATTN_PE_NONE;
    a->causal    = causal;
    a->eps       = (float)c->model.eps;
    a->rope.base = c->model.rope_base, a->rope.layout = c->model.rope_layout;
    a->rope.dims = c->model.rope_dims, a->rope.scale = c->model.rope_scale;
    a->rope.ntk         = c->model.rope_ntk;
    a->rope_place       = c->model.rope_place;
    a->rope_denominator = c->model.rope_denominator;
    a->t5_buckets       = c->model.t5_buckets;
    a->t5_max_distance  = c->model.t5_max_distance;
    a->rope.yarn        = c->model.rope_yarn;
    a->rope.yarn_orig   = c->model.rope_yarn_orig;
    a->xpos             = c->model.xpos;
    a->xpos_scale_base  = c->model.xpos_scale_base;
    a->forget           = c->model.forget_gate;
    mc->forget_bias     = c->model.forget_bias;
    /* alibi_scan is a preference: it applies where the scan exists (causal linear ALiBi) */
    a->alibi_scan =
        c->model.alibi_scan && a->pe == RL_ATTN_PE_ALIBI && causal && a->kind == RL_ATTN_LINEAR;
}
