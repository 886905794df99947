/* t_threads.c -- the thread count never changes a result, and the governor that adapts
 * it to the machine's load (core/governor.h) chooses the faster count.
 *
 * 1. For every attention kind x position encoding family (and the forget gate in both
 *    kinds), a short training run with one thread and a run whose thread count changes
 *    at every update (3, 1, 2, 3, ...) end with the same checkpoint bytes (parameters and
 *    AdamW moments) and the same evaluation losses: what the governor relies on.
 * 2. Thread counts past the cores: a model large enough that every region of a step has
 *    16 pieces or more (D 64, 4096 tokens per update: 16 chunks of 256 rows) trains with
 *    1, 2, 3, 7 and 16 threads -- on a 2-core machine too, the library does not lower the
 *    count (only the command line does, and ROPELAB_OVERSUBSCRIBE=1 stops it) -- and every
 *    count ends with the checkpoint bytes of 1 thread: softmax and linear attention, RoPE,
 *    T5 and ALiBi, the forget gate, and two micro-batches per update; and a batch of 2
 *    (8 heads a call), whose T5 products by FFT run in (head, group of features) pieces.
 * 3. The governor, fed synthetic update times: on an idle machine it never leaves the
 *    count asked for; when another process takes a core (little CPU time per wall time,
 *    fewer threads faster) it moves to the lower count and spends few updates above it;
 *    when the load goes away it returns; OMP_DYNAMIC=false and a count of 1 keep it off.
 * 4. The region profile of `bench --train --regions` and the serial fraction's books (below).
 * 5. A short batch on more threads than twice its chunks runs its chunks in turn, each step
 *    on all the threads, with the bits of the chunk regions (below). */
#include "config.h"
#include "core/threads.h"
#include "core/init.h"
#include "experiment/governor.h"
#include "core/util.h"
#include "config/cfg.h"
#include "experiment/train.h"
#include "tap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char tmpdir[256];

static void rotate_threads(void *ctx, int64_t step, int64_t steps, double loss)
{
    (void)ctx, (void)steps, (void)loss;
    rl_threads_set(1 + (int)((step + 2) % 3));
}

/* A run of the small model below, `sets` applied after it; threads: the count of the
 * whole run, or with rotate the first of 3, 1, 2, 3, ... */
static rl_status train(const char *name, const char *const *sets, int threads, int rotate,
                       struct rl_train_result *r)
{
    struct rl_cfg *c    = malloc(sizeof *c);
    rl_task       *task = NULL;
    char           buf[600], dir[600];
    const char    *base[] = {"model.d_model=32",   "model.heads=2",  "model.layers=2",
                             "task.name=copy",     "task.length=24", "train.batch=6",
                             "train.steps=5",      "train.lr=3e-3",  "train.log_every=5",
                             "eval.lengths=24,48", "eval.batches=1", NULL};
    rl_cfg_defaults(c);
    rl_status st = RL_OK;
    snprintf(buf, sizeof buf, "experiment.name=%s", name);
    st = rl_cfg_set(c, buf);
    for (int i = 0; st == RL_OK && base[i]; i++)
        st = rl_cfg_set(c, base[i]);
    for (int i = 0; st == RL_OK && sets[i]; i++)
        st = rl_cfg_set(c, sets[i]);
    rl_threads_set(threads);
    if (st == RL_OK) st = rl_train_prepare(c, &task);
    struct rl_train_opts o = {.on_update = rotate ? rotate_threads : NULL};
    snprintf(dir, sizeof dir, "%s/%s", tmpdir, name);
    if (st == RL_OK) st = rl_train_run(c, task, dir, &o, r);
    rl_task_free(task);
    free(c);
    return st;
}

/* The tensor bytes of a safetensors file: everything after its header. */
static char *tensor_bytes(const char *path, size_t *n)
{
    size_t         len  = 0;
    unsigned char *text = NULL;
    if (rl_read_file(&text, &len, path) != RL_OK || len < 8) return free(text), NULL;
    uint64_t h = 0;
    for (int i = 7; i >= 0; i--)
        h = h << 8 | text[i];
    if (h > len - 8) return free(text), NULL;
    *n = len - 8 - h;
    memmove(text, text + 8 + h, *n);
    return (char *)text;
}

