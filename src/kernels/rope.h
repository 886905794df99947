/* rope.h -- rotary position embedding (Su et al., RoFormer 2021, section 3.2).
 *
 * x: (N, d) rows, row n at position pos0 + n.  Only the first R = dims features rotate
 * (partial rotary); the rest pass through.
 *   theta_i = base'^(-2i/R), i < R/2, base' = base * ntk^(R/(R-2))   (NTK-aware; ntk=1: base)
 *   angle(m, i) = (m / scale) * theta_i, computed in double, stored as float cos/sin.
 * Layouts (the pair that rotates by theta_i):
 *   RL_ROPE_LAYOUT_PAIRS  : (2i, 2i+1)     -- RoFormer paper, GPT-J, ggml NORMAL (default)
 *   RL_ROPE_LAYOUT_HALVES : (i, i + R/2)   -- GPT-NeoX / HF "rotate_half"
 *   (R x)[a] = x[a] cos - x[b] sin,  (R x)[b] = x[a] sin + x[b] cos.
 * The inverse rotation (R_m^T, used by every backward) is the same kernel with the
 * sine negated (ggml's sin_sign). */
#ifndef RL_ROPE_H
#define RL_ROPE_H

#include "../core/status.h"

enum rl_rope_layout { RL_ROPE_LAYOUT_PAIRS = 0, RL_ROPE_LAYOUT_HALVES = 1 };

struct rl_rope_opts {
    double              base;   /* 10000 */
    enum rl_rope_layout layout; /* pairs */
    int                 dims;   /* R; 0 means d */
    double              scale;  /* position interpolation m -> m/scale; 1 */
    double              ntk;    /* NTK alpha; 1 */
};

struct rl_rope {
    int                 n_pos; /* positions covered by the table: 0 .. n_pos-1 */
    int                 d, dims;
    enum rl_rope_layout layout;
    float              *cos, *sin; /* (n_pos, dims/2) each, owned */
};

void rl_rope_opts_default(struct rl_rope_opts *o);
/* Validates (d even where dims = d, dims even and <= d, ntk needs dims > 2, base > 0,
 * scale > 0) and builds the cos/sin table for positions 0 .. n_pos-1. */
rl_status rl_rope_init(struct rl_rope *r, int n_pos, int d, const struct rl_rope_opts *o);
void      rl_rope_free(struct rl_rope *r);

/* out[n] = R_{pos0+n} x[n] (inverse = 0) or R_{pos0+n}^T x[n] (inverse = 1), rows of
 * length d with leading dimensions ldo, ldx.  out may equal x.  pos0 + n_rows <= n_pos. */
void rl_rope_rotate(const struct rl_rope *r, float *out, int ldo, const float *x, int ldx,
                    int n_rows, int pos0, int inverse);

/* The angle table entry in double precision (for references and tests). */
double rl_rope_theta(const struct rl_rope_opts *o, int dims, int i);

#endif
