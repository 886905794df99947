/* rng.h -- the seeded deterministic generator of ropelab: xoshiro256** (Blackman and
 * Vigna 2018) seeded through splitmix64, with uniform and normal sampling.
 *
 * The whole state is the four words of struct rl_rng (no cached second normal), so it
 * can be checkpointed as text and restored exactly:  rl_rng_to_string writes
 *   "xoshiro256** 0123456789abcdef 0123456789abcdef 0123456789abcdef 0123456789abcdef"
 * (the four state words in lower-case hex) and rl_rng_from_string reads it back.
 *
 * Sampling is exact to the bit on every platform: uniform doubles take the top 53 bits,
 * normals use the Box-Muller cosine branch (two uniforms per normal, one output). */
#ifndef RL_RNG_H
#define RL_RNG_H

#include <stddef.h>
#include <stdint.h>
#include "status.h"

struct rl_rng {
    uint64_t s[4];
};

/* buffer size that always holds rl_rng_to_string's text: the 12-byte tag, four times a space
 * and 16 hex digits, and the terminating NUL (81 bytes), rounded up */
#define RL_RNG_STRING_LEN 96

void     rl_rng_seed(struct rl_rng *r, uint64_t seed); /* splitmix64 expansion of seed */
uint64_t rl_rng_u64(struct rl_rng *r);
double   rl_rng_uniform(struct rl_rng *r); /* [0, 1), 53 random bits */
double   rl_rng_normal(struct rl_rng *r);  /* N(0, 1), Box-Muller */
/* Uniform integer in [0, n) (n > 0), unbiased (rejection). */
uint64_t rl_rng_below(struct rl_rng *r, uint64_t n);

/* Writes the state as text into buf (len >= RL_RNG_STRING_LEN, asserted); returns buf. */
char *rl_rng_to_string(const struct rl_rng *r, char *buf, size_t len);
/* Parses rl_rng_to_string's text; RL_EFORMAT with a message on anything else. */
rl_status rl_rng_from_string(struct rl_rng *r, const char *s);

#endif
