/* bench_train.c -- `ropelab bench --train`: the table (and CSV) of training throughput
 * over the four cells of the peer comparison, each measured by rl_bench_train_cell. */
#include "config.h"
#include "cli.h"
#include "../core/gemm.h"
#include "../core/status.h"
#include "../experiment/train.h"

#include <stdio.h>

int rl_bench_train(FILE *out, int warmup, int steps, const char *csv_path)
{
    static const struct {
        enum rl_attn_kind kind;
        int               N, B;
    } cells[] = {{RL_ATTN_SOFTMAX, 256, 16},
                 {RL_ATTN_LINEAR, 256, 16},
                 {RL_ATTN_SOFTMAX, 4096, 1},
                 {RL_ATTN_LINEAR, 4096, 1}};
    FILE *csv = csv_path ? fopen(csv_path, "w") : NULL;
    if (csv_path && !csv) {
        fprintf(stderr, "ropelab: %s: cannot create\n", csv_path);
        return 1;
    }
    fprintf(out,
            "training throughput: vocab 64, D 128, 4 heads, 2 layers, causal, RoPE, "
            "4096 tokens/update, %d thread%s, BLIS %s; median of %d updates\n",
            rl_threads_get(), rl_threads_get() == 1 ? "" : "s", rl_blis_arch(), steps);
    fprintf(out, "%-14s %6s %5s %12s %10s %10s %10s %10s\n", "attention", "N", "batch", "tokens/s",
            "fwd ms", "bwd ms", "opt ms", "step ms");
    if (csv)
        fprintf(csv, "attention,N,batch,threads,tokens_per_s,ms_forward,ms_backward,"
                     "ms_optimizer,ms_step\n");
    int rc = 0;
    for (size_t i = 0; i < sizeof cells / sizeof cells[0] && !rc; i++) {
        struct rl_bench_train_cell c = {.kind = cells[i].kind, .N = cells[i].N, .B = cells[i].B};
        if (rl_bench_train_cell(&c, warmup, steps) != RL_OK) {
            fprintf(stderr, "ropelab: %s\n", rl_last_error());
            rc = 1;
            break;
        }
        const char *name = c.kind == RL_ATTN_SOFTMAX ? "softmax" : "linear (elu1)";
        fprintf(out, "%-14s %6d %5d %12.0f %10.2f %10.2f %10.2f %10.2f\n", name, c.N, c.B,
                c.tokens_per_s, c.ms_forward, c.ms_backward, c.ms_optimizer, c.ms_step);
        fflush(out);
        if (csv)
            fprintf(csv, "%s,%d,%d,%d,%.1f,%.4f,%.4f,%.4f,%.4f\n",
                    c.kind == RL_ATTN_SOFTMAX ? "softmax" : "linear", c.N, c.B, rl_threads_get(),
                    c.tokens_per_s, c.ms_forward, c.ms_backward, c.ms_optimizer, c.ms_step);
    }
    if (csv && fclose(csv) != 0) rc = 1;
    return rc;
}