/* Whether runs a and b (directories under tmpdir, 5 or `steps` updates) end with the same
 * checkpoint tensor bytes and evaluation losses; *bytes: the tensor bytes compared. */
static int same_run(const char *a, const struct rl_train_result *ra, const char *b,
                    const struct rl_train_result *rb, int steps, size_t *bytes)
{
    char pa[700], pb[700];
    snprintf(pa, sizeof pa, "%s/%s/checkpoints/step-%d.safetensors", tmpdir, a, steps);
    snprintf(pb, sizeof pb, "%s/%s/checkpoints/step-%d.safetensors", tmpdir, b, steps);
    size_t na = 0, nb = 0;
    char  *ta = tensor_bytes(pa, &na), *tb = tensor_bytes(pb, &nb);
    int    same = ra->n_eval == rb->n_eval && ra->n_eval > 0;
    for (int i = 0; same && i < ra->n_eval; i++)
        same = ra->eval[i].na == rb->eval[i].na &&
               (ra->eval[i].na ||
                (ra->eval[i].loss == rb->eval[i].loss && ra->eval[i].acc == rb->eval[i].acc));
    same = same && ta && tb && na == nb && na > 0 && !memcmp(ta, tb, na);
    free(ta), free(tb);
    *bytes = na;
    return same;
}

static void test_independent(void)
{
    static const char *const variants[][4] = {
        {"model.attention=softmax", "model.pe=rope", NULL},
        {"model.attention=softmax", "model.pe=t5", NULL},
        {"model.attention=softmax", "model.pe=alibi", NULL},
        {"model.attention=softmax", "model.pe=sinusoidal", NULL},
        {"model.attention=softmax", "model.pe=learned", NULL},
        {"model.attention=linear", "model.pe=rope", NULL},
        {"model.attention=linear", "model.pe=t5", NULL},
        {"model.attention=linear", "model.pe=alibi", NULL},
        {"model.attention=linear", "model.pe=alibi", "model.alibi_scan=true", NULL},
        {"model.attention=softmax", "model.pe=rope", "model.forget_gate=true", NULL},
        {"model.attention=linear", "model.pe=rope", "model.forget_gate=true", NULL},
        /* 12 heads a call: Shen's causal map in (head, block) pieces */
        {"model.attention=linear", "model.pe=rope", "model.feature_map=softmax", NULL},
    };
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        char                          a[32], b[32];
        static struct rl_train_result ra, rb;
        snprintf(a, sizeof a, "fixed%zu", v);
        snprintf(b, sizeof b, "rotating%zu", v);
        rl_status sa = train(a, variants[v], 1, 0, &ra), sb = train(b, variants[v], 3, 1, &rb);
        if (sa != RL_OK || sb != RL_OK) tap_diag("%s", rl_last_error());
        size_t na   = 0;
        int    same = sa == RL_OK && sb == RL_OK && same_run(a, &ra, b, &rb, 5, &na);
        tap_ok(same,
               "%s %s%s%s: 1 thread and 3,1,2,3,... threads per update give the same "
               "checkpoint (%zu tensor bytes) and evaluation losses",
               variants[v][0] + 6, variants[v][1] + 6, variants[v][2] ? " " : "",
               variants[v][2] ? variants[v][2] + 6 : "", na);
    }
}

