/* t_train.c -- the tokens task (row order, vocabulary inference, bad files) and the
 * training loop: the loss falls on a learnable tokens problem, gradient accumulation
 * matches one big batch, the run directory's files, learned-PE evaluation beyond max_len,
 * and interrupted-then-resumed training bit-identical to an uninterrupted run. */
#include "config.h"
#include "config/cfg.h"
#include "core/threads.h"
#include "core/init.h"
#include "core/npy.h"
#include "tap.h"
#include "tasks/task.h"
#include "tasks/task_tokens.h"
#include "experiment/train.h"
#include "core/util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char tmpdir[256];

static const char *tmp_path(const char *name)
{
    static char buf[4][512];
    static int  k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

/* A C-order .npy of int32 ('<i4') or int64 ('<i8') with any shape (written here: ropelab's
 * own writer only writes floats). */
static void write_int_npy(const char *path, const int64_t *v, int ndim, const int64_t *shape,
                          int bytes)
{
    char   dict[256], shp[128] = "";
    size_t count = 1;
    for (int i = 0, n = 0; i < ndim; i++) {
        n += snprintf(shp + n, sizeof shp - (size_t)n, "%lld,%s", (long long)shape[i],
                      i + 1 < ndim ? " " : "");
        count *= (size_t)shape[i];
    }
    if (ndim > 1) shp[strlen(shp) - 1] = 0; /* (5, 9) but (5,) */
    int n   = snprintf(dict, sizeof dict,
                       "{'descr': '<i%d', 'fortran_order': False, 'shape': (%s), }", bytes, shp);
    int pad = 64 - (10 + n + 1) % 64;
    if (pad == 64) pad = 0;
    FILE *f = fopen(path, "wb");
    if (!f) tap_bail("cannot write %s", path);
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
    int           hl      = n + pad + 1;
    pre[8] = (unsigned char)(hl & 0xff), pre[9] = (unsigned char)(hl >> 8);
    fwrite(pre, 1, 10, f);
    fwrite(dict, 1, (size_t)n, f);
    for (int i = 0; i < pad; i++)
        fputc(' ', f);
    fputc('\n', f);
    for (size_t i = 0; i < count; i++) {
        if (bytes == 4) {
            int32_t x = (int32_t)v[i];
            fwrite(&x, 4, 1, f);
        } else {
            fwrite(&v[i], 8, 1, f);
        }
    }
    fclose(f);
}

/* S x (N+1) ids: id(r, c) = (r * 7 + c * 3) % mod (distinct rows, every id < mod). */
static void write_tokens(const char *path, int S, int N, int mod, int bytes)
{
    int64_t *v = malloc((size_t)S * (N + 1) * sizeof *v), shape[2] = {S, N + 1};
    for (int r = 0; r < S; r++)
        for (int c = 0; c <= N; c++)
            v[(size_t)r * (N + 1) + c] = (r * 7 + c * 3) % mod;
    write_int_npy(path, v, 2, shape, bytes);
    free(v);
}

static int batch_is_rows(const struct rl_batch *b, const int *rows, int N, int mod)
{
    for (int j = 0; j < b->B; j++)
        for (int n = 0; n < b->N; n++) {
            size_t i = (size_t)j * b->N + n;
            if (b->inputs[i] != (rows[j] * 7 + n * 3) % mod ||
                b->targets[i] != (rows[j] * 7 + (n + 1) * 3) % mod || b->mask[i] != 1)
                return 0;
        }
    (void)N;
    return 1;
}

static void tokens_error(const struct rl_task_opts *o, const char *want)
{
    struct rl_task_tokens *t = NULL;
    rl_status              s = rl_task_tokens_open(&t, o);
    int                    ok =
        s != RL_OK && t == NULL && strstr(rl_last_error(), want) && !strchr(rl_last_error(), '\n');
    tap_ok(ok, "tokens: rejects with '%s'", want);
    if (!ok) tap_diag("status %d: %s", (int)s, s ? rl_last_error() : "(accepted)");
    rl_task_tokens_free(t);
}

static void test_tokens_task(void)
{
    struct rl_task_opts o;
    rl_task_opts_default(&o);
    o.kind = RL_TASK_TOKENS;
    char p32[512], p64[512], pv[512];
    snprintf(p32, sizeof p32, "%s", tmp_path("t32.npy"));
    snprintf(p64, sizeof p64, "%s", tmp_path("t64.npy"));
    snprintf(pv, sizeof pv, "%s", tmp_path("valid.npy"));
    write_tokens(p32, 5, 8, 11, 4);
    write_tokens(p64, 5, 8, 11, 8);
    write_tokens(pv, 3, 20, 13, 4); /* longer validation rows, one more id value */
    for (int w = 0; w < 2; w++) {
        struct rl_task_tokens *t = NULL;
        o.path                   = w ? p64 : p32;
        rl_status s              = rl_task_tokens_open(&t, &o);
        tap_ok(s == RL_OK && rl_task_tokens_vocab(t) == 11 && rl_task_tokens_length(t) == 8 &&
                   rl_task_tokens_max_length(t) == 8,
               "tokens %s: vocab = largest id + 1 = 11, length = N = 8", w ? "int64" : "int32");
        if (s != RL_OK) {
            tap_diag("%s", rl_last_error());
            continue;
        }
        struct rl_batch b;
        rl_batch_alloc(&b, 3, 8);
        static const int r0[] = {0, 1, 2}, r1[] = {3, 4, 0}, r7[] = {1, 2, 3};
        rl_task_tokens_batch(t, &b, 0, 0);
        int ok = batch_is_rows(&b, r0, 8, 11);
        rl_task_tokens_batch(t, &b, 0, 1);
        ok = ok && batch_is_rows(&b, r1, 8, 11);
        rl_task_tokens_batch(t, &b, 0, 7); /* rows (21 + j) mod 5 */
        ok = ok && batch_is_rows(&b, r7, 8, 11);
        tap_ok(ok,
               "tokens %s: update s uses rows (s B + j) mod S, inputs row[:-1], targets "
               "row[1:], mask ones",
               w ? "int64" : "int32");
        rl_task_tokens_batch(t, &b, 1, 1);
        tap_ok(batch_is_rows(&b, r1, 8, 11),
               "tokens: without valid_path evaluation reads the training rows");
        rl_batch_free(&b);
        rl_batch_alloc(&b, 2, 5);
        static const int r2[] = {4, 0};
        s                     = rl_task_tokens_batch(t, &b, 0, 2);
        tap_ok(s == RL_OK && batch_is_rows(&b, r2, 5, 11),
               "tokens: a shorter batch takes row prefixes");
        rl_batch_free(&b);
        rl_batch_alloc(&b, 2, 9);
        s = rl_task_tokens_batch(t, &b, 0, 0);
        tap_ok(s != RL_OK && strstr(rl_last_error(), "longer than the training data's N = 8"),
               "tokens: a batch longer than the data is refused");
        rl_batch_free(&b);
        rl_task_tokens_free(t);
    }
    /* validation array: its own N and vocabulary */
    struct rl_task_tokens *t = NULL;
    o.path = p32, o.valid_path = pv;
    rl_status s = rl_task_tokens_open(&t, &o);
    tap_ok(s == RL_OK && rl_task_tokens_vocab(t) == 13 && rl_task_tokens_max_length(t) == 20 &&
               rl_task_tokens_rows(t, 1) == 3,
           "tokens: vocab covers valid_path's ids; max length = validation N");
    if (s == RL_OK) {
        struct rl_batch b;
        rl_batch_alloc(&b, 2, 16);
        static const int rv[] = {2, 0}; /* step 1, B = 2: rows 2, 3 mod 3 */
        s                     = rl_task_tokens_batch(t, &b, 1, 1);
        tap_ok(s == RL_OK && batch_is_rows(&b, rv, 16, 13),
               "tokens: split 1 reads valid_path rows");
        rl_batch_free(&b);
    }
    rl_task_tokens_free(t);
    o.valid_path = NULL;
    o.vocab      = 20;
    s            = rl_task_tokens_open(&t, &o);
    tap_ok(s == RL_OK && rl_task_tokens_vocab(t) == 20, "tokens: a larger explicit vocab is kept");
    rl_task_tokens_free(t);
    o.vocab = 10;
    tokens_error(&o, "holds id 10 at row 0, column 7, but vocab = 10");
    o.vocab  = 0;
    o.length = 7;
    tokens_error(&o, "[task] length: ");
    o.length      = 0;
    int64_t neg[] = {1, 2, 3, 4, -1, 5}, sh[2] = {2, 3}, sh1[1] = {6}, sh3[3] = {1, 2, 3};
    write_int_npy(tmp_path("neg.npy"), neg, 2, sh, 8);
    o.path = tmp_path("neg.npy");
    tokens_error(&o, "id -1 at row 1, column 1 is out of range");
    write_int_npy(tmp_path("rank1.npy"), neg, 1, sh1, 4);
    o.path = tmp_path("rank1.npy");
    tokens_error(&o, "has shape (6); expected S x (N+1)");
    write_int_npy(tmp_path("rank3.npy"), neg, 3, sh3, 4);
    o.path = tmp_path("rank3.npy");
    tokens_error(&o, "has shape (1, 2, 3)");
    int64_t one[] = {1, 2, 3}, sh_col[2] = {3, 1};
    write_int_npy(tmp_path("col.npy"), one, 2, sh_col, 4);
    o.path = tmp_path("col.npy");
    tokens_error(&o, "has shape (3, 1)");
    float f[6] = {1, 2, 3, 4, 5, 6};
    rl_npy_write_f32(tmp_path("float.npy"), f, 2, sh);
    o.path = tmp_path("float.npy");
    tokens_error(&o, "holds floating-point numbers");
    o.path = tmp_path("missing.npy");
    tokens_error(&o, "[task] path: ");
    o.path = NULL;
    tokens_error(&o, "needs path");
    /* through the dispatcher */
    o.path        = p32;
    rl_task *task = NULL;
    s             = rl_task_create(&task, &o);
    tap_ok(s == RL_OK && rl_task_vocab(task) == 11 && rl_task_length(task) == 8 &&
               rl_task_causal(task) && rl_task_max_length(task) == 8,
           "tokens through rl_task_create: vocab, length, causal");
    rl_task_free(task);
}

/* ---- training ---- */

/* A learnable problem: x_{n+1} = (x_n + 1) mod 8 after a random start. */
static const char *write_counting(const char *name, int S, int N)
{
    int64_t *v = malloc((size_t)S * (N + 1) * sizeof *v), shape[2] = {S, N + 1};
    tap_seed(7);
    for (int r = 0; r < S; r++) {
        int x = (int)(tap_uniform() * 8);
        for (int c = 0; c <= N; c++)
            v[(size_t)r * (N + 1) + c] = (x + c) % 8;
    }
    static char p[512];
    snprintf(p, sizeof p, "%s", tmp_path(name));
    write_int_npy(p, v, 2, shape, 4);
    free(v);
    return p;
}

static rl_status make_cfg(struct rl_cfg *c, rl_task **task, const char *name,
                          const char *const *sets)
{
    rl_cfg_defaults(c);
    char        buf[600];
    const char *base[] = {
        "model.d_model=32", "model.heads=2",     "model.layers=1", "train.batch=8",
        "train.lr=1e-2",    "train.log_every=1", "eval.batches=2", NULL};
    snprintf(buf, sizeof buf, "experiment.out=%s", tmpdir);
    RL_TRY(rl_cfg_set(c, buf));
    snprintf(buf, sizeof buf, "experiment.name=%s", name);
    RL_TRY(rl_cfg_set(c, buf));
    for (int i = 0; base[i]; i++)
        RL_TRY(rl_cfg_set(c, base[i]));
    for (int i = 0; sets && sets[i]; i++)
        RL_TRY(rl_cfg_set(c, sets[i]));
    return rl_train_prepare(c, task);
}

static rl_status run(const char *name, const char *const *sets, const struct rl_train_opts *o,
                     struct rl_train_result *r)
{
    struct rl_cfg *c    = malloc(sizeof *c);
    rl_task       *task = NULL;
    rl_status      st   = make_cfg(c, &task, name, sets);
    char           dir[600];
    snprintf(dir, sizeof dir, "%s/%s", tmpdir, name);
    if (st == RL_OK) st = rl_train_run(c, task, dir, o, r);
    rl_task_free(task);
    free(c);
    return st;
}

static int count_lines(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    char  line[4096];
    int   n = 0;
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        n += !needle || strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

static unsigned char *slurp(const char *path, size_t *len)
{
    unsigned char *b = NULL;
    if (rl_read_file(&b, len, path) != RL_OK) return NULL;
    return b;
}

/* The tensor bytes of a safetensors file (everything after the 8-byte length and the
 * JSON header; the header holds the config, whose out/name may differ). */
static const unsigned char *st_data(const unsigned char *b, size_t len, size_t *n)
{
    uint64_t h = 0;
    if (len < 8) return NULL;
    for (int i = 7; i >= 0; i--)
        h = h << 8 | b[i];
    if (h > len - 8) return NULL;
    *n = len - 8 - h;
    return b + 8 + h;
}

static int same_tensors(const char *a, const char *b)
{
    size_t               la, lb, na = 0, nb = 0;
    unsigned char       *x = slurp(a, &la), *y = slurp(b, &lb);
    const unsigned char *dx = x ? st_data(x, la, &na) : NULL, *dy = y ? st_data(y, lb, &nb) : NULL;
    int                  same = dx && dy && na == nb && na > 0 && !memcmp(dx, dy, na);
    free(x), free(y);
    return same;
}

static void test_learns(const char *data)
{
    char p[600];
    snprintf(p, sizeof p, "task.path=%s", data);
    const char            *sets[] = {"task.name=tokens",       p,
                                     "train.steps=60",         "train.checkpoint_initial=true",
                                     "model.attention=linear", NULL};
    struct rl_train_result r;
    double                 t0 = rl_now_ms();
    rl_status              st = run("learn", sets, NULL, &r);
    tap_ok(st == RL_OK, "train 60 updates on the counting problem (%.0f ms)", rl_now_ms() - t0);
    if (st != RL_OK) {
        tap_diag("%s", rl_last_error());
        return;
    }
    FILE  *f = fopen(tmp_path("learn/metrics.jsonl"), "r");
    char   line[1024];
    double first = NAN;
    if (f && fgets(line, sizeof line, f)) sscanf(strstr(line, "\"loss\": ") + 8, "%lf", &first);
    if (f) fclose(f);
    tap_ok(r.last_loss < 0.3 * first && r.eval[0].acc > 0.8,
           "loss falls: first %.4f, last %.4f; eval acc %.3f", first, r.last_loss, r.eval[0].acc);
    tap_ok(count_lines(tmp_path("learn/metrics.jsonl"), NULL) == 60 &&
               count_lines(tmp_path("learn/metrics.jsonl"), "\"grad_norm\": ") == 60 &&
               count_lines(tmp_path("learn/metrics.jsonl"), "\"ms_optimizer\": ") == 60 &&
               count_lines(tmp_path("learn/metrics.jsonl"), "{\"step\": 60, ") == 1,
           "metrics.jsonl: one record per update with every field, steps 1..60");
    struct stat sb;
    tap_ok(stat(tmp_path("learn/checkpoints/step-0.safetensors"), &sb) == 0 &&
               stat(tmp_path("learn/checkpoints/step-60.safetensors"), &sb) == 0,
           "checkpoints step-0 (checkpoint_initial) and step-60 (the end)");
    tap_ok(count_lines(tmp_path("learn/results.csv"),
                       "pe,attention,length,acc,exact,loss,ppl,ms_per_1k_tokens") == 1 &&
               count_lines(tmp_path("learn/results.csv"), "rope,linear,16,") == 1,
           "results.csv: header and one row per evaluation length");
    /* config.ini holds the resolved configuration and reads back */
    struct rl_cfg *c = malloc(sizeof *c);
    rl_cfg_defaults(c);
    st = rl_cfg_load(c, tmp_path("learn/config.ini"));
    tap_ok(st == RL_OK && c->task.length == 16 && c->task.vocab == 8 && c->model.rope_dims == 16 &&
               c->eval.n_lengths == 1 && c->train.steps == 60,
           "config.ini: resolved values (length 16, vocab 8, rope_dims 16) and reads back");
    free(c);
    st = run("learn", sets, NULL, &r);
    tap_ok(st != RL_OK && strstr(rl_last_error(), "already holds a run; continue it with --resume"),
           "a second fresh run in the same directory is refused");
}

static void test_accumulate(const char *data)
{
    char p[600];
    snprintf(p, sizeof p, "task.path=%s", data);
    const char *a1[] = {"task.name=tokens", p, "train.steps=3", NULL};
    const char *a4[] = {"task.name=tokens", p, "train.steps=3", "train.accumulate=4", NULL};
    struct rl_train_result r1, r4;
    rl_status              s1 = run("acc1", a1, NULL, &r1), s4 = run("acc4", a4, NULL, &r4);
    tap_ok(s1 == RL_OK && s4 == RL_OK && fabs(r1.last_loss - r4.last_loss) <= 1e-5 * r1.last_loss,
           "accumulate = 4 matches one batch: loss %.7f vs %.7f", r1.last_loss, r4.last_loss);
}

static void test_learned_na(void)
{
    char tr[512], va[512];
    snprintf(tr, sizeof tr, "%s", tmp_path("na_train.npy"));
    snprintf(va, sizeof va, "%s", tmp_path("na_valid.npy"));
    write_tokens(tr, 6, 16, 9, 4);
    write_tokens(va, 4, 48, 9, 4);
    char p[600], v[600];
    snprintf(p, sizeof p, "task.path=%s", tr);
    snprintf(v, sizeof v, "task.valid_path=%s", va);
    const char *sets[] = {"task.name=tokens",   p,   v, "model.pe=learned", "train.steps=2",
                          "eval.lengths=16,48", NULL};
    struct rl_train_result r;
    rl_status              st = run("na", sets, NULL, &r);
    tap_ok(st == RL_OK && r.n_eval == 2 && !r.eval[0].na && r.eval[1].na &&
               strstr(r.eval[1].note, "learned PE has max_len rows"),
           "learned PE: length 48 > max_len 16 is n/a, never clamped");
    tap_ok(count_lines(tmp_path("na/results.csv"),
                       "learned,softmax,48,n/a,n/a,n/a,n/a,n/a,n/a,learned PE has max_len rows") ==
               1,
           "results.csv marks the n/a row with its reason");
    /* the LM evaluation's per-position curve: its bins cover the length, hold every target
     * and average (weighted by targets) to the length's loss; exact match is a fraction of
     * the sequences, no larger than the chance that all of a row's 16 targets are right */
    const struct rl_eval_row *e = &r.eval[0];
    double                    s = 0;
    long                      n = 0;
    for (int k = 0; k < e->pos_bins; k++)
        s += e->pos_loss[k] * (double)e->pos_targets[k], n += e->pos_targets[k];
    static const int edge[] = {0, 1, 2, 3, 4, 6, 8, 11, 16}; /* 0, then 2 an octave */
    int              same   = e->pos_bins == 8;
    for (int k = 0; same && k <= 8; k++)
        same = e->pos_edge[k] == edge[k];
    tap_ok(st == RL_OK && same && n == e->targets &&
               fabs(s / (double)n - e->loss) <= 1e-6 * e->loss,
           "per-position loss: bins 0, 1, 2, 3, 4-5, 6-7, 8-10, 11-15, %ld targets, weighted "
           "mean %.7f = loss %.7f",
           n, n ? s / (double)n : 0.0, e->loss);
    tap_ok(e->sequences > 0 && e->exact >= 0 && e->exact <= 1 && e->exact <= e->acc,
           "exact match %.3f of %ld sequences (accuracy %.3f)", e->exact, e->sequences, e->acc);
    tap_ok(count_lines(tmp_path("na/positions.csv"), NULL) == 1 + 8,
           "positions.csv: a header and one line per bin of the length it evaluated");
    const char    *bad[] = {"task.name=tokens", p, "eval.lengths=16,48", NULL};
    struct rl_cfg *c     = malloc(sizeof *c);
    rl_task       *task  = NULL;
    st                   = make_cfg(c, &task, "na2", bad);
    tap_ok(st != RL_OK && task == NULL &&
               strstr(rl_last_error(), "[eval] lengths: length 48 is longer"),
           "an evaluation length beyond the data is refused before training");
    free(c);
    const char *mq[] = {"task.name=mqar", "task.vocab=64", "task.length=64", "eval.lengths=64,512",
                        NULL};
    c                = malloc(sizeof *c);
    st               = make_cfg(c, &task, "mq", mq);
    tap_ok(st != RL_OK && task == NULL &&
               strstr(rl_last_error(),
                      "[eval] lengths: length 512 is longer than the task allows (511"),
           "mqar: an evaluation length whose pairs need more keys than vocab has is refused "
           "before training");
    free(c);
    const char *mq2[] = {"task.name=mqar", "task.kv_pairs=8", "task.length=64",
                         "eval.lengths=16,64", NULL};
    c                 = malloc(sizeof *c);
    st                = make_cfg(c, &task, "mq2", mq2);
    tap_ok(st != RL_OK && task == NULL &&
               strstr(rl_last_error(),
                      "[eval] lengths: length 16 is shorter than the task allows (31"),
           "mqar with fixed kv_pairs: an evaluation length too short for its pairs is refused");
    free(c);
}

static void test_resume(const char *data, int threads)
{
    char full[32], cut[32], path[64];
    snprintf(full, sizeof full, "full%d", threads);
    snprintf(cut, sizeof cut, "cut%d", threads);
    rl_threads_set(threads);
    char p[600];
    snprintf(p, sizeof p, "task.path=%s", data);
    const char            *sets[] = {"task.name=tokens",
                                     p,
                                     "train.steps=8",
                                     "train.checkpoint_every=3",
                                     "train.warmup=2",
                                     "train.min_lr_ratio=0.1",
                                     "train.accumulate=2",
                                     "eval.every=4",
                                     NULL};
    struct rl_train_result r;
    rl_status              st = run(full, sets, NULL, &r);
    tap_ok(st == RL_OK, "%d thread(s): uninterrupted run of 8 updates", threads);
    struct rl_train_opts stop = {.stop_after = 5};
    st                        = run(cut, sets, &stop, &r);
    tap_ok(st == RL_OK && r.steps_done == 5 &&
               count_lines((snprintf(path, sizeof path, "%s/metrics.jsonl", cut), tmp_path(path)),
                           NULL) == 5 &&
               count_lines((snprintf(path, sizeof path, "%s/eval.jsonl", cut), tmp_path(path)),
                           NULL) == 1,
           "run stopped after 5 updates (last checkpoint: step 3; evaluation at 4 logged)");
    struct rl_train_opts resume = {.resume = 1};
    st                          = run(cut, sets, &resume, &r);
    tap_ok(st == RL_OK && r.steps_done == 8, "resumed to 8 updates");
    if (st != RL_OK) tap_diag("%s", rl_last_error());
    char pa[600], pb[600];
    snprintf(
        pa, sizeof pa, "%s",
        tmp_path((snprintf(path, sizeof path, "%s/checkpoints/step-8.safetensors", full), path)));
    snprintf(
        pb, sizeof pb, "%s",
        tmp_path((snprintf(path, sizeof path, "%s/checkpoints/step-8.safetensors", cut), path)));
    tap_ok(same_tensors(pa, pb),
           "resumed weights and AdamW moments are bit-identical to the uninterrupted run");
    /* metrics: records 4 and 5 of the cut run were dropped and redone; losses identical */
    snprintf(pa, sizeof pa, "%s",
             tmp_path((snprintf(path, sizeof path, "%s/metrics.jsonl", full), path)));
    snprintf(pb, sizeof pb, "%s",
             tmp_path((snprintf(path, sizeof path, "%s/metrics.jsonl", cut), path)));
    FILE *fa = fopen(pa, "r"), *fb = fopen(pb, "r");
    char  la[1024], lb[1024];
    int   n = 0, same = fa && fb;
    while (same && fgets(la, sizeof la, fa)) {
        same     = fgets(lb, sizeof lb, fb) != NULL;
        char *ta = strstr(la, "\"tokens_per_s\""),
             *tb = same ? strstr(lb, "\"tokens_per_s\"") : NULL;
        same     = same && ta && tb && ta - la == tb - lb && !strncmp(la, lb, (size_t)(ta - la));
        n++;
    }
    same = same && n == 8 && !fgets(lb, sizeof lb, fb);
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    tap_ok(same, "metrics.jsonl after resume: 8 records, step/loss/acc/lr/grad_norm identical");
    /* a changed configuration is refused, naming the key */
    const char *changed[] = {"task.name=tokens",   p,
                             "train.steps=8",      "train.checkpoint_every=3",
                             "train.warmup=2",     "train.min_lr_ratio=0.1",
                             "train.accumulate=2", "eval.every=4",
                             "train.lr=0.02",      NULL};
    st                    = run(cut, changed, &resume, &r);
    tap_ok(st != RL_OK && strstr(rl_last_error(), "configuration differs") &&
               strstr(rl_last_error(), "train.lr: '0.02' vs '0.01'") == NULL &&
               strstr(rl_last_error(), "train.lr: '0.01' vs '0.02'"),
           "resume with another lr is refused: %s", st ? rl_last_error() : "accepted");
    /* resuming a finished run re-evaluates only */
    st = run(cut, sets, &resume, &r);
    tap_ok(st == RL_OK && r.steps_done == 8 && r.n_eval == 1 && count_lines(pb, NULL) == 8 &&
               count_lines((snprintf(path, sizeof path, "%s/eval.jsonl", cut), tmp_path(path)),
                           NULL) == 2 &&
               count_lines((snprintf(path, sizeof path, "%s/eval.jsonl", cut), tmp_path(path)),
                           "{\"step\": 4, ") == 1,
           "resuming a finished run trains nothing and re-evaluates (eval.jsonl: steps 4 and 8, no "
           "twins)");
    /* a damaged latest checkpoint: passed over for the newest intact one (step 6), and the
     * run ends as the uninterrupted one */
    size_t len;
    snprintf(
        pa, sizeof pa, "%s",
        tmp_path((snprintf(path, sizeof path, "%s/checkpoints/step-8.safetensors", cut), path)));
    unsigned char *ck = slurp(pa, &len);
    FILE          *f  = ck ? fopen(pa, "wb") : NULL;
    if (f) fwrite(ck, 1, len / 2, f), fclose(f);
    st = run(cut, sets, &resume, &r);
    tap_ok(st == RL_OK && r.steps_done == 8 && r.updates == 2,
           "a truncated latest checkpoint is passed over: 2 updates from step 6 (%s)",
           st ? rl_last_error() : "ok");
    snprintf(
        pb, sizeof pb, "%s",
        tmp_path((snprintf(path, sizeof path, "%s/checkpoints/step-8.safetensors", full), path)));
    tap_ok(same_tensors(pa, pb), "... and its step-8 checkpoint is rewritten bit-identical");
    free(ck);
}

int main(void)
{
    rl_init(1);
    tap_scratch(tmpdir, sizeof tmpdir, "t_train");
    test_tokens_task();
    const char *data = write_counting("count.npy", 64, 16);
    test_learns(data);
    test_accumulate(data);
    test_learned_na();
    test_resume(data, 1);
    test_resume(data, 2);
    tap_scratch_remove(tmpdir);
    return tap_done();
}
