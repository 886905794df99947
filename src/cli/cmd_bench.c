/* cmd_bench.c -- `ropelab bench`: kernel benchmarks (and training throughput with
 * --train).  Each measurement runs in a forked child so its peak RSS is its own; the
 * parent prints a table and writes CSV.  Benchmarks are never timed tests. */
#include "config.h"
#include "../kernels/attn.h"
#include "cli.h"
#include "opts.h"
#include "../core/gemm.h"
#include "../core/threads.h"
#include "../experiment/train.h"
#include "../core/util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct bench_cfg {
    struct rl_attn_opts o;
    const char         *label;
};

struct point {
    double ms_fwd, ms_fb, rss_mb, flop_fwd, flop_fb;
    int    ok;
};

static double nominal_flops(const struct rl_attn_opts *o, double N, double d, double dv, int fb)
{
    if (o->kind == RL_ATTN_SOFTMAX) { /* QK^T + PV; backward: recompute QK^T, dV, dP, dQ, dK */
        double f = fb ? 8 * N * N * d + 6 * N * N * dv : 2 * N * N * d + 2 * N * N * dv;
        return o->causal ? f / 2 : f;
    }
    if (o->pe == RL_ATTN_PE_T5 || (o->pe == RL_ATTN_PE_ALIBI && !o->alibi_scan)) {
        double L = 2 * N; /* (d dv + d) Toeplitz products, each ~ 2 real FFTs of length 2N */
        double f = (d * dv + d) * 2 * 2.5 * L * log2(L);
        return fb ? 3 * f : f;
    }
    double f = 4 * N * d * dv; /* Phi_k^T V and Phi_q S (nominal; chunking adds O(N C d)) */
    return fb ? 3 * f : f;
}

double rl_bench_median(double *x, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && x[j] < x[j - 1]; j--) {
            double t = x[j];
            x[j] = x[j - 1], x[j - 1] = t;
        }
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* Runs in the child: fills p. */
static void measure(struct point *p, const struct rl_attn_opts *o, int H, int N, int d, int dv,
                    int reps)
{
    rl_attn *a = NULL;
    memset(p, 0, sizeof *p);
    if (rl_attn_create(&a, o, H, N, d, dv) != RL_OK) return;
    size_t nq = (size_t)H * N * d, nv = (size_t)H * N * dv;
    float *q = rl_alloc(nq * 4), *k = rl_alloc(nq * 4), *v = rl_alloc(nv * 4),
          *out = rl_alloc(nv * 4), *saved = rl_alloc((size_t)H * N * 4), *dq = rl_alloc(nq * 4),
          *dk = rl_alloc(nq * 4), *dvv = rl_alloc(nv * 4), *dout = rl_alloc(nv * 4), *t5 = NULL,
          *dt5 = NULL;
    if (o->pe == RL_ATTN_PE_T5)
        t5 = rl_alloc((size_t)H * o->t5_buckets * 4), dt5 = rl_alloc((size_t)H * o->t5_buckets * 4);
    float *lf = NULL, *dlf = NULL;
    if (o->forget) /* log gates near a fresh model's: log sigmoid(5) = -0.0067, jittered */
        lf = rl_alloc((size_t)H * N * 4), dlf = rl_alloc((size_t)H * N * 4);
    unsigned s = 12345;
    for (size_t i = 0; lf && i < (size_t)H * N; i++)
        lf[i] = -0.0067f * (((s = s * 1103515245u + 12345u) >> 9) * (1.0f / 4194304.0f));
    for (size_t i = 0; i < nq; i++)
        q[i] = ((s = s * 1103515245u + 12345u) >> 9) * (1.0f / 8388608.0f) - 1.0f;
    for (size_t i = 0; i < nq; i++)
        k[i] = ((s = s * 1103515245u + 12345u) >> 9) * (1.0f / 8388608.0f) - 1.0f;
    for (size_t i = 0; i < nv; i++)
        v[i] = dout[i] = ((s = s * 1103515245u + 12345u) >> 9) * (1.0f / 8388608.0f) - 1.0f;
    const struct rl_attn_in    in = {q, k, v, t5, lf, NULL};
    const struct rl_attn_grads gr = {dq, dk, dvv, dt5, dlf};
    double                     tf[16], tb[16];
    reps     = reps > 16 ? 16 : reps;
    int fail = 0;
    for (int r = 0; r < reps && !fail; r++) {
        double t0 = rl_now_ms();
        fail      = rl_attn_forward(a, out, saved, &in, H, NULL) != RL_OK;
        double t1 = rl_now_ms();
        fail      = fail || rl_attn_backward(a, &gr, dout, out, saved, &in, H) != RL_OK;
        double t2 = rl_now_ms();
        tf[r] = t1 - t0, tb[r] = t2 - t0;
    }
    if (fail) /* a failed call is not timed: the point reports as not run */
        fprintf(stderr, "ropelab bench: %s\n", rl_last_error());
    else {
        p->ms_fwd   = rl_bench_median(tf, reps);
        p->ms_fb    = rl_bench_median(tb, reps);
        p->flop_fwd = H * nominal_flops(o, N, d, dv, 0);
        p->flop_fb  = H * nominal_flops(o, N, d, dv, 1);
        p->rss_mb   = rl_peak_rss_kb() / 1024.0;
        p->ok       = 1;
    }
    rl_attn_free(a);
    rl_free(q), rl_free(k), rl_free(v), rl_free(out), rl_free(saved), rl_free(dq), rl_free(dk);
    rl_free(dvv), rl_free(dout), rl_free(t5), rl_free(dt5), rl_free(lf), rl_free(dlf);
}

