/* bench_train.c -- `ropelab bench --train`: the table (and CSV) of training throughput
 * over the four cells of the peer comparison, each measured by rl_bench_train_cell, as
 * tokens/s, as GFLOP/s (FLOPs per token from model/flops.h) and as a percentage of the
 * FMA peak that this run measures itself (core/peak.h) for the same thread count, so
 * that the percentage means the same on any machine.  The peak is measured at start-up
 * and again before every cell, and each row divides by the highest rate measured so far:
 * on a shared host one short measurement can catch a moment when a core is taken (a
 * 2-thread peak of 103 GFLOP/s instead of 200 was seen), which would inflate the rows.
 * Beside it, BLIS's own rate on a 2048^3 product (measured likewise, the best so far) next
 * to the rate of the model's products, and the serial fraction of each cell with the
 * speed-up it allows at 16 and 64 threads (experiment/train.h). */
#include "config.h"
#include "cli.h"
#include "opts.h"
#include "../core/gemm.h"
#include "../core/threads.h"
#include "../core/peak.h"
#include "../core/status.h"
#include "../experiment/train.h"

#include <stdio.h>

struct peak {
    double g512, g256, best; /* GFLOP/s; 0 where the width is not supported */
    double blis, blis_best;  /* sgemm 2048^3 */
};

#define BLIS_N 2048

/* Measures both widths and BLIS; p->best becomes the larger, or stays where it was if
 * higher (and p->blis_best likewise). */
static void measure_peak(struct peak *p, int threads)
{
    p->g512    = rl_peak_gflops(512, threads, 300);
    p->g256    = rl_peak_gflops(256, threads, 300);
    double now = p->g512 > p->g256 ? p->g512 : p->g256;
    if (now > p->best) p->best = now;
    p->blis = rl_peak_sgemm_gflops(BLIS_N, 3);
    if (p->blis > p->blis_best) p->blis_best = p->blis;
}

static void print_header(FILE *out, const struct peak *p, int steps, int pe, int forget)
{
    int t = rl_threads_get();
    fprintf(out,
            "training throughput: vocab 64, D 128, 4 heads, 2 layers, causal, pe %s%s, "
            "4096 tokens/update, %d thread%s, BLIS %s; median of %d updates\n",
            rl_choice_name(rl_attn_pes, pe), forget ? ", forget gate" : "", t, t == 1 ? "" : "s",
            rl_blis_arch(), steps);
    fprintf(out, "FMA peak measured now on %d thread%s: AVX-512 ", t, t == 1 ? "" : "s");
    fprintf(out, p->g512 > 0 ? "%.1f GFLOP/s" : "n/a", p->g512);
    fprintf(out, ", AVX2 ");
    fprintf(out, p->g256 > 0 ? "%.1f GFLOP/s" : "n/a", p->g256);
    fprintf(out, "; %% of peak below is of the column peak: the larger, or a higher rate measured "
                 "again before a cell\n");
    fprintf(out,
            "BLIS sgemm %d^3 measured now on %d thread%s: %.1f GFLOP/s (column BLIS: the best "
            "so far, beside the model's products' rate, prod)\n",
            BLIS_N, t, t == 1 ? "" : "s", p->blis);
    fprintf(out, "serial: the share of a 1-thread update that cannot spread over 16 threads (time "
                 "outside parallel regions, and regions of fewer pieces); max16, max64: the "
                 "speed-up it allows on 16 and 64 threads (Amdahl)\n");
    fprintf(out,
            "%-14s %6s %5s %12s %10s %10s %10s %10s %10s %8s %7s %7s %8s %8s %7s %7s %7s %6s "
            "%6s\n",
            "attention", "N", "batch", "tokens/s", "fwd ms", "bwd ms", "opt ms", "step ms",
            "MFLOP/tok", "GFLOP/s", "peak", "% peak", "in prod", "prod pk", "prod", "BLIS",
            "serial", "max16", "max64");
}

