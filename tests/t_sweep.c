/* t_sweep.c -- sweep expansion (docs/config.md): the cross product and its order, point directory
 * names (short and full key names, unsafe characters), point configurations, --set on a
 * sweep, every error of an impossible combination naming file:line:key and the point
 * before anything runs, and the RoPE long-term-decay bound of RoFormer 3.4.3 against a
 * direct float64 sum. */
#include "config.h"
#include "config/cfg.h"
#include "experiment/experiment.h"
#include "report/report.h"
#include "report/report_plot.h"
#include "config/sweep.h"
#include "tap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct rl_cfg *load(const char *text)
{
    static struct rl_cfg c;
    rl_cfg_defaults(&c);
    rl_status st = rl_cfg_load_string(&c, text, "s.ini");
    if (st != RL_OK) tap_bail("s.ini: %s", rl_last_error());
    return &c;
}

static void test_cross_product(void)
{
    struct rl_sweep *s = malloc(sizeof *s);
    struct rl_cfg   *c = load("[model]\nd_model = 32\n[sweep]\n"
                                "model.pe = none, sinusoidal, rope\n"
                                "model.attention = softmax,linear\n"
                                "train.seed = 1, 2\n");
    tap_ok(rl_sweep_init(s, c) == RL_OK && s->n_points == 12 && s->n_keys == 3,
           "3 x 2 x 2 values: 12 points");
    char name[RL_SWEEP_NAME];
    rl_sweep_point_name(s, 0, name, sizeof name);
    tap_ok(!strcmp(name, "pe=none,attention=softmax,seed=1"), "point 0: %s", name);
    rl_sweep_point_name(s, 1, name, sizeof name);
    tap_ok(!strcmp(name, "pe=none,attention=softmax,seed=2"), "the last key varies fastest: %s",
           name);
    rl_sweep_point_name(s, 11, name, sizeof name);
    tap_ok(!strcmp(name, "pe=rope,attention=linear,seed=2"), "point 11: %s", name);
    /* every combination exactly once */
    int seen[3][2][2] = {{{0}}}, all = 1;
    for (long p = 0; p < s->n_points; p++)
        seen[rl_sweep_value_index(s, p, 0)][rl_sweep_value_index(s, p, 1)]
            [rl_sweep_value_index(s, p, 2)]++;
    for (int i = 0; i < 12; i++)
        all &= ((int *)seen)[i] == 1;
    tap_ok(all, "every combination appears once");
    tap_ok(rl_sweep_find(s, "train", "seed") == 2 && rl_sweep_find(s, "model", "heads") == -1,
           "rl_sweep_find");

    struct rl_cfg *pc = malloc(sizeof *pc);
    rl_status      st = rl_sweep_point_cfg(s, c, 9, pc); /* rope, softmax, seed 2 */
    tap_ok(st == RL_OK && pc->model.pe == RL_CFG_PE_ROPE &&
               pc->model.attention == RL_ATTN_SOFTMAX && pc->train.seed == 2 &&
               pc->model.d_model == 32 && pc->sweep.n_keys == 0,
           "point 9's configuration: rope, softmax, seed 2, base d_model, no [sweep]");
    int i = -1;
    for (int k = 0; k < rl_cfg_num_keys(); k++) {
        const char *sec, *key, *doc;
        rl_cfg_key_info(k, &sec, &key, &doc);
        if (!strcmp(sec, "model") && !strcmp(key, "pe")) i = k;
    }
    tap_ok(i >= 0 && !strcmp(pc->where[i], "s.ini:4"),
           "a swept value comes from its [sweep] line (%s)", i >= 0 ? pc->where[i] : "?");
    free(pc);
    free(s);
}