/* Every measurement runs in a child process: a point's peak RSS is then its own, and the
 * parent never starts an OpenMP team.  GNU libgomp keeps a team's threads for the next
 * region, and a child forked after that inherits the bookkeeping without the threads: its
 * first parallel region waits for them forever (with more than one thread this bench
 * used to hang at its first point, after the BLIS reference had run in the parent). */
struct job {
    void (*run)(struct job *);
    const struct rl_attn_opts *o;
    int                        H, N, d, dv, reps; /* an attention point */
    int                        m, n, k;           /* a BLIS reference product */
    struct point               p;                 /* results */
    double                     gflops;
};

static int run_forked(struct job *j)
{
    int fd[2];
    if (pipe(fd) != 0) return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]), close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        close(fd[0]);
        j->run(j);
        ssize_t w = write(fd[1], j, sizeof *j);
        _exit(w == (ssize_t)sizeof *j ? 0 : 1);
    }
    close(fd[1]);
    struct job r;
    ssize_t    got = read(fd[0], &r, sizeof r);
    close(fd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (got != (ssize_t)sizeof r || !WIFEXITED(status) || WEXITSTATUS(status)) return -1;
    j->p = r.p, j->gflops = r.gflops;
    return 0;
}

static void point_job(struct job *j) { measure(&j->p, j->o, j->H, j->N, j->d, j->dv, j->reps); }

static void measure_forked(struct point *p, const struct rl_attn_opts *o, int H, int N, int d,
                           int dv, int reps)
{
    struct job j = {.run = point_job, .o = o, .H = H, .N = N, .d = d, .dv = dv, .reps = reps};
    if (run_forked(&j) != 0) j.p.ok = 0;
    *p = j.p;
}

static void sgemm_job(struct job *j)
{
    const int m = j->m, n = j->n, k = j->k;
    float    *A    = rl_alloc((size_t)m * k * 4);
    float    *B    = rl_alloc((size_t)k * n * 4);
    float    *C    = rl_alloc((size_t)m * n * 4);
    double    best = 1e30;
    for (int r = 0; r < 5 && A && B && C; r++) {
        double t0 = rl_now_ms();
        rl_sgemm(RL_TRANS_N, RL_TRANS_T, m, n, k, 1.0f, A, k, B, k, 0.0f, C, n);
        double t = rl_now_ms() - t0;
        best     = t < best ? t : best;
    }
    rl_free(A), rl_free(B), rl_free(C);
    j->gflops = 2.0 * m * n * k / (best * 1e6);
}

/* GFLOP/s of one BLIS product (best of 5), NaN if it could not be measured. */
static double sgemm_gflops(int m, int n, int k)
{
    struct job j = {.run = sgemm_job, .m = m, .n = n, .k = k};
    return run_forked(&j) == 0 ? j.gflops : NAN;
}

