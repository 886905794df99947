/* t_config.c -- experiment configuration (docs/config.md): defaults, files, --set overrides, every
 * error path with its file:line and key, combination checks, the resolved-INI round trip,
 * the resume comparison, and docs/config.md naming every key. */
#include "config.h"
#include "config/cfg.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[256];

static const char *write_ini(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    if (!f) tap_bail("cannot write %s", path);
    fputs(text, f);
    fclose(f);
    return path;
}

static void test_defaults(void)
{
    struct rl_cfg c;
    rl_cfg_defaults(&c);
    tap_ok(c.model.d_model == 128 && c.model.heads == 4 && c.model.layers == 2,
           "defaults: d_model 128, heads 4, layers 2");
    tap_ok(c.model.attention == RL_ATTN_SOFTMAX && c.model.feature_map == RL_FMAP_ELU1 &&
               c.model.pe == RL_CFG_PE_ROPE && c.model.eps == 1e-6,
           "defaults: softmax attention, elu1, pe rope, eps 1e-6");
    tap_ok(c.model.rope_base == 10000 && c.model.rope_layout == RL_ROPE_LAYOUT_PAIRS &&
               c.model.rope_scale == 1 && c.model.rope_ntk == 1 &&
               c.model.rope_place == RL_ROPE_PLACE_FEATURE &&
               c.model.rope_denominator == RL_ROPE_DENOM_PLAIN && c.model.t5_buckets == 32 &&
               c.model.t5_max_distance == 128 && !c.model.t5_per_layer,
           "defaults: rope 10000 pairs scale 1 ntk 1 feature plain, t5 32/128 shared");
    tap_ok(!c.model.forget_gate && c.model.forget_bias == 5.0,
           "defaults: no forget gate, forget_bias 5");
    tap_ok(c.train.steps == 1000 && c.train.batch == 16 && c.train.accumulate == 1 &&
               c.train.lr == 1e-3 && c.train.warmup == 0 && c.train.min_lr_ratio == 0 &&
               c.train.beta1 == 0.9 && c.train.beta2 == 0.999 && c.train.adam_eps == 1e-8 &&
               c.train.weight_decay == 0.01 && c.train.clip == 1.0 && c.train.seed == 1 &&
               c.train.log_every == 10 && c.train.checkpoint_every == 0 &&
               !c.train.checkpoint_initial,
           "defaults: the documented [train] values");
    tap_ok(c.eval.n_lengths == 0 && c.eval.batches == 8 && c.eval.every == 0,
           "defaults: eval lengths = task length, 8 batches, at the end");
    tap_ok(!strcmp(c.experiment.out, "runs") && c.experiment.threads == 0,
           "defaults: out runs, threads all cores");
    tap_ok(rl_cfg_check(&c) == RL_OK, "defaults pass the combination checks");
}

static void test_file_and_overrides(void)
{
    struct rl_cfg c;
    rl_cfg_defaults(&c);
    const char *p  = write_ini("my_exp.ini", "; a comment\n"
                                              "# another\n"
                                              "[model]\n"
                                              "d_model = 64\n"
                                              "heads=2\n"
                                              "attention = linear ; inline\n"
                                              "pe = alibi   # hash comment\n"
                                              "t5_per_layer = yes\n"
                                              "[train]\n"
                                              "lr = 3e-4\n"
                                              "seed = 18446744073709551615\n"
                                              "[eval]\n"
                                              "lengths = 64, 128,256\n");
    rl_status   st = rl_cfg_load(&c, p);
    tap_ok(st == RL_OK, "load a file with comments and mixed spacing");
    if (st) tap_diag("%s", rl_last_error());
    tap_ok(c.model.d_model == 64 && c.model.heads == 2 && c.model.attention == RL_ATTN_LINEAR &&
               c.model.pe == RL_CFG_PE_ALIBI && c.model.t5_per_layer == 1,
           "file values land in [model]");
    tap_ok(c.train.lr == 3e-4 && c.train.seed == 18446744073709551615ull,
           "lr 3e-4 and a full 64-bit seed");
    tap_ok(c.eval.n_lengths == 3 && c.eval.lengths[0] == 64 && c.eval.lengths[2] == 256,
           "eval lengths list");
    tap_ok(!strcmp(c.experiment.name, "my_exp"), "experiment name defaults to the file stem");
    tap_ok(c.model.layers == 2, "keys not in the file keep their defaults");
    st = rl_cfg_set(&c, "model.heads=8");
    tap_ok(st == RL_OK && c.model.heads == 8, "--set model.heads=8 overrides the file");
    st = rl_cfg_set(&c, " train.lr = 0.5 ");
    tap_ok(st == RL_OK && c.train.lr == 0.5, "--set trims spaces");
    st = rl_cfg_set(&c, "sweep.model.pe=none,rope");
    tap_ok(st == RL_OK && c.sweep.n_keys == 1 && c.sweep.keys[0].n_values == 2,
           "--set sweep.model.pe=none,rope adds a swept key");
    st = rl_cfg_set(&c, "experiment.name=other");
    tap_ok(st == RL_OK && !strcmp(c.experiment.name, "other"), "--set experiment.name");
}

