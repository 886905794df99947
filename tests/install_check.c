/* install_check.c -- built by `make installcheck` (and so by `make distcheck`) against the
 * installed headers and library only: <ropelab/ropelab.h> must compile with nothing but
 * -I$(includedir), and a small RoPE attention call must run. */
#include <ropelab/ropelab.h>

#include <math.h>
#include <stdio.h>

int main(void)
{
    enum { H = 1, N = 8, D = 4 };
    float q[H * N * D], k[H * N * D], v[H * N * D], o[H * N * D], saved[H * N];
    for (int i = 0; i < H * N * D; i++)
        q[i] = (float)sin(0.3 * i), k[i] = (float)cos(0.7 * i), v[i] = (float)(i % 5) - 2.0f;
    struct rl_attn_opts opts;
    rl_attn_opts_default(&opts);
    opts.pe     = RL_ATTN_PE_ROPE;
    opts.causal = 1;
    rl_attn *a  = NULL;
    if (rl_attn_create(&a, &opts, H, N, D, D) != RL_OK) {
        fprintf(stderr, "install_check: rl_attn_create failed\n");
        return 1;
    }
    const struct rl_attn_in in = {q, k, v, NULL, NULL};
    rl_status               st = rl_attn_forward(a, o, saved, &in, H, NULL);
    rl_attn_free(a);
    /* causal: the first row attends to itself only, so it equals v[0] */
    for (int j = 0; j < D; j++)
        if (st != RL_OK || fabsf(o[j] - v[j]) > 1e-5f) {
            fprintf(stderr, "install_check: o[0][%d] = %g, expected %g\n", j, o[j], v[j]);
            return 1;
        }
    puts("install_check: the installed <ropelab/ropelab.h> and libropelab work");
    return 0;
}
