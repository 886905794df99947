/* rope.h -- rotary position embedding (Su et al., RoFormer 2021, section 3.2).
 *
 * x: (N, d) rows, row n at position pos0 + n.  Only the first R = dims features rotate
 * (partial rotary); the rest pass through.
 *   theta_i = base'^(-2i/R), i < R/2, base' = base * ntk^(R/(R-2))   (NTK-aware; ntk=1: base)
 *   angle(m, i) = (m / scale) * theta_i, computed in double, stored as float cos/sin.
 * YaRN (Peng et al. 2023, with the truncation of the authors' code and of Hugging Face's
 * _compute_yarn_parameters), factor s = yarn > 1, trained context L = yarn_orig:
 *   c(r) = R ln(L / (2 pi r)) / (2 ln base),  beta_fast = 32, beta_slow = 1
 *   lo = max(floor(c(32)), 0),  hi = min(ceil(c(1)), R - 1),  hi += 0.001 if lo == hi
 *   ramp_i = clamp((i - lo) / (hi - lo), 0, 1)
 *   theta'_i = (theta_i / s) ramp_i + theta_i (1 - ramp_i)
 * (fast pairs i <= lo keep theta_i, slow pairs i >= hi are interpolated by s).  The
 * attention factor a = 0.1 ln s + 1 (scores scale by a^2) is not part of the frequencies:
 * softmax attention applies it with rl_rope_scale, to every feature of q and k, the
 * pass-through ones of partial rotary included (linear attention changes the frequencies
 * only).
 * Layouts (the pair that rotates by theta_i):
 *   RL_ROPE_LAYOUT_PAIRS  : (2i, 2i+1)     -- RoFormer paper, GPT-J, ggml NORMAL (default)
 *   RL_ROPE_LAYOUT_HALVES : (i, i + R/2)   -- GPT-NeoX / HF "rotate_half"
 *   (R x)[a] = x[a] cos - x[b] sin,  (R x)[b] = x[a] sin + x[b] cos.
 * The inverse rotation (R_m^T, used by every backward) is the same kernel with the
 * sine negated (ggml's sin_sign). */
#ifndef RL_ROPE_H
#define RL_ROPE_H

#include "../core/choice.h"
#include "../core/status.h"

enum rl_rope_layout { RL_ROPE_LAYOUT_PAIRS = 0, RL_ROPE_LAYOUT_HALVES = 1, RL_ROPE_LAYOUT_COUNT };
/* pairs, halves: the names of the layouts (defined with the other attention choices in
 * attn_opts.c) */
extern const struct rl_choice rl_rope_layouts[];

struct rl_rope_opts {
    double              base;      /* 10000 */
    enum rl_rope_layout layout;    /* pairs */
    int                 dims;      /* R; 0 means d */
    double              scale;     /* position interpolation m -> m/scale; 1 */
    double              ntk;       /* NTK alpha; 1 */
    double              yarn;      /* YaRN factor s; 1 = off */
    int                 yarn_orig; /* YaRN: L, the context trained at; 0 = the table's n_pos */
};

struct rl_rope {
    int                 n_pos; /* positions covered by the table: 0 .. n_pos-1 */
    int                 d, dims;
    enum rl_rope_layout layout;
    float              *cos, *sin; /* (n_pos, dims/2) each, owned */
    float               pass;      /* the pass-through features' factor (rl_rope_scale); 1 */
};

void rl_rope_opts_default(struct rl_rope_opts *o);
/* Validates (d even where dims = d, dims even and <= d, ntk needs dims > 2, base > 0,
 * scale > 0, yarn >= 1 and not with scale or ntk != 1, yarn_orig >= 0) and builds the cos/sin table
 * for positions 0 .. n_pos-1. */
rl_status rl_rope_init(struct rl_rope *r, int n_pos, int d, const struct rl_rope_opts *o);
void      rl_rope_free(struct rl_rope *r);

/* out[n] = R_{pos0+n} x[n] (inverse = 0) or R_{pos0+n}^T x[n] (inverse = 1), rows of
 * length d with leading dimensions ldo, ldx.  out may equal x.  pos0 + n_rows <= n_pos. */
void rl_rope_rotate(const struct rl_rope *r, float *out, int ldo, const float *x, int ldx,
                    int n_rows, int pos0, int inverse);

/* Multiplies the table and the pass-through factor by a: rl_rope_rotate then applies a R_m
 * (inverse: a R_m^T) to the whole row, the pass-through features of partial rotary
 * multiplied by a too, so that q.k scales by a^2 for any rope_dims.  (YaRN's attention
 * factor.) */
void rl_rope_scale(struct rl_rope *r, double a);

/* The frequency theta_i (or YaRN's theta'_i) in double precision (for references and tests).
 * With yarn != 1, o->yarn_orig must be > 0 (rl_rope_init uses n_pos when it is 0). */
double rl_rope_theta(const struct rl_rope_opts *o, int dims, int i);
/* YaRN's attention factor 0.1 ln s + 1 (1 when s <= 1). */
double rl_rope_yarn_mscale(const struct rl_rope_opts *o);

#endif
