/* json.c -- minimal JSON reader and writer helper; see json.h.
 * A recursive-descent parser over a byte range: every read goes through peek(), which
 * checks the bound, so malformed or truncated input can only produce an error. */
#include "config.h"
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct parser {
    const char *s;
    size_t      len, pos;
    int         depth;
};

static int peek(const struct parser *p)
{
    return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
}

static void skip_ws(struct parser *p)
{
    for (int c = peek(p); c == ' ' || c == '\t' || c == '\n' || c == '\r'; c = peek(p))
        p->pos++;
}

#define PFAIL(p, ...)                                                                              \
    do {                                                                                           \
        char msg_[200];                                                                            \
        snprintf(msg_, sizeof msg_, __VA_ARGS__);                                                  \
        RL_FAIL(RL_EFORMAT, "JSON: %s at byte %zu", msg_, (p)->pos);                               \
    } while (0)

static rl_status parse_value(struct parser *p, struct rl_json *v);

static void free_node(struct rl_json *j)
{
    if (!j) return;
    free(j->string);
    for (int i = 0; i < j->n; i++) {
        free_node(&j->items[i]);
        if (j->keys) free(j->keys[i]);
    }
    free(j->items);
    free(j->keys);
    memset(j, 0, sizeof *j);
}

void rl_json_free(struct rl_json *j)
{
    free_node(j);
    free(j);
}

static rl_status expect_word(struct parser *p, const char *w)
{
    size_t n = strlen(w);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, w, n) != 0) PFAIL(p, "invalid literal");
    p->pos += n;
    return RL_OK;
}

/* --- strings ------------------------------------------------------------------------ */

static int hex4(const struct parser *p, size_t at, unsigned *u)
{
    *u = 0;
    if (at > p->len || p->len - at < 4) return 0;
    for (int i = 0; i < 4; i++) {
        int c = (unsigned char)p->s[at + (size_t)i], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return 0;
        *u = (*u << 4) | (unsigned)d;
    }
    return 1;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) return o[0] = (char)cp, 1;
    if (cp < 0x800) return o[0] = (char)(0xC0 | cp >> 6), o[1] = (char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12), o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18), o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* \uXXXX (with a following low surrogate when XXXX is a high one) at p->pos (after 'u'). */
