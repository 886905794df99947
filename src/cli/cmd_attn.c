/* cmd_attn.c -- `ropelab attn`: the numeric interface to the kernels.
 * Reads DIR/q.npy (H,N,d), k.npy (H,N,d), v.npy (H,N,dv), optional t5_bias.npy
 * (H,buckets), with --forget logf.npy (H,N), and dout.npy (H,N,dv); writes OUT/out.npy,
 * and with dout dq.npy, dk.npy, dv.npy (and dt5_bias.npy, dlogf.npy), plus
 * OUT/stats.json. */
#include "config.h"
#include "../kernels/attn.h"
#include "cli.h"
#include "opts.h"
#include "../core/threads.h"
#include "../core/npy.h"
#include "../core/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct attn_args {
    const char         *in, *out;
    struct rl_attn_opts o;
    int                 threads, t5_buckets; /* t5_buckets: --t5-buckets, 0 = not given */
};

#define A struct attn_args
static const struct rl_opt attn_opts[] = {
    RL_OPT_STRING("in", A, in, "DIR",
                  "directory of q.npy, k.npy, v.npy, t5_bias.npy, logf.npy, dout.npy"),
    RL_OPT_STRING("out", A, out, "DIR", "directory of the outputs (made if missing)"),
    RL_OPT_CHOICE("attention", A, o.kind, rl_attn_kinds, "kernel (default softmax)"),
    RL_OPT_CHOICE("feature-map", A, o.fmap, rl_fmaps,
                  "linear-attention feature map (default elu1)"),
    RL_OPT_CHOICE("pe", A, o.pe, rl_attn_pes, "attention-level position encoding (default none)"),
    RL_OPT_FLAG("causal", 0, A, o.causal, 1, "causal (n <= m); default non-causal"),
    RL_OPT_DOUBLE("rope-base", A, o.rope.base, RL_ANY, "B", "RoPE base (default 10000)"),
    RL_OPT_CHOICE("rope-layout", A, o.rope.layout, rl_rope_layouts, "RoPE pairing (default pairs)"),
    RL_OPT_INT("rope-dims", A, o.rope.dims, 1, 1 << 20, "R",
               "rotate only the first R dims (default d)"),
    RL_OPT_DOUBLE("rope-scale", A, o.rope.scale, RL_ANY, "S",
                  "position interpolation m -> m/S (default 1)"),
    RL_OPT_DOUBLE("rope-ntk", A, o.rope.ntk, RL_ANY, "A", "NTK-aware base scaling (default 1)"),
    RL_OPT_DOUBLE("rope-yarn", A, o.rope.yarn, RL_ANY, "S",
                  "YaRN factor (default 1 = off; excludes --rope-scale and --rope-ntk); softmax "
                  "also multiplies rotated q, k (all d features) by 0.1 ln S + 1"),
    RL_OPT_INT("rope-yarn-orig", A, o.rope.yarn_orig, 1, 1 << 30, "L",
               "YaRN's trained context L (default N of the input)"),
    RL_OPT_FLAG("xpos", 0, A, o.xpos, 1, "xPos decay on RoPE (softmax, causal, --pe rope)"),
    RL_OPT_DOUBLE("xpos-scale-base", A, o.xpos_scale_base, RL_ANY, "G", "xPos gamma (default 512)"),
    RL_OPT_CHOICE("rope-place", A, o.rope_place, rl_rope_places,
                  "linear attention: where RoPE rotates (default feature)"),
    RL_OPT_CHOICE("rope-denominator", A, o.rope_denominator, rl_rope_denoms,
                  "linear attention: the denominator (default plain)"),
    RL_OPT_INT("t5-buckets", A, t5_buckets, 2, 1 << 20, "NB",
               "must equal t5_bias.npy's second dimension (default: that dimension)"),
    RL_OPT_INT("t5-max-distance", A, o.t5_max_distance, 1, 1 << 30, "M",
               "T5 max distance (default 128)"),
    RL_OPT_FLAG("alibi-scan", 0, A, o.alibi_scan, 1,
                "linear causal ALiBi by the O(N) decayed scan (else FFT)"),
    RL_OPT_FLOAT("eps", A, o.eps, RL_ANY, "E", "linear-attention epsilon (default 1e-6)"),
    RL_OPT_FLAG("forget", 0, A, o.forget, 1,
                "forget gate (needs --causal): logf.npy holds log forget values lambda[h,l] "
                "<= 0; the pair n <= m is weighted by exp(lambda[n+1] + ... + lambda[m]) (a "
                "score term in softmax, a decay in linear attention)"),
    RL_OPT_INT("threads", A, threads, 1, 1024, "N",
               "threads (default OMP_NUM_THREADS or all cores)"),
    RL_OPT_HELP,
    RL_OPT_END};
