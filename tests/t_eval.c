/* t_eval.c -- evaluation beyond the training length: sliding windows (eval.stride) against
 * the non-overlapping evaluation and against an independent window-by-window loop; RoPE
 * extension at evaluation time (eval.rope_extend) against a model built with the same
 * scaling; the factor auto = max(1, M/N); the checks that refuse impossible combinations;
 * [train] init_from (the new run's step-0 weights are the checkpoint's; a shape mismatch
 * names the tensor); the 95 % intervals against their formulas applied to the per-row
 * losses, eval.batches = all reading every validation window once, and the accuracy by
 * order of the scored targets in a row, recounted. */
#include "config.h"
#include "config/cfg.h"
#include "experiment/train_impl.h"
#include "model/checkpoint.h"
#include "core/stats.h"
#include "core/threads.h"
#include "core/init.h"
#include "core/util.h"
#include "tap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char tmpdir[256], text[512];

static void write_text(void)
{
    snprintf(text, sizeof text, "%s/text.txt", tmpdir);
    FILE *f = fopen(text, "w");
    if (!f) tap_bail("cannot write %s", text);
    for (int i = 0; i < 300; i++)
        fprintf(f, "line %d of a small text: the quick brown fox jumps over the lazy dog\n", i);
    fclose(f);
}

/* A charlm configuration (N = 16, B = 4) plus sets, resolved, and its task. */
static rl_status make_cfg(struct rl_cfg *c, rl_task **task, const char *const *sets)
{
    char        buf[700];
    const char *base[] = {"model.d_model=16",
                          "model.heads=2",
                          "model.layers=1",
                          "task.name=charlm",
                          "task.length=16",
                          "train.batch=4",
                          "train.steps=4",
                          "eval.batches=2",
                          "eval.lengths=16, 32, 64",
                          "train.log_every=1",
                          NULL};
    rl_cfg_defaults(c);
    snprintf(buf, sizeof buf, "experiment.out=%s", tmpdir);
    RL_TRY(rl_cfg_set(c, buf));
    RL_TRY(rl_cfg_set(c, "experiment.name=t"));
    snprintf(buf, sizeof buf, "task.path=%s", text);
    RL_TRY(rl_cfg_set(c, buf));
    for (int i = 0; base[i]; i++)
        RL_TRY(rl_cfg_set(c, base[i]));
    for (int i = 0; sets && sets[i]; i++)
        RL_TRY(rl_cfg_set(c, sets[i]));
    return rl_train_prepare(c, task);
}

/* A trainer whose weights are large enough for positions to matter. */
static void trainer(struct rl_trainer *t, struct rl_cfg *c, rl_task **task, const char *const *sets)
{
    if (make_cfg(c, task, sets) != RL_OK) tap_bail("config: %s", rl_last_error());
    if (rl_trainer_init(t, c, *task) != RL_OK) tap_bail("trainer: %s", rl_last_error());
    float *p = rl_model_params(t->m);
    tap_seed(11);
    for (size_t i = 0; i < rl_model_num_params(t->m); i++)
        p[i] += (float)(0.3 * tap_normal());
}

static int same_row(const struct rl_eval_row *a, const struct rl_eval_row *b)
{
    int same = a->length == b->length && a->loss == b->loss && a->acc == b->acc &&
               a->exact == b->exact && a->targets == b->targets && a->pos_bins == b->pos_bins;
    for (int i = 0; same && i < a->pos_bins; i++)
        same =
            a->pos_targets[i] == b->pos_targets[i] &&
            (a->pos_loss[i] == b->pos_loss[i] || (isnan(a->pos_loss[i]) && isnan(b->pos_loss[i])));
    return same;
}

/* The sliding evaluation re-done one window per forward, with every position masked in
 * and the scored positions picked from the per-row losses. */
