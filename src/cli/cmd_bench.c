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
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char bench_usage[] =
    "Usage: ropelab bench [options]\n"
    "\n"
    "Times every attention kernel x position encoding x causality, forward and\n"
    "forward+backward, over sequence lengths; reports ms (median of --reps), GFLOP/s\n"
    "(nominal FLOP counts of docs/performance.md), peak RSS of the measuring process,\n"
    "and the slope of log(time) vs log(N).  With --train: training tokens/s instead.\n"
    "\n"
    "  --attention softmax|linear|all  kernels to time (default all)\n"
    "  --pe none|rope|t5|alibi|all     attention-level PE (default all)\n"
    "  --causal | --non-causal         only one causality (default both)\n"
    "  --n 1024,4096,...               sequence lengths (default 1024,2048,4096,16384,65536)\n"
    "  --heads H  --d D  --dv DV       shape (default 4, 32, 32)\n"
    "  --reps R                        repetitions per point, median reported (default 3)\n"
    "  --budget-s S                    skip a point predicted to take longer than S s (default "
    "20)\n"
    "  --mem-gb G                      skip a point predicted to need more than G GiB (default 4)\n"
    "  --threads N                     threads (default OMP_NUM_THREADS or all cores)\n"
    "  --out DIR                       write DIR/bench_attn.csv (default: no CSV)\n"
    "  --train                         training throughput instead: vocab 64, D 128, 4 heads,\n"
    "                                  2 layers, causal, RoPE, 4096 tokens/update (4096/N rows,\n"
    "                                  at least 1), N = 256 and 4096, softmax and linear elu1\n"
    "                                  (with --attention softmax|linear|all, --n N,... for\n"
    "                                  other lengths, --steps S, --warmup W, --threads N,\n"
    "                                  --out DIR for DIR/bench_train.csv)\n"
    "  --decode                        generation instead: ms per token and attention cache /\n"
    "                                  state bytes after contexts --n (default 1024,4096,16384,\n"
    "                                  65536), softmax (key/value cache) and linear elu1 (eq. 19\n"
    "                                  state), model of --train; full recomputation at --full-n\n"
    "                                  (default 1024,4096; empty: none); with --steps S (64),\n"
    "                                  --full-steps S (3), --reps R (3), --threads N (default 1),\n"
    "                                  --out DIR for DIR/bench_decode.csv\n"
    "  -h, --help                      this help\n";

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

static double median(double *x, int n)
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
    unsigned s = 12345;
    for (size_t i = 0; i < nq; i++)
        q[i] = ((s = s * 1103515245u + 12345u) >> 9) * (1.0f / 8388608.0f) - 1.0f;
    for (size_t i = 0; i < nq; i++)
        k[i] = ((s = s * 1103515245u + 12345u) >> 9) * (1.0f / 8388608.0f) - 1.0f;
    for (size_t i = 0; i < nv; i++)
        v[i] = dout[i] = ((s = s * 1103515245u + 12345u) >> 9) * (1.0f / 8388608.0f) - 1.0f;
    const struct rl_attn_in    in = {q, k, v, t5, NULL};
    const struct rl_attn_grads gr = {dq, dk, dvv, dt5, NULL};
    double                     tf[16], tb[16];
    reps = reps > 16 ? 16 : reps;
    for (int r = 0; r < reps; r++) {
        double t0 = rl_now_ms();
        rl_attn_forward(a, out, saved, &in, H, NULL);
        double t1 = rl_now_ms();
        rl_attn_backward(a, &gr, dout, out, saved, &in, H);
        double t2 = rl_now_ms();
        tf[r] = t1 - t0, tb[r] = t2 - t0;
    }
    p->ms_fwd   = median(tf, reps);
    p->ms_fb    = median(tb, reps);
    p->flop_fwd = H * nominal_flops(o, N, d, dv, 0);
    p->flop_fb  = H * nominal_flops(o, N, d, dv, 1);
    p->rss_mb   = rl_peak_rss_kb() / 1024.0;
    p->ok       = 1;
    rl_attn_free(a);
    rl_free(q), rl_free(k), rl_free(v), rl_free(out), rl_free(saved), rl_free(dq), rl_free(dk);
    rl_free(dvv), rl_free(dout), rl_free(t5), rl_free(dt5);
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
    float    *A = rl_alloc((size_t)m * k * 4), *B = rl_alloc((size_t)k * n * 4),
          *C    = rl_alloc((size_t)m * n * 4);
    double best = 1e30;
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