#undef A

static const struct rl_command attn_command = {
    "attn", attn_opts,
    "Usage: ropelab attn --in DIR --out DIR [options]\n"
    "\n"
    "Runs one attention kernel on float32 .npy arrays: DIR/q.npy (H,N,d), k.npy (H,N,d),\n"
    "v.npy (H,N,dv), optional t5_bias.npy (H,buckets) and dout.npy (H,N,dv), and with\n"
    "--forget logf.npy (H,N); float64 or big-endian arrays are read and rounded to\n"
    "float32.  Writes OUT/out.npy; with dout also dq.npy, dk.npy, dv.npy (and\n"
    "dt5_bias.npy, dlogf.npy); and OUT/stats.json (time, and for linear attention the\n"
    "rows whose denominator <= eps).\n"
    "\n",
    NULL, 0};

/* Returns RL_OPTS_GO_ON, or an exit status. */
static int parse_args(struct attn_args *A, int argc, char **argv)
{
    int rc;
    memset(A, 0, sizeof *A);
    rl_attn_opts_default(&A->o);
    if ((rc = rl_opts_parse(&attn_command, A, argc, argv, NULL)) != RL_OPTS_GO_ON) return rc;
    if (!A->in || !A->out) return rl_usage_error("attn", "--in DIR and --out DIR are required");
    if (!A->in[0]) return rl_usage_error("attn", "--in: expected a directory, got ''");
    if (!A->out[0]) return rl_usage_error("attn", "--out: expected a directory, got ''");
    if (A->o.forget && !A->o.causal)
        return rl_usage_error("attn", "--forget needs --causal (the gate weighs n <= m only)");
    return RL_OPTS_GO_ON;
}

struct arrays {
    float  *q, *k, *v, *t5, *dout, *logf;
    int64_t sq[3], sk[3], sv[3], st5[2], sd[3], sl[2];
};

static void free_arrays(struct arrays *X)
{
    free(X->q), free(X->k), free(X->v), free(X->t5), free(X->dout), free(X->logf);
}

#define ATTN_MAX_ABS 1e18 /* beyond this, q k^T and the feature maps overflow float32 */

/* Every element finite and |x| <= ATTN_MAX_ABS, else a usage error naming the array and
 * the index of the first bad element. */
static int check_finite(const char *name, const float *x, const int64_t *shape, int nd)
{
    size_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= (size_t)shape[i];
    for (size_t i = 0; i < n; i++) {
        if (isfinite(x[i]) && fabsf(x[i]) <= ATTN_MAX_ABS) continue;
        char    at[96];
        size_t  r      = i;
        int     len    = 0;
        int64_t idx[3] = {0, 0, 0};
        for (int k = nd - 1; k >= 0; k--)
            idx[k] = (int64_t)(r % (size_t)shape[k]), r /= (size_t)shape[k];
        for (int k = 0; k < nd; k++)
            len += snprintf(at + len, sizeof at - (size_t)len, "%s%lld", k ? "," : "",
                            (long long)idx[k]);
        return rl_usage_error("attn", "%s[%s] = %g: inputs must be finite with |x| <= %g", name, at,
                              (double)x[i], ATTN_MAX_ABS);
    }
    return -1;
}

/* The log forget values: shape (H, N), every value finite and <= 0 (a gate in (0, 1]),
 * else a usage error naming the index of the first bad value. */
static int check_logf(const struct arrays *X)
{
    if (X->sl[0] != X->sq[0] || X->sl[1] != X->sq[1])
        return rl_usage_error("attn", "logf.npy must be (H, N) = (%lld,%lld), got (%lld,%lld)",
                              (long long)X->sq[0], (long long)X->sq[1], (long long)X->sl[0],
                              (long long)X->sl[1]);
    const size_t n = (size_t)X->sl[0] * (size_t)X->sl[1];
    for (size_t i = 0; i < n; i++)
        if (!(isfinite(X->logf[i]) && X->logf[i] <= 0.0f))
            return rl_usage_error("attn",
                                  "logf.npy[%zu,%zu] = %g: log forget values must be finite "
                                  "and <= 0",
                                  i / (size_t)X->sl[1], i % (size_t)X->sl[1], (double)X->logf[i]);
    return -1;
}

