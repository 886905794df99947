/* cfg.c -- experiment configuration: the key table, INI parsing (libinih), --set
 * overrides and value checks; see cfg.h.  Combination checks, resolution and rendering
 * live in cfg_check.c.
 *
 * Every key is one row of a table (section, key, type, offset into struct rl_cfg, range,
 * the table of an enum's names): parsing, rendering and the documentation test all walk
 * the same rows, so a key cannot be parsed but not rendered, or rendered but not
 * documented. */
#include "config.h"
#include "cfg.h"
#include "cfg_keys.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../core/util.h"

const struct rl_choice rl_cfg_pes[] = {
    {"none", RL_CFG_PE_NONE, "no position information"},
    {"sinusoidal", RL_CFG_PE_SINUSOIDAL,
     "fixed sinusoids added to the input, times a learned gain"},
    {"learned", RL_CFG_PE_LEARNED, "a learned vector per position added to the input"},
    {"t5", RL_CFG_PE_T5, "T5 relative-distance buckets in the attention"},
    {"alibi", RL_CFG_PE_ALIBI, "ALiBi distance bias in the attention"},
    {"rope", RL_CFG_PE_ROPE, "rotary embedding of q and k in the attention"},
    {NULL, 0, NULL}};
RL_CHOICE_TABLE_CHECK(rl_cfg_pes, RL_CFG_PE_COUNT);

const struct rl_choice rl_cfg_extends[] = {
    {"none", RL_CFG_EXTEND_NONE, "positions as trained"},
    {"pi", RL_CFG_EXTEND_PI, "position interpolation: rope_scale = s"},
    {"ntk", RL_CFG_EXTEND_NTK, "NTK-aware base: rope_ntk = s"},
    {"yarn", RL_CFG_EXTEND_YARN, "YaRN: rope_yarn = s, rope_yarn_orig = N"},
    {NULL, 0, NULL}};
RL_CHOICE_TABLE_CHECK(rl_cfg_extends, RL_CFG_EXTEND_COUNT);