/* The kernel x PE configurations benchmarked by default; attn, pe: a value, or -1 for all;
 * causal_sel: 1 or 0, or -1 for both. */
static int make_configs(struct bench_cfg *c, int attn, int pe, int causal_sel)
{
    static const struct {
        enum rl_attn_kind kind;
        enum rl_attn_pe   pe;
        enum rl_fmap      fmap;
        int               scan; /* 1: ALiBi's decayed scan; 2: the forget gate (causal) */
        const char       *label;
    } all[] = {
        {RL_ATTN_SOFTMAX, RL_ATTN_PE_NONE, RL_FMAP_ELU1, 0, "softmax"},
        {RL_ATTN_SOFTMAX, RL_ATTN_PE_ROPE, RL_FMAP_ELU1, 0, "softmax+rope"},
        {RL_ATTN_SOFTMAX, RL_ATTN_PE_T5, RL_FMAP_ELU1, 0, "softmax+t5"},
        {RL_ATTN_SOFTMAX, RL_ATTN_PE_ALIBI, RL_FMAP_ELU1, 0, "softmax+alibi"},
        {RL_ATTN_LINEAR, RL_ATTN_PE_NONE, RL_FMAP_ELU1, 0, "linear-elu1"},
        {RL_ATTN_LINEAR, RL_ATTN_PE_ROPE, RL_FMAP_ELU1, 0, "linear-elu1+rope(eq19)"},
        {RL_ATTN_LINEAR, RL_ATTN_PE_ROPE, RL_FMAP_SOFTMAX, 0, "linear-shen+rope(eq19)"},
        {RL_ATTN_LINEAR, RL_ATTN_PE_ROPE, RL_FMAP_EXP, 0, "linear-exp+rope(eq19)"},
        {RL_ATTN_LINEAR, RL_ATTN_PE_T5, RL_FMAP_ELU1, 0, "linear-elu1+t5(fft)"},
        {RL_ATTN_LINEAR, RL_ATTN_PE_ALIBI, RL_FMAP_ELU1, 0, "linear-elu1+alibi(fft)"},
        {RL_ATTN_LINEAR, RL_ATTN_PE_ALIBI, RL_FMAP_ELU1, 1, "linear-elu1+alibi(scan)"},
        /* the forget gate beside the same kernels without it */
        {RL_ATTN_SOFTMAX, RL_ATTN_PE_NONE, RL_FMAP_ELU1, 2, "softmax+forget"},
        {RL_ATTN_SOFTMAX, RL_ATTN_PE_ROPE, RL_FMAP_ELU1, 2, "softmax+rope+forget"},
        {RL_ATTN_LINEAR, RL_ATTN_PE_NONE, RL_FMAP_ELU1, 2, "linear-elu1+forget"},
        {RL_ATTN_LINEAR, RL_ATTN_PE_ROPE, RL_FMAP_ELU1, 2, "linear-elu1+rope(eq19)+forget"},
        {RL_ATTN_LINEAR, RL_ATTN_PE_ROPE, RL_FMAP_SOFTMAX, 2, "linear-shen+rope(eq19)+forget"},
        {RL_ATTN_LINEAR, RL_ATTN_PE_ROPE, RL_FMAP_EXP, 2, "linear-exp+rope(eq19)+forget"},
    };
    int n = 0;
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        for (int causal = 1; causal >= 0; causal--) {
            if (causal_sel >= 0 && causal != causal_sel) continue;
            if (all[i].scan && !causal) continue;
            if ((attn >= 0 && attn != (int)all[i].kind) || (pe >= 0 && pe != (int)all[i].pe))
                continue;
            rl_attn_opts_default(&c[n].o);
            c[n].o.kind       = all[i].kind;
            c[n].o.pe         = all[i].pe;
            c[n].o.fmap       = all[i].fmap;
            c[n].o.alibi_scan = all[i].scan == 1;
            c[n].o.forget     = all[i].scan == 2;
            c[n].o.causal     = causal;
            c[n].label        = all[i].label;
            n++;
        }
    return n;
}

