/* task_opts.h -- the task kinds and their options (the [task] section of an experiment),
 * shared by the dispatcher (task.h) and the generator families, so that neither
 * includes the other. */
#ifndef RL_TASK_OPTS_H
#define RL_TASK_OPTS_H

#include <stdint.h>
#include "../core/choice.h"
#include "../core/status.h"

/* The names of the kinds and of the fillers are their tables (task_opts.c). */
enum rl_task_kind {
    RL_TASK_COPY = 0,
    RL_TASK_REVERSE,
    RL_TASK_SORT,
    RL_TASK_MQAR,
    RL_TASK_LISTOPS,
    RL_TASK_CHARLM,
    RL_TASK_TOKENS,
    RL_TASK_PASSKEY,
    RL_TASK_KIND_COUNT
};
extern const struct rl_choice rl_task_kinds[];

/* mqar: the most training row lengths (train_lengths) */
#define RL_TASK_MAX_TRAIN_LENGTHS 32

/* mqar: the queries of a training row (evaluation rows always ask each key once) */
enum rl_mqar_queries { RL_MQAR_QUERIES_ONCE = 0, RL_MQAR_QUERIES_DENSE, RL_MQAR_QUERIES_COUNT };
extern const struct rl_choice rl_mqar_queries[];

/* passkey: the filler around the key */
enum rl_passkey_filler {
    RL_PASSKEY_FILLER_PATTERN = 0,
    RL_PASSKEY_FILLER_RANDOM,
    RL_PASSKEY_FILLER_COUNT
};
extern const struct rl_choice rl_passkey_fillers[];

struct rl_task_opts {
    enum rl_task_kind kind;
    int               length;   /* training sequence length N (0: the task's default / data's) */
    int               vocab;    /* 0: task default (tokens: largest id + 1) */
    int               symbols;  /* copy/reverse/sort: number of content symbols */
    int               kv_pairs; /* mqar */
    int               train_queries;   /* mqar: enum rl_mqar_queries */
    int               n_train_lengths; /* mqar: lengths of the training rows (0: all N) */
    const int        *train_lengths;   /* ... row r the (r mod n)-th; at most 32 */
    int               depth;           /* listops max nesting depth */
    int               args;            /* listops max arguments per operator */
    const char       *path;            /* charlm text file / tokens .npy */
    const char       *valid_path;      /* tokens: optional validation .npy */
    int               digits;          /* passkey: digits of the key (0: the default, 5) */
    int               filler;          /* passkey: enum rl_passkey_filler */
    uint64_t          seed;
};

/* A failure about one [task] key: the message reads "[task] KEY: ..." and the key travels
 * with the error (rl_last_error_key), so the caller can point at the line that set it. */
#define RL_TASK_FAIL(status, key, ...) RL_FAIL_KEY((status), "task", (key), __VA_ARGS__)

typedef struct rl_task rl_task;

void rl_task_opts_default(struct rl_task_opts *o);
/* A kind by name; an unknown name fails with the list of names (about [task] name). */
rl_status rl_task_kind_parse(enum rl_task_kind *k, const char *name);
/* The kind's name ("unknown" outside the enum). */
const char *rl_task_kind_name(enum rl_task_kind k);
/* Language-model tasks (charlm, tokens): a loss on every position, perplexity the metric. */
int rl_task_kind_lm(enum rl_task_kind k);

#endif