static void independent_sliding(struct rl_trainer *t, int M, int S, double *loss, long *targets,
                                long *correct)
{
    const struct rl_cfg *c    = t->c;
    const int            rows = (int)fmax(1, lround((double)c->train.batch * c->task.length / M));
    const int            T    = rows * M * c->eval.batches;
    struct rl_batch      b, w;
    int32_t             *in = malloc((size_t)T * 4), *tg = malloc((size_t)T * 4);
    if (rl_batch_alloc(&b, rows, M) || rl_batch_alloc(&w, 1, M)) tap_bail("batch");
    for (int i = 0; i < c->eval.batches; i++) {
        if (rl_task_batch(t->task, &b, 1, i)) tap_bail("task batch");
        memcpy(in + i * rows * M, b.inputs, (size_t)rows * M * 4);
        memcpy(tg + i * rows * M, b.targets, (size_t)rows * M * 4);
    }
    *loss = 0, *targets = 0, *correct = 0;
    for (int lo = 0, end = M;; end += S) { /* scores [lo, end) in the window ending at end */
        if (end > T) end = T;
        memcpy(w.inputs, in + end - M, (size_t)M * 4);
        memcpy(w.targets, tg + end - M, (size_t)M * 4);
        memset(w.mask, 1, (size_t)M);
        w.label[0] = -1;
        double ls;
        long   nt, nc;
        if (rl_model_forward(t->m, &w, &ls, &nt, &nc)) tap_bail("forward: %s", rl_last_error());
        for (int p = lo - (end - M); p < M; p++) {
            *loss += rl_model_row_loss(t->m)[p];
            *correct += rl_model_row_correct(t->m)[p];
            ++*targets;
        }
        lo = end;
        if (end == T) break;
    }
    rl_batch_free(&b), rl_batch_free(&w);
    free(in), free(tg);
}

static void test_stride(void)
{
    struct rl_cfg     *c = malloc(sizeof *c);
    rl_task           *task;
    struct rl_trainer  t;
    struct rl_eval_row a[RL_EVAL_MAX_ROWS], b[RL_EVAL_MAX_ROWS];
    int                na = 0, nb = 0;
    trainer(&t, c, &task, NULL);
    if (rl_trainer_evaluate(&t, a, &na) != RL_OK) tap_bail("%s", rl_last_error());
    /* stride = M at one length (the configuration refuses it; the code must not care) */
    struct rl_cfg *cm  = c;
    cm->eval.n_lengths = 1, cm->eval.lengths[0] = 32, cm->eval.stride = 32;
    rl_status st = rl_trainer_evaluate(&t, b, &nb);
    tap_ok(st == RL_OK && nb == 1 && same_row(&a[1], &b[0]),
           "stride = M equals the non-overlapping evaluation (loss %.6f vs %.6f)", a[1].loss,
           b[0].loss);
    int ok = 1;
    for (int M = 16; M <= 64; M *= 2) {
        for (int S = 1; S < M; S = S * 3 + 2) {
            cm->eval.lengths[0] = M, cm->eval.stride = S;
            double ls;
            long   nt, nc;
            if (rl_trainer_evaluate(&t, b, &nb) != RL_OK) tap_bail("%s", rl_last_error());
            independent_sliding(&t, M, S, &ls, &nt, &nc);
            const struct rl_eval_row *ref  = &a[M == 16 ? 0 : M == 32 ? 1 : 2];
            int                       good = b[0].targets == nt && b[0].targets == ref->targets &&
                       fabs(b[0].loss - ls / nt) <= 1e-6 * fabs(ls / nt) &&
                       b[0].acc == (double)nc / nt && b[0].stride == S;
            if (!good)
                tap_diag("M %d S %d: loss %.9f vs %.9f, targets %ld vs %ld (non-overlapping %ld)",
                         M, S, b[0].loss, ls / nt, b[0].targets, nt, ref->targets);
            ok &= good;
        }
    }
    tap_ok(ok, "sliding windows (M = 16, 32, 64; S = 1, 5, 17, 53 < M) equal a window-by-window "
               "loop, and score every target of the non-overlapping evaluation once");
    cm->eval.lengths[0] = 64, cm->eval.stride = 8;
    st = rl_trainer_evaluate(&t, b, &nb);
    tap_ok(st == RL_OK && b[0].loss != a[2].loss && b[0].targets == a[2].targets,
           "at 64 = 4N, stride 8 (56+ tokens of context) scores the same targets with another "
           "loss: %.4f vs %.4f non-overlapping",
           b[0].loss, a[2].loss);
    rl_trainer_free(&t);
    rl_task_free(task);
    free(c);
}

/* The intervals of one length recomputed here from the per-row losses of the validation
 * batches, forward by forward: the mean over tokens and its clustered 95 % half-width
 * (two passes in float64, one cluster per row), and the Wilson interval of exact match. */
