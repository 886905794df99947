/* bench_decode.c -- `ropelab bench --decode`: what one generated token costs (model/decode.h)
 * at long contexts, softmax attention (key/value cache) vs linear attention (eq. 19 state),
 * and full recomputation of the prefix at short contexts for comparison.  The model is the
 * one of `bench --train` (vocab 64, D 128, 4 heads, 2 layers, causal, RoPE; linear with
 * elu1), random weights.  The context is made by rl_decoder_fill_random (the cost of a
 * step does not depend on what the cache holds), so a 64k context needs no 64k prefill. */
#include "config.h"
#include "cli.h"
#include "opts.h"
#include "../core/gemm.h"
#include "../core/threads.h"
#include "../core/util.h"
#include "../model/decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct decode_point {
    enum rl_attn_kind   kind;
    enum rl_decode_mode mode;
    int                 ctx;
    double              ms; /* per token, median over reps */
    size_t              bytes;
};

static double median_of(double *x, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && x[j] < x[j - 1]; j--) {
            double t = x[j];
            x[j] = x[j - 1], x[j - 1] = t;
        }
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* ms per token of `steps` steps after a context of p->ctx tokens, median of reps. */
static rl_status measure(struct decode_point *p, rl_model *m, int steps, int reps)
{
    rl_decoder *dc = NULL;
    float       logits[64];
    double      t[16];
    RL_TRY(rl_decoder_create(&dc, m, p->mode, p->ctx + steps + 1));
    rl_status st = RL_OK;
    for (int r = 0; r < reps && st == RL_OK; r++) {
        st = rl_decoder_fill_random(dc, p->ctx, 1234 + (uint64_t)r);
        if (r == 0) p->bytes = rl_decoder_state_bytes(dc);
        double t0 = rl_now_ms();
        for (int s = 0; s < steps && st == RL_OK; s++)
            st = rl_decoder_step(dc, logits, (int32_t)(s % 64));
        t[r] = (rl_now_ms() - t0) / steps;
    }
    if (st == RL_OK) p->ms = median_of(t, reps);
    rl_decoder_free(dc);
    return st;
}

static rl_status make_model(rl_model **m, enum rl_attn_kind kind)
{
    struct rl_model_config c;
    memset(&c, 0, sizeof c);
    rl_attn_opts_default(&c.attn);
    c.vocab = 64, c.d_model = 128, c.heads = 4, c.layers = 2;
    c.attn.kind = kind, c.attn.fmap = RL_FMAP_ELU1, c.attn.pe = RL_ATTN_PE_ROPE;
    c.attn.causal = 1;
    RL_TRY(rl_model_create(m, &c));
    rl_model_init_weights(*m, 1);
    return RL_OK;
}

static int parse_list(const char *s, int *ns, int max)
{
    int n = 0;
    while (*s && n < max) {
        char *e;
        long  v = strtol(s, &e, 10);
        if (e == s || v < 0 || v > (1 << 26) || (*e && *e != ',')) return -1;
        ns[n++] = (int)v;
        s       = *e ? e + 1 : e;
    }
    return n;
}

static void print_point(FILE *f, FILE *csv, const struct decode_point *p)
{
    const char *a = p->kind == RL_ATTN_SOFTMAX ? "softmax" : "linear";
    const char *m = p->mode == RL_DECODE_FULL ? "full" : "recurrent";
    fprintf(f, "%-8s %-10s %8d %12.4f %14zu\n", a, m, p->ctx, p->ms, p->bytes);
    fflush(f);
    if (csv)
        fprintf(csv, "%s,%s,%d,%d,%.5f,%zu\n", a, m, p->ctx, rl_threads_get(), p->ms, p->bytes);
}

int rl_bench_decode(int argc, char **argv)
{
    int         threads = 1, steps = 64, reps = 3, full_steps = 3;
    int         ns[32] = {1024, 4096, 16384, 65536}, nn = 4, fs[32] = {1024, 4096}, nf = 2;
    const char *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int         e = 0;
        if (!strcmp(a, "--decode")) continue;
        if (!(v = rl_opt_value("bench", argc, argv, &i))) return RL_EXIT_USAGE;
        if (!strcmp(a, "--threads"))
            e = rl_parse_int("bench", a, v, 1, 1024, &threads);
        else if (!strcmp(a, "--steps"))
            e = rl_parse_int("bench", a, v, 1, 100000, &steps);
        else if (!strcmp(a, "--full-steps"))
            e = rl_parse_int("bench", a, v, 1, 1000, &full_steps);
        else if (!strcmp(a, "--reps"))
            e = rl_parse_int("bench", a, v, 1, 16, &reps);
        else if (!strcmp(a, "--n"))
            e = (nn = parse_list(v, ns, 32)) < 1;
        else if (!strcmp(a, "--full-n"))
            e = (nf = parse_list(v, fs, 32)) < 0;
        else if (!strcmp(a, "--out"))
            out = v;
        else
            return rl_usage_error("bench", "unknown option '%s' with --decode", a);
        if (e && (!strcmp(a, "--n") || !strcmp(a, "--full-n")))
            return rl_usage_error("bench", "%s: bad list '%s'", a, v);
        if (e) return RL_EXIT_USAGE;
    }
    rl_cli_threads("bench", threads);
    FILE *csv = NULL;
    if (out) {
        char p[4096];
        snprintf(p, sizeof p, "%s/bench_decode.csv", out);
        if (rl_mkdir_p(out) != RL_OK || !(csv = fopen(p, "w"))) {
            fprintf(stderr, "ropelab bench: cannot write %s\n", p);
            return RL_EXIT_FAIL;
        }
        fprintf(csv, "attention,mode,context,threads,ms_per_token,state_bytes\n");
    }
    printf("# ropelab bench --decode: vocab 64, D 128, 4 heads, 2 layers, causal RoPE (linear: "
           "elu1, eq. 19); threads=%d BLIS=%s; ms per generated token after a context of the "
           "given length (median of %d x %d steps; full: %d steps); state = attention cache or "
           "state bytes\n",
           rl_threads_get(), rl_blis_arch(), reps, steps, full_steps);
    printf("%-8s %-10s %8s %12s %14s\n", "attn", "mode", "context", "ms/token", "state bytes");
    int rc = RL_EXIT_OK;
    for (int k = 0; k < 2 && rc == RL_EXIT_OK; k++) {
        rl_model *m = NULL;
        if (make_model(&m, k ? RL_ATTN_LINEAR : RL_ATTN_SOFTMAX) != RL_OK) rc = RL_EXIT_FAIL;
        for (int pass = 0; pass < 2 && rc == RL_EXIT_OK; pass++) /* recurrent, then full */
            for (int i = 0; i < (pass ? nf : nn) && rc == RL_EXIT_OK; i++) {
                struct decode_point p = {.kind = k ? RL_ATTN_LINEAR : RL_ATTN_SOFTMAX,
                                         .mode = pass ? RL_DECODE_FULL : RL_DECODE_RECURRENT,
                                         .ctx  = pass ? fs[i] : ns[i]};
                if (measure(&p, m, pass ? full_steps : steps, pass ? 1 : reps) != RL_OK)
                    rc = RL_EXIT_FAIL;
                else
                    print_point(stdout, csv, &p);
            }
        rl_model_free(m);
    }
    if (rc != RL_EXIT_OK) fprintf(stderr, "ropelab bench: %s\n", rl_last_error());
    if (csv && fclose(csv) != 0) rc = RL_EXIT_FAIL;
    return rc;
}
