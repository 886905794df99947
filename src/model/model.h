/* model.h -- the transformer (docs/model.md): token embedding (+ input PE), L pre-LN blocks
 * x += Attn(LN1(x)); x += MLP(LN2(x)), final LN, then an LM head (causal tasks) or
 * mean-pool over positions + classifier head (non-causal tasks).
 *
 * One flat parameter buffer and one gradient buffer of the same layout; the tensor
 * table names every parameter with its checkpoint name (PyTorch nn.Linear
 * convention: weight is out x in).  Activations live in one arena sized for the
 * (B, N) of the last call; the first call at a new size (re)allocates it, later calls
 * of the same size never allocate. */
#ifndef RL_MODEL_H
#define RL_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include "../kernels/attn.h"
#include "batch.h"

enum rl_input_pe { RL_INPUT_PE_NONE = 0, RL_INPUT_PE_SINUSOIDAL, RL_INPUT_PE_LEARNED };

struct rl_model_config {
    int                 vocab;
    int                 d_model, heads, layers;
    int                 n_classes; /* 0: LM head over vocab (causal); > 0: classifier */
    enum rl_input_pe    input_pe;
    int                 max_len; /* rows of pos.weight (learned PE) */
    int                 t5_per_layer;
    double              forget_bias; /* attn.forget: initial bias of blocks.{i}.attn.wf */
    struct rl_attn_opts attn; /* kind, fmap, attention-level pe, causal, eps, rope, t5, forget */
};

struct rl_tensor_info {
    const char *name; /* checkpoint name, e.g. "blocks.0.attn.wq.weight" */
    int         ndim;
    int64_t     shape[2];
    size_t      offset; /* in floats, into params / grads */
    size_t      count;
    int         decay; /* AdamW weight decay applies (embedding and Linear weights) */
};

typedef struct rl_model rl_model;

rl_status rl_model_create(rl_model **m, const struct rl_model_config *c);
void      rl_model_free(rl_model *m);
/* Rows of one chunk: a step runs over the tokens in chunks (the pieces of its parallel
 * regions, docs/model.md) whose fc1 outputs take at most 512 KiB (131072 floats), so that a
 * chunk's GEMM outputs, GELU and their gradients stay in a core's L2 cache, and of at most
 * 256 rows, so that a batch of 4096 tokens has 16 chunks or more; at least 16 rows, at
 * most the T tokens there are.  Each thread has a buffer of one chunk's 4 * D-wide rows. */
#ifndef RL_MODEL_CHUNK_FLOATS
#define RL_MODEL_CHUNK_FLOATS 131072
#endif
#ifndef RL_MODEL_CHUNK_ROWS
#define RL_MODEL_CHUNK_ROWS 256
#endif
static inline int rl_model_mlp_rows(int d_model, long T)
{
    long r = RL_MODEL_CHUNK_FLOATS / (4L * d_model);
    r      = r > RL_MODEL_CHUNK_ROWS ? RL_MODEL_CHUNK_ROWS : r;
    return (int)(r < 16 ? 16 : r > T ? T : r);
}

/* Memory the model of c would take, from the configuration alone (nothing is allocated;
 * doubles, so absurd sizes do not overflow): *params_bytes for the parameters and their
 * gradients, *call_bytes for the activations, buffers and attention plan of one forward
 * and backward on B rows of N tokens with `threads` threads.  Either may be NULL. */
void rl_model_memory(const struct rl_model_config *c, int B, int N, int threads,
                     double *params_bytes, double *call_bytes);
const struct rl_model_config *rl_model_config_get(const rl_model *m);

/* GPT-2 init from seed: N(0, 0.02) weights, wo and fc2 scaled by 1/sqrt(2 layers), biases
 * 0, LayerNorm weights 1, learned PE N(0, 0.02^2), T5 tables 0, the sinusoid's gain
 * pos.scale D^-1/2; the forget gate's wf N(0, 0.02^2) and its bias forget_bias. */
void rl_model_init_weights(rl_model *m, uint64_t seed);

size_t                       rl_model_num_params(const rl_model *m);
float                       *rl_model_params(rl_model *m);
float                       *rl_model_grads(rl_model *m);
int                          rl_model_num_tensors(const rl_model *m);
const struct rl_tensor_info *rl_model_tensor(const rl_model *m, int i);
const struct rl_tensor_info *rl_model_tensor_by_name(const rl_model *m, const char *name);

/* Forward on a batch; keeps the activations for rl_model_backward.  Returns the summed
 * cross-entropy over target positions (mask, or one label per row for classifiers),
 * the number of targets and of correct argmax predictions.  Fails (RL_EINVAL) e.g. when
 * N exceeds the learned PE's max_len. */
rl_status rl_model_forward(rl_model *m, const struct rl_batch *b, double *loss_sum, long *n_targets,
                           long *n_correct);
/* Backward of the last forward with dloss/dlogit scaled by `scale` (1 / targets of the
 * whole update); accumulates into the gradient buffer. */
rl_status rl_model_backward(rl_model *m, float scale);
void      rl_model_zero_grad(rl_model *m);
/* Linear attention's diagnostic of the last forward: the rows (summed over layers,
 * sequences and heads) whose denominator before eps was <= eps (the instability of eq. 19 variants); 0 for
 * softmax attention. */
long rl_model_bad_denominators(const rl_model *m);
/* Logits of the last forward: (B, N, vocab) for LM, (B, n_classes) for classifiers. */
const float *rl_model_logits(const rl_model *m);
/* Per row of those logits: the cross-entropy (0 where the row is not scored) and whether
 * the argmax is the target (0 where not scored). */
const double  *rl_model_row_loss(const rl_model *m);
const uint8_t *rl_model_row_correct(const rl_model *m);
/* Replace the RoPE options (evaluation under position interpolation, NTK or YaRN without
 * retraining); checked like rl_model_create's.  The attention plans are rebuilt on their
 * next use, once per length; a backward needs a new forward first. */
rl_status rl_model_set_rope(rl_model *m, const struct rl_rope_opts *o);

#endif
