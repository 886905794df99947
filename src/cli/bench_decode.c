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
    if (st == RL_OK) p->ms = rl_bench_median(t, reps);
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

static void print_point(FILE *f, FILE *csv, const struct decode_point *p)
{
    const char *a = rl_choice_name(rl_attn_kinds, (int)p->kind);
    const char *m = rl_choice_name(rl_decode_modes, (int)p->mode);
    fprintf(f, "%-8s %-10s %8d %12.4f %14zu\n", a, m, p->ctx, p->ms, p->bytes);
    fflush(f);
    if (csv)
        fprintf(csv, "%s,%s,%d,%d,%.5f,%zu\n", a, m, p->ctx, rl_threads_get(), p->ms, p->bytes);
}

struct decode_args {
    int         mode, threads, steps, reps, full_steps, ns[32], nn, fs[32], nf;
    const char *out;
};

#define A struct decode_args
const struct rl_opt rl_bench_decode_opts[] = {
    RL_OPT_FLAG("decode", 0, A, mode, 1, "generation instead of the kernels"),
    RL_OPT_INTS("n", A, ns, nn, 1, 0, 1 << 26, "N,...", "contexts (default 1024,4096,16384,65536)"),
    RL_OPT_INTS("full-n", A, fs, nf, 0, 0, 1 << 26, "N,...",
                "contexts of the full recomputation (default 1024,4096; empty: none)"),
    RL_OPT_INT("steps", A, steps, 1, 100000, "S", "generated tokens timed (default 64)"),
    RL_OPT_INT("full-steps", A, full_steps, 1, 1000, "S",
               "tokens timed with full recomputation (default 3)"),
    RL_OPT_INT("reps", A, reps, 1, 16, "R", "repetitions, median reported (default 3)"),
    RL_OPT_INT("threads", A, threads, 1, 1024, "N", "threads (default 1)"),
    RL_OPT_STRING("out", A, out, "DIR", "write DIR/bench_decode.csv (default: no CSV)"),
    RL_OPT_END};
#undef A

/* Every attention kind, recurrent at the contexts ns, then full at fs. */
static int decode_table(FILE *out, FILE *csv, const struct decode_args *a)
{
    int rc = RL_EXIT_OK;
    for (int k = 0; k < RL_ATTN_KIND_COUNT && rc == RL_EXIT_OK; k++) {
        rl_model *m = NULL;
        if (make_model(&m, (enum rl_attn_kind)k) != RL_OK) rc = RL_EXIT_FAIL;
        for (int pass = 0; pass < 2 && rc == RL_EXIT_OK; pass++) /* recurrent, then full */
            for (int i = 0; i < (pass ? a->nf : a->nn) && rc == RL_EXIT_OK; i++) {
                struct decode_point p = {.kind = (enum rl_attn_kind)k,
                                         .mode = pass ? RL_DECODE_FULL : RL_DECODE_RECURRENT,
                                         .ctx  = pass ? a->fs[i] : a->ns[i]};
                if (measure(&p, m, pass ? a->full_steps : a->steps, pass ? 1 : a->reps) != RL_OK)
                    rc = RL_EXIT_FAIL;
                else
                    print_point(out, csv, &p);
            }
        rl_model_free(m);
    }
    if (rc != RL_EXIT_OK) fprintf(stderr, "ropelab bench: %s\n", rl_last_error());
    return rc;
}

int rl_bench_decode(const struct rl_command *command, int argc, char **argv)
{
    struct decode_args a  = {.threads    = 1,
                             .steps      = 64,
                             .reps       = 3,
                             .full_steps = 3,
                             .ns         = {1024, 4096, 16384, 65536},
                             .nn         = 4,
                             .fs         = {1024, 4096},
                             .nf         = 2};
    int                rc = rl_opts_parse(command, &a, argc, argv, NULL);
    if (rc != RL_OPTS_GO_ON) return rc;
    rl_cli_threads("bench", a.threads);
    FILE *csv = a.out ? rl_bench_csv(a.out, "bench_decode.csv",
                                     "attention,mode,context,threads,ms_per_token,state_bytes\n")
                      : NULL;
    if (a.out && !csv) return RL_EXIT_FAIL;
    printf("# ropelab bench --decode: vocab 64, D 128, 4 heads, 2 layers, causal RoPE (linear: "
           "elu1, eq. 19); threads=%d BLIS=%s; ms per generated token after a context of the "
           "given length (median of %d x %d steps; full: %d steps); state = attention cache or "
           "state bytes\n",
           rl_threads_get(), rl_blis_arch(), a.reps, a.steps, a.full_steps);
    printf("%-8s %-10s %8s %12s %14s\n", "attn", "mode", "context", "ms/token", "state bytes");
    rc = decode_table(stdout, csv, &a);
    if (csv && fclose(csv) != 0) rc = RL_EXIT_FAIL;
    return rc;
}