/* The kernel x PE configurations benchmarked by default. */
static int make_configs(struct bench_cfg *c, const char *attn, const char *pe, int causal_sel)
{
    static const struct {
        int         kind, pe, fmap, scan;
        const char *label;
    } all[] = {
        {RL_ATTN_SOFTMAX, RL_ATTN_PE_NONE, 0, 0, "softmax"},
        {RL_ATTN_SOFTMAX, RL_ATTN_PE_ROPE, 0, 0, "softmax+rope"},
        {RL_ATTN_SOFTMAX, RL_ATTN_PE_T5, 0, 0, "softmax+t5"},
        {RL_ATTN_SOFTMAX, RL_ATTN_PE_ALIBI, 0, 0, "softmax+alibi"},
        {RL_ATTN_LINEAR, RL_ATTN_PE_NONE, RL_FMAP_ELU1, 0, "linear-elu1"},
        {RL_ATTN_LINEAR, RL_ATTN_PE_ROPE, RL_FMAP_ELU1, 0, "linear-elu1+rope(eq19)"},
        {RL_ATTN_LINEAR, RL_ATTN_PE_ROPE, RL_FMAP_SOFTMAX, 0, "linear-shen+rope(eq19)"},
        {RL_ATTN_LINEAR, RL_ATTN_PE_ROPE, RL_FMAP_EXP, 0, "linear-exp+rope(eq19)"},
        {RL_ATTN_LINEAR, RL_ATTN_PE_T5, RL_FMAP_ELU1, 0, "linear-elu1+t5(fft)"},
        {RL_ATTN_LINEAR, RL_ATTN_PE_ALIBI, RL_FMAP_ELU1, 0, "linear-elu1+alibi(fft)"},
        {RL_ATTN_LINEAR, RL_ATTN_PE_ALIBI, RL_FMAP_ELU1, 1, "linear-elu1+alibi(scan)"},
    };
    static const char *pes[] = {"none", "rope", "t5", "alibi"};
    int                n     = 0;
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        for (int causal = 1; causal >= 0; causal--) {
            if (causal_sel >= 0 && causal != causal_sel) continue;
            if (all[i].scan && !causal) continue;
            if (strcmp(attn, "all") && strcmp(attn, all[i].kind ? "linear" : "softmax")) continue;
            if (strcmp(pe, "all") && strcmp(pe, pes[all[i].pe])) continue;
            rl_attn_opts_default(&c[n].o);
            c[n].o.kind       = all[i].kind;
            c[n].o.pe         = all[i].pe;
            c[n].o.fmap       = all[i].fmap;
            c[n].o.alibi_scan = all[i].scan;
            c[n].o.causal     = causal;
            c[n].label        = all[i].label;
            n++;
        }
    return n;
}

static double predicted_bytes(const struct rl_attn_opts *o, double N, int H, int d, int dv)
{
    double base = 4.0 * H * N * (3 * d + 3 * dv + 1) * 2;
    if (o->kind == RL_ATTN_LINEAR &&
        (o->pe == RL_ATTN_PE_T5 || (o->pe == RL_ATTN_PE_ALIBI && !o->alibi_scan)))
        base += 8.0 * 4 * N * 64 * rl_threads_get(); /* FFT column blocks */
    return base;
}

static int bench_kernels(int argc, char **argv);

static int parse_n_list(const char *s, int *ns, int max);