static void independent_interval(struct rl_trainer *t, int M, double *loss_h, double acc_h[2],
                                 double *ex_lo, double *ex_hi)
{
    const struct rl_cfg *c    = t->c;
    const int            rows = (int)fmax(1, lround((double)c->train.batch * c->task.length / M));
    const int            R    = rows * c->eval.batches;
    double              *y = malloc((size_t)R * sizeof *y), *h = malloc((size_t)R * sizeof *h);
    double               N = 0, Y = 0, H = 0, ssy = 0, ssh = 0, exact = 0;
    struct rl_batch      b;
    if (!y || !h || rl_batch_alloc(&b, rows, M)) tap_bail("batch");
    for (int i = 0; i < c->eval.batches; i++) {
        double ls;
        long   nt, nc;
        if (rl_task_batch(t->task, &b, 1, i) || rl_model_forward(t->m, &b, &ls, &nt, &nc))
            tap_bail("forward: %s", rl_last_error());
        for (int r = 0; r < rows; r++) {
            int all         = 1;
            y[i * rows + r] = h[i * rows + r] = 0;
            for (int p = 0; p < M; p++) {
                y[i * rows + r] += rl_model_row_loss(t->m)[r * M + p];
                h[i * rows + r] += rl_model_row_correct(t->m)[r * M + p];
                all &= rl_model_row_correct(t->m)[r * M + p];
            }
            exact += all;
        }
    }
    for (int r = 0; r < R; r++)
        N += M, Y += y[r], H += h[r];
    for (int r = 0; r < R; r++)
        ssy += (y[r] - Y / N * M) * (y[r] - Y / N * M),
            ssh += (h[r] - H / N * M) * (h[r] - H / N * M);
    *loss_h = rl_t975(R - 1) * sqrt((double)R / (R - 1) * ssy) / N;
    /* accuracy: Wilson at the effective size p (1 - p) / clustered variance */
    double p = H / N, v = (double)R / (R - 1) * ssh / (N * N), lo, hi;
    double neff = p > 0 && p < 1 && v > 0 ? fmin(N, fmax(1, p * (1 - p) / v)) : R;
    rl_wilson95(p * neff, neff, &lo, &hi);
    acc_h[0] = lo, acc_h[1] = hi;
    rl_wilson95(exact, R, ex_lo, ex_hi);
    rl_batch_free(&b);
    free(y), free(h);
}

static void test_intervals(void)
{
    struct rl_cfg     *c = malloc(sizeof *c);
    rl_task           *task;
    struct rl_trainer  t;
    struct rl_eval_row a[RL_EVAL_MAX_ROWS];
    int                na = 0, ok = 1;
    trainer(&t, c, &task, NULL);
    if (rl_trainer_evaluate(&t, a, &na) != RL_OK) tap_bail("%s", rl_last_error());
    for (int i = 0; i < na; i++) {
        double lh, ah[2], el, eh;
        independent_interval(&t, a[i].length, &lh, ah, &el, &eh);
        int good = fabs(a[i].loss_hi - a[i].loss - lh) <= 1e-9 * lh &&
                   fabs(a[i].loss - a[i].loss_lo - lh) <= 1e-9 * lh &&
                   fabs(a[i].ppl_hi - exp(a[i].loss_hi)) <= 1e-12 * a[i].ppl_hi &&
                   fabs(a[i].acc_lo - ah[0]) <= 1e-9 && fabs(a[i].acc_hi - ah[1]) <= 1e-9 &&
                   fabs(a[i].exact_lo - el) <= 1e-12 && fabs(a[i].exact_hi - eh) <= 1e-12;
        if (!good)
            tap_diag("length %d: loss +- %.9g vs %.9g, acc [%.9g, %.9g] vs [%.9g, %.9g]",
                     a[i].length, a[i].loss_hi - a[i].loss, lh, a[i].acc_lo, a[i].acc_hi, ah[0],
                     ah[1]);
        ok &= good;
    }
    tap_ok(ok && na == 3, "95 %% intervals of loss, ppl, acc (rows as clusters; acc Wilson at the "
                          "effective size) and exact match (Wilson) equal their formulas on the "
                          "per-row losses, at 16, 32, 64");
    /* batches = all: each validation row once, the last batch cut to what is left */
    const double w64 = a[2].loss_hi - a[2].loss_lo;
    c->eval.batches  = 0;
    if (rl_trainer_evaluate(&t, a, &na) != RL_OK) tap_bail("%s", rl_last_error());
    int64_t W16 = rl_task_valid_rows(task, 16), W64 = rl_task_valid_rows(task, 64);
    tap_ok(W16 > 100 && a[0].sequences == W16 && a[0].targets == W16 * 16 &&
               a[2].sequences == W64 && a[2].targets == W64 * 64 &&
               a[2].loss_hi - a[2].loss_lo < 0.5 * w64,
           "batches = all: every validation window once (%lld at 16, %lld at 64), the interval at "
           "64 narrower than with 2 batches (%.4f vs %.4f)",
           (long long)W16, (long long)W64, a[2].loss_hi - a[2].loss_lo, w64);
    c->eval.n_lengths = 1, c->eval.lengths[0] = 64, c->eval.stride = 16;
    if (rl_trainer_evaluate(&t, a, &na) != RL_OK) tap_bail("%s", rl_last_error());
    tap_ok(a[0].targets == W64 * 64,
           "... and with sliding windows every target of the "
           "stream of those windows once (%ld)",
           a[0].targets);
    rl_trainer_free(&t);
    rl_task_free(task);
    free(c);
}