#define OFF(f) offsetof(struct rl_cfg, f)
#define BIG (1 << 30)
/* clang-format off */
const struct rl_cfg_key rl_cfg_keys[] = {
    {"experiment", "name",    RL_K_STR, OFF(experiment.name), 0, RL_CFG_NAME, NULL,
     "run directory name under out (default: the INI file's stem)"},
    {"experiment", "out",     RL_K_STR, OFF(experiment.out), 0, RL_CFG_PATH, NULL,
     "parent directory of the run directory"},
    {"experiment", "threads", RL_K_INT, OFF(experiment.threads), 0, 4096, NULL,
     "threads for GEMMs and OpenMP loops (0 = all cores)"},
    {"model", "d_model",     RL_K_INT, OFF(model.d_model), 1, 65536, NULL, "model width D"},
    {"model", "heads",       RL_K_INT, OFF(model.heads), 1, BIG, NULL, "attention heads H"},
    {"model", "layers",      RL_K_INT, OFF(model.layers), 1, BIG, NULL, "transformer blocks"},
    {"model", "attention",   RL_K_ENUM, OFF(model.attention), 0, 0, rl_attn_kinds,
     "softmax or linear (RoFormer eq. 18)"},
    {"model", "feature_map", RL_K_ENUM, OFF(model.feature_map), 0, 0, rl_fmaps,
     "linear attention feature map"},
    {"model", "eps",         RL_K_DBL, OFF(model.eps), RL_D_NONNEG, 0, NULL,
     "linear attention denominator epsilon"},
    {"model", "pe",          RL_K_ENUM, OFF(model.pe), 0, 0, rl_cfg_pes, "position encoding"},
    {"model", "max_len",     RL_K_INT, OFF(model.max_len), 0, BIG, NULL,
     "learned PE rows (0 = task length)"},
    {"model", "rope_base",   RL_K_DBL, OFF(model.rope_base), RL_D_POS, 0, NULL, "RoPE base"},
    {"model", "rope_layout", RL_K_ENUM, OFF(model.rope_layout), 0, 0, rl_rope_layouts,
     "RoPE pairing: adjacent pairs or halves"},
    {"model", "rope_dims",   RL_K_INT, OFF(model.rope_dims), 0, 65536, NULL,
     "rotated dimensions R (0 = head dim)"},
    {"model", "rope_scale",  RL_K_DBL, OFF(model.rope_scale), RL_D_POS, 0, NULL,
     "position interpolation m -> m/scale"},
    {"model", "rope_ntk",    RL_K_DBL, OFF(model.rope_ntk), RL_D_POS, 0, NULL,
     "NTK-aware base rescaling alpha"},
    {"model", "rope_place",  RL_K_ENUM, OFF(model.rope_place), 0, 0, rl_rope_places,
     "linear attention: rotate feature-mapped q,k (eq. 19) or the inputs"},
    {"model", "rope_denominator", RL_K_ENUM, OFF(model.rope_denominator), 0, 0, rl_rope_denoms,
     "linear attention: unrotated (eq. 19) or rotated denominator"},
    {"model", "t5_buckets",  RL_K_INT, OFF(model.t5_buckets), 2, 4096, NULL, "T5 buckets"},
    {"model", "t5_max_distance", RL_K_INT, OFF(model.t5_max_distance), 1, BIG, NULL,
     "T5 max distance"},
    {"model", "t5_per_layer", RL_K_BOOL, OFF(model.t5_per_layer), 0, 0, NULL,
     "one T5 table per layer instead of one shared"},
    {"model", "alibi_scan",  RL_K_BOOL, OFF(model.alibi_scan), 0, 0, NULL,
     "causal linear ALiBi: O(N) decayed scan instead of the FFT"},
    {"model", "rope_yarn",   RL_K_DBL, OFF(model.rope_yarn), RL_D_POS, 0, NULL,
     "YaRN factor s (>= 1; 1 = off)"},
    {"model", "rope_yarn_orig", RL_K_INT, OFF(model.rope_yarn_orig), 0, BIG, NULL,
     "YaRN: the context L trained at (0 = the task length)"},
    {"model", "xpos",        RL_K_BOOL, OFF(model.xpos), 0, 0, NULL,
     "xPos decay on RoPE (softmax, causal)"},
    {"model", "xpos_scale_base", RL_K_DBL, OFF(model.xpos_scale_base), RL_D_POS, 0, NULL,
     "xPos scale base gamma"},
    {"model", "forget_gate", RL_K_BOOL, OFF(model.forget_gate), 0, 0, NULL,
     "data-dependent forget gate per head and token (causal tasks only)"},
    {"model", "forget_bias", RL_K_DBL, OFF(model.forget_bias), RL_D_ANY, 0, NULL,
     "initial bias of the forget gate's projection (gate sigmoid(bias) at the start)"},
    {"task", "name",       RL_K_ENUM, OFF(task.name), 0, 0, rl_task_kinds, "the task"},
    {"task", "length",     RL_K_INT, OFF(task.length), 0, BIG, NULL,
     "training sequence length N (0 = task default)"},
    {"task", "vocab",      RL_K_INT, OFF(task.vocab), 0, BIG, NULL,
     "vocabulary size (0 = task default)"},
    {"task", "symbols",    RL_K_INT, OFF(task.symbols), 0, BIG, NULL,
     "copy/reverse/sort: content symbols"},
    {"task", "kv_pairs",   RL_K_INT, OFF(task.kv_pairs), 0, BIG, NULL, "mqar: key-value pairs"},
    {"task", "train_queries", RL_K_ENUM, OFF(task.train_queries), 0, 0, rl_mqar_queries,
     "mqar: training rows ask each key once, or in every query slot (dense)"},
    {"task", "train_lengths", RL_K_LENGTHS, OFF(task.train_lengths), OFF(task.n_train_lengths), 0,
     NULL, "mqar: lengths of the training rows, row r the (r mod k)-th (default: the task length)"},
    {"task", "depth",      RL_K_INT, OFF(task.depth), 0, BIG, NULL, "listops: nesting depth"},
    {"task", "args",       RL_K_INT, OFF(task.args), 0, BIG, NULL,
     "listops: arguments per operator"},
    {"task", "path",       RL_K_STR, OFF(task.path), 0, RL_CFG_PATH, NULL,
     "charlm text / tokens training .npy"},
    {"task", "valid_path", RL_K_STR, OFF(task.valid_path), 0, RL_CFG_PATH, NULL,
     "tokens: validation .npy"},
    {"task", "digits",     RL_K_INT, OFF(task.digits), 1, 1 << 20, NULL,
     "passkey: digits of the key"},
    {"task", "filler",     RL_K_ENUM, OFF(task.filler), 0, 0, rl_passkey_fillers,
     "passkey: filler around the key, a repeating pattern or random tokens"},
    {"train", "steps",       RL_K_INT, OFF(train.steps), 1, INT_MAX, NULL, "optimizer updates"},
    {"train", "batch",       RL_K_INT, OFF(train.batch), 1, BIG, NULL, "rows per update"},
    {"train", "accumulate",  RL_K_INT, OFF(train.accumulate), 1, BIG, NULL,
     "micro-batches per update"},
    {"train", "lr",          RL_K_DBL, OFF(train.lr), RL_D_POS, 0, NULL, "peak learning rate"},
    {"train", "warmup",      RL_K_INT, OFF(train.warmup), 0, INT_MAX, NULL, "warm-up updates"},
    {"train", "min_lr_ratio", RL_K_DBL, OFF(train.min_lr_ratio), RL_D_UNIT, 0, NULL,
     "final lr / lr of the cosine decay"},
    {"train", "beta1",       RL_K_DBL, OFF(train.beta1), RL_D_UNIT_OPEN, 0, NULL, "AdamW beta1"},
    {"train", "beta2",       RL_K_DBL, OFF(train.beta2), RL_D_UNIT_OPEN, 0, NULL, "AdamW beta2"},
    {"train", "adam_eps",    RL_K_DBL, OFF(train.adam_eps), RL_D_POS, 0, NULL, "AdamW epsilon"},
    {"train", "weight_decay", RL_K_DBL, OFF(train.weight_decay), RL_D_NONNEG, 0, NULL,
     "decoupled weight decay"},
    {"train", "clip",        RL_K_DBL, OFF(train.clip), RL_D_NONNEG, 0, NULL,
     "global gradient-norm clip (0 = off)"},
    {"train", "seed",        RL_K_U64, OFF(train.seed), 0, 0, NULL, "initialisation and data seed"},
    {"train", "data_seed",   RL_K_U64, OFF(train.data_seed), 0, 0, NULL,
     "seed of the task's data (0 = train.seed)"},
    {"train", "log_every",   RL_K_INT, OFF(train.log_every), 1, INT_MAX, NULL,
     "updates between metrics.jsonl records"},
    {"train", "checkpoint_every", RL_K_INT, OFF(train.checkpoint_every), 0, INT_MAX, NULL,
     "updates between checkpoints (0 = at the end only)"},
    {"train", "checkpoint_minutes", RL_K_DBL, OFF(train.checkpoint_minutes), RL_D_NONNEG, 0, NULL,
     "minutes of training between safety checkpoints, each kept until the next (0 = none)"},
    {"train", "checkpoint_initial", RL_K_BOOL, OFF(train.checkpoint_initial), 0, 0, NULL,
     "also save the step-0 weights"},
    {"train", "init_from",   RL_K_STR, OFF(train.init_from), 0, RL_CFG_PATH, NULL,
     "safetensors checkpoint whose weights start the model (empty or none = random)"},
    {"train", "data_parallel", RL_K_BOOL, OFF(train.data_parallel), 0, 0, NULL,
     "under mpirun: every rank trains each point on its share of the rows"},
    {"eval", "lengths", RL_K_LENGTHS, OFF(eval.lengths), OFF(eval.n_lengths), 0, NULL,
     "evaluation lengths (default: the task length)"},
    {"eval", "batches", RL_K_BATCHES, OFF(eval.batches), 1, BIG, NULL,
     "batches per length, or all (the whole validation split)"},
    {"eval", "every",   RL_K_INT, OFF(eval.every), 0, INT_MAX, NULL,
     "updates between evaluations (0 = at the end only)"},
    {"eval", "stride",  RL_K_INT, OFF(eval.stride), 0, BIG, NULL,
     "LM tasks: sliding windows advanced by stride tokens (0 = non-overlapping)"},
    {"eval", "rope_extend", RL_K_EXTEND, OFF(eval.extend), 0, 0, rl_cfg_extends,
     "RoPE points: evaluate under each of none, pi, ntk, yarn"},
    {"eval", "rope_factor", RL_K_FACTOR, OFF(eval.rope_factor), 0, 0, NULL,
     "rope_extend factor s: auto (max(1, M/N)) or a number >= 1"},
};
/* clang-format on */
const int rl_cfg_nkeys = (int)(sizeof rl_cfg_keys / sizeof rl_cfg_keys[0]);

