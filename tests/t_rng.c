/* t_rng.c -- the generator's text form (rng.h): every state word survives
 * rl_rng_to_string / rl_rng_from_string exactly, including words whose top and bottom
 * nibbles are non-zero (a buffer one byte short drops the last digit of the last word),
 * the stream after a restore equals the stream of the original, and malformed texts are
 * refused. */
#include "config.h"
#include "core/rng.h"
#include "tap.h"

#include <stdio.h>
#include <string.h>

static int same_state(const struct rl_rng *a, const struct rl_rng *b)
{
    for (int i = 0; i < 4; i++)
        if (a->s[i] != b->s[i]) return 0;
    return 1;
}

int main(void)
{
    struct rl_rng r, back;
    char          buf[RL_RNG_STRING_LEN];
    /* the widest words: every nibble non-zero, so no digit may be dropped */
    r.s[0] = 0xfedcba9876543211ull, r.s[1] = 0x123456789abcdeffull;
    r.s[2] = 0xffffffffffffffffull, r.s[3] = 0xf00000000000000full;
    rl_rng_to_string(&r, buf, sizeof buf);
    tap_ok(strlen(buf) == 80, "the text of four full words is 80 characters (got %zu)",
           strlen(buf));
    tap_ok(rl_rng_from_string(&back, buf) == RL_OK && same_state(&r, &back),
           "full words round-trip exactly: %s", buf);
    int bad = 0;
    rl_rng_seed(&r, 12345);
    for (int k = 0; k < 1000; k++) {
        rl_rng_to_string(&r, buf, sizeof buf);
        if (rl_rng_from_string(&back, buf) != RL_OK || !same_state(&r, &back)) bad++;
        rl_rng_u64(&r);
    }
    tap_ok(bad == 0, "1000 states of a seeded stream round-trip word for word (%d differ)", bad);
    rl_rng_to_string(&r, buf, sizeof buf);
    rl_rng_from_string(&back, buf);
    int same = 1;
    for (int k = 0; k < 100; k++)
        same &= rl_rng_u64(&r) == rl_rng_u64(&back);
    tap_ok(same, "a restored generator continues the original stream");
    tap_ok(rl_rng_from_string(&back, "xoshiro256** 1 2 3") != RL_OK, "three words refused");
    tap_ok(rl_rng_from_string(&back, "xoshiro256** 0 0 0 0") != RL_OK, "all-zero state refused");
    tap_ok(rl_rng_from_string(&back, "xoshiro256** 1 2 3 4x") != RL_OK, "trailing text refused");
    tap_ok(rl_rng_from_string(&back, "xoshiro256** 1 2 3 12345678901234567") != RL_OK,
           "a 17-digit word refused");
    tap_ok(rl_rng_from_string(&back, "pcg 1 2 3 4") != RL_OK, "another generator refused");
    return tap_done();
}
