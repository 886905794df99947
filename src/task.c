/* task.c -- the task dispatcher of SPEC 6: options, kinds, the task object and batches.
 * The generators live one family per file (task_seq.c, task_mqar.c, task_listops.c,
 * task_charlm.c, task_tokens.c); docs/tasks.md documents every layout. */
#include "config.h"
#include "task_impl.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {"copy",    "reverse", "sort",  "mqar",
                                         "listops", "charlm",  "tokens"};
#define N_KINDS ((int)(sizeof kind_names / sizeof kind_names[0]))

void rl_task_opts_default(struct rl_task_opts *o)
{
    memset(o, 0, sizeof *o);
    o->kind  = RL_TASK_COPY;
    o->depth = 10; /* LRA ListOps: MAX_DEPTH 10, MAX_ARGS 10 */
    o->args  = 10;
    o->seed  = 1;
    /* length, vocab, symbols, kv_pairs 0: the task's defaults (docs/tasks.md) */
}

rl_status rl_task_kind_parse(enum rl_task_kind *k, const char *name)
{
    for (int i = 0; i < N_KINDS; i++)
        if (name && strcmp(name, kind_names[i]) == 0) {
            *k = (enum rl_task_kind)i;
            return RL_OK;
        }
    RL_FAIL(RL_EINVAL,
            "[task] name: unknown task '%s' (copy, reverse, sort, mqar, listops, "
            "charlm, tokens)",
            name ? name : "(null)");
}

const char *rl_task_kind_name(enum rl_task_kind k)
{
    return (int)k >= 0 && (int)k < N_KINDS ? kind_names[k] : "unknown";
}

/* ---- per-row generators and scratch ---- */

static uint64_t mix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull; /* splitmix64's increment and finaliser */
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void rl_task_row_rng(struct rl_rng *r, const struct rl_task *t, int split, int64_t step, int N,
                     int row)
{
    /* chained, so that (split, step) and (step, split) swaps land on different streams */
    uint64_t h = mix64(t->seed);
    h          = mix64(h ^ (uint64_t)split);
    h          = mix64(h ^ (uint64_t)step);
    h          = mix64(h ^ (uint64_t)N);
    h          = mix64(h ^ (uint64_t)row);
    rl_rng_seed(r, h);
}

rl_status rl_task_scratch(struct rl_task *t, size_t n)
{
    if (n <= t->scratch_len) return RL_OK;
    int32_t *p = realloc(t->scratch, n * sizeof *p);
    if (!p) RL_FAIL(RL_ENOMEM, "task: cannot allocate %zu ints of scratch", n);
    t->scratch     = p;
    t->scratch_len = n;
    return RL_OK;
}

/* ---- the task object ---- */

static rl_status check_common(const struct rl_task_opts *o)
{
    if ((int)o->kind < 0 || (int)o->kind >= N_KINDS)
        RL_FAIL(RL_EINVAL, "[task] name: unknown task kind %d", (int)o->kind);
    const struct {
        const char *key;
        int         v;
    } nonneg[] = {{"length", o->length},     {"vocab", o->vocab}, {"symbols", o->symbols},
                  {"kv_pairs", o->kv_pairs}, {"depth", o->depth}, {"args", o->args}};
    for (size_t i = 0; i < sizeof nonneg / sizeof nonneg[0]; i++)
        if (nonneg[i].v < 0)
            RL_FAIL(RL_EINVAL, "[task] %s: %d must be >= 0 (0 = the task's default)", nonneg[i].key,
                    nonneg[i].v);
    return RL_OK;
}

static rl_status setup(struct rl_task *t, const struct rl_task_opts *o)
{
    switch (o->kind) {
    case RL_TASK_COPY:
    case RL_TASK_REVERSE:
    case RL_TASK_SORT:
        return rl_task_seq_setup(t, o);
    case RL_TASK_MQAR:
        return rl_task_mqar_setup(t, o);
    case RL_TASK_LISTOPS:
        return rl_task_listops_setup(t, o);
    case RL_TASK_CHARLM:
        return rl_task_charlm_setup(t, o);
    case RL_TASK_TOKENS:
        RL_TRY(rl_task_tokens_open(&t->tokens, o));
        t->length = rl_task_tokens_length(t->tokens);
        t->vocab  = rl_task_tokens_vocab(t->tokens);
        return RL_OK;
    }
    RL_FAIL(RL_EINVAL, "[task] name: unknown task kind %d", (int)o->kind);
}