static const char *const sections[] = {"experiment", "model", "task", "train", "eval", "sweep"};

int rl_cfg_num_keys(void) { return rl_cfg_nkeys; }

void rl_cfg_key_info(int i, const char **section, const char **key, const char **doc)
{
    RL_ASSERT(i >= 0 && i < rl_cfg_nkeys);
    *section = rl_cfg_keys[i].section;
    *key     = rl_cfg_keys[i].key;
    *doc     = rl_cfg_keys[i].doc;
}

int rl_cfg_find_key(const char *section, const char *key)
{
    for (int i = 0; i < rl_cfg_nkeys; i++)
        if (!strcmp(rl_cfg_keys[i].section, section) && !strcmp(rl_cfg_keys[i].key, key)) return i;
    return -1;
}

const char *rl_cfg_pe_name(enum rl_cfg_pe pe) { return rl_choice_name(rl_cfg_pes, (int)pe); }
const char *rl_cfg_attention_name(enum rl_attn_kind k)
{
    return rl_choice_name(rl_attn_kinds, (int)k);
}
const char *rl_cfg_extend_name(enum rl_cfg_extend e)
{
    return rl_choice_name(rl_cfg_extends, (int)e);
}

void rl_cfg_defaults(struct rl_cfg *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->experiment.out, sizeof c->experiment.out, "runs");
    c->model.d_model = 128, c->model.heads = 4, c->model.layers = 2;
    c->model.attention = RL_ATTN_SOFTMAX, c->model.feature_map = RL_FMAP_ELU1;
    c->model.eps = 1e-6, c->model.pe = RL_CFG_PE_ROPE;
    c->model.rope_base = 10000, c->model.rope_layout = RL_ROPE_LAYOUT_PAIRS;
    c->model.rope_scale = 1, c->model.rope_ntk = 1;
    c->model.t5_buckets = 32, c->model.t5_max_distance = 128;
    c->model.rope_yarn = 1, c->model.xpos_scale_base = 512;
    c->model.forget_bias = 5.0;
    struct rl_task_opts to;
    rl_task_opts_default(&to);
    c->task.name   = RL_TASK_COPY;
    c->task.length = to.length, c->task.vocab = to.vocab, c->task.symbols = to.symbols;
    c->task.kv_pairs = to.kv_pairs, c->task.depth = to.depth, c->task.args = to.args;
    c->task.digits = to.digits, c->task.filler = to.filler;
    c->task.train_queries = to.train_queries;
    c->train.steps = 1000, c->train.batch = 16, c->train.accumulate = 1, c->train.lr = 1e-3;
    c->train.beta1 = 0.9, c->train.beta2 = 0.999, c->train.adam_eps = 1e-8;
    c->train.weight_decay = 0.01, c->train.clip = 1.0, c->train.seed = 1;
    c->train.log_every = 10, c->train.checkpoint_minutes = 10;
    c->eval.batches  = 8;
    c->eval.n_extend = 1, c->eval.extend[0] = RL_CFG_EXTEND_NONE;
}

