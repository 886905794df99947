/* task.c -- the task dispatcher (docs/tasks.md): options, kinds, the task object and batches.
 * The generators live one family per file (task_seq.c, task_mqar.c, task_listops.c,
 * task_charlm.c, task_tokens.c, task_passkey.c); docs/tasks.md documents every layout. */
#include "config.h"
#include "task.h"
#include "task_common.h"
#include "task_seq.h"
#include "task_mqar.h"
#include "task_listops.h"
#include "task_charlm.h"
#include "task_tokens.h"
#include "task_passkey.h"
#include "../core/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static rl_status check_common(const struct rl_task_opts *o)
{
    if ((int)o->kind < 0 || (int)o->kind >= RL_TASK_KIND_COUNT)
        RL_TASK_FAIL(RL_EINVAL, "name", "unknown task kind %d", (int)o->kind);
    const struct {
        const char *key;
        int         v;
    } nonneg[] = {{"length", o->length},     {"vocab", o->vocab}, {"symbols", o->symbols},
                  {"kv_pairs", o->kv_pairs}, {"depth", o->depth}, {"args", o->args},
                  {"digits", o->digits}};
    for (size_t i = 0; i < sizeof nonneg / sizeof nonneg[0]; i++)
        if (nonneg[i].v < 0)
            RL_TASK_FAIL(RL_EINVAL, nonneg[i].key, "%d must be >= 0 (0 = the task's default)",
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
    case RL_TASK_PASSKEY:
        return rl_task_passkey_setup(t, o);
    case RL_TASK_KIND_COUNT:
        break;
    }
    RL_TASK_FAIL(RL_EINVAL, "name", "unknown task kind %d", (int)o->kind);
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

rl_status rl_task_reference(const rl_task *t, double *loss, double *acc)
{
    int n = 0; /* the generators: a uniform guess over the n answers */
    switch (t->kind) {
    case RL_TASK_COPY:
    case RL_TASK_REVERSE:
    case RL_TASK_SORT:
        n = t->symbols;
        break;
    case RL_TASK_MQAR:
        n = t->vocab - t->vocab / 2; /* the values */
        break;
    case RL_TASK_LISTOPS:
    case RL_TASK_PASSKEY:
        n = 10; /* classes, digits */
        break;
    case RL_TASK_TOKENS:
        return rl_task_tokens_unigram(t->tokens, loss, acc);
    case RL_TASK_CHARLM: {
        double count[256] = {0}, seen[256] = {0};
        for (size_t i = 0; i < t->train_end; i++)
            count[t->text[i]] += 1;
        for (size_t i = t->valid_lo + 1; i < t->valid_hi; i++) /* every byte but the first */
            seen[t->text[i]] += 1;
        rl_task_unigram(count, seen, 256, loss, acc);
        return RL_OK;
    }
    case RL_TASK_KIND_COUNT:
        RL_FAIL(RL_EINVAL, "task: no reference for an unknown kind");
    }
    *loss = log(n), *acc = 1.0 / n;
    return RL_OK;
}

int64_t rl_task_valid_rows(const rl_task *t, int N)
{
    if (t->kind == RL_TASK_TOKENS) return rl_task_tokens_rows(t->tokens, 1);
    if (t->kind == RL_TASK_CHARLM && N > 0 && t->valid_hi - t->valid_lo > (size_t)N)
        return (int64_t)((t->valid_hi - t->valid_lo - 1) / (size_t)N);
    return 0;
}

int rl_task_min_length(const rl_task *t)
{
    if (t->kind == RL_TASK_PASSKEY) return rl_task_passkey_min_length(t);
    return t->kind == RL_TASK_MQAR && t->kv_pairs ? 4 * t->kv_pairs - 1 : 1;
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
    case RL_TASK_PASSKEY:
        return rl_task_passkey_batch(t, b, split, step);
    case RL_TASK_KIND_COUNT:
        break;
    }
    RL_FAIL(RL_EINVAL, "batch: unknown task kind %d", (int)t->kind);
}