/* Load `text` as `name` (after optional --set), expect failure whose message contains
 * `want` and is a single line. */
static void expect_error(const char *name, const char *text, const char *set, const char *want)
{
    struct rl_cfg c;
    rl_cfg_defaults(&c);
    rl_status st = text ? rl_cfg_load(&c, write_ini(name, text)) : RL_OK;
    if (st == RL_OK && set) st = rl_cfg_set(&c, set);
    if (st == RL_OK) st = rl_cfg_check(&c);
    const char *m  = st == RL_OK ? "" : rl_last_error();
    int         ok = st != RL_OK && strstr(m, want) && !strchr(m, '\n');
    tap_ok(ok, "error: %s", want);
    if (!ok) tap_diag("got (%d): %s", (int)st, m);
}

static void test_errors(void)
{
    char want[600];
    snprintf(want, sizeof want, "%s/e.ini:2: [model] heads: expected a positive integer, got 'x'",
             tmpdir);
    expect_error("e.ini", "[model]\nheads = x\n", NULL, want);
    expect_error("e.ini", "[model]\nheads = 0\n", NULL,
                 "e.ini:2: [model] heads: expected a positive");
    expect_error("e.ini", "[model]\nheads = 3.5\n", NULL, "[model] heads: expected");
    expect_error("e.ini", "[model]\nd_model = 99999999999\n", NULL,
                 "e.ini:2: [model] d_model: expected an integer in [1, 65536]");
    expect_error("e.ini", "\n[train]\nlr = fast\n", NULL,
                 "e.ini:3: [train] lr: expected a number > 0, got 'fast'");
    expect_error("e.ini", "[train]\nlr = -1\n", NULL, "e.ini:2: [train] lr: expected a number > 0");
    expect_error("e.ini", "[train]\nlr = nan\n", NULL, "[train] lr: expected a number > 0");
    expect_error("e.ini", "[train]\nbeta2 = 1\n", NULL,
                 "[train] beta2: expected a number in [0, 1)");
    expect_error("e.ini", "[train]\nmin_lr_ratio = 1.5\n", NULL,
                 "[train] min_lr_ratio: expected a number in [0, 1]");
    expect_error("e.ini", "[train]\nclip = -0.1\n", NULL, "[train] clip: expected a number >= 0");
    expect_error("e.ini", "[train]\nseed = -1\n", NULL,
                 "e.ini:2: [train] seed: expected a non-negative integer");
    expect_error("e.ini", "[model]\nattention = quadratic\n", NULL,
                 "e.ini:2: [model] attention: expected one of softmax, linear, got 'quadratic'");
    expect_error("e.ini", "[model]\npe = rotary\n", NULL,
                 "[model] pe: expected one of none, sinusoidal, learned, t5, alibi, rope");
    expect_error("e.ini", "[model]\nt5_per_layer = maybe\n", NULL,
                 "[model] t5_per_layer: expected true or false, got 'maybe'");
    expect_error("e.ini", "[task]\nname = wiki\n", NULL, "[task] name: expected one of copy,");
    expect_error("e.ini", "[eval]\nlengths = 64, x\n", NULL,
                 "e.ini:2: [eval] lengths: expected a comma-separated list of positive integers");
    /* an empty entry (a number left out) is an error, not skipped */
    expect_error("e.ini", "[eval]\nlengths = 64,,256\n", NULL,
                 "e.ini:2: [eval] lengths: expected a comma-separated list of positive integers");
    expect_error("e.ini", "[eval]\nlengths = 64,\n", NULL,
                 "e.ini:2: [eval] lengths: expected a comma-separated list of positive integers");
    expect_error("e.ini", "[eval]\nrope_extend = none,,pi\n", NULL,
                 "e.ini:2: [eval] rope_extend: expected a list of none, pi, ntk, yarn");
    { /* a value longer than the parser's buffer is refused, not cut (dropping 256 here) */
        char set[1400];
        snprintf(set, sizeof set, "eval.lengths=64,%1200s256", "");
        expect_error(NULL, NULL, set, "[eval] lengths: value longer than");
    }
    { /* a value config.ini could not hold on one INI line (libinih: 198 characters) */
        char set[400], list[300];
        snprintf(set, sizeof set, "experiment.out=runs/%200s", "x");
        for (char *q = set; *q; q++)
            *q = *q == ' ' ? 'd' : *q;
        expect_error(NULL, NULL, set, "--set experiment.out=runs/ddd");
        expect_error(NULL, NULL, set,
                     "[experiment] out: the line 'out = ...' would be 211 characters");
        int at = 0;
        for (int v = 1001; v <= 1060; v++)
            at += snprintf(list + at, sizeof list - (size_t)at, "%s%d", at ? "," : "", v);
        snprintf(set, sizeof set, "sweep.train.seed=%s", list);
        expect_error(NULL, NULL, set, "[sweep] train.seed: the line 'train.seed = ...' would be");
    }
    expect_error("e.ini", "[experiment]\nname = a/b\n", NULL,
                 "[experiment] name: expected a directory name");
    expect_error("e.ini", "[model]\n[modle]\nheads = 2\n", NULL,
                 "e.ini:2: unknown section [modle]");
    expect_error("e.ini", "[model]\nhead = 4\n", NULL,
                 "e.ini:2: [model] unknown key 'head' (did you mean 'heads'?)");
    expect_error("e.ini", "[train]\nfrobnicate = 4\n", NULL,
                 "e.ini:2: [train] unknown key 'frobnicate'");
    expect_error("e.ini", "heads = 4\n", NULL, "e.ini:1: key 'heads' outside a section");
    expect_error("e.ini", "[model]\nheads = 4\nlayers = 1\nheads = 2\n", NULL,
                 "e.ini:4: [model] heads: given twice (first at line 2)");
    expect_error("e.ini", "[model]\nheads\n", NULL, "e.ini:2: malformed line");
    expect_error("e.ini", "[model]\nheads = 4\n  8\n", NULL,
                 "e.ini:3: [model] heads: values cannot span lines");
    char line[400];
    snprintf(line, sizeof line, "[task]\npath = %0300d\n", 0);
    expect_error("e.ini", line, NULL, "e.ini:2: line longer than");
    expect_error("e.ini", "[sweep]\nmodel.foo = 1, 2\n", NULL,
                 "e.ini:2: [sweep] model.foo: no such key");
    expect_error("e.ini", "[sweep]\npe = none\n", NULL,
                 "e.ini:2: [sweep] pe: expected section.key");
    expect_error("e.ini", "[sweep]\nmodel.pe = none, rotary\n", NULL,
                 "e.ini:2: [sweep] model.pe: expected one of none,");
    expect_error("e.ini", "[sweep]\nexperiment.name = a, b\n", NULL,
                 "[sweep] experiment.name: no such key to sweep");
    expect_error("e.ini", "[sweep]\nmodel.pe = none\nmodel.pe = rope\n", NULL,
                 "e.ini:3: [sweep] model.pe: swept twice");
    expect_error("e.ini", "[sweep]\ntrain.lr = \n", NULL,
                 "[sweep] train.lr: expected a list of values");
    expect_error(NULL, NULL, "model.heads=x",
                 "--set model.heads=x: [model] heads: expected a positive integer, got 'x'");
    expect_error(NULL, NULL, "heads=4", "--set heads=4: expected section.key=value");
    expect_error(NULL, NULL, "model.heads", "--set model.heads: expected section.key=value");
    expect_error(NULL, NULL, "modle.heads=4", "--set modle.heads=4: unknown section [modle]");
    expect_error(NULL, NULL, "model.hedas=4",
                 "--set model.hedas=4: [model] unknown key 'hedas' (did you mean 'heads'?)");
    /* impossible combinations, reported at the line of the key involved */
    expect_error("c.ini", "[model]\nd_model = 130\nheads = 4\n", NULL,
                 "c.ini:3: [model] heads: d_model = 130 is not divisible by heads = 4");
    expect_error("c.ini", "[model]\nd_model = 130\n", NULL,
                 "c.ini:2: [model] heads: d_model = 130 is not divisible by heads = 4");
    expect_error("c.ini", "[model]\nd_model = 12\nheads = 4\n", NULL,
                 "c.ini:3: [model] heads: head dim d_model/heads = 3 is odd");
    expect_error("c.ini", "[model]\nd_model = 16\nrope_dims = 6\n", NULL,
                 "c.ini:3: [model] rope_dims: must be even and <= head dim 4, got 6");
    expect_error("c.ini", "[model]\nrope_dims = 2\nrope_ntk = 4\n", NULL,
                 "c.ini:3: [model] rope_ntk: NTK scaling needs rope_dims > 2");
    expect_error(
        "c.ini", "[model]\nattention = linear\npe = t5\nrope_denominator = rotated\n", NULL,
        "c.ini:4: [model] rope_denominator: 'rotated' needs attention = linear, pe = rope");
    expect_error("c.ini", "[model]\nrope_denominator = rotated\n", NULL,
                 "c.ini:2: [model] rope_denominator: 'rotated' needs");
    expect_error("c.ini", "[model]\nrope_place = input\n", NULL,
                 "c.ini:2: [model] rope_place: 'input' applies to linear attention with pe = rope");
    expect_error("c.ini", "[model]\nrope_yarn = 0.5\n", NULL,
                 "c.ini:2: [model] rope_yarn: must be >= 1 (1 = off), got 0.5");
    expect_error("c.ini", "[model]\nrope_scale = 2\nrope_yarn = 4\n", NULL,
                 "c.ini:3: [model] rope_yarn: YaRN excludes rope_scale != 1 and rope_ntk != 1");
    expect_error("c.ini", "[model]\nxpos = true\nattention = linear\n", NULL,
                 "c.ini:2: [model] xpos: xPos needs attention = softmax, pe = rope and a causal");
    expect_error("c.ini", "[model]\nxpos = true\n[task]\nname = listops\n", NULL,
                 "c.ini:2: [model] xpos: xPos needs");
    expect_error("c.ini", "[task]\nname = listops\n[model]\nforget_gate = true\n", NULL,
                 "c.ini:4: [model] forget_gate: the forget gate weighs earlier positions only: "
                 "it needs a causal task");
    expect_error("c.ini", "[model]\nforget_bias = inf\n", NULL, "c.ini:2: [model] forget_bias");
    expect_error("c.ini", "[train]\nbatch = 10\naccumulate = 3\n", NULL,
                 "c.ini:3: [train] accumulate: batch = 10 is not divisible by accumulate = 3");
    expect_error("c.ini", "[task]\nname = tokens\n", NULL,
                 "c.ini:2: [task] path: the tokens task needs path");
    expect_error("c.ini", "[model]\npe = t5\nt5_max_distance = 16\n", NULL,
                 "c.ini:3: [model] t5_max_distance: must exceed the exact-bucket range 16");
    expect_error("c.ini", "[model]\nd_model = 12\n", "model.heads=4",
                 "--set model.heads=4: [model] heads: head dim d_model/heads = 3 is odd");
    struct rl_cfg c;
    rl_cfg_defaults(&c);
    char missing[512];
    snprintf(missing, sizeof missing, "%s/no_such.ini", tmpdir);
    rl_status st = rl_cfg_load(&c, missing);
    tap_ok(st == RL_EIO && strstr(rl_last_error(), "no_such.ini: cannot open"),
           "missing file: EIO naming the file");
}