/* 1, 2, 3, 7 and 16 threads on a model whose step has 16 pieces or more in every region */
static void test_counts(void)
{
    static const char *const big[] = {
        "model.d_model=64", "model.heads=4",     "task.length=128",  "train.batch=32",
        "train.steps=3",    "train.log_every=3", "eval.lengths=128", NULL};
    static const char *const variants[][8] = {
        {"model.attention=softmax", "model.pe=rope", NULL},
        {"model.attention=linear", "model.pe=rope", NULL},
        {"model.attention=softmax", "model.pe=t5", NULL},
        {"model.attention=linear", "model.pe=alibi", "model.alibi_scan=true", NULL},
        {"model.attention=softmax", "model.pe=alibi", "train.accumulate=2", NULL},
        {"model.attention=linear", "model.pe=rope", "model.forget_gate=true", NULL},
        /* 8 heads a call: the FFT products in (head, group of features) pieces */
        {"model.attention=linear", "model.pe=t5", "train.batch=2", NULL},
        /* 8 heads a call of three 256-row blocks: Shen's causal map in (head, block)
         * pieces, its column maxima, Z and dZ carried across the blocks */
        {"model.attention=linear", "model.feature_map=softmax", "train.batch=2", "task.length=600",
         "eval.lengths=600", NULL},
        /* the same with ALiBi's decayed scan: the gate's pieces with a constant log gate */
        {"model.attention=linear", "model.feature_map=softmax", "model.pe=alibi",
         "model.alibi_scan=true", "train.batch=2", "task.length=600", "eval.lengths=600", NULL},
        /* T5 with the gate, 8 heads a call of three blocks: the quadratic tiles in (head,
         * query block) and (head, key block) pieces, T5's parts added by lags */
        {"model.attention=linear", "model.pe=t5", "model.forget_gate=true", "train.batch=2",
         "task.length=600", "eval.lengths=600", NULL},
    };
    static const int counts[] = {1, 2, 3, 7, 16};
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        const char *sets[16];
        int         n = 0;
        for (int i = 0; big[i]; i++)
            sets[n++] = big[i];
        for (int i = 0; variants[v][i]; i++)
            sets[n++] = variants[v][i];
        sets[n] = NULL;
        static struct rl_train_result r1, rk;
        char                          n1[32], nk[32], what[256] = "";
        for (int i = 0; variants[v][i]; i++) /* the settings, without their sections */
            snprintf(what + strlen(what), sizeof what - strlen(what), "%s%s", i ? " " : "",
                     strchr(variants[v][i], '.') + 1);
        snprintf(n1, sizeof n1, "big%zu_1", v);
        rl_status s1 = train(n1, sets, 1, 0, &r1);
        for (size_t k = 1; k < sizeof counts / sizeof counts[0]; k++) {
            snprintf(nk, sizeof nk, "big%zu_%d", v, counts[k]);
            rl_status sk = train(nk, sets, counts[k], 0, &rk);
            if (s1 != RL_OK || sk != RL_OK) tap_diag("%s", rl_last_error());
            size_t bytes = 0;
            int    same  = s1 == RL_OK && sk == RL_OK && same_run(n1, &r1, nk, &rk, 3, &bytes);
            tap_ok(same,
                   "%s, D 64 (length 128 unless set): %d threads give the checkpoint "
                   "(%zu tensor bytes) and evaluation loss of 1 thread",
                   what, counts[k], bytes);
        }
    }
}

/* Update times of a machine: wall ms at 1 and 2 threads, and the CPU share used per
 * thread (1 = every thread had its core). */
struct machine {
    double wall1, wall2, use2;
};

/* Runs n updates on machine m; returns how many ran with 2 threads. */
static int drive(struct rl_governor *g, const struct machine *m, int n, int *final)
{
    int at2 = 0;
    for (int i = 0; i < n; i++) {
        int    t    = rl_governor_threads(g);
        double wall = t == 2 ? m->wall2 : m->wall1, use = t == 2 ? m->use2 : 1.0;
        if (t != rl_threads_get())
            tap_diag("governor says %d, threads are %d", t, rl_threads_get());
        at2 += t == 2;
        rl_governor_update(g, wall, wall * t * use);
    }
    *final = rl_governor_threads(g);
    return at2;
}

static void test_governor(void)
{
    const struct machine idle = {10.0, 5.5, 0.95}, busy = {10.0, 12.0, 0.5};
    struct rl_governor   g;
    int                  fin;
    unsetenv("OMP_DYNAMIC");
    rl_threads_set(2);
    rl_governor_init(&g, 2);
    int at2 = drive(&g, &idle, 500, &fin);
    tap_ok(at2 == 500 && fin == 2 && g.switches == 0,
           "idle machine: every update at the 2 threads asked for (%d of 500)", at2);

    rl_threads_set(2);
    rl_governor_init(&g, 2);
    at2 = drive(&g, &busy, 500, &fin);
    tap_ok(fin == 1 && at2 <= 40,
           "one core taken by another process: moves to 1 thread, %d of 500 updates at 2", at2);
    double cost = at2 * busy.wall2 + (500 - at2) * busy.wall1;
    tap_ok(cost <= 1.03 * 500 * busy.wall1,
           "... and the 500 updates take %.1f%% longer than at 1 thread throughout",
           100.0 * (cost / (500 * busy.wall1) - 1));

    at2 = drive(&g, &idle, 1000, &fin);
    tap_ok(fin == 2 && at2 >= 1000 - 600,
           "the load goes away: back at 2 threads (%d of the next 1000 updates at 2)", at2);

    setenv("OMP_DYNAMIC", "false", 1);
    rl_threads_set(2);
    rl_governor_init(&g, 2);
    at2 = drive(&g, &busy, 200, &fin);
    tap_ok(at2 == 200 && fin == 2, "OMP_DYNAMIC=false: the count stays as asked");
    unsetenv("OMP_DYNAMIC");

    rl_threads_set(1);
    rl_governor_init(&g, 1);
    at2 = drive(&g, &busy, 200, &fin);
    tap_ok(at2 == 0 && fin == 1 && rl_threads_get() == 1, "one thread asked for: stays at 1");
}

