/* task_opts.c -- task kinds by name and the default [task] options. */
#include "config.h"
#include "task_opts.h"

#include <string.h>

static const char *const kind_names[] = {"copy",    "reverse", "sort",   "mqar",
                                         "listops", "charlm",  "tokens", "passkey"};
#define N_KINDS ((int)(sizeof kind_names / sizeof kind_names[0]))

void rl_task_opts_default(struct rl_task_opts *o)
{
    memset(o, 0, sizeof *o);
    o->kind   = RL_TASK_COPY;
    o->depth  = 10; /* LRA ListOps: MAX_DEPTH 10, MAX_ARGS 10 */
    o->args   = 10;
    o->seed   = 1;
    o->digits = 5; /* passkey: a 5-digit key, as Mohtashami & Jaggi's */
    /* length, vocab, symbols, kv_pairs 0: the task's defaults (docs/tasks.md) */
}

rl_status rl_task_kind_parse(enum rl_task_kind *k, const char *name)
{
    for (int i = 0; i < N_KINDS; i++)
        if (name && strcmp(name, kind_names[i]) == 0) {
            *k = (enum rl_task_kind)i;
            return RL_OK;
        }
    RL_TASK_FAIL(RL_EINVAL, "name",
                 "unknown task '%s' (copy, reverse, sort, mqar, listops, "
                 "charlm, tokens, passkey)",
                 name ? name : "(null)");
}

const char *rl_task_kind_name(enum rl_task_kind k)
{
    return (int)k >= 0 && (int)k < N_KINDS ? kind_names[k] : "unknown";
}

int rl_task_kind_lm(enum rl_task_kind k) { return k == RL_TASK_CHARLM || k == RL_TASK_TOKENS; }