static void expect_resolve_error(const char *text, int len, int vocab, int max_len,
                                 const char *want)
{
    struct rl_cfg c;
    rl_cfg_defaults(&c);
    rl_status st = rl_cfg_load(&c, write_ini("r.ini", text));
    if (st == RL_OK) st = rl_cfg_resolve(&c, len, vocab, max_len, 1);
    const char *m  = st == RL_OK ? "" : rl_last_error();
    int         ok = st != RL_OK && strstr(m, want);
    tap_ok(ok, "resolve error: %s", want);
    if (!ok) tap_diag("got: %s", m);
}

static void test_resolve(void)
{
    struct rl_cfg c;
    rl_cfg_defaults(&c);
    rl_status st = rl_cfg_load(&c, write_ini("res.ini", "[model]\npe = learned\nd_model = 64\n"));
    st           = st ? st : rl_cfg_resolve(&c, 48, 20, 0, 1);
    tap_ok(st == RL_OK && c.task.length == 48 && c.task.vocab == 20 && c.model.max_len == 48 &&
               c.model.rope_dims == 16 && c.eval.n_lengths == 1 && c.eval.lengths[0] == 48,
           "resolve fills length, vocab, max_len, rope_dims and eval lengths");
    expect_resolve_error(
        "[model]\npe = learned\nmax_len = 32\n", 64, 10, 0,
        "r.ini:3: [model] max_len: the learned PE needs max_len >= the task length 64, got 32");
    expect_resolve_error("[eval]\nlengths = 64, 512\n", 64, 10, 128,
                         "r.ini:2: [eval] lengths: length 512 is longer than the task allows (128: "
                         "the data's length)");
    expect_resolve_error("[task]\nlength = 32\n", 64, 10, 0,
                         "r.ini:2: [task] length: the task's length is 64, not 32");
    expect_resolve_error("[task]\nvocab = 12\n", 64, 10, 0,
                         "r.ini:2: [task] vocab: the task's vocabulary is 10, not 12");
    /* every causal task (not only the language-model ones) takes xPos with each method */
    rl_cfg_defaults(&c);
    st = rl_cfg_load(&c, write_ini("xp.ini", "[model]\nxpos = true\n[task]\nname = passkey\n"
                                             "[eval]\nrope_extend = none, pi, ntk, yarn\n"));
    st = st ? st : rl_cfg_resolve(&c, 64, 16, 0, 1);
    tap_ok(st == RL_OK, "xpos with rope_extend on passkey (causal, not a language model)");
    if (st != RL_OK) tap_diag("got: %s", rl_last_error());
}