static void print_row(FILE *out, const struct rl_bench_train_cell *c, const struct peak *pk, int t)
{
    double gf  = c->tokens_per_s * c->flops_per_token / 1e9;
    double pct = pk->best > 0 ? 100.0 * gf / pk->best : 0;
    double ppk = pk->best > 0 ? 100.0 * c->products_gflops_per_thread * t / pk->best : 0;
    char   name[32];
    snprintf(name, sizeof name, c->kind == RL_ATTN_LINEAR ? "%s (%s)" : "%s",
             rl_choice_name(rl_attn_kinds, (int)c->kind), rl_choice_name(rl_fmaps, RL_FMAP_ELU1));
    fprintf(out,
            "%-14s %6d %5d %12.0f %10.2f %10.2f %10.2f %10.2f %10.3f %8.1f %7.1f %6.1f%% %7.1f%% "
            "%7.1f%% %7.1f %7.1f %6.2f%% %6.1f %6.1f\n",
            name, c->N, c->B, c->tokens_per_s, c->ms_forward, c->ms_backward, c->ms_optimizer,
            c->ms_step, c->flops_per_token / 1e6, gf, pk->best, pct, 100.0 * c->products_time_share,
            ppk, c->products_gflops_per_thread * t, pk->blis_best, 100.0 * c->serial16, c->amdahl16,
            c->amdahl64);
}

static void csv_row(FILE *csv, const struct rl_bench_train_cell *c, const struct peak *pk, int t)
{
    double gf  = c->tokens_per_s * c->flops_per_token / 1e9;
    double pct = pk->best > 0 ? 100.0 * gf / pk->best : 0;
    double ppk = pk->best > 0 ? 100.0 * c->products_gflops_per_thread * t / pk->best : 0;
    fprintf(csv,
            "%s,%d,%d,%d,%.1f,%.4f,%.4f,%.4f,%.4f,%.0f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.3f,"
            "%.3f,%.2f,%.2f\n",
            rl_choice_name(rl_attn_kinds, (int)c->kind), c->N, c->B, t, c->tokens_per_s,
            c->ms_forward, c->ms_backward, c->ms_optimizer, c->ms_step, c->flops_per_token, gf,
            pk->best, pct, 100.0 * c->products_time_share, ppk, c->products_gflops_per_thread * t,
            pk->blis_best, 100.0 * c->serial16, 100.0 * c->serial64, c->amdahl16, c->amdahl64);
}

struct train_args {
    int         mode, threads, steps, warmup, kind, pe, forget, ns[16], nn, regions;
    const char *out;
};

#define A struct train_args
const struct rl_opt rl_bench_train_opts[] = {
    RL_OPT_FLAG("train", 0, A, mode, 1, "training throughput instead of the kernels"),
    RL_OPT_CHOICE_ALL("attention", A, kind, rl_attn_kinds,
                      "attention kinds (default all; linear with elu1)"),
    RL_OPT_CHOICE("pe", A, pe, rl_attn_pes,
                  "attention-level PE (default rope; linear alibi: its O(N) decayed scan)"),
    RL_OPT_FLAG("forget", 0, A, forget, 1, "the forget gate in every block"),
    RL_OPT_INTS("n", A, ns, nn, 1, 16, 65536, "N,...", "sequence lengths (default 256,4096)"),
    RL_OPT_INT("steps", A, steps, 1, 100000, "S", "timed updates, median reported (default 10)"),
    RL_OPT_INT("warmup", A, warmup, 0, 100000, "W", "untimed updates first (default 2)"),
    RL_OPT_INT("threads", A, threads, 1, 1024, "N",
               "threads (default OMP_NUM_THREADS or all cores)"),
    RL_OPT_STRING("out", A, out, "DIR", "write DIR/bench_train.csv (default: no CSV)"),
    RL_OPT_FLAG("regions", 0, A, regions, 1,
                "after each row, its parallel regions: ms per update, calls, pieces"),
    RL_OPT_END};
#undef A

/* The region profile of a cell's timed updates (--regions): per region (named after its
 * piece function, or the function that opens it), ms per update, share of the update,
 * calls per update and pieces per call; then the time outside every region. */