static double predicted_bytes(const struct rl_attn_opts *o, double N, int H, int d, int dv)
{
    double base = 4.0 * H * N * (3 * d + 3 * dv + 1) * 2;
    if (o->kind == RL_ATTN_SOFTMAX && N > 256) /* prepared keys: about 2 d + d + dv per row */
        base += 4.0 * H * N * (o->xpos ? 0 : (o->pe == RL_ATTN_PE_ROPE ? 2 * d : 0) + d + dv);
    if (o->kind == RL_ATTN_LINEAR &&
        (o->pe == RL_ATTN_PE_T5 || (o->pe == RL_ATTN_PE_ALIBI && !o->alibi_scan)))
        base += 8.0 * 4 * N * 64 * rl_threads_get(); /* FFT column blocks */
    return base;
}

static void print_row(FILE *f, const char *label, int causal, int N, const struct point *p,
                      double slope_fwd, double slope_fb)
{
    (void)slope_fwd, (void)slope_fb;
    fprintf(f, "%-26s %-6s %6d %10.2f %8.1f %10.2f %8.1f %8.0f\n", label,
            causal ? "causal" : "full", N, p->ms_fwd, p->flop_fwd / (p->ms_fwd * 1e6), p->ms_fb,
            p->flop_fb / (p->ms_fb * 1e6), p->rss_mb);
}

static double slope(const int *ns, const struct point *pts, int n, int fb)
{
    /* least squares of log t on log N over the measured points with N >= 4096
     * (all points when fewer than two qualify) */
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int    m = 0;
    for (int pass = 0; pass < 2 && m < 2; pass++) {
        sx = sy = sxx = sxy = 0, m = 0;
        for (int i = 0; i < n; i++) {
            if (!pts[i].ok || (pass == 0 && ns[i] < 4096)) continue;
            double x = log((double)ns[i]), y = log(fb ? pts[i].ms_fb : pts[i].ms_fwd);
            sx += x, sy += y, sxx += x * x, sxy += x * y, m++;
        }
    }
    if (m < 2) return NAN;
    return (m * sxy - sx * sy) / (m * sxx - sx * sx);
}

struct kernel_args {
    int         attn, pe, causal, H, d, dv, reps, threads, ns[32], nn;
    double      budget, mem_gb;
    const char *out;
};

#define A struct kernel_args
static const struct rl_opt kernel_opts[] = {
    RL_OPT_CHOICE_ALL("attention", A, attn, rl_attn_kinds, "kernels to time (default all)"),
    RL_OPT_CHOICE_ALL("pe", A, pe, rl_attn_pes, "attention-level PE (default all)"),
    RL_OPT_FLAG("causal", 0, A, causal, 1, "causal only (default both causalities)"),
    RL_OPT_FLAG("non-causal", 0, A, causal, 0, "non-causal only"),
    RL_OPT_INTS("n", A, ns, nn, 1, 1, 1 << 24, "N,...",
                "sequence lengths (default 1024,2048,4096,16384,65536)"),
    RL_OPT_INT("heads", A, H, 1, 1024, "H", "heads (default 4)"),
    RL_OPT_INT("d", A, d, 2, 4096, "D", "query and key dimension (default 32)"),
    RL_OPT_INT("dv", A, dv, 1, 4096, "DV", "value dimension (default 32)"),
    RL_OPT_INT("reps", A, reps, 1, 16, "R", "repetitions per point, median reported (default 3)"),
    RL_OPT_DOUBLE("budget-s", A, budget, RL_GT(0), "S",
                  "skip a point predicted to take longer than S s (default 20)"),
    RL_OPT_DOUBLE("mem-gb", A, mem_gb, RL_GT(0), "G",
                  "skip a point predicted to need more than G GiB (default 4)"),
    RL_OPT_INT("threads", A, threads, 1, 1024, "N",
               "threads (default OMP_NUM_THREADS or all cores)"),
    RL_OPT_STRING("out", A, out, "DIR", "write DIR/bench_attn.csv (default: no CSV)"),
    RL_OPT_HELP,
    RL_OPT_END};
#undef A