static void test_round_trip(void)
{
    static const char *texts[] = {
        "[experiment]\nname = rt1\nout = /tmp/x y\nthreads = 3\n"
        "[model]\nd_model = 96\nheads = 3\nlayers = 5\nattention = linear\nfeature_map = exp\n"
        "eps = 1e-7\npe = rope\nrope_base = 500000.5\nrope_layout = halves\nrope_dims = 16\n"
        "rope_scale = 4\nrope_ntk = 8.25\nrope_place = feature\nrope_denominator = rotated\n"
        "[task]\nname = tokens\npath = a.npy\nvalid_path = b.npy\n"
        "[train]\nsteps = 77\nbatch = 12\naccumulate = 4\nlr = 0.1\nwarmup = 7\n"
        "min_lr_ratio = 0.1\nbeta1 = 0.8\nbeta2 = 0.95\nadam_eps = 1e-10\nweight_decay = 0.3\n"
        "clip = 0\nseed = 12345678901234\nlog_every = 3\ncheckpoint_every = 9\n"
        "checkpoint_initial = true\n"
        "[eval]\nlengths = 32, 64, 4096\nbatches = 2\nevery = 50\n"
        "[sweep]\nmodel.pe = none, rope\ntrain.seed = 1, 2, 3\n",
        "[model]\npe = t5\nt5_buckets = 16\nt5_max_distance = 64\nt5_per_layer = true\n"
        "attention = linear\nalibi_scan = true\n[task]\nname = listops\ndepth = 3\nargs = 4\n",
        "[model]\npe = learned\nmax_len = 300\n[task]\nname = mqar\nkv_pairs = 8\nlength = 100\n"
        "train_queries = dense\ntrain_lengths = 40,100\n",
    };
    for (int t = 0; t < 3; t++) {
        struct rl_cfg *a = malloc(sizeof *a), *b = malloc(sizeof *b);
        char          *ra = malloc(1 << 16), *rb = malloc(1 << 16);
        rl_cfg_defaults(a);
        rl_status st = rl_cfg_load(a, write_ini("rt.ini", texts[t]));
        int       L  = a->task.length ? a->task.length : 64;
        st           = st ? st : rl_cfg_resolve(a, L, 50, 0, 1);
        int n        = rl_cfg_render(a, ra, 1 << 16, 0);
        rl_cfg_defaults(b);
        rl_status st2 = rl_cfg_load_string(b, ra, "rendered.ini");
        st2           = st2 ? st2 : rl_cfg_resolve(b, L, 50, 0, 1);
        rl_cfg_render(b, rb, 1 << 16, 0);
        int same = st == RL_OK && st2 == RL_OK && n > 0 && n < (1 << 16) && !strcmp(ra, rb);
        same     = same && a->train.seed == b->train.seed && a->train.lr == b->train.lr &&
               a->model.rope_ntk == b->model.rope_ntk && a->model.eps == b->model.eps &&
               a->eval.n_lengths == b->eval.n_lengths && a->sweep.n_keys == b->sweep.n_keys &&
               a->task.n_train_lengths == b->task.n_train_lengths &&
               (t != 2 ||
                (strstr(ra, "train_lengths = 40, 100\n") && strstr(ra, "train_queries = dense\n") &&
                 b->task.n_train_lengths == 2 && b->task.train_lengths[1] == 100)) &&
               !strcmp(a->experiment.out, b->experiment.out);
        tap_ok(same, "round trip %d: render -> parse -> render is identical", t);
        if (!same)
            tap_diag("%s / %s\n%s", st ? rl_last_error() : "", st2 ? rl_last_error() : "", ra);
        char msg[256];
        tap_ok(!rl_cfg_text_diff(ra, rb, msg, sizeof msg), "round trip %d: no difference", t);
        if (t == 0) {
            tap_ok(strstr(ra, "rope_ntk = 8.25\n") &&
                       strstr(ra, "lr = 0.10000000000000001") == NULL && strstr(ra, "lr = 0.1\n") &&
                       strstr(ra, "adam_eps = 1e-10\n") && strstr(ra, "lengths = 32, 64, 4096\n") &&
                       strstr(ra, "model.pe = none, rope\n") &&
                       strstr(ra, "checkpoint_initial = true\n"),
                   "rendered numbers are short and exact; lists and sweeps rendered");
            rl_cfg_render(a, rb, 1 << 16, RL_CFG_RENDER_NO_RUNTIME);
            tap_ok(!strstr(rb, "\nthreads =") && !strstr(rb, "\nout =") && strstr(rb, "name = rt1"),
                   "RENDER_NO_RUNTIME leaves out out and threads");
            /* resume comparison: out/threads differences are ignored, others reported */
            b->experiment.threads = 1;
            snprintf(b->experiment.out, sizeof b->experiment.out, "elsewhere");
            rl_cfg_render(b, rb, 1 << 16, 0);
            tap_ok(!rl_cfg_text_diff(ra, rb, msg, sizeof msg), "diff ignores out and threads");
            b->train.lr = 0.2;
            rl_cfg_render(b, rb, 1 << 16, 0);
            int d = rl_cfg_text_diff(ra, rb, msg, sizeof msg);
            tap_ok(d && !strcmp(msg, "train.lr: '0.1' vs '0.2'"), "diff names the key: %s", msg);
            rl_cfg_render(a, rb, 1 << 16, 0);
            char *cut = strstr(rb, "[sweep]");
            if (cut) *cut = 0;
            d = rl_cfg_text_diff(ra, rb, msg, sizeof msg);
            tap_ok(d && strstr(msg, "sweep.model.pe") && strstr(msg, "(absent)"),
                   "diff reports a key missing on one side: %s", msg);
            /* a run written before a key existed: the key absent from its text */
            rl_cfg_render(a, rb, 1 << 16, 0);
            char *old = strdup(ra), *line = strstr(old, "\nxpos_scale_base = ");
            if (line) memmove(line + 1, strchr(line + 1, '\n') + 1, strlen(strchr(line + 1, '\n')));
            d = rl_cfg_text_diff(old, rb, msg, sizeof msg);
            tap_ok(line && !d, "a key absent from an older run's text, at its default now: no "
                               "difference");
            a->model.xpos_scale_base = 1024;
            rl_cfg_render(a, rb, 1 << 16, 0);
            d = rl_cfg_text_diff(old, rb, msg, sizeof msg);
            tap_ok(d && strstr(msg, "model.xpos_scale_base: '(absent)' vs '1024'"),
                   "... but set to another value now: %s", msg);
            free(old);
        }
        free(a), free(b), free(ra), free(rb);
    }
}

