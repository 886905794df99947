/* task_tokens.c -- the `tokens` task: batches from user token arrays; see task_tokens.h. */
#include "config.h"
#include "task_tokens.h"
#include "task_common.h"
#include "../core/npy.h"

#include <stdlib.h>
#include <string.h>

struct tokens_array {
    int32_t *ids; /* S x (N+1), row-major */
    int64_t  S;
    int      N;
};

struct rl_task_tokens {
    struct tokens_array train, valid; /* valid.ids NULL: evaluate on train */
    int                 vocab;
};

/* Read one array, check rank, dtype and id range, convert to int32; *max_id gets the
 * largest id. */
static rl_status read_array(struct tokens_array *a, int64_t *max_id, const char *path,
                            const char *key)
{
    struct rl_npy n;
    rl_status     st = rl_npy_read(&n, path);
    if (st != RL_OK) RL_TASK_FAIL(st, key, "%s", rl_last_error());
    if (n.dtype != RL_NPY_I32 && n.dtype != RL_NPY_I64) {
        rl_npy_free(&n);
        RL_TASK_FAIL(RL_EFORMAT, key,
                     "%s holds floating-point numbers; token ids must be "
                     "int32 or int64 (np.asarray(ids, dtype=np.int32))",
                     path);
    }
    if (n.ndim != 2 || n.shape[0] < 1 || n.shape[1] < 2 || n.shape[1] - 1 > (1 << 30)) {
        char shp[96] = "";
        for (int i = 0, k = 0; i < n.ndim && k < 80; i++)
            k += snprintf(shp + k, sizeof shp - (size_t)k, "%s%lld", i ? ", " : "",
                          (long long)n.shape[i]);
        rl_npy_free(&n);
        RL_TASK_FAIL(RL_ESHAPE, key,
                     "%s has shape (%s); expected S x (N+1) with S >= 1, "
                     "N >= 1 (one sequence of N+1 ids per row)",
                     path, shp);
    }
    a->S   = n.shape[0];
    a->N   = (int)(n.shape[1] - 1);
    a->ids = malloc(n.count * sizeof *a->ids);
    if (!a->ids) {
        rl_npy_free(&n);
        RL_TASK_FAIL(RL_ENOMEM, key, "%s: out of memory", path);
    }
    *max_id = -1;
    for (size_t i = 0; i < n.count; i++) {
        int64_t v =
            n.dtype == RL_NPY_I32 ? ((const int32_t *)n.data)[i] : ((const int64_t *)n.data)[i];
        if (v < 0 || v > INT32_MAX - 1) {
            size_t cols = (size_t)n.shape[1];
            free(a->ids), a->ids = NULL;
            rl_npy_free(&n);
            RL_TASK_FAIL(RL_EFORMAT, key,
                         "%s: id %lld at row %zu, column %zu is out of range "
                         "(ids must be in [0, 2^31 - 1))",
                         path, (long long)v, i / cols, i % cols);
        }
        a->ids[i] = (int32_t)v;
        if (v > *max_id) *max_id = v;
    }
    rl_npy_free(&n);
    return RL_OK;
}

/* First position of an id >= vocab, for the error message. */
static rl_status check_vocab(const struct tokens_array *a, int vocab, const char *path,
                             const char *key)
{
    size_t cols = (size_t)a->N + 1, n = (size_t)a->S * cols;
    for (size_t i = 0; i < n; i++)
        if (a->ids[i] >= vocab)
            RL_TASK_FAIL(RL_EINVAL, "vocab",
                         "%s (%s) holds id %d at row %zu, column %zu, but "
                         "vocab = %d (ids must be < vocab; leave vocab unset to infer it)",
                         path, key, a->ids[i], i / cols, i % cols, vocab);
    return RL_OK;
}

