/* install_check.c -- built by `make installcheck` (and so by `make distcheck`) against the
 * installed headers and library only: <ropelab/ropelab.h> must compile with nothing but
 * -I$(includedir), and a small RoPE attention call through the C API must run. */
#include <ropelab/ropelab.h>

#include <math.h>
#include <stdio.h>

static int fail(const char *what)
{
    fprintf(stderr, "install_check: %s: %s\n", what, rl_api_last_error());
    return 1;
}

int main(void)
{
    enum { H = 1, N = 8, D = 4 };
    float q[H * N * D], k[H * N * D], v[H * N * D], o[H * N * D];
    for (int i = 0; i < H * N * D; i++)
        q[i] = (float)sin(0.3 * i), k[i] = (float)cos(0.7 * i), v[i] = (float)(i % 5) - 2.0f;
    if (rl_api_version() != RL_API_VERSION) return fail("the library's API version differs");
    rl_api_opts *opts = NULL;
    rl_api_plan *plan = NULL;
    if (rl_api_opts_create(&opts) || rl_api_opts_set(opts, "pe", "rope") ||
        rl_api_opts_set(opts, "causal", "true"))
        return fail("options");
    if (rl_api_plan_create(&plan, opts, H, N, D, D)) return fail("rl_api_plan_create");
    int st = rl_api_forward(plan, o, NULL, q, k, v, NULL, NULL, H);
    rl_api_plan_free(plan);
    rl_api_opts_free(opts);
    if (st) return fail("rl_api_forward");
    /* causal: the first row attends to itself only, so it equals v[0] */
    for (int j = 0; j < D; j++)
        if (fabsf(o[j] - v[j]) > 1e-5f) {
            fprintf(stderr, "install_check: o[0][%d] = %g, expected %g\n", j, o[j], v[j]);
            return 1;
        }
    printf("install_check: the installed <ropelab/ropelab.h> and libropelab %s work\n",
           rl_version());
    return 0;
}