/* Loads the inputs; returns an exit status or -1. */
static int load_arrays(struct arrays *X, struct attn_args *A)
{
    char p[4096];
    memset(X, 0, sizeof *X);
#define LOAD(name, ptr, shp, nd)                                                                   \
    snprintf(p, sizeof p, "%s/%s", A->in, name);                                                   \
    if (rl_npy_read_f32(&X->ptr, X->shp, nd, p) != RL_OK) {                                        \
        fprintf(stderr, "ropelab attn: %s\n", rl_last_error());                                    \
        return RL_EXIT_USAGE;                                                                      \
    }
    LOAD("q.npy", q, sq, 3)
    LOAD("k.npy", k, sk, 3)
    LOAD("v.npy", v, sv, 3)
    snprintf(p, sizeof p, "%s/t5_bias.npy", A->in);
    if (rl_path_exists(p)) {
        LOAD("t5_bias.npy", t5, st5, 2)
    }
    snprintf(p, sizeof p, "%s/dout.npy", A->in);
    if (rl_path_exists(p)) {
        LOAD("dout.npy", dout, sd, 3)
    }
    snprintf(p, sizeof p, "%s/logf.npy", A->in);
    if (A->o.forget && !rl_path_exists(p)) {
        return rl_usage_error("attn", "--forget needs %s (H x N log forget values)", p);
    } else if (A->o.forget) {
        LOAD("logf.npy", logf, sl, 2)
    } else if (rl_path_exists(p)) {
        return rl_usage_error("attn", "logf.npy given but --forget is not set");
    }
#undef LOAD
    int64_t H = X->sq[0], N = X->sq[1], d = X->sq[2];
    if (H < 1 || N < 1 || d < 1) return rl_usage_error("attn", "q.npy: empty shape");
    if (X->sk[0] != H || X->sk[1] != N || X->sk[2] != d)
        return rl_usage_error("attn", "k.npy shape must equal q.npy's (%lld,%lld,%lld)",
                              (long long)H, (long long)N, (long long)d);
    if (X->sv[0] != H || X->sv[1] != N || X->sv[2] < 1)
        return rl_usage_error("attn", "v.npy must be (%lld,%lld,dv)", (long long)H, (long long)N);
    if (X->dout && (X->sd[0] != H || X->sd[1] != N || X->sd[2] != X->sv[2]))
        return rl_usage_error("attn", "dout.npy must have v.npy's shape");
    if (A->o.pe == RL_ATTN_PE_T5) {
        if (!X->t5)
            return rl_usage_error("attn", "--pe t5 needs %s/t5_bias.npy (H x buckets)", A->in);
        if (X->st5[0] != H)
            return rl_usage_error("attn", "t5_bias.npy must have H=%lld rows", (long long)H);
        if (A->t5_buckets && A->t5_buckets != X->st5[1])
            return rl_usage_error("attn",
                                  "--t5-buckets %d disagrees with t5_bias.npy (%lld buckets)",
                                  A->t5_buckets, (long long)X->st5[1]);
        A->o.t5_buckets = (int)X->st5[1];
    } else if (X->t5) {
        return rl_usage_error("attn", "t5_bias.npy given but --pe is not t5");
    }
    if (N > (1 << 26) || d > (1 << 16) || X->sv[2] > (1 << 16))
        return rl_usage_error("attn", "arrays too large");
    int rc = check_finite("q.npy", X->q, X->sq, 3);
    if (rc < 0) rc = check_finite("k.npy", X->k, X->sk, 3);
    if (rc < 0) rc = check_finite("v.npy", X->v, X->sv, 3);
    if (rc < 0 && X->t5) rc = check_finite("t5_bias.npy", X->t5, X->st5, 2);
    if (rc < 0 && X->dout) rc = check_finite("dout.npy", X->dout, X->sd, 3);
    if (rc < 0 && X->logf) rc = check_logf(X);
    return rc;
}

static int write_out(const char *dir, const char *name, const float *x, int nd,
                     const int64_t *shape)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return rl_npy_write_f32(p, x, nd, shape) != RL_OK;
}

static int write_stats(const char *dir, const struct attn_args *A, const struct rl_attn_stats *fs,
                       double ms_bwd, int H, int N, int d, int dv)
{
    char p[4096], desc[128], body[2048];
    snprintf(p, sizeof p, "%s/stats.json", dir);
    int n = snprintf(body, sizeof body,
                     "{\n  \"kernel\": \"%s\",\n  \"H\": %d, \"N\": %d, \"d\": %d, \"dv\": %d,\n"
                     "  \"threads\": %d,\n  \"ms_forward\": %.3f,\n  \"ms_backward\": %.3f",
                     rl_attn_describe(&A->o, desc, sizeof desc), H, N, d, dv, rl_threads_get(),
                     fs->ms, ms_bwd);
    if (A->o.kind == RL_ATTN_LINEAR)
        n += snprintf(body + n, sizeof body - (size_t)n,
                      ",\n  \"eps\": %g,\n  \"rows_denominator_le_eps\": %ld", (double)A->o.eps,
                      fs->bad_denominators);
    n += snprintf(body + n, sizeof body - (size_t)n, "\n}\n");
    return rl_write_file_atomic(p, body, (size_t)n, NULL, 0) != RL_OK;
}