/* ---- values ---- */

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = 0;
    return s;
}

static int parse_long(const char *s, long long lo, long long hi, long long *out)
{
    char *e     = NULL;
    errno       = 0;
    long long v = strtoll(s, &e, 10);
    if (errno || e == s || *e || v < lo || v > hi) return 1;
    *out = v;
    return 0;
}

static const char *dbl_expectation(int range)
{
    switch (range) {
    case RL_D_POS:
        return "a number > 0";
    case RL_D_NONNEG:
        return "a number >= 0";
    case RL_D_UNIT_OPEN:
        return "a number in [0, 1)";
    case RL_D_UNIT:
        return "a number in [0, 1]";
    }
    return "a finite number";
}

static int dbl_ok(double v, int range)
{
    if (!isfinite(v)) return 0;
    switch (range) {
    case RL_D_POS:
        return v > 0;
    case RL_D_NONNEG:
        return v >= 0;
    case RL_D_UNIT_OPEN:
        return v >= 0 && v < 1;
    case RL_D_UNIT:
        return v >= 0 && v <= 1;
    }
    return 1;
}

static int parse_bool(const char *s, int *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1"}, *const no[] = {"false", "no",
                                                                                "off", "0"};
    for (int i = 0; i < 4; i++) {
        if (!strcasecmp(s, yes[i])) return *out = 1, 0;
        if (!strcasecmp(s, no[i])) return *out = 0, 0;
    }
    return 1;
}

/* "64, 128,256" -> lengths; an empty list means "the task length". */
static int parse_lengths(const char *s, int *v, int *n, char *why, size_t len)
{
    char buf[1024];
    if (strlen(s) >= sizeof buf)
        return snprintf(why, len, "value longer than %zu characters", sizeof buf - 1), 1;
    snprintf(buf, sizeof buf, "%s", s);
    *n = 0;
    if (!*trim(buf)) return 0;
    for (char *rest = buf, *tok; rest;) {
        long long x;
        tok = rl_list_item(&rest);
        if (parse_long(trim(tok), 1, BIG, &x)) {
            snprintf(why, len, "expected a comma-separated list of positive integers, got '%s'", s);
            return 1;
        }
        if (*n == RL_CFG_MAX_LENGTHS) {
            snprintf(why, len, "at most %d lengths", RL_CFG_MAX_LENGTHS);
            return 1;
        }
        v[(*n)++] = (int)x;
    }
    return 0;
}

/* "none, pi" -> eval.extend: names of the key's table, each at most once, at least one. */
static int parse_extend(struct rl_cfg *c, const struct rl_cfg_key *k, const char *s, char *why,
                        size_t len)
{
    char buf[256], names[128];
    int  n = 0, e[RL_CFG_EXTEND_MAX];
    if (strlen(s) >= sizeof buf)
        return snprintf(why, len, "value longer than %zu characters", sizeof buf - 1), 1;
    snprintf(buf, sizeof buf, "%s", s);
    rl_choice_list(k->choices, ", ", names, sizeof names);
    for (char *rest = *trim(buf) ? buf : NULL, *tok; rest;) {
        int v = -1;
        tok   = trim(rl_list_item(&rest));
        if (rl_choice_parse(k->choices, tok, &v)) {
            const char *near = rl_choice_suggest(k->choices, tok);
            int         w    = snprintf(why, len, "expected a list of %s, got '%s'", names, s);
            if (near && w >= 0 && (size_t)w < len)
                snprintf(why + w, len - (size_t)w, " (did you mean '%s'?)", near);
            return 1;
        }
        for (int i = 0; i < n; i++)
            if (e[i] == v) return snprintf(why, len, "'%s' listed twice", tok), 1;
        e[n++] = v; /* at most RL_CFG_EXTEND_MAX distinct names */
    }
    if (!n) return snprintf(why, len, "expected a list of %s", names), 1;
    c->eval.n_extend = n;
    for (int i = 0; i < n; i++)
        c->eval.extend[i] = (enum rl_cfg_extend)e[i];
    return 0;
}