static void test_names(void)
{
    struct rl_sweep *s = malloc(sizeof *s);
    struct rl_cfg *c = load("[sweep]\ntask.path = data/a b.txt, /x/y.txt\ntrain.lr = 1e-3, 3e-4\n");
    tap_ok(rl_sweep_init(s, c) == RL_OK, "a sweep over paths");
    char name[RL_SWEEP_NAME];
    rl_sweep_point_name(s, 1, name, sizeof name);
    tap_ok(!strcmp(name, "path=data_a_b.txt,lr=3e-4"), "unsafe characters become '_': %s", name);
    tap_ok(!strcmp(rl_sweep_value(s, 2, 0), "/x/y.txt"), "values keep their text");

    /* two swept keys with one short name get full names (made by hand: the key table has
     * no such pair today) */
    struct rl_cfg *d = load("");
    d->sweep.n_keys  = 2;
    snprintf(d->sweep.keys[0].key, sizeof d->sweep.keys[0].key, "model.seed");
    snprintf(d->sweep.keys[0].values, sizeof d->sweep.keys[0].values, "1");
    snprintf(d->sweep.keys[1].key, sizeof d->sweep.keys[1].key, "train.seed");
    snprintf(d->sweep.keys[1].values, sizeof d->sweep.keys[1].values, "2, 3");
    tap_ok(rl_sweep_init(s, d) == RL_OK && !strcmp(s->column[0], "model.seed") &&
               !strcmp(s->column[1], "train.seed"),
           "an ambiguous short name becomes section.key");

    c            = load("[sweep]\ntask.path = a/b, a_b\n");
    rl_status st = rl_sweep_init(s, c);
    tap_ok(st == RL_EINVAL && strstr(rl_last_error(), "s.ini:2: [sweep] task.path: values 'a/b' "
                                                      "and 'a_b' name the same point"),
           "values that name the same directory: %s", rl_last_error());
    c = load("");
    tap_ok(rl_sweep_init(s, c) == RL_OK && s->n_points == 1 && s->n_keys == 0,
           "no [sweep]: one point");
    rl_sweep_point_name(s, 0, name, sizeof name);
    tap_ok(name[0] == 0, "... whose name is empty");
    free(s);
}

static void test_set(void)
{
    struct rl_cfg *c = load("[sweep]\nmodel.pe = none, rope\nmodel.attention = softmax, linear\n");
    tap_ok(rl_cfg_set(c, "sweep.model.pe=alibi,t5,rope") == RL_OK && c->sweep.n_keys == 2 &&
               !strcmp(c->sweep.keys[1].key, "model.pe") && c->sweep.keys[1].n_values == 3,
           "--set sweep.model.pe replaces the file's list");
    tap_ok(rl_cfg_set(c, "model.attention=linear") == RL_OK && c->sweep.n_keys == 1 &&
               !strcmp(c->sweep.keys[0].key, "model.pe") && c->model.attention == RL_ATTN_LINEAR,
           "--set model.attention=linear takes attention out of the sweep");
    struct rl_cfg *d = malloc(sizeof *d);
    rl_cfg_defaults(d);
    rl_status st = rl_cfg_load_string(d, "[sweep]\nmodel.pe = none\nmodel.pe = rope\n", "s.ini");
    tap_ok(st == RL_EINVAL && strstr(rl_last_error(), "s.ini:3: [sweep] model.pe: swept twice"),
           "a key swept twice in a file is still an error");
    free(d);
}

/* rl_experiment_prepare checks every point before anything is written. */
static void expect_prepare_error(const char *text, const char *want)
{
    struct rl_cfg *c = malloc(sizeof *c);
    rl_experiment *e = NULL;
    rl_cfg_defaults(c);
    rl_status st = rl_cfg_load_string(c, text, "s.ini");
    snprintf(c->experiment.out, sizeof c->experiment.out, "/nonexistent/t_sweep");
    if (st == RL_OK) st = rl_experiment_prepare(&e, c);
    const char *m  = st == RL_OK ? "" : rl_last_error();
    int         ok = st != RL_OK && strstr(m, want) && !strchr(m, '\n') && !e;
    tap_ok(ok, "impossible combination: %s", want);
    if (!ok) tap_diag("got (%d): %s", (int)st, m);
    rl_experiment_free(e);
    free(c);
}