/* The --n list of bench --train: lengths 16 .. 65536. */
static int train_lengths(const char *v, int *ns, int max)
{
    int nn = parse_n_list(v, ns, max);
    for (int i = 0; i < nn; i++)
        if (ns[i] < 16 || ns[i] > 65536) return -1;
    return nn;
}

/* `ropelab bench --train [--attention A] [--n N,...] [--threads N] [--steps S] [--warmup W]
 * [--out DIR]` */
static int bench_train(int argc, char **argv)
{
    int                        threads = 0, steps = 10, warmup = 2, kind = -1, ns[16], nn = 0;
    const char                *out     = NULL;
    static const struct option longs[] = {
        {"train", no_argument, NULL, 0},       {"threads", required_argument, NULL, 0},
        {"steps", required_argument, NULL, 0}, {"warmup", required_argument, NULL, 0},
        {"out", required_argument, NULL, 0},   {"attention", required_argument, NULL, 0},
        {"n", required_argument, NULL, 0},     {NULL, 0, NULL, 0}};
    struct rl_opt o = {0};
    for (int c, e; (c = rl_next_opt("bench", &o, argc, argv, ":", longs)) != -1;) {
        const char *a = o.name, *v = o.value;
        if (c == RL_OPT_ERROR) return RL_EXIT_USAGE;
        e = 0;
        if (!strcmp(a, "--train")) continue;
        if (!strcmp(a, "--threads"))
            e = rl_parse_int("bench", a, v, 1, 1024, &threads);
        else if (!strcmp(a, "--steps"))
            e = rl_parse_int("bench", a, v, 1, 100000, &steps);
        else if (!strcmp(a, "--warmup"))
            e = rl_parse_int("bench", a, v, 0, 100000, &warmup);
        else if (!strcmp(a, "--out"))
            out = v;
        else if (!strcmp(a, "--attention")) {
            if (!strcmp(v, "softmax"))
                kind = RL_ATTN_SOFTMAX;
            else if (!strcmp(v, "linear"))
                kind = RL_ATTN_LINEAR;
            else if (strcmp(v, "all"))
                return rl_usage_error("bench", "--attention: unknown value '%s'", v);
        } else if (!strcmp(a, "--n") && (nn = train_lengths(v, ns, 16)) <= 0)
            return rl_usage_error("bench", "--n: expected lengths 16 .. 65536, got '%s'", v);
        if (e) return RL_EXIT_USAGE;
    }
    if (optind < argc) return rl_usage_error("bench", "unexpected argument '%s'", argv[optind]);
    rl_cli_threads("bench", threads);
    char csv[4096];
    if (out) {
        snprintf(csv, sizeof csv, "%s/bench_train.csv", out);
        if (rl_mkdir_p(out) != RL_OK) {
            fprintf(stderr, "ropelab bench: %s\n", rl_last_error());
            return RL_EXIT_FAIL;
        }
    }
    printf("# ropelab bench --train: threads=%d BLIS=%s\n", rl_threads_get(), rl_blis_arch());
    return rl_bench_train(stdout, warmup, steps, out ? csv : NULL, kind, ns, nn) ? RL_EXIT_FAIL
                                                                                 : RL_EXIT_OK;
}

int rl_cmd_bench(int argc, char **argv)
{
    int train = 0, decode = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(bench_usage, stdout);
            return RL_EXIT_OK;
        }
        train |= !strcmp(argv[i], "--train"), decode |= !strcmp(argv[i], "--decode");
    }
    if (train && decode) return rl_usage_error("bench", "--train and --decode exclude each other");
    return train    ? bench_train(argc, argv)
           : decode ? rl_bench_decode(argc, argv)
                    : bench_kernels(argc, argv);
}