/* A string value that rl_cfg_render writes as "key = value" and the INI reader gives back
 * unchanged: no surrounding blanks (trimmed), no control characters, no comment start
 * (';' or '#' first or after a blank). */
int rl_cfg_reads_back(const char *v)
{
    size_t n = strlen(v);
    if (n && (isspace((unsigned char)v[0]) || isspace((unsigned char)v[n - 1]))) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)v[i];
        if ((ch < 0x20 && ch != '\t') || ch == 0x7F) return 0;
        if ((ch == ';' || ch == '#') && (i == 0 || isspace((unsigned char)v[i - 1]))) return 0;
    }
    return 1;
}

/* A string key: it must fit, read back from config.ini, and name a directory where it is one. */
static int parse_str(char *p, const struct rl_cfg_key *k, const char *value, char *why, size_t len)
{
    if (strlen(value) >= (size_t)k->hi)
        return snprintf(why, len, "value longer than %ld characters", k->hi - 1), 1;
    if (!rl_cfg_reads_back(value)) {
        snprintf(why, len,
                 "'%s' would not read back from an INI file (a leading or trailing space, "
                 "a control character, or ';' or '#' at the start or after a space, "
                 "which start a comment)",
                 value);
        return 1;
    }
    if (k->off == OFF(experiment.out) && !*value)
        return snprintf(why, len, "expected a directory, got ''"), 1;
    if (k->off == OFF(experiment.name) &&
        (!*value || strchr(value, '/') || !strcmp(value, ".") || !strcmp(value, ".."))) {
        snprintf(why, len, "expected a directory name (no '/'), got '%s'", value);
        return 1;
    }
    if (k->off == OFF(train.init_from) && !strcmp(value, "none")) value = "";
    memcpy(p, value, strlen(value) + 1);
    return 0;
}

/* The numeric keys: int (in [lo, hi]), u64, double (of range lo), factor (auto or >= 1). */
static int parse_number(char *p, const struct rl_cfg_key *k, const char *value, char *why,
                        size_t len)
{
    char     *e = NULL, exp[64];
    long long x;
    errno = 0;
    if (k->type == RL_K_INT) {
        if (!parse_long(value, k->lo, k->hi, &x)) return *(int *)p = (int)x, 0;
        rl_int_expectation(exp, sizeof exp, k->lo, k->hi);
        return snprintf(why, len, "expected %s, got '%s'", exp, value), 1;
    }
    if (k->type == RL_K_U64) {
        unsigned long long u = strtoull(value, &e, 10);
        if (!errno && e != value && !*e && value[0] != '-') return *(uint64_t *)p = u, 0;
        return snprintf(why, len, "expected a non-negative integer, got '%s'", value), 1;
    }
    double v = strtod(value, &e);
    if (k->type == RL_K_FACTOR) {
        if (!strcmp(value, "auto")) return *(double *)p = 0, 0;
        if (e != value && !*e && isfinite(v) && v >= 1) return *(double *)p = v, 0;
        return snprintf(why, len, "expected auto or a number >= 1, got '%s'", value), 1;
    }
    if (!errno && e != value && !*e && dbl_ok(v, (int)k->lo)) return *(double *)p = v, 0;
    return snprintf(why, len, "expected %s, got '%s'", dbl_expectation((int)k->lo), value), 1;
}

/* Parse `value` into key i of c; on failure write the reason into why. */
static int parse_value(struct rl_cfg *c, int i, const char *value, char *why, size_t len)
{
    const struct rl_cfg_key *k = &rl_cfg_keys[i];
    char                    *p = (char *)c + k->off;
    switch (k->type) {
    case RL_K_INT:
    case RL_K_U64:
    case RL_K_DBL:
    case RL_K_FACTOR:
        return parse_number(p, k, value, why, len);
    case RL_K_BOOL:
        if (!parse_bool(value, (int *)p)) return 0;
        return snprintf(why, len, "expected true or false, got '%s'", value), 1;
    case RL_K_ENUM:
        if (!rl_choice_parse(k->choices, value, (int *)p)) return 0;
        return rl_choice_refusal(k->choices, value, why, len), 1;
    case RL_K_STR:
        return parse_str(p, k, value, why, len);
    case RL_K_LENGTHS:
        return parse_lengths(value, (int *)p, (int *)((char *)c + k->lo), why, len);
    case RL_K_EXTEND:
        return parse_extend(c, k, value, why, len);
    case RL_K_BATCHES: {
        long long x;
        if (!strcmp(value, "all")) return *(int *)p = 0, 0;
        if (!parse_long(value, 1, BIG, &x)) return *(int *)p = (int)x, 0;
        return snprintf(why, len, "expected a positive integer or all, got '%s'", value), 1;
    }
    }
    return 1;
}

static void unknown_key_msg(char *buf, size_t len, const char *section, const char *key)
{
    struct rl_near near;
    rl_near_init(&near, key);
    for (int i = 0; i < rl_cfg_nkeys; i++)
        if (!strcmp(rl_cfg_keys[i].section, section)) rl_near_offer(&near, rl_cfg_keys[i].key);
    int n = snprintf(buf, len, "unknown key '%s'", key);
    if (near.best && n < (int)len)
        snprintf(buf + n, len - (size_t)n, " (did you mean '%s'?)", near.best);
}

