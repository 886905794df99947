/* attn_opts.h -- the options and diagnostics every attention kernel shares: the kind
 * (softmax or linear), the feature map, the attention-level position encoding and its
 * parameters.  Included by the dispatcher (attn.h) and by each kernel family, so that
 * neither includes the other. */
#ifndef RL_ATTN_OPTS_H
#define RL_ATTN_OPTS_H

#include "../core/choice.h"
#include "rope.h"

/* Each enum's names, help lines and count live in one table (attn_opts.c, core/choice.h):
 * the configuration, the command line and the descriptions read them there. */
enum rl_attn_kind { RL_ATTN_SOFTMAX = 0, RL_ATTN_LINEAR = 1, RL_ATTN_KIND_COUNT };
enum rl_fmap { RL_FMAP_ELU1 = 0, RL_FMAP_SOFTMAX = 1, RL_FMAP_EXP = 2, RL_FMAP_COUNT };
enum rl_attn_pe {
    RL_ATTN_PE_NONE = 0,
    RL_ATTN_PE_ROPE,
    RL_ATTN_PE_T5,
    RL_ATTN_PE_ALIBI,
    RL_ATTN_PE_COUNT
};
enum rl_rope_place { RL_ROPE_PLACE_FEATURE = 0, RL_ROPE_PLACE_INPUT = 1, RL_ROPE_PLACE_COUNT };
enum rl_rope_denom { RL_ROPE_DENOM_PLAIN = 0, RL_ROPE_DENOM_ROTATED = 1, RL_ROPE_DENOM_COUNT };

extern const struct rl_choice rl_attn_kinds[];  /* softmax, linear */
extern const struct rl_choice rl_fmaps[];       /* elu1, softmax, exp */
extern const struct rl_choice rl_attn_pes[];    /* none, rope, t5, alibi */
extern const struct rl_choice rl_rope_places[]; /* feature, input */
extern const struct rl_choice rl_rope_denoms[]; /* plain, rotated */

struct rl_attn_opts {
    enum rl_attn_kind   kind;             /* softmax */
    enum rl_fmap        fmap;             /* elu1 (linear only) */
    enum rl_attn_pe     pe;               /* none */
    int                 causal;           /* 0 */
    float               eps;              /* 1e-6 (linear only) */
    struct rl_rope_opts rope;             /* RoPE base, dims, scaling, layout */
    enum rl_rope_place  rope_place;       /* feature (linear only) */
    enum rl_rope_denom  rope_denominator; /* plain (linear only) */
    int                 t5_buckets;       /* 32 */
    int                 t5_max_distance;  /* 128 */
    int                 alibi_scan; /* linear + causal + alibi: 1 = O(N) decayed scan, 0 = FFT */
    int                 xpos;            /* 0; softmax + causal + rope: xPos decay (Sun et al.) */
    double              xpos_scale_base; /* 512: gamma of xPos */
    int                 forget; /* 0; causal: the data-dependent forget gate (FoX, gated
                                   linear attention): log gates per head and position */
};

struct rl_attn_stats {
    long
        bad_denominators; /* linear: rows (summed over heads) whose denominator before eps <= eps */
    double ms;            /* wall time of the call */
};

#endif