/* 4. The region profile (core/threads.h, rl_region_sites): each region books its name
 *    (rl_pieces: the body's; a bracketed region: its function's), calls, pieces and wall
 *    time while it is on and nothing after; a region nested in another books nothing of
 *    its own; the rows come largest time first. */
static void busy_ms(double ms)
{
    const double t0 = rl_now_ms();
    while (rl_now_ms() - t0 < ms) {
    }
}

static void inner_piece(void *ctx, long p) { (void)ctx, (void)p, busy_ms(0.05); }

static void outer_piece(void *ctx, long p)
{
    (void)ctx, (void)p;
    busy_ms(1.0);
    rl_pieces(2, inner_piece, NULL); /* nested: on this thread, no region of its own */
}

static void bracketed_region(void)
{
    const double t0 = rl_region_begin();
    busy_ms(0.5);
    rl_region_end(t0, 3);
}

static void test_region_profile(void)
{
    struct rl_region_site rows[8];
    rl_threads_set(2);
    rl_region_sites(1);
    rl_pieces(8, outer_piece, NULL);
    rl_pieces(8, outer_piece, NULL);
    bracketed_region();
    rl_region_sites(0);
    rl_pieces(8, outer_piece, NULL); /* after the profile: not booked */
    const int n = rl_region_sites_get(rows, 8);
    tap_ok(n == 2, "region profile: two rows (got %d)", n);
    if (n != 2) return;
    tap_ok(!strcmp(rows[0].name, "outer_piece") && rows[0].calls == 2 && rows[0].pieces == 16,
           "rl_pieces is booked under its body's name with its calls and pieces (%s: %ld, %ld)",
           rows[0].name, rows[0].calls, rows[0].pieces);
    /* 16 pieces of >= 1 ms on 2 threads: at least 8 ms of wall time */
    tap_ok(rows[0].ms >= 7.9, "its wall time covers the pieces' (%.2f ms >= 8)", rows[0].ms);
    tap_ok(!strcmp(rows[1].name, "bracketed_region") && rows[1].calls == 1 && rows[1].pieces == 3 &&
               rows[1].ms >= 0.49 && rows[1].ms <= rows[0].ms,
           "a bracketed region is booked under its function's name, after the larger one (%s: "
           "%ld calls, %ld pieces, %.2f ms)",
           rows[1].name, rows[1].calls, rows[1].pieces, rows[1].ms);
    rl_threads_set(1);
}

/* 5. A short batch on more threads than twice its chunks (model_step.c, pieces_in_turn):
 * the small model's 144 token rows are one chunk, so on 2 threads its chunks and groups run
 * in turn, each step on both threads -- no chunk region is opened, its products are
 * regions of their own on BLIS's threads -- and on 1 thread in the one-piece chunk regions;
 * the two forms leave the same checkpoint.  Needs 2 cores (never past the cores). */
static int site_calls(const struct rl_region_site *rows, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(rows[i].name, name)) return (int)rows[i].calls;
    return 0;
}