static void test_extend(void)
{
    struct rl_cfg     *c = malloc(sizeof *c), *c2 = malloc(sizeof *c2);
    rl_task           *task, *task2;
    struct rl_trainer  t, u;
    struct rl_eval_row a[RL_EVAL_MAX_ROWS], b[RL_EVAL_MAX_ROWS], again[RL_EVAL_MAX_ROWS];
    int                na, nb, nagain;
    const char *const  ext[] = {"eval.rope_extend=none, pi, ntk", NULL};
    trainer(&t, c, &task, ext);
    if (rl_trainer_evaluate(&t, a, &na) != RL_OK) tap_bail("%s", rl_last_error());
    int order = na == 9;
    for (int i = 0; order && i < 9; i++)
        order = a[i].method == (enum rl_cfg_extend)(i / 3) && a[i].length == 16 << (i % 3) &&
                a[i].factor == (i < 3 ? 1 : (double)(1 << (i % 3)));
    tap_ok(order, "3 methods x 3 lengths, method-major; factor auto = max(1, M/16): 1, 2, 4");
    tap_ok(same_row(&a[0], &a[3]), "pi at M = N (factor 1) equals none");
    tap_ok(!same_row(&a[2], &a[5]) && !same_row(&a[2], &a[8]) && !same_row(&a[5], &a[8]),
           "at 4N none, pi and ntk differ (%.4f, %.4f, %.4f)", a[2].loss, a[5].loss, a[8].loss);
    tap_ok(rl_model_config_get(t.m)->attn.rope.scale == 1 &&
               rl_model_config_get(t.m)->attn.rope.ntk == 1 &&
               rl_trainer_evaluate(&t, again, &nagain) == RL_OK && nagain == 9 &&
               same_row(&a[8], &again[8]) && same_row(&a[2], &again[2]),
           "after the evaluation the model has its trained RoPE back; a second one is identical");
    /* a model built with the scaling, evaluated plainly, with the same weights */
    const char *const kinds[2][3] = {{"model.rope_scale=4", "eval.lengths=64", NULL},
                                     {"model.rope_ntk=4", "eval.lengths=64", NULL}};
    for (int k = 0; k < 2; k++) {
        trainer(&u, c2, &task2, kinds[k]);
        memcpy(rl_model_params(u.m), rl_model_params(t.m), rl_model_num_params(t.m) * 4);
        rl_status st = rl_trainer_evaluate(&u, b, &nb);
        tap_ok(st == RL_OK && nb == 1 && same_row(&b[0], &a[5 + 3 * k]),
               "rope_extend = %s at 4N equals a model built with %s (loss %.6f vs %.6f)",
               k ? "ntk" : "pi", kinds[k][0], a[5 + 3 * k].loss, b[0].loss);
        rl_trainer_free(&u);
        rl_task_free(task2);
    }
    /* YaRN: the same, once the kernels have it (until then the configuration refuses it) */
    const char *const yarn[] = {"eval.rope_extend=yarn", "eval.lengths=64", NULL};
    rl_status         sy     = make_cfg(c2, &task2, yarn);
    rl_task_free(task2);
    if (sy != RL_OK && strstr(rl_last_error(), "not implemented")) {
        tap_ok(strstr(rl_last_error(), "[eval] rope_extend: yarn:") != NULL,
               "rope_extend = yarn is refused before training while the kernels lack YaRN: %s",
               rl_last_error());
    } else {
        const char *const built[] = {"model.rope_yarn=4", "model.rope_yarn_orig=16",
                                     "eval.lengths=64", NULL};
        struct rl_trainer y;
        trainer(&y, c2, &task2, yarn);
        memcpy(rl_model_params(y.m), rl_model_params(t.m), rl_model_num_params(t.m) * 4);
        struct rl_eval_row yr;
        int                ny;
        rl_status          s1 = rl_trainer_evaluate(&y, &yr, &ny);
        rl_trainer_free(&y);
        rl_task_free(task2);
        trainer(&u, c2, &task2, built);
        memcpy(rl_model_params(u.m), rl_model_params(t.m), rl_model_num_params(t.m) * 4);
        rl_status s2 = rl_trainer_evaluate(&u, b, &nb);
        tap_ok(s1 == RL_OK && s2 == RL_OK && ny == 1 && yr.factor == 4 && same_row(&yr, &b[0]) &&
                   !same_row(&yr, &a[2]),
               "rope_extend = yarn at 4N equals a model built with rope_yarn = 4, "
               "rope_yarn_orig = 16 (loss %.6f vs %.6f)",
               yr.loss, b[0].loss);
        rl_trainer_free(&u);
        rl_task_free(task2);
    }
    const char *const fixed[] = {"eval.rope_extend=pi", "eval.rope_factor=2", NULL};
    trainer(&u, c2, &task2, fixed);
    memcpy(rl_model_params(u.m), rl_model_params(t.m), rl_model_num_params(t.m) * 4);
    tap_ok(rl_trainer_evaluate(&u, b, &nb) == RL_OK && nb == 3 && b[0].factor == 2 &&
               b[2].factor == 2 && same_row(&b[1], &a[4]) && !same_row(&b[2], &a[5]),
           "rope_factor = 2: the same factor at every length (at 2N it equals auto)");
    rl_trainer_free(&u);
    rl_task_free(task2);
    const char *const alibi[] = {"model.pe=alibi", "eval.rope_extend=none, pi, ntk", NULL};
    trainer(&u, c2, &task2, alibi);
    tap_ok(rl_trainer_evaluate(&u, b, &nb) == RL_OK && nb == 3 &&
               b[0].method == RL_CFG_EXTEND_NONE && b[2].method == RL_CFG_EXTEND_NONE,
           "a non-RoPE point is evaluated once per length, reported as none");
    rl_trainer_free(&u);
    rl_task_free(task2);
    rl_trainer_free(&t);
    rl_task_free(task);
    free(c), free(c2);
}