/* Why point N of configuration c is not measured (NULL: it is), after last_ms at last_n. */
static const char *skip_reason(char *buf, size_t len, const struct bench_cfg *c, int N,
                               const struct kernel_args *a, double last_ms, int last_n)
{
    double grow  = c->o.kind == RL_ATTN_SOFTMAX ? 2.0 : 1.1;
    double guess = last_n ? last_ms * pow((double)N / last_n, grow) * a->reps : 0;
    if (guess > a->budget * 1e3)
        snprintf(buf, len, "predicted %.0f s > --budget-s %.0f", guess / 1e3, a->budget);
    else if (predicted_bytes(&c->o, N, a->H, a->d, a->dv) > a->mem_gb * 1073741824.0)
        snprintf(buf, len, "predicted memory > --mem-gb %.1f", a->mem_gb);
    else
        return NULL;
    return buf;
}

/* One configuration over the lengths: a row per length, then the slope. */
static void bench_config(const struct bench_cfg *c, const struct kernel_args *a, FILE *csv)
{
    struct point pts[32];
    double       last_ms = 0;
    int          last_n = 0, big = 0;
    const char  *mask = c->o.causal ? "causal" : "full";
    char         why[96];
    for (int i = 0; i < a->nn; i++) {
        int N     = a->ns[i];
        pts[i].ok = 0;
        if (skip_reason(why, sizeof why, c, N, a, last_ms, last_n)) {
            printf("%-26s %-6s %6d   skipped: %s\n", c->label, mask, N, why);
            continue;
        }
        measure_forked(&pts[i], &c->o, a->H, N, a->d, a->dv, a->reps);
        if (!pts[i].ok) {
            printf("%-26s %6d   failed\n", c->label, N);
            continue;
        }
        last_ms = pts[i].ms_fb, last_n = N;
        print_row(stdout, c->label, c->o.causal, N, &pts[i], 0, 0);
        if (csv)
            fprintf(csv, "%s,%d,%d,%d,%d,%d,%d,%.4f,%.2f,%.4f,%.2f,%.1f\n", c->label, c->o.causal,
                    a->H, N, a->d, a->dv, rl_threads_get(), pts[i].ms_fwd,
                    pts[i].flop_fwd / (pts[i].ms_fwd * 1e6), pts[i].ms_fb,
                    pts[i].flop_fb / (pts[i].ms_fb * 1e6), pts[i].rss_mb);
    }
    for (int i = 0; i < a->nn; i++) /* the slope's points: N >= 4096 when two or more */
        big += pts[i].ok && a->ns[i] >= 4096;
    printf("%-26s %-6s slope log t / log N (%s): fwd %.3f, fwd+bwd %.3f\n", c->label, mask,
           big >= 2 ? "N >= 4096" : "all N", slope(a->ns, pts, a->nn, 0),
           slope(a->ns, pts, a->nn, 1));
    fflush(stdout);
}

static int bench_kernels(const struct rl_command *command, int argc, char **argv)
{
    struct kernel_args a  = {.attn   = -1,
                             .pe     = -1,
                             .causal = -1,
                             .H      = 4,
                             .d      = 32,
                             .dv     = 32,
                             .reps   = 3,
                             .ns     = {1024, 2048, 4096, 16384, 65536},
                             .nn     = 5,
                             .budget = 20,
                             .mem_gb = 4};
    int                rc = rl_opts_parse(command, &a, argc, argv, NULL);
    if (rc != RL_OPTS_GO_ON) return rc;
    rl_cli_threads("bench", a.threads);
    struct bench_cfg cfg[64];
    int              nc = make_configs(cfg, a.attn, a.pe, a.causal);
    for (int c = 0; c < nc; c++) /* a shape a kernel refuses (odd d with RoPE): before any timing */
        if (rl_attn_opts_check(&cfg[c].o, a.H, a.d, a.dv) != RL_OK)
            return rl_usage_error("bench", "%s: %s", cfg[c].label, rl_last_error());
    FILE *csv = a.out ? rl_bench_csv(a.out, "bench_attn.csv",
                                     "kernel,causal,H,N,d,dv,threads,ms_forward,gflops_forward,"
                                     "ms_fwd_bwd,gflops_fwd_bwd,peak_rss_mb\n")
                      : NULL;
    if (a.out && !csv) return RL_EXIT_FAIL;
    printf("# ropelab bench: H=%d d=%d dv=%d threads=%d BLIS=%s; median of %d reps\n", a.H, a.d,
           a.dv, rl_threads_get(), rl_blis_arch(), a.reps);
    printf("# BLIS sgemm reference: %.0f GFLOP/s (1024^3), %.0f GFLOP/s (4096x128x128)\n",
           sgemm_gflops(1024, 1024, 1024), sgemm_gflops(4096, 128, 128));
    printf("%-26s %-6s %6s %10s %8s %10s %8s %8s\n", "kernel", "mask", "N", "fwd ms", "GF/s",
           "fwd+bwd ms", "GF/s", "RSS MB");
    for (int c = 0; c < nc; c++)
        bench_config(&cfg[c], &a, csv);
    if (csv) fclose(csv);
    return RL_EXIT_OK;
}

