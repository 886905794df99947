/* sweep.c -- cross product of the [sweep] section, point names and point configurations;
 * see sweep.h. */
#include "config.h"
#include "sweep.h"

#include <ctype.h>
#include <string.h>

static void trim_copy(char *dst, size_t cap, const char *s, size_t n)
{
    while (n && isspace((unsigned char)*s))
        s++, n--;
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    if (n >= cap) n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = 0;
}

static int name_char_ok(char ch)
{
    return isalnum((unsigned char)ch) || ch == '.' || ch == '_' || ch == '+' || ch == '-';
}

/* Split "v1, v2, ..." of key k into s->values[k]. */
static rl_status split_values(struct rl_sweep *s, int k, const struct rl_cfg_sweep_key *sk)
{
    const char *p = sk->values;
    int         n = 0;
    for (;;) {
        const char *e   = strchr(p, ',');
        size_t      len = e ? (size_t)(e - p) : strlen(p);
        if (n == RL_SWEEP_MAX_VALUES)
            RL_FAIL(RL_EINVAL, "%s: [sweep] %s: at most %d values", sk->where, sk->key,
                    RL_SWEEP_MAX_VALUES);
        if (len >= RL_SWEEP_VALUE)
            RL_FAIL(RL_EINVAL, "%s: [sweep] %s: a value longer than %d characters", sk->where,
                    sk->key, RL_SWEEP_VALUE - 1);
        trim_copy(s->values[k][n], RL_SWEEP_VALUE, p, len);
        n++;
        if (!e) break;
        p = e + 1;
    }
    s->n_values[k] = n;
    return RL_OK;
}

/* Values of one key whose directory texts coincide would share a directory. */
static rl_status check_distinct(const struct rl_sweep *s, int k)
{
    char a[RL_SWEEP_VALUE], b[RL_SWEEP_VALUE];
    for (int i = 0; i < s->n_values[k]; i++)
        for (int j = 0; j < i; j++) {
            snprintf(a, sizeof a, "%s", s->values[k][i]);
            snprintf(b, sizeof b, "%s", s->values[k][j]);
            for (char *x = a; *x; x++)
                if (!name_char_ok(*x)) *x = '_';
            for (char *x = b; *x; x++)
                if (!name_char_ok(*x)) *x = '_';
            if (!strcmp(a, b))
                RL_FAIL(RL_EINVAL, "%s: [sweep] %s.%s: values '%s' and '%s' name the same point",
                        s->where[k], s->section[k], s->key[k], s->values[k][j], s->values[k][i]);
        }
    return RL_OK;
}

static void set_columns(struct rl_sweep *s)
{
    for (int k = 0; k < s->n_keys; k++) {
        int shared = 0;
        for (int j = 0; j < s->n_keys; j++)
            shared |= j != k && !strcmp(s->key[j], s->key[k]);
        if (shared)
            snprintf(s->column[k], sizeof s->column[k], "%s.%s", s->section[k], s->key[k]);
        else
            snprintf(s->column[k], sizeof s->column[k], "%s", s->key[k]);
    }
}

rl_status rl_sweep_init(struct rl_sweep *s, const struct rl_cfg *c)
{
    memset(s, 0, sizeof *s);
    s->n_points = 1;
    for (int k = 0; k < c->sweep.n_keys; k++) {
        const struct rl_cfg_sweep_key *sk  = &c->sweep.keys[k];
        const char                    *dot = strchr(sk->key, '.');
        RL_ASSERT(dot && (size_t)(dot - sk->key) < sizeof s->section[k]);
        memcpy(s->section[k], sk->key, (size_t)(dot - sk->key));
        s->section[k][dot - sk->key] = 0;
        snprintf(s->key[k], sizeof s->key[k], "%s", dot + 1);
        snprintf(s->where[k], sizeof s->where[k], "%s", sk->where);
        snprintf(s->dir[k], sizeof s->dir[k], "%s", sk->dir);
        s->n_keys = k + 1;
        RL_TRY(split_values(s, k, sk));
        RL_TRY(check_distinct(s, k));
        s->n_points *= s->n_values[k];
        if (s->n_points > RL_SWEEP_MAX_POINTS)
            RL_FAIL(RL_EINVAL, "%s: [sweep] %s: the sweep has more than %d points", sk->where,
                    sk->key, RL_SWEEP_MAX_POINTS);
    }
    set_columns(s);
    return RL_OK;
}

int rl_sweep_value_index(const struct rl_sweep *s, long p, int k)
{
    RL_ASSERT(p >= 0 && p < s->n_points && k >= 0 && k < s->n_keys);
    long stride = 1;
    for (int j = s->n_keys - 1; j > k; j--)
        stride *= s->n_values[j];
    return (int)((p / stride) % s->n_values[k]);
}

const char *rl_sweep_value(const struct rl_sweep *s, long p, int k)
{
    return s->values[k][rl_sweep_value_index(s, p, k)];
}

int rl_sweep_find(const struct rl_sweep *s, const char *section, const char *key)
{
    for (int k = 0; k < s->n_keys; k++)
        if (!strcmp(s->section[k], section) && !strcmp(s->key[k], key)) return k;
    return -1;
}

void rl_sweep_point_name(const struct rl_sweep *s, long p, char *buf, size_t len)
{
    size_t n = 0;
    RL_ASSERT(len > 0);
    buf[0] = 0;
    for (int k = 0; k < s->n_keys && n + 1 < len; k++) {
        int w = snprintf(buf + n, len - n, "%s%s=", k ? "," : "", s->column[k]);
        n += (size_t)w < len - n ? (size_t)w : len - n - 1;
        for (const char *v = rl_sweep_value(s, p, k); *v && n + 1 < len; v++)
            buf[n++] = name_char_ok(*v) ? *v : '_';
        buf[n] = 0;
    }
}

rl_status rl_sweep_point_cfg(const struct rl_sweep *s, const struct rl_cfg *base, long p,
                             struct rl_cfg *out)
{
    *out              = *base;
    out->sweep.n_keys = 0;
    for (int k = 0; k < s->n_keys; k++)
        RL_TRY(rl_cfg_set_key_at(out, s->section[k], s->key[k], rl_sweep_value(s, p, k),
                                 s->where[k], s->dir[k][0] ? s->dir[k] : NULL));
    return RL_OK;
}
