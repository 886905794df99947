/* decode.h -- the forward of a causal model one token at a time, for text generation.
 *
 * A decoder belongs to one loaded model (model.h; LM head, causal attention) and keeps
 * what the next token needs: the position m, per layer the attention cache or state of
 * kernels/attn_step.h, and the RoPE table (grown on demand).  rl_decoder_step feeds the
 * token at position m through the model's own layers (layers.h: embedding + input PE,
 * LayerNorm, linear via GEMM on one row, GELU, head; the model's parameters in place)
 * and returns the logits of position m, i.e. the distribution of the token at m + 1.
 *
 * Modes:
 *   RL_DECODE_RECURRENT  O(1) work per token for linear attention, O(m) for softmax
 *                        (cache of rotated keys and values).  Linear attention with T5
 *                        has no recurrence: the decoder then recomputes, as FULL does
 *                        (rl_decoder_recomputes says so).
 *   RL_DECODE_FULL       every step runs rl_model_forward on the whole prefix 0 .. m and
 *                        returns its last row: the training kernels, the reference.
 * Input encodings: sinusoidal rows are computed per position; a learned table has
 * max_len rows, and the step at position max_len fails (RL_EINVAL) naming the token.
 * Forget gate: each block computes the token's log gates from its LN1 row (forget.h) and
 * hands them to the step, which decays the linear states or extends the softmax cache's
 * prefix sums (attn_step.h). */
#ifndef RL_DECODE_H
#define RL_DECODE_H

#include <stddef.h>
#include <stdint.h>
#include "../core/choice.h"
#include "model.h"

enum rl_decode_mode { RL_DECODE_RECURRENT = 0, RL_DECODE_FULL = 1, RL_DECODE_MODE_COUNT };
extern const struct rl_choice rl_decode_modes[]; /* recurrent, full (decode.c) */

typedef struct rl_decoder rl_decoder;

/* capacity: positions to reserve up front (caches grow beyond it by doubling).  The model
 * must outlive the decoder; FULL mode (and recomputation) runs the model's forward, which
 * overwrites the model's activations. */
rl_status rl_decoder_create(rl_decoder **out, rl_model *m, enum rl_decode_mode mode, int capacity);
void      rl_decoder_free(rl_decoder *dc);
/* Back to an empty context (position 0). */
void rl_decoder_reset(rl_decoder *dc);

/* Consumes token tok (in [0, vocab)) at the next position; logits: vocab floats. */
rl_status rl_decoder_step(rl_decoder *dc, float *logits, int32_t tok);

int rl_decoder_position(const rl_decoder *dc); /* tokens consumed so far */
/* 1 when steps recompute the prefix: mode FULL, or no recurrence for the model. */
int rl_decoder_recomputes(const rl_decoder *dc);
/* Bytes of attention cache / state over all layers (softmax: 2 x layers x position x D
 * floats; linear: per layer and head the double states, constant); recomputation: the
 * token history. */
size_t rl_decoder_state_bytes(const rl_decoder *dc);
/* Linear attention: heads x layers whose denominator before eps was <= eps, summed over
 * the steps so far (0 for softmax). */
long rl_decoder_bad_denominators(const rl_decoder *dc);

/* For benchmarks: as if n tokens had been consumed, with pseudo-random cache / state (or
 * token history) contents from seed; later logits are meaningless, their cost real. */
rl_status rl_decoder_fill_random(rl_decoder *dc, int n, uint64_t seed);

#endif