static void test_chunks_in_turn(void)
{
    if (rl_cores_available() < 2) {
        tap_skip("one core", "chunks in turn on 2 threads");
        return;
    }
    setenv("OMP_DYNAMIC", "false", 1); /* the governor off: 2 threads at every update */
    static const char *const      sets[] = {"model.attention=softmax", "model.pe=rope", NULL};
    static struct rl_train_result r1, r2;
    struct rl_region_site         rows[RL_REGION_SITES_MAX];
    int                           c1[3], c2[3];
    const char *const             names[3] = {"forward_rows", "backward_rows", "rl_sgemm_strided"};
    rl_region_sites(1);
    rl_status s1 = train("turn1", sets, 1, 0, &r1);
    rl_region_sites(0);
    int n = rl_region_sites_get(rows, RL_REGION_SITES_MAX);
    for (int i = 0; i < 3; i++)
        c1[i] = site_calls(rows, n, names[i]);
    rl_region_sites(1);
    rl_status s2 = train("turn2", sets, 2, 0, &r2);
    rl_region_sites(0);
    n = rl_region_sites_get(rows, RL_REGION_SITES_MAX);
    for (int i = 0; i < 3; i++)
        c2[i] = site_calls(rows, n, names[i]);
    if (s1 != RL_OK || s2 != RL_OK) tap_diag("%s", rl_last_error());
    tap_ok(s1 == RL_OK && c1[0] > 0 && c1[1] > 0 && c1[2] == 0,
           "1 thread: the chunk regions run (forward %d, backward %d calls), no product outside "
           "them (%d)",
           c1[0], c1[1], c1[2]);
    tap_ok(s2 == RL_OK && c2[0] == 0 && c2[1] == 0 && c2[2] > 0,
           "2 threads, one chunk: no chunk region (forward %d, backward %d calls), the products "
           "on BLIS's threads (%d)",
           c2[0], c2[1], c2[2]);
    size_t    bytes = 0;
    const int same  = s1 == RL_OK && s2 == RL_OK && same_run("turn1", &r1, "turn2", &r2, 5, &bytes);
    tap_ok(same,
           "the chunks in turn on 2 threads give the checkpoint (%zu tensor bytes) and "
           "evaluation losses of the chunk regions on 1",
           bytes);
    rl_threads_set(1);
}

/* The serial fraction's books (core/threads.h): on one thread, a region of 64 pieces whose
 * last 2 ms ran as a tail of 4 pieces, and a region of 4 pieces.  Against 16 threads a time
 * t in p < 16 pieces has the serial part (t/p - t/16) / (1 - 1/16) = 0.2 t at p = 4; the
 * 64-piece rest has none. */
static void test_serial_books(void)
{
    rl_threads_set(1);
    rl_regions_count(1, 16);
    double t0 = rl_region_begin();
    busy_ms(6.0);
    rl_region_end_tail(t0, 64, "tail_region", 2.0, 4);
    const double outer = rl_now_ms(); /* the 4-piece region's time, from outside: an upper
                                         bound on a loaded machine */
    t0 = rl_region_begin();
    busy_ms(3.0);
    rl_region_end(t0, 4);
    const double t2 = rl_now_ms() - outer;
    rl_regions_count(0, 16);
    const struct rl_regions r = rl_regions_counted();
    /* the serial part: 0.2 x 2 ms of the tail + 0.2 x the 4-piece region's time */
    tap_ok(r.regions == 2 && r.ms >= 8.99 && r.serial_ms >= 0.4 + 0.6 - 1e-9 &&
               r.serial_ms <= 0.4 + 0.2 * t2 + 1e-9,
           "serial books: %ld regions, %.2f ms, serial %.3f ms (0.4 of the tail of 4 pieces, "
           "0.2 of the 4-piece region's %.2f ms at most, none of the 64-piece rest)",
           r.regions, r.ms, r.serial_ms, t2);
    tap_ok(fabs(rl_regions_serial_ms(4)) < 1e-9 && rl_regions_serial_ms(64) > r.serial_ms,
           "against 4 threads nothing is serial (%.3g ms); against 64 more is (%.3f ms)",
           rl_regions_serial_ms(4), rl_regions_serial_ms(64));
}

int main(void)
{
    tap_scratch(tmpdir, sizeof tmpdir, "t_threads");
    setenv("OMP_DYNAMIC", "false", 1); /* part 1 sets the counts itself */
    rl_init(1);
    test_independent();
    test_counts();
    test_governor();
    test_region_profile();
    test_serial_books();
    test_chunks_in_turn();
    tap_scratch_remove(tmpdir);
    return tap_done();
}