static int known_section(const char *s)
{
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
        if (!strcmp(s, sections[i])) return 1;
    return 0;
}

static void sweep_remove(struct rl_cfg *c, int j)
{
    memmove(&c->sweep.keys[j], &c->sweep.keys[j + 1],
            (size_t)(c->sweep.n_keys - j - 1) * sizeof c->sweep.keys[0]);
    c->sweep.n_keys--;
}

/* [sweep] model.pe = none, rope: the key must exist outside [experiment] and [sweep], and
 * every value must be valid for it (parsed into a scratch copy). */
/* The list is kept as written (it names the points); a swept path value is resolved for
 * each point against dir, the directory of the file that lists it (NULL: the command line,
 * the working directory). */
static rl_status sweep_add(struct rl_cfg *c, const char *name, const char *values,
                           const char *where, int line, const char *dir)
{
    char        sec[64], why[512];
    const char *dot = strchr(name, '.');
    if (!dot || dot - name >= (ptrdiff_t)sizeof sec)
        RL_FAIL(RL_EINVAL, "%s: [sweep] %s: expected section.key", where, name);
    memcpy(sec, name, (size_t)(dot - name));
    sec[dot - name] = 0;
    int i           = rl_cfg_find_key(sec, dot + 1);
    if (i < 0 || !strcmp(sec, "experiment"))
        RL_FAIL(RL_EINVAL, "%s: [sweep] %s: no such key to sweep", where, name);
    for (int j = 0; j < c->sweep.n_keys; j++)
        if (!strcmp(c->sweep.keys[j].key, name)) {
            if (line) RL_FAIL(RL_EINVAL, "%s: [sweep] %s: swept twice", where, name);
            sweep_remove(c, j); /* --set sweep.k=... replaces the file's list */
            break;
        }
    if (c->sweep.n_keys == RL_CFG_MAX_SWEEP)
        RL_FAIL(RL_EINVAL, "%s: [sweep] %s: at most %d swept keys", where, name, RL_CFG_MAX_SWEEP);
    struct rl_cfg_sweep_key *s = &c->sweep.keys[c->sweep.n_keys];
    if (strlen(values) >= sizeof s->values)
        RL_FAIL(RL_EINVAL, "%s: [sweep] %s: value list too long", where, name);
    struct rl_cfg *scratch = malloc(sizeof *scratch);
    if (!scratch) RL_FAIL(RL_ENOMEM, "out of memory");
    char buf[sizeof s->values];
    snprintf(buf, sizeof buf, "%s", values);
    int n = 0, bad = 0;
    for (char *sv = NULL, *t = strtok_r(buf, ",", &sv); t && !bad;
         t = strtok_r(NULL, ",", &sv), n++)
        bad = parse_value(scratch, i, trim(t), why, sizeof why);
    free(scratch);
    if (bad) RL_FAIL(RL_EINVAL, "%s: [sweep] %s: %s", where, name, why);
    if (n == 0) RL_FAIL(RL_EINVAL, "%s: [sweep] %s: expected a list of values", where, name);
    snprintf(s->key, sizeof s->key, "%s", name);
    snprintf(s->values, sizeof s->values, "%s", values);
    s->n_values = n, s->line = line;
    snprintf(s->where, sizeof s->where, "%s", where);
    snprintf(s->dir, sizeof s->dir, "%s", dir ? dir : "");
    c->sweep.n_keys++;
    return RL_OK;
}

rl_status rl_cfg_set_key_at(struct rl_cfg *c, const char *section, const char *key,
                            const char *value, const char *where, const char *dir)
{
    char why[512], path[RL_CFG_PATH + 1];
    if (!strcmp(section, "sweep")) return sweep_add(c, key, value, where, 0, dir);
    if (!known_section(section)) RL_FAIL(RL_EINVAL, "%s: unknown section [%s]", where, section);
    int i = rl_cfg_find_key(section, key);
    if (i < 0) {
        unknown_key_msg(why, sizeof why, section, key);
        RL_FAIL(RL_EINVAL, "%s: [%s] %s", where, section, why);
    }
    const char *v =
        rl_cfg_resolve_path(&rl_cfg_keys[i], value, dir, path, sizeof path, why, sizeof why);
    if (!v || parse_value(c, i, v, why, sizeof why))
        RL_FAIL(RL_EINVAL, "%s: [%s] %s: %s", where, section, key, why);
    snprintf(c->where[i], sizeof c->where[i], "%s", where);
    return RL_OK;
}

rl_status rl_cfg_set_key(struct rl_cfg *c, const char *section, const char *key, const char *value,
                         const char *where)
{
    return rl_cfg_set_key_at(c, section, key, value, where, NULL);
}

