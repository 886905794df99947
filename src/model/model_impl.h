/* model_impl.h -- the model's private parts, shared by model.c (tensor table, buffers,
 * attention plans) and model_step.c (the forward and backward passes).
 *
 * A step runs over the batch's T = B*N token rows in chunks of `rows` rows (the MLP's
 * chunk, rl_model_mlp_rows): every parallel region is a loop over chunks, or over groups of
 * consecutive chunks in the backward, whose number and bounds depend on T and D only. */
#ifndef RL_MODEL_IMPL_H
#define RL_MODEL_IMPL_H

#include "model.h"

#define RL_MODEL_NAME_LEN 64
#define RL_MODEL_MAX_PLANS 8

struct rl_block_view { /* pointers into params or grads */
    float *ln1w, *ln1b, *wqkv, *bqkv, *wo, *bo, *t5, *ln2w, *ln2b, *fc1w, *fc1b, *fc2w, *fc2b;
    float *wf, *bf; /* the forget gate's projection (NULL without the gate) */
};

struct rl_model_view {
    float                *wte, *pos, *scale, *lnfw, *lnfb, *headw, *headb; /* scale: pos.scale */
    struct rl_block_view *blk;                                             /* layers */
};

struct rl_block_acts {
    float *ln1, *mean1, *rstd1, *q, *k, *v, *o, *saved, *om, *xmid, *ln2, *mean2, *rstd2;
    float *g, *gp; /* the GELU's output and its derivative gelu'(h) (T, 4D) each */
    float *logf;   /* forget gate: log gates in the heads layout (B*H, N) */
    float *keep;   /* linear attention's block features, forward to backward (rl_attn_in) */
};

struct rl_model_acts {
    float                *x;   /* (L+1) x (T, D): residual stream entering each block, and out */
    struct rl_block_acts *blk; /* layers */
    float                *lnf, *meanf, *rstdf, *pooled, *logits, *lse;
    float                *dres;                /* (T, D): the residual stream's gradient */
    float                *dln;                 /* (T, D): the final LayerNorm's output gradient */
    float                *dq, *dk, *dv, *dout; /* (B, H, N, d): the attention's gradients */
    float                *dlogits, *dpooled;
    float                *dlogf; /* forget gate: (B*H, N), then the pre-activation's gradient */
};

/* The parts of one group's partial sums of the parameter gradients (model_step.c): the
 * vectors first (zeroed together at the group's start; the forget gate's small wf, summed
 * by += too, among them), then the matrices. */
enum rl_model_part {
    RL_PART_LN1W,
    RL_PART_LN1B,
    RL_PART_BQKV,
    RL_PART_BO,
    RL_PART_LN2W,
    RL_PART_LN2B,
    RL_PART_FC1B,
    RL_PART_FC2B,
    RL_PART_LNFW,
    RL_PART_LNFB,
    RL_PART_HEADB,
    RL_PART_WF, /* the forget gate (empty without it) */
    RL_PART_BF,
    RL_PART_WQKV, /* the first matrix */
    RL_PART_WO,
    RL_PART_FC1W,
    RL_PART_FC2W,
    RL_PART_HEADW,
    RL_PART_COUNT
};

struct rl_model {
    struct rl_model_config c;
    int                    D, H, d, L, Vo; /* Vo: head outputs (vocab or n_classes) */
    int                    n_tensors;
    struct rl_tensor_info *tensors;
    char (*names)[RL_MODEL_NAME_LEN];
    size_t               n_params;
    float               *params, *grads;
    struct rl_model_view p, g;
    /* activations for the last (B, N) */
    int                  B, N, have_forward;
    int                  rows, chunks; /* rows of a chunk, chunks of the batch */
    struct rl_model_acts a;
    float               *arena;
    size_t               arena_floats;
    int32_t             *tok, *tgt;
    uint8_t             *mask;
    double              *row_loss;
    uint8_t             *row_ok; /* per logits row of the last forward: prediction right */
    size_t               ints_cap;
    double              *chunk_loss; /* per chunk of the last forward: loss, targets, right */
    long                *chunk_targets, *chunk_correct;
    int                  chunks_cap;
    float               *sinus; /* sinusoidal table rows 0 .. sinus_rows-1 */
    int                  sinus_rows;
    struct {
        int      N;
        rl_attn *a;
    } plans[RL_MODEL_MAX_PLANS];
    int   next_plan;
    long  bad_den; /* linear attention: rows with denominator <= eps in the last forward */
    float dscale;  /* the backward's loss scale */
    /* per thread: one chunk's wide scratch (model_step.c), slots of scratch_floats */
    float *scratch;
    int    scratch_slots;
    /* the backward's groups' partial sums of the parameter gradients */
    float *part;
    int    part_groups;
    size_t part_off[RL_PART_COUNT + 1]; /* offsets in a group's slot; [COUNT]: its floats */
};

/* model.c: the activations of a (B, N) call (grown, never shrunk), the sinusoidal table
 * and the attention plan for N. */
rl_status rl_model_ensure_acts(rl_model *m, int B, int N);
rl_status rl_model_ensure_sinusoid(rl_model *m, int N);
rl_status rl_model_plan(rl_model *m, int N, rl_attn **out);

/* model_step.c: floats of one thread's chunk scratch, of one group's partial sums, and the
 * groups a backward of T rows uses (depends on T, d_model and the head only). */
size_t rl_model_scratch_floats(const struct rl_model_config *c);
size_t rl_model_part_floats(const struct rl_model_config *c);
int    rl_model_grad_groups(const struct rl_model_config *c, long T);

#endif