static rl_status parse_u_escape(struct parser *p, unsigned *cp)
{
    unsigned u;
    if (!hex4(p, p->pos, &u)) PFAIL(p, "bad \\u escape");
    p->pos += 4;
    if (u >= 0xDC00 && u <= 0xDFFF) PFAIL(p, "lone low surrogate");
    if (u >= 0xD800 && u <= 0xDBFF) {
        unsigned lo;
        if (p->len - p->pos < 6 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u' ||
            !hex4(p, p->pos + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
            PFAIL(p, "high surrogate without its low surrogate");
        p->pos += 6;
        u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
    }
    *cp = u;
    return RL_OK;
}

static rl_status parse_escape(struct parser *p, char *o, size_t *n)
{
    int c = peek(p);
    p->pos++;
    const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
    const char *e = c > 0 ? strchr(from, c) : NULL;
    if (e) {
        o[0] = to[e - from];
        *n   = 1;
        return RL_OK;
    }
    if (c != 'u') PFAIL(p, "bad escape");
    unsigned cp = 0;
    RL_TRY(parse_u_escape(p, &cp));
    *n = put_utf8(o, cp);
    return RL_OK;
}

/* The closing quote of a string whose text starts at start: the first '"' after an even
 * run of backslashes (memchr, so long strings such as a checkpoint's configuration text
 * cost little); p->len if there is none. */
static size_t closing_quote(const struct parser *p, size_t start)
{
    for (size_t from = start; from < p->len;) {
        const char *q = memchr(p->s + from, '"', p->len - from);
        if (!q) break;
        size_t e = (size_t)(q - p->s), bs = 0;
        while (e - bs > start && p->s[e - bs - 1] == '\\')
            bs++;
        if (bs % 2 == 0) return e;
        from = e + 1;
    }
    return p->len;
}

/* At the opening quote.  The decoded text is never longer than the raw text. */
static rl_status parse_string(struct parser *p, char **out, size_t *out_len)
{
    p->pos++;
    const size_t start = p->pos, end = closing_quote(p, start);
    if (end >= p->len) PFAIL(p, "unterminated string");
    char *buf = malloc(end - start + 1);
    if (!buf) RL_FAIL(RL_ENOMEM, "JSON: out of memory");
    size_t n = 0;
    while (p->pos < end) {
        /* a run without escapes is checked for control characters and copied at once */
        const char  *bs  = memchr(p->s + p->pos, '\\', end - p->pos);
        const size_t run = (bs ? (size_t)(bs - p->s) : end) - p->pos;
        for (size_t i = 0; i < run; i++)
            if ((unsigned char)p->s[p->pos + i] < 0x20) {
                free(buf);
                p->pos += i;
                PFAIL(p, "control character in string");
            }
        memcpy(buf + n, p->s + p->pos, run);
        n += run, p->pos += run;
        if (p->pos == end) break;
        p->pos++;
        size_t    k  = 0;
        rl_status st = parse_escape(p, buf + n, &k);
        if (st != RL_OK) return free(buf), st;
        n += k;
    }
    p->pos = end + 1;
    buf[n] = 0;
    *out = buf, *out_len = n;
    return RL_OK;
}

/* --- numbers ------------------------------------------------------------------------ */

static size_t digits(struct parser *p)
{
    size_t n = 0;
    for (int c = peek(p); c >= '0' && c <= '9'; c = peek(p))
        p->pos++, n++;
    return n;
}

static rl_status parse_number(struct parser *p, struct rl_json *v)
{
    size_t start = p->pos;
    int    frac  = 0;
    if (peek(p) == '-') p->pos++;
    if (peek(p) == '0')
        p->pos++;
    else if (digits(p) == 0)
        PFAIL(p, "bad number");
    if (peek(p) >= '0' && peek(p) <= '9') PFAIL(p, "leading zero in number");
    if (peek(p) == '.') {
        p->pos++, frac = 1;
        if (digits(p) == 0) PFAIL(p, "no digits after the decimal point");
    }
    if (peek(p) == 'e' || peek(p) == 'E') {
        p->pos++, frac = 1;
        if (peek(p) == '+' || peek(p) == '-') p->pos++;
        if (digits(p) == 0) PFAIL(p, "no digits in exponent");
    }
    size_t n = p->pos - start;
    char   small[64]; /* most numbers: no allocation */
    char  *tmp = n < sizeof small ? small : malloc(n + 1);
    if (!tmp) RL_FAIL(RL_ENOMEM, "JSON: out of memory");
    memcpy(tmp, p->s + start, n);
    tmp[n]    = 0;
    v->type   = RL_JSON_NUMBER;
    v->number = strtod(tmp, NULL);
    if (!frac) {
        errno       = 0;
        long long i = strtoll(tmp, NULL, 10);
        v->is_int   = errno == 0;
        v->integer  = v->is_int ? (int64_t)i : 0;
    }
    if (tmp != small) free(tmp);
    return RL_OK;
}

/* --- containers --------------------------------------------------------------------- */

static rl_status grow(struct rl_json *v, int *cap, int object)
{
    if (v->n < *cap) return RL_OK;
    int   nc    = *cap ? 2 * *cap : 4;
    void *items = realloc(v->items, (size_t)nc * sizeof *v->items);
    if (!items) RL_FAIL(RL_ENOMEM, "JSON: out of memory");
    v->items = items;
    if (object) {
        void *keys = realloc(v->keys, (size_t)nc * sizeof *v->keys);
        if (!keys) RL_FAIL(RL_ENOMEM, "JSON: out of memory");
        v->keys = keys;
    }
    *cap = nc;
    return RL_OK;
}

/* One member (object: "key": value) appended to v. */
static rl_status parse_member(struct parser *p, struct rl_json *v, int *cap, int object)
{
    RL_TRY(grow(v, cap, object));
    struct rl_json *item = &v->items[v->n];
    memset(item, 0, sizeof *item);
    char *key = NULL;
    skip_ws(p);
    if (object) {
        size_t klen;
        if (peek(p) != '"') PFAIL(p, "expected a string key");
        RL_TRY(parse_string(p, &key, &klen));
        skip_ws(p);
        int nul = strlen(key) != klen;
        if (nul || peek(p) != ':') {
            free(key);
            PFAIL(p, "%s", nul ? "NUL character in a key" : "expected ':'");
        }
        p->pos++;
        v->keys[v->n] = key;
    }
    v->n++; /* counted now so that a failure below frees key and item */
    return parse_value(p, item);
}

static rl_status parse_container(struct parser *p, struct rl_json *v, int object)
{
    const int close = object ? '}' : ']';
    v->type         = object ? RL_JSON_OBJECT : RL_JSON_ARRAY;
    if (++p->depth > RL_JSON_MAX_DEPTH) PFAIL(p, "nesting deeper than %d", RL_JSON_MAX_DEPTH);
    p->pos++;
    skip_ws(p);
    int cap = 0;
    if (peek(p) == close) {
        p->pos++, p->depth--;
        return RL_OK;
    }
    for (;;) {
        RL_TRY(parse_member(p, v, &cap, object));
        skip_ws(p);
        int c = peek(p);
        p->pos++;
        if (c == close) break;
        if (c != ',') {
            p->pos--;
            PFAIL(p, "expected ',' or '%c'", close);
        }
    }
    p->depth--;
    return RL_OK;
}

static rl_status parse_value(struct parser *p, struct rl_json *v)
{
    skip_ws(p);
    switch (peek(p)) {
    case '{':
        return parse_container(p, v, 1);
    case '[':
        return parse_container(p, v, 0);
    case '"':
        v->type = RL_JSON_STRING;
        return parse_string(p, &v->string, &v->len);
    case 't':
        v->type = RL_JSON_TRUE;
        return expect_word(p, "true");
    case 'f':
        v->type = RL_JSON_FALSE;
        return expect_word(p, "false");
    case 'n':
        v->type = RL_JSON_NULL;
        return expect_word(p, "null");
    case -1:
        PFAIL(p, "unexpected end of text");
    default:
        return parse_number(p, v);
    }
}

rl_status rl_json_parse(struct rl_json **out, const char *text, size_t len)
{
    *out              = NULL;
    struct parser   p = {text, len, 0, 0};
    struct rl_json *v = calloc(1, sizeof *v);
    if (!v) RL_FAIL(RL_ENOMEM, "JSON: out of memory");
    rl_status st = parse_value(&p, v);
    if (st == RL_OK) {
        skip_ws(&p);
        if (p.pos < p.len)
            st = rl_error_report(RL_EFORMAT, __FILE__, __LINE__, "JSON: trailing text at byte %zu",
                                 p.pos);
    }
    if (st != RL_OK) {
        rl_json_free(v);
        return st;
    }
    *out = v;
    return RL_OK;
}

const struct rl_json *rl_json_get(const struct rl_json *j, const char *key)
{
    if (!j || j->type != RL_JSON_OBJECT) return NULL;
    for (int i = 0; i < j->n; i++)
        if (strcmp(j->keys[i], key) == 0) return &j->items[i];
    return NULL;
}

/* Sorting (key, index) pairs puts equal keys next to each other: O(n log n) (a pairwise
 * comparison took hours at the safetensors header limit of 100 MB). */
struct key_at {
    const char *key;
    int         at;
};

static int by_key_then_index(const void *a, const void *b)
{
    const struct key_at *x = a, *y = b;
    int                  c = strcmp(x->key, y->key);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

int rl_json_has_duplicate_keys(const struct rl_json *j)
{
    if (!j || j->type != RL_JSON_OBJECT || j->n < 2) return -1;
    struct key_at *s   = malloc((size_t)j->n * sizeof *s);
    int            dup = -1;
    if (!s) { /* no memory for the index: the slow way, without allocating */
        for (int i = 1; i < j->n && dup < 0; i++)
            for (int k = 0; k < i && dup < 0; k++)
                if (strcmp(j->keys[i], j->keys[k]) == 0) dup = i;
        return dup;
    }
    for (int i = 0; i < j->n; i++)
        s[i].key = j->keys[i], s[i].at = i;
    qsort(s, (size_t)j->n, sizeof *s, by_key_then_index);
    /* the first key (in object order) that repeats an earlier one */
    for (int i = 1; i < j->n; i++)
        if (strcmp(s[i].key, s[i - 1].key) == 0 && (dup < 0 || s[i].at < dup)) dup = s[i].at;
    free(s);
    return dup;
}

const char *rl_json_type_name(enum rl_json_type t)
{
    static const char *names[] = {"null", "false", "true", "number", "string", "array", "object"};
    return (unsigned)t < sizeof names / sizeof *names ? names[t] : "?";
}

/* --- writer ------------------------------------------------------------------------- */

void rl_json_buf_init(struct rl_json_buf *b) { memset(b, 0, sizeof *b); }

void rl_json_buf_free(struct rl_json_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

static int reserve(struct rl_json_buf *b, size_t extra)
{
    if (b->failed) return 0;
    if (b->len + extra + 1 <= b->cap) return 1;
    size_t nc = b->cap ? b->cap : 256;
    while (nc < b->len + extra + 1)
        nc *= 2;
    char *p = realloc(b->p, nc);
    if (!p) return b->failed = 1, 0;
    b->p = p, b->cap = nc;
    return 1;
}

void rl_json_buf_append(struct rl_json_buf *b, const char *s, size_t n)
{
    if (!reserve(b, n)) return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

void rl_json_buf_puts(struct rl_json_buf *b, const char *s) { rl_json_buf_append(b, s, strlen(s)); }

void rl_json_buf_printf(struct rl_json_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

size_t rl_json_escape(char *dst, size_t cap, const char *src, size_t n)
{
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)src[i];
        char          e[8];
        size_t        k = 0;
        const char   *m = strchr("\"\\\b\f\n\r\t", c);
        if (c && m)
            e[0] = '\\', e[1] = "\"\\bfnrt"[m - "\"\\\b\f\n\r\t"], k = 2;
        else if (c < 0x20)
            k = (size_t)snprintf(e, sizeof e, "\\u%04x", c);
        else
            e[0] = (char)c, k = 1;
        for (size_t t = 0; t < k; t++, out++)
            if (cap && out < cap - 1) dst[out] = e[t];
    }
    if (cap) dst[out < cap - 1 ? out : cap - 1] = 0;
    return out;
}

void rl_json_buf_string(struct rl_json_buf *b, const char *s, size_t n)
{
    size_t need = rl_json_escape(NULL, 0, s, n);
    if (!reserve(b, need + 2)) return;
    b->p[b->len++] = '"';
    rl_json_escape(b->p + b->len, need + 1, s, n);
    b->len += need;
    b->p[b->len++] = '"';
    b->p[b->len]   = 0;
}

void rl_json_buf_number(struct rl_json_buf *b, double x)
{
    if (!isfinite(x))
        rl_json_buf_puts(b, "null");
    else
        rl_json_buf_printf(b, "%.17g", x);
}