static rl_status open_arrays(struct rl_task_tokens *t, const struct rl_task_opts *o)
{
    int64_t mt = -1, mv = -1;
    if (!o->path || !o->path[0])
        RL_TASK_FAIL(RL_EINVAL, "path", "the tokens task needs path (an .npy file of ids)");
    RL_TRY(read_array(&t->train, &mt, o->path, "path"));
    if (o->valid_path && o->valid_path[0])
        RL_TRY(read_array(&t->valid, &mv, o->valid_path, "valid_path"));
    int64_t inferred = (mt > mv ? mt : mv) + 1;
    t->vocab         = o->vocab > 0 ? o->vocab : (int)inferred;
    RL_TRY(check_vocab(&t->train, t->vocab, o->path, "path"));
    if (t->valid.ids) RL_TRY(check_vocab(&t->valid, t->vocab, o->valid_path, "valid_path"));
    if (o->length > 0 && o->length != t->train.N)
        RL_TASK_FAIL(RL_EINVAL, "length",
                     "%s holds sequences of N = %d tokens (rows of %d ids), "
                     "but length = %d (leave length unset to use the data's)",
                     o->path, t->train.N, t->train.N + 1, o->length);
    return RL_OK;
}

rl_status rl_task_tokens_open(struct rl_task_tokens **out, const struct rl_task_opts *o)
{
    *out                     = NULL;
    struct rl_task_tokens *t = calloc(1, sizeof *t);
    if (!t) RL_FAIL(RL_ENOMEM, "tokens task: out of memory");
    rl_status st = open_arrays(t, o);
    if (st != RL_OK) {
        rl_task_tokens_free(t);
        return st;
    }
    *out = t;
    return RL_OK;
}

void rl_task_tokens_free(struct rl_task_tokens *t)
{
    if (!t) return;
    free(t->train.ids);
    free(t->valid.ids);
    free(t);
}

int rl_task_tokens_vocab(const struct rl_task_tokens *t) { return t->vocab; }
int rl_task_tokens_length(const struct rl_task_tokens *t) { return t->train.N; }

int rl_task_tokens_max_length(const struct rl_task_tokens *t)
{
    return t->valid.ids ? t->valid.N : t->train.N;
}

static const struct tokens_array *split_array(const struct rl_task_tokens *t, int split)
{
    return split == 1 && t->valid.ids ? &t->valid : &t->train;
}

rl_status rl_task_tokens_unigram(const struct rl_task_tokens *t, double *loss, double *acc)
{
    double *count = calloc((size_t)t->vocab, sizeof *count);
    if (!count) RL_FAIL(RL_ENOMEM, "tokens task: out of memory (%d ids)", t->vocab);
    double *seen = calloc((size_t)t->vocab, sizeof *seen);
    if (!seen) return free(count), rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "out of memory");
    const struct tokens_array *tr = &t->train, *va = split_array(t, 1);
    for (size_t i = 0; i < (size_t)tr->S * (size_t)(tr->N + 1); i++)
        count[tr->ids[i]] += 1;
    for (int64_t r = 0; r < va->S; r++) /* the targets: every id of a row but its first */
        for (int k = 1; k <= va->N; k++)
            seen[va->ids[(size_t)r * (size_t)(va->N + 1) + (size_t)k]] += 1;
    rl_task_unigram(count, seen, t->vocab, loss, acc);
    free(count), free(seen);
    return RL_OK;
}

int64_t rl_task_tokens_rows(const struct rl_task_tokens *t, int split)
{
    return split_array(t, split)->S;
}

rl_status rl_task_tokens_batch(struct rl_task_tokens *t, struct rl_batch *b, int split,
                               int64_t step)
{
    const struct tokens_array *a = split_array(t, split);
    if (b->N > a->N)
        RL_FAIL(RL_EINVAL, "tokens task: length %d is longer than the %s data's N = %d", b->N,
                split == 1 && t->valid.ids ? "validation" : "training", a->N);
    if (step < 0) RL_FAIL(RL_EINVAL, "tokens task: negative step %lld", (long long)step);
    /* row (s*B + j) mod S without overflow: ((s mod S)(B mod S) + j) mod S */
    uint64_t S = (uint64_t)a->S, base = ((uint64_t)step % S) * ((uint64_t)b->B % S) % S;
    size_t   N = (size_t)b->N, cols = (size_t)a->N + 1;
    for (int j = 0; j < b->B; j++) {
        const int32_t *row = a->ids + ((base + (uint64_t)j) % S) * cols;
        memcpy(b->inputs + (size_t)j * N, row, N * sizeof *row);
        memcpy(b->targets + (size_t)j * N, row + 1, N * sizeof *row);
        memset(b->mask + (size_t)j * N, 1, N);
    }
    return RL_OK;
}