static void test_model_mapping(void)
{
    struct rl_cfg          c;
    struct rl_model_config mc;
    rl_cfg_defaults(&c);
    rl_cfg_set(&c, "model.pe=learned");
    rl_cfg_set(&c, "experiment.name=map");
    tap_ok(rl_cfg_resolve(&c, 32, 10, 0, 1) == RL_OK,
           "resolve without a file, name given by --set");
    rl_cfg_model_config(&c, 10, 1, 0, &mc);
    tap_ok(mc.input_pe == RL_INPUT_PE_LEARNED && mc.attn.pe == RL_ATTN_PE_NONE &&
               mc.max_len == 32 && mc.vocab == 10 && mc.attn.causal == 1,
           "pe = learned is an input PE with max_len rows");
    rl_cfg_set(&c, "model.pe=alibi");
    rl_cfg_set(&c, "model.attention=linear");
    rl_cfg_set(&c, "model.alibi_scan=true");
    rl_cfg_model_config(&c, 10, 1, 0, &mc);
    tap_ok(mc.input_pe == RL_INPUT_PE_NONE && mc.attn.pe == RL_ATTN_PE_ALIBI &&
               mc.attn.kind == RL_ATTN_LINEAR && mc.attn.alibi_scan == 1,
           "pe = alibi is an attention PE; the scan applies to causal linear attention");
    rl_cfg_model_config(&c, 10, 0, 10, &mc);
    tap_ok(mc.attn.alibi_scan == 0 && mc.n_classes == 10 && mc.attn.causal == 0,
           "non-causal: no decayed scan, classifier head");
    rl_cfg_set(&c, "model.pe=rope");
    rl_cfg_set(&c, "model.attention=softmax");
    rl_cfg_set(&c, "model.rope_yarn=4");
    rl_cfg_set(&c, "model.xpos=true");
    rl_cfg_set(&c, "model.xpos_scale_base=256");
    rl_cfg_model_config(&c, 10, 1, 0, &mc);
    tap_ok(mc.attn.rope.yarn == 4 && mc.attn.rope.yarn_orig == 32 && mc.attn.xpos == 1 &&
               mc.attn.xpos_scale_base == 256,
           "rope_yarn, xpos reach the attention options; rope_yarn_orig = the task length 32");
    rl_cfg_set(&c, "model.forget_gate=true");
    rl_cfg_set(&c, "model.forget_bias=-1.5");
    rl_cfg_model_config(&c, 10, 1, 0, &mc);
    tap_ok(mc.attn.forget == 1 && mc.forget_bias == -1.5,
           "forget_gate reaches the attention options, forget_bias the model's");
    struct rl_task_opts o;
    rl_cfg_set(&c, "task.name=tokens");
    rl_cfg_set(&c, "task.path=x.npy");
    rl_cfg_set(&c, "train.seed=9");
    rl_cfg_set(&c, "train.data_seed=0"); /* automatic again (c was resolved above) */
    rl_cfg_task_opts(&c, &o);
    size_t np = strlen(o.path);
    tap_ok(o.kind == RL_TASK_TOKENS && o.path[0] == '/' && np > 6 &&
               !strcmp(o.path + np - 6, "/x.npy") && o.valid_path == NULL && o.seed == 9,
           "task options: kind, path (--set: read against the working directory), seed from "
           "train.seed");
    rl_cfg_set(&c, "train.data_seed=5");
    rl_cfg_task_opts(&c, &o);
    tap_ok(o.seed == 5 && c.train.seed == 9,
           "train.data_seed = 5: the data's seed, not train.seed");
}