rl_status rl_task_create(rl_task **out, const struct rl_task_opts *o)
{
    *out = NULL;
    RL_TRY(check_common(o));
    struct rl_task *t = calloc(1, sizeof *t);
    if (!t) RL_FAIL(RL_ENOMEM, "task: out of memory");
    t->kind      = o->kind;
    t->seed      = o->seed;
    rl_status st = setup(t, o);
    if (st != RL_OK) {
        rl_task_free(t);
        return st;
    }
    *out = t;
    return RL_OK;
}

void rl_task_free(rl_task *t)
{
    if (!t) return;
    rl_task_tokens_free(t->tokens);
    free(t->text);
    free(t->scratch);
    free(t);
}

int rl_task_kind_lm(enum rl_task_kind k) { return k == RL_TASK_CHARLM || k == RL_TASK_TOKENS; }

int rl_task_vocab(const rl_task *t) { return t->vocab; }
int rl_task_length(const rl_task *t) { return t->length; }
int rl_task_causal(const rl_task *t) { return t->kind != RL_TASK_LISTOPS; }
int rl_task_n_classes(const rl_task *t) { return t->kind == RL_TASK_LISTOPS ? 10 : 0; }

int rl_task_max_length(const rl_task *t)
{
    if (t->kind == RL_TASK_TOKENS) return rl_task_tokens_max_length(t->tokens);
    if (t->kind == RL_TASK_CHARLM) return rl_task_charlm_max_length(t);
    if (t->kind == RL_TASK_MQAR && !t->kv_pairs) /* D = max(1, M/16) <= vocab/2 - 1 keys */
        return 16 * (t->vocab / 2) - 1;
    return 0;
}

int rl_task_min_length(const rl_task *t)
{
    return t->kind == RL_TASK_MQAR && t->kv_pairs ? 4 * t->kv_pairs - 1 : 1;
}

/* ---- batches ---- */

rl_status rl_batch_alloc(struct rl_batch *b, int B, int N)
{
    memset(b, 0, sizeof *b);
    if (B < 1 || N < 1 || (size_t)B > SIZE_MAX / sizeof(int32_t) / (size_t)N)
        RL_FAIL(RL_EINVAL, "batch: B = %d, N = %d must be >= 1", B, N);
    size_t n   = (size_t)B * (size_t)N;
    b->B       = B;
    b->N       = N;
    b->inputs  = rl_alloc(n * sizeof *b->inputs);
    b->targets = rl_alloc(n * sizeof *b->targets);
    b->mask    = rl_alloc(n * sizeof *b->mask);
    b->label   = rl_alloc((size_t)B * sizeof *b->label);
    if (!b->inputs || !b->targets || !b->mask || !b->label) {
        rl_batch_free(b);
        RL_FAIL(RL_ENOMEM, "batch: cannot allocate %d x %d tokens", B, N);
    }
    return RL_OK;
}

void rl_batch_free(struct rl_batch *b)
{
    rl_free(b->inputs);
    rl_free(b->targets);
    rl_free(b->mask);
    rl_free(b->label);
    memset(b, 0, sizeof *b);
}

rl_status rl_task_batch(rl_task *t, struct rl_batch *b, int split, int64_t step)
{
    if (b->B < 1 || b->N < 1 || !b->inputs || !b->targets || !b->mask)
        RL_FAIL(RL_EINVAL, "batch: B = %d, N = %d or its arrays are not allocated", b->B, b->N);
    if (split != 0 && split != 1)
        RL_FAIL(RL_EINVAL, "batch: split %d must be 0 (train) or 1 (validation)", split);
    if (step < 0) RL_FAIL(RL_EINVAL, "batch: step %lld must be >= 0", (long long)step);
    /* causal tasks have no class: -1 marks it for anyone who looks */
    if (b->label && t->kind != RL_TASK_LISTOPS)
        for (int i = 0; i < b->B; i++)
            b->label[i] = -1;
    switch (t->kind) {
    case RL_TASK_COPY:
    case RL_TASK_REVERSE:
    case RL_TASK_SORT:
        return rl_task_seq_batch(t, b, split, step);
    case RL_TASK_MQAR:
        return rl_task_mqar_batch(t, b, split, step);
    case RL_TASK_LISTOPS:
        if (!b->label) RL_FAIL(RL_EINVAL, "batch: listops needs the label array");
        return rl_task_listops_batch(t, b, split, step);
    case RL_TASK_CHARLM:
        return rl_task_charlm_batch(t, b, split, step);
    case RL_TASK_TOKENS:
        return rl_task_tokens_batch(t->tokens, b, split, step);
    }
    RL_FAIL(RL_EINVAL, "batch: unknown task kind %d", (int)t->kind);
}