static void print_regions(FILE *out, const struct rl_bench_train_cell *c, int steps)
{
    struct rl_region_site rows[RL_REGION_SITES_MAX];
    const int             n      = rl_region_sites_get(rows, RL_REGION_SITES_MAX);
    const double          upd    = c->ms_timed / steps;
    double                inside = 0;
    fprintf(out, "  %-36s %9s %7s %9s %9s\n", "region", "ms/upd", "share", "calls/upd", "pieces");
    for (int i = 0; i < n; i++) {
        const double ms = rows[i].ms / steps;
        inside += ms;
        fprintf(out, "  %-36s %9.3f %6.1f%% %9.1f %9.1f\n", rows[i].name, ms,
                upd > 0 ? 100.0 * ms / upd : 0, (double)rows[i].calls / steps,
                (double)rows[i].pieces / (double)rows[i].calls);
    }
    fprintf(out, "  %-36s %9.3f %6.1f%%\n", "(outside the regions)", upd - inside,
            upd > 0 ? 100.0 * (upd - inside) / upd : 0);
}

/* The rows: each attention kind asked for at each length. */
static int train_table(FILE *out, FILE *csv, const struct train_args *a)
{
    static const int default_ns[] = {256, 4096};
    const int       *ns = a->nn ? a->ns : default_ns, nn = a->nn ? a->nn : 2;
    struct peak      pk = {0};
    measure_peak(&pk, rl_threads_get());
    print_header(out, &pk, a->steps, a->pe, a->forget);
    int rc = 0, ran = 0, t = rl_threads_get();
    for (int i = 0; i < RL_ATTN_KIND_COUNT * nn && !rc; i++) {
        const enum rl_attn_kind k = (enum rl_attn_kind)(i % RL_ATTN_KIND_COUNT);
        const int               N = ns[i / RL_ATTN_KIND_COUNT];
        if (a->kind >= 0 && (int)k != a->kind) continue;
        struct rl_bench_train_cell c = {.kind    = k,
                                        .pe      = (enum rl_attn_pe)a->pe,
                                        .forget  = a->forget,
                                        .N       = N,
                                        .B       = N < 4096 ? 4096 / N : 1,
                                        .regions = a->regions};
        if (ran++ > 0) measure_peak(&pk, rl_threads_get()); /* start-up's serves the first */
        if (rl_bench_train_cell(&c, a->warmup, a->steps) != RL_OK) {
            fprintf(stderr, "ropelab bench: %s\n", rl_last_error());
            rc = 1;
            break;
        }
        print_row(out, &c, &pk, t);
        if (a->regions) print_regions(out, &c, a->steps);
        fflush(out);
        if (csv) csv_row(csv, &c, &pk, t);
    }
    return rc;
}

int rl_bench_train(const struct rl_command *command, int argc, char **argv)
{
    struct train_args a  = {.steps = 10, .warmup = 2, .kind = -1, .pe = RL_ATTN_PE_ROPE};
    int               rc = rl_opts_parse(command, &a, argc, argv, NULL);
    if (rc != RL_OPTS_GO_ON) return rc;
    rl_cli_threads("bench", a.threads);
    FILE *csv = a.out ? rl_bench_csv(a.out, "bench_train.csv",
                                     "attention,N,batch,threads,tokens_per_s,ms_forward,"
                                     "ms_backward,ms_optimizer,ms_step,flops_per_token,gflops,"
                                     "peak_gflops,pct_peak,products_time_pct,products_pct_peak,"
                                     "products_gflops,blis_gflops,serial_pct,serial64_pct,"
                                     "amdahl16,amdahl64\n")
                      : NULL;
    if (a.out && !csv) return RL_EXIT_FAIL;
    printf("# ropelab bench --train: threads=%d BLIS=%s\n", rl_threads_get(), rl_blis_arch());
    rc = train_table(stdout, csv, &a);
    if (csv && fclose(csv) != 0) rc = 1;
    return rc ? RL_EXIT_FAIL : RL_EXIT_OK;
}
