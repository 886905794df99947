/* cmd_attn.c -- `ropelab attn`: the numeric interface to the kernels.
 * Reads DIR/q.npy (H,N,d), k.npy (H,N,d), v.npy (H,N,dv), optional t5_bias.npy
 * (H,buckets) and dout.npy (H,N,dv); writes OUT/out.npy, and with dout dq.npy, dk.npy,
 * dv.npy (and dt5_bias.npy), plus OUT/stats.json. */
#include "config.h"
#include "../kernels/attn.h"
#include "cli.h"
#include "opts.h"
#include "../core/threads.h"
#include "../core/npy.h"
#include "../core/util.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char attn_usage[] =
    "Usage: ropelab attn --in DIR --out DIR [options]\n"
    "\n"
    "Runs one attention kernel on float32 .npy arrays: DIR/q.npy (H,N,d), k.npy (H,N,d),\n"
    "v.npy (H,N,dv), optional t5_bias.npy (H,buckets) and dout.npy (H,N,dv); float64 or\n"
    "big-endian arrays are read and rounded to float32.  Writes OUT/out.npy; with dout\n"
    "also dq.npy, dk.npy, dv.npy (and dt5_bias.npy); and OUT/stats.json (time, and for\n"
    "linear attention the rows whose denominator <= eps).\n"
    "\n"
    "  --attention softmax|linear      kernel (default softmax)\n"
    "  --feature-map elu1|softmax|exp  linear-attention feature map (default elu1)\n"
    "  --pe none|rope|t5|alibi         attention-level position encoding (default none)\n"
    "  --causal                        causal (n <= m); default non-causal\n"
    "  --rope-base B                   RoPE base (default 10000)\n"
    "  --rope-layout pairs|halves      RoPE pairing (default pairs: (2i, 2i+1))\n"
    "  --rope-dims R                   rotate only the first R dims (default d)\n"
    "  --rope-scale S                  position interpolation m -> m/S (default 1)\n"
    "  --rope-ntk A                    NTK-aware base scaling (default 1)\n"
    "  --rope-yarn S                   YaRN factor (default 1 = off; excludes --rope-scale\n"
    "                                  and --rope-ntk); softmax also multiplies rotated q, k\n"
    "                                  (all d features) by 0.1 ln S + 1\n"
    "  --rope-yarn-orig L              YaRN's trained context L (default N of the input)\n"
    "  --xpos                          xPos decay on RoPE (softmax, causal, --pe rope)\n"
    "  --xpos-scale-base G             xPos gamma (default 512)\n"
    "  --rope-place feature|input      linear: rotate phi(q),phi(k) (eq. 19) or q,k\n"
    "  --rope-denominator plain|rotated linear: eq. 19 unrotated denominator or rotated\n"
    "  --t5-buckets NB                 must equal t5_bias.npy's second dimension (default 32)\n"
    "  --t5-max-distance M             T5 max distance (default 128)\n"
    "  --alibi-scan                    linear causal ALiBi by the O(N) decayed scan (else FFT)\n"
    "  --eps E                         linear-attention epsilon (default 1e-6)\n"
    "  --threads N                     threads (default OMP_NUM_THREADS or all cores)\n"
    "  -h, --help                      this help\n";

struct attn_args {
    const char         *in, *out;
    struct rl_attn_opts o;
    int                 threads, t5_buckets_given;
};

static int parse_enum(const char *opt, const char *s, const char *const *names, int n, int *out)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i])) {
            *out = i;
            return 0;
        }
    rl_usage_error("attn", "%s: unknown value '%s'", opt, s);
    return 1;
}

