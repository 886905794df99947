/* task.h -- training and evaluation data (SPEC 6): seeded synthetic generators and
 * user token arrays, behind one interface the trainer calls.
 *
 * A batch is B rows of N tokens:
 *   inputs  (B, N) int32 token ids in [0, vocab)
 *   targets (B, N) int32; for LM-style tasks the next-token target of each position
 *   mask    (B, N) uint8; 1 where the loss is taken (e.g. the copied half of copy)
 *   label   (B)    int32; classification tasks only (ListOps): class in [0, n_classes);
 *                  rl_batch_alloc always allocates it and causal tasks set it to -1
 * Causal tasks (copy, reverse, sort, mqar, charlm, tokens) train a decoder with loss on
 * the masked positions; non-causal ones (listops) a mean-pooled classifier.
 *
 * Determinism: a batch is a pure function of (task options, seed, split, step, N), so a
 * resumed run sees the same data as an uninterrupted one; rl_task_batch never depends on
 * earlier calls.  split: 0 = train, 1 = validation/evaluation (disjoint streams). */
#ifndef RL_TASK_H
#define RL_TASK_H

#include <stdint.h>
#include "status.h"

enum rl_task_kind {
    RL_TASK_COPY = 0,
    RL_TASK_REVERSE,
    RL_TASK_SORT,
    RL_TASK_MQAR,
    RL_TASK_LISTOPS,
    RL_TASK_CHARLM,
    RL_TASK_TOKENS,
};

struct rl_task_opts {
    enum rl_task_kind kind;
    int               length;     /* training sequence length N (0: the task's default / data's) */
    int               vocab;      /* 0: task default (tokens: largest id + 1) */
    int               symbols;    /* copy/reverse/sort: number of content symbols */
    int               kv_pairs;   /* mqar */
    int               depth;      /* listops max nesting depth */
    int               args;       /* listops max arguments per operator */
    const char       *path;       /* charlm text file / tokens .npy */
    const char       *valid_path; /* tokens: optional validation .npy */
    uint64_t          seed;
};

struct rl_batch {
    int      B, N;
    int32_t *inputs, *targets, *label; /* label: -1 for causal tasks */
    uint8_t *mask;
};

typedef struct rl_task rl_task;

void        rl_task_opts_default(struct rl_task_opts *o);
rl_status   rl_task_kind_parse(enum rl_task_kind *k, const char *name);
const char *rl_task_kind_name(enum rl_task_kind k);
/* Language-model tasks (charlm, tokens): a loss on every position, perplexity the metric. */
int rl_task_kind_lm(enum rl_task_kind k);

rl_status rl_task_create(rl_task **t, const struct rl_task_opts *o);
void      rl_task_free(rl_task *t);

int rl_task_vocab(const rl_task *t);
int rl_task_length(const rl_task *t);    /* training length N */
int rl_task_causal(const rl_task *t);    /* 1: decoder/LM loss; 0: classifier */
int rl_task_n_classes(const rl_task *t); /* 0 for causal tasks */
/* Largest N this task can generate (e.g. tokens: the array's N; mqar: the pairs a
 * length asks for must have distinct keys); 0 = unlimited. */
int rl_task_max_length(const rl_task *t);
/* Smallest N it can generate (mqar with a fixed kv_pairs D: 4D - 1); 1 for the others. */
int rl_task_min_length(const rl_task *t);

rl_status rl_batch_alloc(struct rl_batch *b, int B, int N);
void      rl_batch_free(struct rl_batch *b);
/* Fill b (b->B rows of b->N tokens) for the given split and step. */
rl_status rl_task_batch(rl_task *t, struct rl_batch *b, int split, int64_t step);

#endif
