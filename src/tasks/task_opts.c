/* task_opts.c -- the task kinds and passkey fillers by name, and the default [task]
 * options. */
#include "config.h"
#include "task_opts.h"

#include <string.h>

const struct rl_choice rl_task_kinds[] = {
    {"copy", RL_TASK_COPY, "reproduce a row of random symbols after a separator"},
    {"reverse", RL_TASK_REVERSE, "the symbols in reverse order"},
    {"sort", RL_TASK_SORT, "the symbols in ascending order"},
    {"mqar", RL_TASK_MQAR, "multi-query associative recall of key-value pairs"},
    {"listops", RL_TASK_LISTOPS, "the value of a nested list expression (a classifier)"},
    {"charlm", RL_TASK_CHARLM, "character-level language model of a text file"},
    {"tokens", RL_TASK_TOKENS, "language model of a .npy file of token ids"},
    {"passkey", RL_TASK_PASSKEY, "retrieve a key hidden in filler"},
    {NULL, 0, NULL}};
RL_CHOICE_TABLE_CHECK(rl_task_kinds, RL_TASK_KIND_COUNT);

const struct rl_choice rl_mqar_queries[] = {
    {"once", RL_MQAR_QUERIES_ONCE, "a training row asks each of its keys once, in random order"},
    {"dense", RL_MQAR_QUERIES_DENSE, "every query slot of a training row asks a key"},
    {NULL, 0, NULL}};
RL_CHOICE_TABLE_CHECK(rl_mqar_queries, RL_MQAR_QUERIES_COUNT);

const struct rl_choice rl_passkey_fillers[] = {
    {"pattern", RL_PASSKEY_FILLER_PATTERN, "the filler tokens in order, repeated"},
    {"random", RL_PASSKEY_FILLER_RANDOM, "every filler token drawn at random"},
    {NULL, 0, NULL}};
RL_CHOICE_TABLE_CHECK(rl_passkey_fillers, RL_PASSKEY_FILLER_COUNT);

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
    int  v;
    char why[640];
    if (rl_choice_parse(rl_task_kinds, name, &v) == 0) return *k = (enum rl_task_kind)v, RL_OK;
    RL_TASK_FAIL(RL_EINVAL, "name", "%s",
                 rl_choice_refusal(rl_task_kinds, name ? name : "(null)", why, sizeof why));
}

const char *rl_task_kind_name(enum rl_task_kind k) { return rl_choice_name(rl_task_kinds, (int)k); }

int rl_task_kind_lm(enum rl_task_kind k) { return k == RL_TASK_CHARLM || k == RL_TASK_TOKENS; }