/* docs/config.md documents every key under its section heading. */
static void test_docs(void)
{
    const char *src = getenv("top_srcdir");
    char        path[1024];
    snprintf(path, sizeof path, "%s/docs/config.md", src ? src : ".");
    FILE *f = fopen(path, "rb");
    if (!f) {
        tap_skip("docs/config.md not found", "docs/config.md names every key");
        return;
    }
    char  *doc = calloc(1, 1 << 18);
    size_t n   = fread(doc, 1, (1 << 18) - 1, f);
    fclose(f);
    doc[n]      = 0;
    int missing = 0;
    for (int i = 0; i < rl_cfg_num_keys(); i++) {
        const char *s, *k, *d;
        char        head[64], key[80];
        rl_cfg_key_info(i, &s, &k, &d);
        snprintf(head, sizeof head, "## [%s]", s);
        snprintf(key, sizeof key, "| `%s`", k);
        const char *h = strstr(doc, head), *next = h ? strstr(h + 1, "\n## ") : NULL;
        const char *at = h ? strstr(h, key) : NULL;
        if (!at || (next && at > next)) {
            tap_diag("docs/config.md: no row for [%s] %s", s, k);
            missing++;
        }
    }
    tap_ok(missing == 0, "docs/config.md has a row for each of the %d keys", rl_cfg_num_keys());
    free(doc);
}

/* A UTF-8 byte-order mark (as some editors save) is skipped; elsewhere it is no key. */
static void test_bom(void)
{
    struct rl_cfg *c = malloc(sizeof *c);
    rl_cfg_defaults(c);
    rl_status st = rl_cfg_load(c, write_ini("bom.ini", "\xEF\xBB\xBF[train]\nsteps = 17\n"));
    tap_ok(st == RL_OK && c->train.steps == 17, "a leading UTF-8 BOM is skipped (steps %d: %s)",
           (int)c->train.steps, st == RL_OK ? "ok" : rl_last_error());
    rl_cfg_defaults(c);
    st = rl_cfg_load(c, write_ini("bom2.ini", "[train]\n\xEF\xBB\xBFsteps = 17\n"));
    tap_ok(st != RL_OK && strstr(rl_last_error(), "bom2.ini:2"),
           "a BOM inside the file is refused: %s", rl_last_error());
    free(c);
}

int main(void)
{
    tap_scratch(tmpdir, sizeof tmpdir, "t_config");
    test_defaults();
    test_file_and_overrides();
    test_errors();
    test_resolve();
    test_round_trip();
    test_model_mapping();
    test_docs();
    test_bom();
    tap_scratch_remove(tmpdir);
    return tap_done();
}