rl_status rl_cfg_set(struct rl_cfg *c, const char *assignment)
{
    char where[RL_CFG_WHERE], buf[2048], sec[64];
    snprintf(where, sizeof where, "--set %s", assignment);
    if (strlen(assignment) >= sizeof buf) RL_FAIL(RL_EINVAL, "%s: too long", where);
    snprintf(buf, sizeof buf, "%s", assignment);
    char *eq = strchr(buf, '='), *dot = strchr(buf, '.');
    if (!eq || !dot || dot > eq || dot - buf >= (ptrdiff_t)sizeof sec)
        RL_FAIL(RL_EINVAL, "%s: expected section.key=value", where);
    *eq = 0;
    memcpy(sec, buf, (size_t)(dot - buf));
    sec[dot - buf] = 0;
    /* --set sweep.model.pe=none,rope adds a swept key (or replaces its list) */
    char *s = trim(sec), *k = trim(dot + 1);
    RL_TRY(rl_cfg_set_key(c, s, k, trim(eq + 1), where));
    /* --set model.pe=rope fixes a swept key: it leaves the sweep */
    char full[192];
    snprintf(full, sizeof full, "%s.%s", s, k);
    for (int j = 0; j < c->sweep.n_keys; j++)
        if (strcmp(s, "sweep") && !strcmp(c->sweep.keys[j].key, full)) sweep_remove(c, j--);
    return RL_OK;
}

/* ---- INI files ---- */

#define MAX_REPORTED 8 /* errors listed in one message; the rest are counted */

struct parse_state {
    struct rl_cfg *c;
    const char    *name; /* file name for messages */
    const char    *dir;  /* the absolute directory of the file, which its relative paths
                            are read against (NULL: a string) */
    const char *text;    /* the remaining text (files are read whole: one reader for both) */
    int         line;    /* line the reader returned last */
    int         continuation;
    int         bad_section;  /* keys of an unknown section are not reported one by one */
    int         sections;     /* known section headers seen */
    int         need_section; /* a file: at least one section (else it is no INI file) */
    int         seen[RL_CFG_MAX_KEYS];
    int         n_err;
    rl_status   st; /* first error */
    char        msg[3000];
};

/* Every error is recorded (a file reports all its mistakes at once), one line each. */
static void state_fail(struct parse_state *ps, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void state_fail(struct parse_state *ps, const char *fmt, ...)
{
    if (ps->n_err++ >= MAX_REPORTED) return;
    size_t at = strlen(ps->msg);
    if (at && at + 1 < sizeof ps->msg) ps->msg[at++] = '\n', ps->msg[at] = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->msg + at, sizeof ps->msg - at, fmt, ap);
    va_end(ap);
    if (ps->st == RL_OK) ps->st = RL_EINVAL;
}

/* A raw line (trimmed) that inih would refuse: not blank, not a comment, not a section
 * header, not a continuation, and without '=' or ':'. */
static int malformed(const char *t, int continuation)
{
    if (!*t || *t == ';' || *t == '#' || continuation) return 0;
    if (*t == '[') return strchr(t, ']') == NULL;
    return !strchr(t, '=') && !strchr(t, ':');
}

/* The reader sees every raw line: it counts lines (inih's handler does not get them in
 * Debian's build), reports unknown sections (inih would skip an empty one silently),
 * malformed lines, and lines longer than inih's buffer (which inih would split) -- each
 * one, and hands inih an empty line in their place so that parsing goes on. */
static char *reader(char *str, int num, void *stream)
{
    struct parse_state *ps = stream;
    if (!*ps->text) return NULL;
    const char *nl = strchr(ps->text, '\n');
    size_t      n  = nl ? (size_t)(nl - ps->text) + 1 : strlen(ps->text);
    ps->line++;
    if ((nl ? n - 1 : n) > (size_t)num - 2) {
        state_fail(ps, "%s:%d: line longer than %d characters", ps->name, ps->line, num - 2);
        ps->text += n;
        return strcpy(str, "\n");
    }
    memcpy(str, ps->text, n);
    str[n] = 0;
    ps->text += n;
    ps->continuation = (str[0] == ' ' || str[0] == '\t');
    char tmp[1024], *t;
    snprintf(tmp, sizeof tmp, "%s", str);
    t = trim(tmp);
    if (malformed(t, ps->continuation)) {
        state_fail(ps, "%s:%d: malformed line (expected key = value or [section])", ps->name,
                   ps->line);
        return strcpy(str, "\n");
    }
    if (*t == '[') {
        char *e = strchr(t, ']'); /* absent only on an indented continuation line */
        if (e) *e = 0;
        ps->bad_section = !known_section(trim(t + 1));
        ps->sections += !ps->bad_section;
        if (ps->bad_section)
            state_fail(ps,
                       "%s:%d: unknown section [%s] (sections: experiment, model, task, "
                       "train, eval, sweep)",
                       ps->name, ps->line, trim(t + 1));
    }
    return str;
}