static void refused(const char *const *sets, const char *want, const char *what)
{
    struct rl_cfg *c    = malloc(sizeof *c);
    rl_task       *task = NULL;
    rl_status      st   = make_cfg(c, &task, sets);
    tap_ok(st != RL_OK && strstr(rl_last_error(), want), "%s: '%s'", what,
           st != RL_OK ? rl_last_error() : "(accepted)");
    rl_task_free(task);
    free(c);
}

static void test_checks(void)
{
    const char *const a[] = {"model.rope_scale=2", "eval.rope_extend=none, pi", NULL};
    refused(a,
            "[eval] rope_extend: the model is trained with rope_scale = 2, rope_ntk = 1, rope_yarn "
            "= 1:",
            "a point trained with rope_scale refuses rope_extend");
    const char *const b[] = {"eval.stride=16", NULL};
    refused(b, "[eval] stride: 16 must be smaller than every evaluation length (16)",
            "stride >= an evaluation length");
    const char *const d[] = {"eval.stride=-1", NULL};
    refused(d, "[eval] stride: expected a non-negative integer", "a negative stride");
    const char *const e[] = {"task.name=copy", "task.path=", "eval.lengths=16", "eval.stride=4",
                             NULL};
    refused(e, "[eval] stride: sliding windows apply to language-model tasks", "stride on copy");
    const char *const f[] = {"eval.rope_factor=0.5", NULL};
    refused(f, "expected auto or a number >= 1", "rope_factor < 1");
    const char *const g[] = {"eval.rope_extend=pi, pi", NULL};
    refused(g, "'pi' listed twice", "a method listed twice");
    const char *const h[] = {"task.name=copy", "task.path=", "eval.lengths=16", "eval.batches=all",
                             NULL};
    refused(h,
            "--set eval.batches=all: [eval] batches: all: the copy task generates its "
            "validation data without end",
            "batches = all on a generator task");
    const char *const k[] = {"eval.batches=0", NULL};
    refused(k, "expected a positive integer or all, got '0'", "batches = 0");
    struct rl_cfg *c = malloc(sizeof *c);
    char           buf[4096];
    rl_cfg_defaults(c);
    tap_ok(c && rl_cfg_set(c, "eval.batches=all") == RL_OK && c->eval.batches == 0 &&
               rl_cfg_render(c, buf, sizeof buf, 0) > 0 && strstr(buf, "\nbatches = all\n"),
           "batches = all is read and written back as all");
    free(c);
}