static int run_kernel(struct attn_args *A, struct arrays *X)
{
    int      H = (int)X->sq[0], N = (int)X->sq[1], d = (int)X->sq[2], dv = (int)X->sv[2];
    rl_attn *plan = NULL;
    if (rl_attn_opts_check(&A->o, H, d, dv) != RL_OK)
        return rl_usage_error("attn", "%s", rl_last_error());
    if (rl_attn_create(&plan, &A->o, H, N, d, dv) != RL_OK) {
        fprintf(stderr, "ropelab attn: %s\n", rl_last_error());
        return RL_EXIT_FAIL;
    }
    size_t nq = (size_t)H * N * d, nv = (size_t)H * N * dv;
    float *o = calloc(nv, sizeof(float)), *saved = calloc((size_t)H * N, sizeof(float));
    float *dq = NULL, *dk = NULL, *dvv = NULL, *dt5 = NULL, *dlf = NULL;
    int    rc                   = RL_EXIT_FAIL;
    struct rl_attn_stats fs     = {0};
    double               ms_bwd = 0;
    if (!o || !saved) {
        rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "cannot allocate the outputs");
        goto done;
    }
    const struct rl_attn_in in = {X->q, X->k, X->v, X->t5, X->logf, NULL};
    if (rl_attn_forward(plan, o, saved, &in, H, &fs) != RL_OK) goto done;
    int64_t shv[3] = {H, N, dv}, shq[3] = {H, N, d};
    for (size_t i = 0; i < nv; i++)
        if (!isfinite(o[i])) { /* finite inputs, yet an overflow inside the kernel */
            rl_error_report(RL_EINVAL, __FILE__, __LINE__,
                            "out[%zu] = %g: the output is not finite (inputs too large for "
                            "float32?); nothing written",
                            i, (double)o[i]);
            goto done;
        }
    if (write_out(A->out, "out.npy", o, 3, shv)) goto done;
    if (X->dout) {
        dq = calloc(nq, sizeof(float)), dk = calloc(nq, sizeof(float)),
        dvv = calloc(nv, sizeof(float));
        if (X->t5) dt5 = calloc((size_t)X->st5[0] * X->st5[1], sizeof(float));
        if (X->logf) dlf = calloc((size_t)H * N, sizeof(float));
        if (!dq || !dk || !dvv || (X->t5 && !dt5) || (X->logf && !dlf)) {
            rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "cannot allocate the gradients");
            goto done;
        }
        double                     t0 = rl_now_ms();
        const struct rl_attn_grads gr = {dq, dk, dvv, dt5, dlf};
        if (rl_attn_backward(plan, &gr, X->dout, o, saved, &in, H) != RL_OK) goto done;
        ms_bwd = rl_now_ms() - t0;
        if (write_out(A->out, "dq.npy", dq, 3, shq) || write_out(A->out, "dk.npy", dk, 3, shq) ||
            write_out(A->out, "dv.npy", dvv, 3, shv) ||
            (dt5 && write_out(A->out, "dt5_bias.npy", dt5, 2, X->st5)) ||
            (dlf && write_out(A->out, "dlogf.npy", dlf, 2, X->sl)))
            goto done;
    }
    if (write_stats(A->out, A, &fs, ms_bwd, H, N, d, dv)) goto done;
    rc = RL_EXIT_OK;
done:
    /* every failure above was recorded through rl_error_report: print it once */
    if (rc != RL_EXIT_OK) fprintf(stderr, "ropelab attn: %s\n", rl_last_error());
    free(o), free(saved), free(dq), free(dk), free(dvv), free(dt5), free(dlf);
    rl_attn_free(plan);
    return rc;
}

int rl_cmd_attn(int argc, char **argv)
{
    struct attn_args A;
    int              rc = parse_args(&A, argc, argv);
    if (rc != RL_OPTS_GO_ON) return rc;
    rl_cli_threads("attn", A.threads);
    if (rl_mkdir_p(A.out) != RL_OK) {
        fprintf(stderr, "ropelab attn: %s\n", rl_last_error());
        return RL_EXIT_FAIL;
    }
    struct arrays X;
    rc = load_arrays(&X, &A);
    if (rc < 0) rc = run_kernel(&A, &X);
    free_arrays(&X);
    return rc;
}
