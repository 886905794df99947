/* attn_opts.c -- the names of the attention choices (attn_opts.h, rope.h): one table per
 * enum, in enum order, each checked against the enum's count when it compiles. */
#include "config.h"
#include "attn_opts.h"

const struct rl_choice rl_attn_kinds[] = {
    {"softmax", RL_ATTN_SOFTMAX, "softmax(q k^T / sqrt(d)) v, online in tiles"},
    {"linear", RL_ATTN_LINEAR, "phi(q) (phi(k)^T v) / phi(q) sum phi(k) (eq. 18)"},
    {NULL, 0, NULL}};
RL_CHOICE_TABLE_CHECK(rl_attn_kinds, RL_ATTN_KIND_COUNT);

const struct rl_choice rl_fmaps[] = {
    {"elu1", RL_FMAP_ELU1, "elu(x) + 1 on q and k (Katharopoulos et al.)"},
    {"softmax", RL_FMAP_SOFTMAX, "q: softmax over features, k: over positions (Shen)"},
    {"exp", RL_FMAP_EXP, "q: softmax over features, k: exp(k)"},
    {NULL, 0, NULL}};
RL_CHOICE_TABLE_CHECK(rl_fmaps, RL_FMAP_COUNT);

const struct rl_choice rl_attn_pes[] = {
    {"none", RL_ATTN_PE_NONE, "no position information"},
    {"rope", RL_ATTN_PE_ROPE, "rotary embedding of q and k (RoFormer)"},
    {"t5", RL_ATTN_PE_T5, "learned bias per head and distance bucket (T5)"},
    {"alibi", RL_ATTN_PE_ALIBI, "bias -slope_h |m - n| per head (ALiBi)"},
    {NULL, 0, NULL}};
RL_CHOICE_TABLE_CHECK(rl_attn_pes, RL_ATTN_PE_COUNT);

const struct rl_choice rl_rope_layouts[] = {
    {"pairs", RL_ROPE_LAYOUT_PAIRS, "(2i, 2i+1) rotate together (RoFormer, GPT-J)"},
    {"halves", RL_ROPE_LAYOUT_HALVES, "(i, i + R/2) rotate together (GPT-NeoX)"},
    {NULL, 0, NULL}};
RL_CHOICE_TABLE_CHECK(rl_rope_layouts, RL_ROPE_LAYOUT_COUNT);

const struct rl_choice rl_rope_places[] = {
    {"feature", RL_ROPE_PLACE_FEATURE, "rotate phi(q), phi(k) (eq. 19)"},
    {"input", RL_ROPE_PLACE_INPUT, "rotate q and k before the feature map"},
    {NULL, 0, NULL}};
RL_CHOICE_TABLE_CHECK(rl_rope_places, RL_ROPE_PLACE_COUNT);

const struct rl_choice rl_rope_denoms[] = {
    {"plain", RL_ROPE_DENOM_PLAIN, "the denominator unrotated (eq. 19)"},
    {"rotated", RL_ROPE_DENOM_ROTATED, "the denominator rotated as the numerator"},
    {NULL, 0, NULL}};
RL_CHOICE_TABLE_CHECK(rl_rope_denoms, RL_ROPE_DENOM_COUNT);
