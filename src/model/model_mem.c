/* model_mem.c -- how much memory a model of a configuration takes at a (B, N) call,
 * computed from the configuration alone (no allocation), so that sizes can be refused
 * before anything is built; see model.h.  The counts follow rl_model_create's tensor
 * table and the activation arena's layout in model.c; they are kept in double so that
 * absurd sizes (2^30 rows of 10^9 tokens) cannot overflow. */
#include "config.h"
#include "model_impl.h"
#include "../kernels/attn_linear.h"
#include "../kernels/attn_softmax.h"
#include "../kernels/attn_toeplitz.h"

#include <limits.h>

static double param_count(const struct rl_model_config *c)
{
    const double D = c->d_model, H = c->heads, L = c->layers;
    const double Vo = c->n_classes > 0 ? c->n_classes : c->vocab;
    const double t5 = c->attn.pe == RL_ATTN_PE_T5 ? H * c->attn.t5_buckets : 0;
    double       p  = (double)c->vocab * D + 2 * D + Vo * D + Vo; /* embed, ln_f, head */
    if (c->input_pe == RL_INPUT_PE_LEARNED) p += (double)c->max_len * D;
    /* per block: ln1, wq wk wv wo (+ biases), ln2, fc1, fc2 */
    p += L * (2 * D + 4 * (D * D + D) + 2 * D + (4 * D * D + 4 * D) + (4 * D * D + D));
    if (c->attn.forget) p += L * (H * D + H); /* the forget gate's wf, bf */
    return p + (c->t5_per_layer ? L * t5 : t5);
}

/* Floats of the activation arena at (B, N): layout_acts in model.c, term by term. */
static double act_floats(const struct rl_model_config *c, double B, double N, int threads)
{
    const double D = c->d_model, H = c->heads, L = c->layers, T = B * N;
    const double Vo   = c->n_classes > 0 ? c->n_classes : c->vocab;
    const double rows = c->n_classes > 0 ? B : T;
    double       f    = (L + 1) * T * D;                   /* residual stream */
    f += L * (16 * T * D + 4 * T + B * H * N);             /* per block, saved for backward */
    f += T * D + 2 * T + 2 * B * D + 2 * rows * Vo + rows; /* final LN, pooling, logits */
    f += 6 * T * D;                                        /* the backward's (T, D) arrays */
    if (c->attn.forget) f += (L + 1) * B * H * N;          /* log gates per block, their gradient */
    const double Gd = B * H; /* linear attention's features kept for the backward (rl_attn_in) */
    const int    G = Gd < INT_MAX ? (int)Gd : INT_MAX, d = c->d_model / c->heads;
    if (rl_attn_linear_pieces(&c->attn, G) && N <= INT_MAX)
        f += L * Gd * (double)rl_attn_linear_store_floats(&c->attn, (int)N, d, d);
    const long Tl = T < 1e15 ? (long)T : (long)1e15;
    f += (double)rl_model_scratch_floats(c) * (threads > 1 ? threads : 1);    /* per thread */
    return f + (double)rl_model_part_floats(c) * rl_model_grad_groups(c, Tl); /* partial sums */
}

/* Bytes of one attention plan at length N: per-thread kernel scratch, RoPE tables and
 * relative-position tables (the FFT plans of Toeplitz attention: a few 2N x (d + dv)). */
static double plan_bytes(const struct rl_model_config *c, int N, int threads)
{
    const int d = c->d_model / c->heads;
    double    f = 0;
    if (c->attn.kind == RL_ATTN_SOFTMAX)
        f = (double)rl_attn_softmax_scratch_floats(N, d, d, c->attn.xpos) +
            (c->attn.forget ? 4.0 * N : 0);
    else if (c->attn.pe == RL_ATTN_PE_T5 || c->attn.pe == RL_ATTN_PE_ALIBI)
        f = 8.0 * 2 * N * (2 * d);
    else
        f = (double)rl_attn_linear_scratch_floats(&c->attn, N, d, d);
    f *= threads;
    if (c->attn.pe == RL_ATTN_PE_ROPE) f += 2.0 * N * d;
    if (c->attn.pe == RL_ATTN_PE_T5 || c->attn.pe == RL_ATTN_PE_ALIBI)
        f += (double)c->heads * 2 * N * (c->attn.pe == RL_ATTN_PE_T5 ? 3.0 : 1.0); /* + doubles */
    return 4 * f;
}

void rl_model_memory(const struct rl_model_config *c, int B, int N, int threads,
                     double *params_bytes, double *call_bytes)
{
    if (params_bytes) *params_bytes = 2 * 4 * param_count(c); /* parameters and gradients */
    if (!call_bytes) return;
    const double T = (double)B * N;
    /* the arena, the per-token integer buffers (tokens, targets, mask, row loss and
     * flag), a sinusoidal table, and the attention plan */
    *call_bytes = 4 * act_floats(c, B, N, threads) + T * (4 + 4 + 1 + 8 + 1) +
                  (c->input_pe == RL_INPUT_PE_SINUSOIDAL ? 4.0 * N * c->d_model : 0) +
                  plan_bytes(c, N, threads > 0 ? threads : 1);
    const int d = c->d_model / c->heads;
    /* the heads of a call: B * heads, held at INT_MAX (a batch that large is refused for
     * its memory anyway) */
    const long long Gl = (long long)B * c->heads;
    const int       G  = Gl > INT_MAX ? INT_MAX : (int)Gl;
    if (rl_attn_linear_splits(&c->attn)) /* the states of linear attention's pieces (their
                                            blocks' features: the keeps, in the arena) */
        *call_bytes += 8.0 * rl_attn_linear_state_heads(&c->attn, G) *
                       (double)rl_attn_linear_state_doubles(&c->attn, N, d, d);
    const int ng = rl_toeplitz_fft(&c->attn) ? rl_toeplitz_groups(G, N, d, d) : 0;
    if (ng) /* the FFT products in (head, feature group) pieces: a store per head, parts */
        *call_bytes += G * ((double)rl_toeplitz_store_bytes(N, d, d) +
                            8.0 * ng * (double)rl_toeplitz_part_doubles(N, d));
    if (c->attn.kind == RL_ATTN_SOFTMAX) { /* the keys a call prepares, per head */
        *call_bytes += 4.0 * B * c->heads *
                       (double)rl_attn_softmax_prepared_floats(N, d, d, c->attn.xpos,
                                                               c->attn.pe == RL_ATTN_PE_ROPE);
    }
    const int quad = rl_attn_linear_quad_pieces(&c->attn, G, N);
    if (quad) /* T5 with the gate in pieces: a store per head */
        *call_bytes += 4.0 * G * (double)rl_attn_linear_quad_store_floats(N, d, d);
    if (c->attn.pe == RL_ATTN_PE_T5) { /* T5's gradient parts (attn.h) */
        const int nb = rl_attn_softmax_blocks(N, c->attn.causal, NULL, d);
        size_t    len;
        double    parts =
            c->attn.kind == RL_ATTN_SOFTMAX
                   ? 8.0 * G * (double)rl_attn_softmax_drel_part(N, c->attn.causal, NULL, d, nb, &len)
               : quad    ? 8.0 * G * (double)rl_attn_linear_quad_part_doubles(N)
               : ng == 0 ? 8.0 * G * (2.0 * N - 1) /* linear, one piece per head */
                         : 0;
        *call_bytes += parts <= RL_ATTN_T5_PARTS_BYTES ? parts : 0;
    }
}