static void test_impossible(void)
{
    expect_prepare_error("[model]\nd_model = 12\nheads = 4\n[sweep]\nmodel.pe = none, rope\n",
                         "s.ini:3: [model] heads: head dim d_model/heads = 3 is odd; RoPE needs "
                         "it even (or an even rope_dims for partial rotary) (sweep point pe=rope)");
    expect_prepare_error("[model]\npe = rope\n[sweep]\nmodel.rope_place = feature, input\n",
                         "s.ini:4: [model] rope_place: 'input' applies to linear attention with "
                         "pe = rope only (sweep point rope_place=input)");
    expect_prepare_error("[model]\nattention = linear\n[sweep]\nmodel.pe = rope, alibi\n"
                         "model.rope_denominator = plain, rotated\n",
                         "s.ini:5: [model] rope_denominator: 'rotated' needs attention = linear, "
                         "pe = rope and rope_place = feature (sweep point pe=alibi,"
                         "rope_denominator=rotated)");
    expect_prepare_error("[train]\nbatch = 6\n[sweep]\ntrain.accumulate = 1, 2, 4\n",
                         "s.ini:4: [train] accumulate: batch = 6 is not divisible by accumulate "
                         "= 4 (sweep point accumulate=4)");
    expect_prepare_error("[model]\npe = learned\n[sweep]\nmodel.max_len = 64, 32\n",
                         "s.ini:4: [model] max_len: the learned PE needs max_len >= the task "
                         "length 64, got 32 (sweep point max_len=32)");
    expect_prepare_error("[task]\nname = charlm\npath = /nonexistent/t_sweep.txt\n[sweep]\n"
                         "model.pe = none\n",
                         "/nonexistent/t_sweep.txt: cannot open");
    /* a base that is impossible only for points that do not exist is fine */
    struct rl_cfg *c = load("[model]\nd_model = 12\nheads = 4\n[train]\nsteps = 1\n"
                            "[sweep]\nmodel.pe = none, alibi\n");
    rl_experiment *e = NULL;
    tap_ok(rl_experiment_prepare(&e, c) == RL_OK,
           "pe = rope (the default) with an odd head dim is fine when the sweep never uses it");
    rl_experiment_free(e);
}

/* RoFormer 3.4.3, summed differently: |S_j|^2 = (sum cos)^2 + (sum sin)^2. */
static double decay_ref(int d, double base, double r)
{
    double mean = 0;
    for (int j = 1; j <= d / 2; j++) {
        double c = 0, s = 0;
        for (int i = 0; i < j; i++) {
            double th = exp(-2.0 * i / d * log(base));
            c += cos(r * th), s += sin(r * th);
        }
        mean += sqrt(c * c + s * s);
    }
    return mean / (d / 2);
}

static void test_rope_decay(void)
{
    tap_ok(fabs(rl_rope_decay_bound(128, 10000, 0) - 32.5) < 1e-12,
           "bound at distance 0 is d/4 + 1/2 = 32.5 (d = 128)");
    double worst = 0;
    for (int r = 1; r <= 1000; r += 37) {
        double e = fabs(rl_rope_decay_bound(128, 10000, r) - decay_ref(128, 10000, r));
        if (e > worst) worst = e;
    }
    tap_ok(worst < 1e-9, "bound equals a direct float64 sum (max error %.2g)", worst);
    double near = 0, far = 0;
    for (int r = 1; r <= 10; r++)
        near += rl_rope_decay_bound(128, 10000, r) / 10;
    for (int r = 200; r < 250; r++)
        far += rl_rope_decay_bound(128, 10000, r) / 50;
    tap_ok(far < 0.5 * near,
           "long-term decay: mean over r in [200, 250) %.2f < half of [1, 10] %.2f", far, near);
}

int main(void)
{
    test_cross_product();
    test_names();
    test_set();
    test_impossible();
    test_rope_decay();
    return tap_done();
}
