/* rng.c -- xoshiro256** with splitmix64 seeding; see rng.h. */
#include "config.h"
#include "rng.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z          = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z          = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void rl_rng_seed(struct rl_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
    /* splitmix64 never yields four zero words in a row, so the state is never all zero */
}

uint64_t rl_rng_u64(struct rl_rng *r)
{
    uint64_t *s      = r->s;
    uint64_t  result = rotl(s[1] * 5, 7) * 9;
    uint64_t  t      = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double rl_rng_uniform(struct rl_rng *r) { return (double)(rl_rng_u64(r) >> 11) * 0x1.0p-53; }

double rl_rng_normal(struct rl_rng *r)
{
    /* u1 in (0, 1] so log(u1) is finite */
    double u1 = 1.0 - rl_rng_uniform(r);
    double u2 = rl_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}

uint64_t rl_rng_below(struct rl_rng *r, uint64_t n)
{
    RL_ASSERT(n > 0);
    uint64_t limit = UINT64_MAX - UINT64_MAX % n; /* accept x < limit: a multiple of n values */
    uint64_t x;
    do
        x = rl_rng_u64(r);
    while (x >= limit);
    return x % n;
}

char *rl_rng_to_string(const struct rl_rng *r, char *buf, size_t len)
{
    RL_ASSERT(len >= RL_RNG_STRING_LEN); /* a shorter buffer would drop digits silently */
    snprintf(buf, len, "xoshiro256** %016" PRIx64 " %016" PRIx64 " %016" PRIx64 " %016" PRIx64,
             r->s[0], r->s[1], r->s[2], r->s[3]);
    return buf;
}

static int parse_hex64(uint64_t *out, const char **p)
{
    const char *s = *p;
    while (*s == ' ')
        s++;
    uint64_t v = 0;
    int      n = 0;
    for (; n < 16; n++, s++) {
        int c = (unsigned char)*s, dgt;
        if (c >= '0' && c <= '9')
            dgt = c - '0';
        else if (c >= 'a' && c <= 'f')
            dgt = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            dgt = c - 'A' + 10;
        else
            break;
        v = (v << 4) | (uint64_t)dgt;
    }
    if (n == 0 || (*s != ' ' && *s != '\0')) return 0;
    *out = v;
    *p   = s;
    return 1;
}

rl_status rl_rng_from_string(struct rl_rng *r, const char *s)
{
    static const char tag[] = "xoshiro256**";
    if (!s || strncmp(s, tag, sizeof tag - 1) != 0)
        RL_FAIL(RL_EFORMAT, "rng state \"%.40s\": expected \"%s\" and four hex words", s ? s : "",
                tag);
    const char   *p = s + sizeof tag - 1;
    struct rl_rng t;
    for (int i = 0; i < 4; i++)
        if (!parse_hex64(&t.s[i], &p))
            RL_FAIL(RL_EFORMAT, "rng state \"%.100s\": word %d is not a 64-bit hex number", s, i);
    while (*p == ' ')
        p++;
    if (*p) RL_FAIL(RL_EFORMAT, "rng state \"%.100s\": trailing text", s);
    if (!(t.s[0] | t.s[1] | t.s[2] | t.s[3]))
        RL_FAIL(RL_EFORMAT, "rng state \"%.100s\": the all-zero state is invalid", s);
    *r = t;
    return RL_OK;
}