/* A '#' after whitespace starts a comment too (inih only strips ';' inline). */
static void strip_hash_comment(char *v)
{
    for (char *p = v; *p; p++)
        if (*p == '#' && (p == v || isspace((unsigned char)p[-1]))) {
            *p = 0;
            break;
        }
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
    struct parse_state *ps = user;
    char                where[RL_CFG_WHERE], v[2048];
    if (ps->bad_section) return 1; /* reported once, at its header */
    snprintf(where, sizeof where, "%s:%d", ps->name, ps->line);
    snprintf(v, sizeof v, "%s", value);
    strip_hash_comment(v);
    char *val = trim(v);
    if (!*section) return state_fail(ps, "%s: key '%s' outside a section", where, name), 1;
    if (!strcmp(section, "sweep")) {
        if (ps->continuation)
            return state_fail(ps, "%s: [sweep] %s: continue a list on one line", where, name), 1;
        if (sweep_add(ps->c, name, val, where, ps->line, ps->dir) != RL_OK)
            state_fail(ps, "%s", rl_last_error());
        return 1;
    }
    int i = rl_cfg_find_key(section, name);
    if (i >= 0 && ps->seen[i]) {
        if (ps->continuation)
            return state_fail(ps, "%s: [%s] %s: values cannot span lines", where, section, name), 1;
        return state_fail(ps, "%s: [%s] %s: given twice (first at line %d)", where, section, name,
                          ps->seen[i]),
               1;
    }
    if (rl_cfg_set_key_at(ps->c, section, name, val, where, ps->dir) != RL_OK)
        state_fail(ps, "%s", rl_last_error());
    else
        ps->seen[i] = ps->line;
    return 1;
}

static rl_status parse(struct parse_state *ps)
{
    int r = ini_parse_stream(reader, ps, handler, ps);
    if (r < 0) RL_FAIL(RL_ENOMEM, "%s: libinih failed (%d)", ps->name, r);
    if (r > 0 && !ps->n_err)
        state_fail(ps, "%s:%d: malformed line (expected key = value or [section])", ps->name, r);
    if (!ps->n_err && ps->need_section && !ps->sections)
        state_fail(ps,
                   "%s: no [section] in the file: not an experiment INI file (sections: "
                   "experiment, model, task, train, eval, sweep)",
                   ps->name);
    if (ps->n_err > MAX_REPORTED) {
        size_t at = strlen(ps->msg);
        snprintf(ps->msg + at, sizeof ps->msg - at, "\n%s: %d more errors%s", ps->name,
                 ps->n_err - MAX_REPORTED,
                 ps->sections ? "" : " (and no [section]: is it an experiment INI file?)");
    }
    if (ps->n_err) RL_FAIL(ps->st, "%s", ps->msg);
    snprintf(ps->c->file, sizeof ps->c->file, "%s", ps->name);
    if (!ps->c->experiment.name[0]) { /* default name: the file stem */
        const char *b = strrchr(ps->name, '/');
        b             = b ? b + 1 : ps->name;
        snprintf(ps->c->experiment.name, sizeof ps->c->experiment.name, "%s", b);
        char *dot = strrchr(ps->c->experiment.name, '.');
        if (dot && dot != ps->c->experiment.name) *dot = 0;
    }
    return RL_OK;
}

static rl_status load_text(struct rl_cfg *c, const char *text, const char *name, int need_section)
{
    struct parse_state *ps = calloc(1, sizeof *ps);
    if (!ps) RL_FAIL(RL_ENOMEM, "out of memory");
    if (!strncmp(text, "\xEF\xBB\xBF", 3))
        text += 3; /* a UTF-8 byte-order mark, as editors write */
    ps->c = c, ps->name = name, ps->text = text, ps->need_section = need_section;
    char dir[RL_CFG_PATH];
    if (need_section && rl_cfg_file_dir(dir, sizeof dir, name))
        return free(ps), rl_error_report(RL_EINVAL, __FILE__, __LINE__,
                                         "%s: its directory's path is too long", name);
    ps->dir      = need_section ? dir : NULL;
    rl_status st = parse(ps);
    free(ps);
    return st;
}

/* Files are read whole and parsed as text: one reader for files and strings.  What is
 * not a regular text file is refused before parsing. */
rl_status rl_cfg_load(struct rl_cfg *c, const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0) RL_FAIL(RL_EIO, "%s: cannot open: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode))
        RL_FAIL(RL_EINVAL, "%s: is a directory, not an experiment INI file", path);
    if (!S_ISREG(sb.st_mode))
        RL_FAIL(RL_EINVAL, "%s: not a regular file (an experiment INI file is expected)", path);
    unsigned char *buf;
    size_t         len;
    RL_TRY(rl_read_file(&buf, &len, path));
    char *text = realloc(buf, len + 1);
    if (!text) return free(buf), rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "out of memory");
    text[len] = 0;
    rl_status st =
        memchr(text, 0, len)
            ? rl_error_report(RL_EINVAL, __FILE__, __LINE__,
                              "%s: holds NUL bytes: not an experiment INI file (a text file)", path)
            : load_text(c, text, path, 1);
    free(text);
    return st;
}

rl_status rl_cfg_load_string(struct rl_cfg *c, const char *text, const char *name)
{
    return load_text(c, text, name, 0);
}