static void load_params(const char *path, const struct rl_cfg *c, rl_task *task, float **p,
                        size_t *n)
{
    struct rl_model_config mc;
    rl_model              *m;
    rl_cfg_model_config(c, rl_task_vocab(task), rl_task_causal(task), 0, &mc);
    if (rl_model_create(&m, &mc) || rl_checkpoint_load(path, m, NULL, NULL, NULL, NULL, NULL))
        tap_bail("%s: %s", path, rl_last_error());
    *n = rl_model_num_params(m);
    *p = malloc(*n * 4);
    memcpy(*p, rl_model_params(m), *n * 4);
    rl_model_free(m);
}

static void test_init_from(void)
{
    struct rl_cfg         *c = malloc(sizeof *c);
    rl_task               *task;
    struct rl_train_result r;
    char                   dir[600], ck[700], set[800], ft[600];
    const char *const      src[] = {"train.checkpoint_every=2", NULL};
    snprintf(dir, sizeof dir, "%s/src", tmpdir);
    if (make_cfg(c, &task, src) || rl_train_run(c, task, dir, NULL, &r))
        tap_bail("%s", rl_last_error());
    rl_task_free(task);
    snprintf(ck, sizeof ck, "%s/checkpoints/step-2.safetensors", dir);
    snprintf(set, sizeof set, "train.init_from=%s", ck);
    const char *const fine[] = {set, "train.checkpoint_initial=true", "task.length=32",
                                "eval.lengths=32", NULL};
    snprintf(ft, sizeof ft, "%s/ft", tmpdir);
    rl_status st = make_cfg(c, &task, fine);
    if (st == RL_OK) st = rl_train_check_init_from(c, task);
    if (st == RL_OK) st = rl_train_run(c, task, ft, NULL, &r);
    tap_ok(st == RL_OK && r.steps_done == 4, "a run with init_from trains its own 4 updates (%s)",
           st ? rl_last_error() : "ok");
    float *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    char   f0[700];
    snprintf(f0, sizeof f0, "%s/checkpoints/step-0.safetensors", ft);
    load_params(ck, c, task, &a, &na);
    load_params(f0, c, task, &b, &nb);
    tap_ok(na == nb && !memcmp(a, b, na * 4),
           "its step-0 weights are those of the step-2 checkpoint (%zu floats)", na);
    int64_t step = -1;
    char    f4[700];
    snprintf(f4, sizeof f4, "%s/checkpoints/step-4.safetensors", ft);
    tap_ok(rl_checkpoint_read_meta(f4, &step, NULL, NULL) == RL_OK && step == 4,
           "updates count from 0: its last checkpoint is step-4");
    free(a), free(b);
    rl_task_free(task);
    const char *const bad[] = {set, "model.d_model=32", NULL};
    st                      = make_cfg(c, &task, bad);
    if (st == RL_OK) st = rl_train_check_init_from(c, task);
    tap_ok(st != RL_OK && strstr(rl_last_error(), "[train] init_from") &&
               strstr(rl_last_error(), "tensor 'embed.weight' has shape [256, 16], the model "
                                       "expects [256, 32]"),
           "a shape mismatch names the tensor: %s", st ? rl_last_error() : "(accepted)");
    rl_task_free(task);
    snprintf(set, sizeof set, "train.init_from=%s/none.safetensors", tmpdir);
    const char *const gone[] = {set, NULL};
    st                       = make_cfg(c, &task, gone);
    if (st == RL_OK) st = rl_train_check_init_from(c, task);
    tap_ok(st != RL_OK && strstr(rl_last_error(), "none.safetensors"),
           "a missing init_from file is an error naming it");
    rl_task_free(task);
    free(c);
}