static int parse_n_list(const char *s, int *ns, int max)
{
    int   n = 0;
    char *e;
    while (*s && n < max) {
        long v = strtol(s, &e, 10);
        if (e == s || v < 1 || v > (1 << 24)) return -1;
        ns[n++] = (int)v;
        s       = *e == ',' ? e + 1 : e;
        if (*e && *e != ',') return -1;
    }
    return n;
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

static int bench_kernels(int argc, char **argv)
{
    const char                *attn = "all", *pe = "all", *out = NULL;
    int                        causal_sel = -1, H = 4, d = 32, dv = 32, reps = 3, threads = 0;
    int                        ns[32] = {1024, 2048, 4096, 16384, 65536}, nn = 5;
    double                     budget = 20, mem_gb = 4;
    static const struct option longs[] = {
        {"causal", no_argument, NULL, 0},          {"non-causal", no_argument, NULL, 0},
        {"attention", required_argument, NULL, 0}, {"pe", required_argument, NULL, 0},
        {"out", required_argument, NULL, 0},       {"n", required_argument, NULL, 0},
        {"heads", required_argument, NULL, 0},     {"d", required_argument, NULL, 0},
        {"dv", required_argument, NULL, 0},        {"reps", required_argument, NULL, 0},
        {"threads", required_argument, NULL, 0},   {"budget-s", required_argument, NULL, 0},
        {"mem-gb", required_argument, NULL, 0},    {NULL, 0, NULL, 0}};
    struct rl_opt o = {0};
    for (int c, e; (c = rl_next_opt("bench", &o, argc, argv, ":", longs)) != -1;) {
        const char *a = o.name, *v = o.value;
        if (c == RL_OPT_ERROR) return RL_EXIT_USAGE;
        e = 0;
        if (!strcmp(a, "--causal")) {
            causal_sel = 1;
            continue;
        }
        if (!strcmp(a, "--non-causal")) {
            causal_sel = 0;
            continue;
        }
        if (!strcmp(a, "--attention"))
            attn = v;
        else if (!strcmp(a, "--pe"))
            pe = v;
        else if (!strcmp(a, "--out"))
            out = v;
        else if (!strcmp(a, "--n")) {
            if ((nn = parse_n_list(v, ns, 32)) <= 0)
                return rl_usage_error("bench", "--n: bad list '%s'", v);
        } else if (!strcmp(a, "--heads"))
            e = rl_parse_int("bench", a, v, 1, 1024, &H);
        else if (!strcmp(a, "--d"))
            e = rl_parse_int("bench", a, v, 2, 4096, &d);
        else if (!strcmp(a, "--dv"))
            e = rl_parse_int("bench", a, v, 1, 4096, &dv);
        else if (!strcmp(a, "--reps"))
            e = rl_parse_int("bench", a, v, 1, 16, &reps);
        else if (!strcmp(a, "--threads"))
            e = rl_parse_int("bench", a, v, 1, 1024, &threads);
        else if (!strcmp(a, "--budget-s"))
            e = rl_parse_double("bench", a, v, &budget);
        else if (!strcmp(a, "--mem-gb"))
            e = rl_parse_double("bench", a, v, &mem_gb);
        if (e) return RL_EXIT_USAGE;
    }
    if (optind < argc) return rl_usage_error("bench", "unexpected argument '%s'", argv[optind]);
    if (!(budget > 0))
        return rl_usage_error("bench", "--budget-s: expected a number > 0, got %g", budget);
    if (!(mem_gb > 0))
        return rl_usage_error("bench", "--mem-gb: expected a number > 0, got %g", mem_gb);
    if (strcmp(attn, "all") && strcmp(attn, "softmax") && strcmp(attn, "linear"))
        return rl_usage_error("bench", "--attention: unknown value '%s'", attn);
    if (strcmp(pe, "all") && strcmp(pe, "none") && strcmp(pe, "rope") && strcmp(pe, "t5") &&
        strcmp(pe, "alibi"))
        return rl_usage_error("bench", "--pe: unknown value '%s'", pe);
    rl_cli_threads("bench", threads);
    struct bench_cfg cfg[32];
    int              nc = make_configs(cfg, attn, pe, causal_sel);
    for (int c = 0; c < nc; c++) /* a shape a kernel refuses (odd d with RoPE): before any timing */
        if (rl_attn_opts_check(&cfg[c].o, H, d, dv) != RL_OK)
            return rl_usage_error("bench", "%s: %s", cfg[c].label, rl_last_error());
    FILE *csv = NULL;
    if (out) {
        char p[4096];
        snprintf(p, sizeof p, "%s/bench_attn.csv", out);
        if (rl_mkdir_p(out) != RL_OK || !(csv = fopen(p, "w"))) {
            fprintf(stderr, "ropelab bench: cannot write %s\n", p);
            return RL_EXIT_FAIL;
        }
        fprintf(csv, "kernel,causal,H,N,d,dv,threads,ms_forward,gflops_forward,ms_fwd_bwd,gflops_"
                     "fwd_bwd,peak_rss_mb\n");
    }
    printf("# ropelab bench: H=%d d=%d dv=%d threads=%d BLIS=%s; median of %d reps\n", H, d, dv,
           rl_threads_get(), rl_blis_arch(), reps);
    printf("# BLIS sgemm reference: %.0f GFLOP/s (1024^3), %.0f GFLOP/s (4096x128x128)\n",
           sgemm_gflops(1024, 1024, 1024), sgemm_gflops(4096, 128, 128));
    printf("%-26s %-6s %6s %10s %8s %10s %8s %8s\n", "kernel", "mask", "N", "fwd ms", "GF/s",
           "fwd+bwd ms", "GF/s", "RSS MB");
    for (int c = 0; c < nc; c++) {
        struct point pts[32];
        double       last_ms = 0;
        int          last_n  = 0;
        for (int i = 0; i < nn; i++) {
            int    N     = ns[i];
            double grow  = cfg[c].o.kind == RL_ATTN_SOFTMAX ? 2.0 : 1.1;
            double guess = last_n ? last_ms * pow((double)N / last_n, grow) * reps : 0;
            pts[i].ok    = 0;
            if (guess > budget * 1e3) {
                printf("%-26s %-6s %6d   skipped: predicted %.0f s > --budget-s %.0f\n",
                       cfg[c].label, cfg[c].o.causal ? "causal" : "full", N, guess / 1e3, budget);
                continue;
            }
            if (predicted_bytes(&cfg[c].o, N, H, d, dv) > mem_gb * 1073741824.0) {
                printf("%-26s %-6s %6d   skipped: predicted memory > --mem-gb %.1f\n", cfg[c].label,
                       cfg[c].o.causal ? "causal" : "full", N, mem_gb);
                continue;
            }
            measure_forked(&pts[i], &cfg[c].o, H, N, d, dv, reps);
            if (!pts[i].ok) {
                printf("%-26s %6d   failed\n", cfg[c].label, N);
                continue;
            }
            last_ms = pts[i].ms_fb, last_n = N;
            print_row(stdout, cfg[c].label, cfg[c].o.causal, N, &pts[i], 0, 0);
            if (csv)
                fprintf(csv, "%s,%d,%d,%d,%d,%d,%d,%.4f,%.2f,%.4f,%.2f,%.1f\n", cfg[c].label,
                        cfg[c].o.causal, H, N, d, dv, rl_threads_get(), pts[i].ms_fwd,
                        pts[i].flop_fwd / (pts[i].ms_fwd * 1e6), pts[i].ms_fb,
                        pts[i].flop_fb / (pts[i].ms_fb * 1e6), pts[i].rss_mb);
        }
        int big = 0; /* the slope's points: N >= 4096 when two or more were measured */
        for (int i = 0; i < nn; i++)
            big += pts[i].ok && ns[i] >= 4096;
        printf("%-26s %-6s slope log t / log N (%s): fwd %.3f, fwd+bwd %.3f\n", cfg[c].label,
               cfg[c].o.causal ? "causal" : "full", big >= 2 ? "N >= 4096" : "all N",
               slope(ns, pts, nn, 0), slope(ns, pts, nn, 1));
        fflush(stdout);
    }
    if (csv) fclose(csv);
    return RL_EXIT_OK;
}
