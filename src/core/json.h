/* json.h -- a minimal JSON reader (RFC 8259) and a string-building writer helper.
 *
 * Reader: rl_json_parse builds a tree of rl_json nodes from a byte range (no NUL needed).
 * It accepts exactly RFC 8259 JSON: objects, arrays, strings with every escape (\uXXXX
 * with surrogate pairs, decoded to UTF-8), numbers, true/false/null; whitespace around
 * values; nesting up to RL_JSON_MAX_DEPTH.  Anything else -- trailing text, control
 * characters in strings, lone surrogates, leading zeros, bad escapes, embedded NULs in
 * keys -- is RL_EFORMAT with a message that gives the byte offset.  It never reads
 * outside [text, text + len).  Duplicate object keys are kept; rl_json_get returns the
 * first, rl_json_has_duplicate_keys tells callers that must refuse them.
 *
 * Writer: struct rl_json_buf is a growable string with printf and JSON-string appends
 * (escaping ", \, control characters; UTF-8 passes through).  Appends after a failed
 * allocation are no-ops and `failed` stays set, so callers check once at the end. */
#ifndef RL_JSON_H
#define RL_JSON_H

#include <stddef.h>
#include <stdint.h>
#include "status.h"

#define RL_JSON_MAX_DEPTH 64

enum rl_json_type {
    RL_JSON_NULL = 0,
    RL_JSON_FALSE,
    RL_JSON_TRUE,
    RL_JSON_NUMBER,
    RL_JSON_STRING,
    RL_JSON_ARRAY,
    RL_JSON_OBJECT,
};

struct rl_json {
    enum rl_json_type type;
    double            number; /* NUMBER */
    int     is_int;        /* NUMBER written as an integer (no fraction/exponent) that fits int64 */
    int64_t integer;       /* NUMBER with is_int */
    char   *string;        /* STRING: decoded UTF-8, NUL-terminated (may hold NULs: see len) */
    size_t  len;           /* STRING: bytes in string */
    int     n;             /* ARRAY/OBJECT: number of children */
    struct rl_json *items; /* ARRAY/OBJECT: children */
    char          **keys;  /* OBJECT: key of each child, decoded, NUL-terminated */
};

/* Parse text[0 .. len).  On success *out owns the tree (free with rl_json_free). */
rl_status rl_json_parse(struct rl_json **out, const char *text, size_t len);
void      rl_json_free(struct rl_json *j);

/* Member of an object by key (first match), NULL if absent or j is not an object. */
const struct rl_json *rl_json_get(const struct rl_json *j, const char *key);
/* Index of a duplicated key in an object, or -1 if all keys are distinct. */
int         rl_json_has_duplicate_keys(const struct rl_json *j);
const char *rl_json_type_name(enum rl_json_type t);

/* Writer. */
struct rl_json_buf {
    char  *p; /* NUL-terminated text (NULL until the first append) */
    size_t len, cap;
    int    failed; /* an allocation failed: the text is incomplete */
};

void rl_json_buf_init(struct rl_json_buf *b);
void rl_json_buf_free(struct rl_json_buf *b);
void rl_json_buf_append(struct rl_json_buf *b, const char *s, size_t n);
void rl_json_buf_puts(struct rl_json_buf *b, const char *s);
void rl_json_buf_printf(struct rl_json_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends s (n bytes) as a quoted JSON string. */
void rl_json_buf_string(struct rl_json_buf *b, const char *s, size_t n);
/* Appends a double so that it reads back exactly (%.17g); NaN/inf (not JSON) as null. */
void rl_json_buf_number(struct rl_json_buf *b, double x);

/* Escape src into dst (without the quotes); returns the length the escaped text needs
 * (snprintf semantics: dst holds min(cap - 1, that) bytes plus a NUL when cap > 0). */
size_t rl_json_escape(char *dst, size_t cap, const char *src, size_t n);

#endif
