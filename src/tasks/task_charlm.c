/* task_charlm.c -- character-level language modelling on a text file
 * (docs/tasks.md).  Bytes are the tokens (vocab 256; UTF-8 text is modelled byte by byte,
 * as enwik8 is in the literature).
 *
 * Split: a file named enwik8 of exactly 100,000,000 bytes gets the standard split
 * (first 90M train, next 5M validation, last 5M test -- the test part is never read);
 * any other file trains on its first 90% (floor) and validates on the last 10%.
 * Rows at length N are windows of N + 1 bytes: inputs the first N, targets the next byte
 * of each, mask all ones.  Training rows start uniformly at random in the training part
 * (drawn from the row's own generator); validation rows are the non-overlapping windows
 * k = (step * B + row) mod W starting at valid_lo + k N, W = (valid bytes - 1) / N, so an
 * evaluation pass over W rows scores every validation byte after the first once. */
#include "config.h"
#include "task_charlm.h"
#include "../core/util.h"

#include <stdio.h>
#include <string.h>

#define ENWIK8_BYTES 100000000u

static int is_enwik8(const char *path, size_t len)
{
    const char *base = strrchr(path, '/');
    base             = base ? base + 1 : path;
    return len == ENWIK8_BYTES && strcmp(base, "enwik8") == 0;
}

rl_status rl_task_charlm_setup(struct rl_task *t, const struct rl_task_opts *o)
{
    if (!o->path || !o->path[0])
        RL_TASK_FAIL(RL_EINVAL, "path",
                     "the charlm task needs path (a text file, e.g. the "
                     "shipped data/kjv.txt or enwik8)");
    if (o->vocab && o->vocab != 256)
        RL_TASK_FAIL(RL_EINVAL, "vocab", "charlm models bytes (vocab 256), got %d", o->vocab);
    rl_status st = rl_read_file(&t->text, &t->text_len, o->path);
    if (st != RL_OK) {
        char why[512]; /* rl_last_error's buffer is the one RL_FAIL writes */
        snprintf(why, sizeof why, "%s", rl_last_error());
        RL_TASK_FAIL(st, "path", "%s", why);
    }
    if (is_enwik8(o->path, t->text_len)) {
        t->train_end = 90000000u, t->valid_lo = 90000000u, t->valid_hi = 95000000u;
    } else {
        t->train_end = t->text_len / 10 * 9 + t->text_len % 10 * 9 / 10; /* floor(0.9 len) */
        t->valid_lo = t->train_end, t->valid_hi = t->text_len;
    }
    t->vocab  = 256;
    t->length = o->length ? o->length : RL_TASK_DEFAULT_LENGTH;
    size_t nv = t->valid_hi - t->valid_lo;
    if (t->train_end < (size_t)t->length + 1 || nv < (size_t)t->length + 1)
        RL_TASK_FAIL(RL_EINVAL, "length",
                     "%s has %zu training and %zu validation bytes, too "
                     "few for windows of length %d + 1",
                     o->path, t->train_end, nv, t->length);
    return RL_OK;
}

int rl_task_charlm_max_length(const struct rl_task *t)
{
    size_t n = t->valid_hi - t->valid_lo - 1; /* one window of N + 1 bytes */
    return n > (size_t)(1 << 30) ? (1 << 30) : (int)n;
}

rl_status rl_task_charlm_batch(struct rl_task *t, struct rl_batch *b, int split, int64_t step)
{
    size_t N  = (size_t)b->N;
    size_t lo = split ? t->valid_lo : 0, hi = split ? t->valid_hi : t->train_end;
    if (hi - lo < N + 1)
        RL_FAIL(RL_EINVAL,
                "batch: charlm %s part has %zu bytes, too few for a window of "
                "length %zu + 1",
                split ? "validation" : "training", hi - lo, N);
    uint64_t W = (uint64_t)(hi - lo - 1) / N; /* non-overlapping validation windows */
    for (int row = 0; row < b->B; row++) {
        size_t start;
        if (split) {
            uint64_t k = ((uint64_t)step * (uint64_t)b->B + (uint64_t)row) % W;
            start      = lo + (size_t)k * N;
        } else {
            struct rl_rng r;
            rl_task_row_rng(&r, t, split, step, (int)N, row);
            start = lo + (size_t)rl_rng_below(&r, (uint64_t)(hi - lo - N));
        }
        const unsigned char *w   = t->text + start;
        size_t               off = (size_t)row * N;
        for (size_t i = 0; i < N; i++) {
            b->inputs[off + i]  = w[i];
            b->targets[off + i] = w[i + 1];
            b->mask[off + i]    = 1;
        }
    }
    return RL_OK;
}