FILE *rl_bench_csv(const char *dir, const char *name, const char *header)
{
    char  p[4096];
    FILE *f = NULL;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    if (rl_mkdir_p(dir) != RL_OK || !(f = fopen(p, "w"))) {
        fprintf(stderr, "ropelab bench: cannot write %s\n", p);
        return NULL;
    }
    fputs(header, f);
    return f;
}

static const char kernel_usage[] =
    "Usage: ropelab bench [options]\n"
    "       ropelab bench --train [options]\n"
    "       ropelab bench --decode [options]\n"
    "\n"
    "Times every attention kernel x position encoding x causality, forward and\n"
    "forward+backward, over sequence lengths; reports ms (median of --reps), GFLOP/s\n"
    "(nominal FLOP counts of docs/performance.md), peak RSS of the measuring process,\n"
    "and the slope of log(time) vs log(N).  With --train: training tokens/s instead;\n"
    "with --decode: the cost of a generated token.\n"
    "\n";
static const char train_usage[] =
    "\n"
    "Training throughput (--train): vocab 64, D 128, 4 heads, 2 layers, causal, RoPE\n"
    "(or --pe, --forget), 4096 tokens per update (4096/N rows, at least 1); per cell also\n"
    "the products' share and rate beside BLIS's own 2048^3 rate, and the serial fraction:\n"
    "the share of a 1-thread update outside parallel regions or in regions of fewer than\n"
    "16 pieces (measured on 3 extra 1-thread updates, planned as 16 threads would run\n"
    "them), with the speed-up it allows on 16 and 64 threads (Amdahl):\n";
static const char decode_usage[] =
    "\n"
    "Generation (--decode): ms per token and attention cache / state bytes after each\n"
    "context, softmax (key/value cache) and linear elu1 (eq. 19 state), the model of\n"
    "--train with random weights, recurrent and by full recomputation:\n";

/* The modes: the word that chooses one (NULL: the kernels, the default), its command (the
 * table of its file, the help), its run. */
static const struct bench_mode {
    const char       *word;
    struct rl_command command;
    int (*run)(const struct rl_command *c, int argc, char **argv);
} modes[] = {
    {NULL, {"bench", kernel_opts, kernel_usage, NULL, 0}, bench_kernels},
    {"--train", {"bench", rl_bench_train_opts, train_usage, NULL, 0}, rl_bench_train},
    {"--decode", {"bench", rl_bench_decode_opts, decode_usage, NULL, 0}, rl_bench_decode},
};
#define N_MODES (sizeof modes / sizeof modes[0])

int rl_cmd_bench(int argc, char **argv)
{
    const struct bench_mode *m = &modes[0];
    if (rl_opts_wants_help(argc, argv)) {
        for (size_t k = 0; k < N_MODES; k++)
            rl_opts_usage(stdout, &modes[k].command);
        return RL_EXIT_OK;
    }
    for (int i = 1; i < argc; i++)
        for (size_t k = 1; k < N_MODES; k++) {
            const struct bench_mode *w = &modes[k];
            if (strcmp(argv[i], w->word) || w == m) continue;
            if (m != &modes[0]) /* named in the table's order, whatever the command line's */
                return rl_usage_error("bench", "%s and %s exclude each other",
                                      (m < w ? m : w)->word, (m < w ? w : m)->word);
            m = w;
        }
    return m->run(&m->command, argc, argv);
}