/* The accuracy by order of the scored targets, recounted forward by forward: row r of a
 * batch, its k-th masked target, right or not (the last order pools the rest). */
static int orders_match(struct rl_trainer *t, const struct rl_eval_row *row)
{
    const struct rl_cfg *c    = t->c;
    const int            M    = row->length;
    const int            rows = (int)fmax(1, lround((double)c->train.batch * c->task.length / M));
    long                 nt[RL_EVAL_ORDERS] = {0}, nc[RL_EVAL_ORDERS] = {0}, correct = 0;
    int                  K = 0, same = 1;
    struct rl_batch      b;
    if (rl_batch_alloc(&b, rows, M)) tap_bail("batch");
    for (int i = 0; i < c->eval.batches; i++) {
        double ls;
        long   n, ok;
        if (rl_task_batch(t->task, &b, 1, i) || rl_model_forward(t->m, &b, &ls, &n, &ok))
            tap_bail("%s", rl_last_error());
        for (int r = 0; r < rows; r++)
            for (int p = 0, k = 0; p < M; p++) {
                if (!b.mask[r * M + p]) continue;
                int o = k < RL_EVAL_ORDERS ? k : RL_EVAL_ORDERS - 1;
                nt[o]++, nc[o] += rl_model_row_correct(t->m)[r * M + p];
                K = o + 1 > K ? o + 1 : K, k++;
            }
        correct += ok;
    }
    rl_batch_free(&b);
    for (int k = 0; k < RL_EVAL_ORDERS; k++)
        same &= row->order_targets[k] == nt[k] && row->order_correct[k] == nc[k];
    long sum = 0;
    for (int k = 0; k < row->n_orders; k++)
        sum += row->order_correct[k];
    return same && row->n_orders == K && sum == correct &&
           fabs((double)sum / (double)row->targets - row->acc) < 1e-12;
}

static void test_orders(void)
{
    const char        *mqar[] = {"task.name=mqar", "task.vocab=64", "task.kv_pairs=3", NULL};
    const char        *copy[] = {"task.name=copy", "eval.lengths=16, 160", NULL};
    const char *const *sets[] = {mqar, copy, NULL};
    const int          want[] = {3, 3, 3, 8, RL_EVAL_ORDERS};
    int                ok = 1, w = 0;
    for (int s = 0; s <= 2; s++) {
        struct rl_cfg     *c = malloc(sizeof *c);
        rl_task           *task;
        struct rl_trainer  t;
        struct rl_eval_row rows[RL_EVAL_MAX_ROWS];
        int                n = 0;
        trainer(&t, c, &task, sets[s]);
        if (rl_trainer_evaluate(&t, rows, &n) != RL_OK) tap_bail("%s", rl_last_error());
        for (int i = 0; i < n; i++) {
            if (s == 2) { /* charlm: a loss curve over positions, no orders */
                ok &= rows[i].n_orders == 0 && rows[i].pos_bins > 0;
                continue;
            }
            int good = orders_match(&t, &rows[i]) && rows[i].n_orders == want[w++];
            if (!good)
                tap_diag("%s at %d: %d orders", c->task.name == RL_TASK_MQAR ? "mqar" : "copy",
                         rows[i].length, rows[i].n_orders);
            ok &= good;
        }
        rl_trainer_free(&t);
        rl_task_free(task);
        free(c);
    }
    tap_ok(ok && w == 5,
           "accuracy by order of the scored target: mqar (3 queries at 16, 32, 64), copy (8 at "
           "16; 80 at 160, orders from the 64th pooled) recounted forward by forward; charlm has "
           "none");
}

int main(void)
{
    rl_init(1);
    tap_scratch(tmpdir, sizeof tmpdir, "t_eval");
    write_text();
    test_stride();
    test_intervals();
    test_extend();
    test_checks();
    test_init_from();
    test_orders();
    tap_scratch_remove(tmpdir);
    return tap_done();
}