/* Returns -1 to continue, or an exit status. */
static int parse_args(struct attn_args *A, int argc, char **argv)
{
    static const char
        *const        kinds[] = {"softmax", "linear"},
               *const maps[]  = {"elu1", "softmax", "exp"},
               *const pes[] = {"none", "rope", "t5", "alibi"}, *const lays[] = {"pairs", "halves"},
               *const places[] = {"feature", "input"}, *const dens[] = {"plain", "rotated"};
    memset(A, 0, sizeof *A);
    rl_attn_opts_default(&A->o);
    /* every option is matched by name below (val 0); --opt VALUE and --opt=VALUE both work */
    static const struct option longs[] = {{"in", required_argument, NULL, 0},
                                          {"out", required_argument, NULL, 0},
                                          {"attention", required_argument, NULL, 0},
                                          {"feature-map", required_argument, NULL, 0},
                                          {"pe", required_argument, NULL, 0},
                                          {"rope-layout", required_argument, NULL, 0},
                                          {"rope-place", required_argument, NULL, 0},
                                          {"rope-denominator", required_argument, NULL, 0},
                                          {"rope-base", required_argument, NULL, 0},
                                          {"rope-scale", required_argument, NULL, 0},
                                          {"rope-ntk", required_argument, NULL, 0},
                                          {"rope-dims", required_argument, NULL, 0},
                                          {"t5-buckets", required_argument, NULL, 0},
                                          {"t5-max-distance", required_argument, NULL, 0},
                                          {"threads", required_argument, NULL, 0},
                                          {"eps", required_argument, NULL, 0},
                                          {"causal", no_argument, NULL, 0},
                                          {"alibi-scan", no_argument, NULL, 0},
                                          {"rope-yarn", required_argument, NULL, 0},
                                          {"rope-yarn-orig", required_argument, NULL, 0},
                                          {"xpos", no_argument, NULL, 0},
                                          {"xpos-scale-base", required_argument, NULL, 0},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    struct rl_opt              o       = {0};
    for (int c; (c = rl_next_opt("attn", &o, argc, argv, ":h", longs)) != -1;) {
        const char *a = o.name, *v = o.value;
        int         e = 0, iv = 0;
        if (c == RL_OPT_ERROR) return RL_EXIT_USAGE;
        if (c == 'h') {
            fputs(attn_usage, stdout);
            return RL_EXIT_OK;
        }
        if (!strcmp(a, "--causal")) {
            A->o.causal = 1;
            continue;
        }
        if (!strcmp(a, "--alibi-scan")) {
            A->o.alibi_scan = 1;
            continue;
        }
        if (!strcmp(a, "--xpos")) {
            A->o.xpos = 1;
            continue;
        }
        if (!strcmp(a, "--in"))
            A->in = v;
        else if (!strcmp(a, "--out"))
            A->out = v;
        else if (!strcmp(a, "--attention"))
            e = parse_enum(a, v, kinds, 2, &iv), A->o.kind = iv;
        else if (!strcmp(a, "--feature-map"))
            e = parse_enum(a, v, maps, 3, &iv), A->o.fmap = iv;
        else if (!strcmp(a, "--pe"))
            e = parse_enum(a, v, pes, 4, &iv), A->o.pe = iv;
        else if (!strcmp(a, "--rope-layout"))
            e = parse_enum(a, v, lays, 2, &iv), A->o.rope.layout = iv;
        else if (!strcmp(a, "--rope-place"))
            e = parse_enum(a, v, places, 2, &iv), A->o.rope_place = iv;
        else if (!strcmp(a, "--rope-denominator"))
            e = parse_enum(a, v, dens, 2, &iv), A->o.rope_denominator = iv;
        else if (!strcmp(a, "--rope-base"))
            e = rl_parse_double("attn", a, v, &A->o.rope.base);
        else if (!strcmp(a, "--rope-scale"))
            e = rl_parse_double("attn", a, v, &A->o.rope.scale);
        else if (!strcmp(a, "--rope-ntk"))
            e = rl_parse_double("attn", a, v, &A->o.rope.ntk);
        else if (!strcmp(a, "--rope-yarn"))
            e = rl_parse_double("attn", a, v, &A->o.rope.yarn);
        else if (!strcmp(a, "--rope-yarn-orig"))
            e = rl_parse_int("attn", a, v, 1, 1 << 30, &A->o.rope.yarn_orig);
        else if (!strcmp(a, "--xpos-scale-base"))
            e = rl_parse_double("attn", a, v, &A->o.xpos_scale_base);
        else if (!strcmp(a, "--rope-dims"))
            e = rl_parse_int("attn", a, v, 1, 1 << 20, &A->o.rope.dims);
        else if (!strcmp(a, "--t5-buckets"))
            e = rl_parse_int("attn", a, v, 2, 1 << 20, &A->o.t5_buckets), A->t5_buckets_given = 1;
        else if (!strcmp(a, "--t5-max-distance"))
            e = rl_parse_int("attn", a, v, 1, 1 << 30, &A->o.t5_max_distance);
        else if (!strcmp(a, "--threads"))
            e = rl_parse_int("attn", a, v, 1, 1024, &A->threads);
        else if (!strcmp(a, "--eps")) {
            double eps = 0;
            e          = rl_parse_double("attn", a, v, &eps);
            A->o.eps   = (float)eps;
        } else
            return rl_usage_error("attn", "unknown option '%s'", a);
        if (e) return RL_EXIT_USAGE;
    }
    if (optind < argc) return rl_usage_error("attn", "unexpected argument '%s'", argv[optind]);
    if (!A->in || !A->out) return rl_usage_error("attn", "--in DIR and --out DIR are required");
    if (!A->in[0]) return rl_usage_error("attn", "--in: expected a directory, got ''");
    if (!A->out[0]) return rl_usage_error("attn", "--out: expected a directory, got ''");
    return -1;
}

struct arrays {
    float  *q, *k, *v, *t5, *dout;
    int64_t sq[3], sk[3], sv[3], st5[2], sd[3];
};

static void free_arrays(struct arrays *X)
{
    free(X->q), free(X->k), free(X->v), free(X->t5), free(X->dout);
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
        if (A->t5_buckets_given && A->o.t5_buckets != X->st5[1])
            return rl_usage_error("attn",
                                  "--t5-buckets %d disagrees with t5_bias.npy (%lld buckets)",
                                  A->o.t5_buckets, (long long)X->st5[1]);
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
    float *dq = NULL, *dk = NULL, *dvv = NULL, *dt5 = NULL;
    int    rc                   = RL_EXIT_FAIL;
    struct rl_attn_stats fs     = {0};
    double               ms_bwd = 0;
    if (!o || !saved) {
        rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "cannot allocate the outputs");
        goto done;
    }
    const struct rl_attn_in in = {X->q, X->k, X->v, X->t5, NULL};
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
        if (!dq || !dk || !dvv || (X->t5 && !dt5)) {
            rl_error_report(RL_ENOMEM, __FILE__, __LINE__, "cannot allocate the gradients");
            goto done;
        }
        double                     t0 = rl_now_ms();
        const struct rl_attn_grads gr = {dq, dk, dvv, dt5, NULL};
        if (rl_attn_backward(plan, &gr, X->dout, o, saved, &in, H) != RL_OK) goto done;
        ms_bwd = rl_now_ms() - t0;
        if (write_out(A->out, "dq.npy", dq, 3, shq) || write_out(A->out, "dk.npy", dk, 3, shq) ||
            write_out(A->out, "dv.npy", dvv, 3, shv) ||
            (dt5 && write_out(A->out, "dt5_bias.npy", dt5, 2, X->st5)))
            goto done;
    }
    if (write_stats(A->out, A, &fs, ms_bwd, H, N, d, dv)) goto done;
    rc = RL_EXIT_OK;
done:
    /* every failure above was recorded through rl_error_report: print it once */
    if (rc != RL_EXIT_OK) fprintf(stderr, "ropelab attn: %s\n", rl_last_error());
    free(o), free(saved), free(dq), free(dk), free(dvv), free(dt5);
    rl_attn_free(plan);
    return rc;
}

int rl_cmd_attn(int argc, char **argv)
{
    struct attn_args A;
    int              rc = parse_args(&A, argc, argv);
    if (rc >= 0) return rc;
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
