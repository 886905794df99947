/* t_json.c -- JSON strings as the parser decodes them: escapes, runs of backslashes before
 * a quote, control characters and unterminated strings, each against the expected bytes
 * written out here by hand (RFC 8259 §7), and a long string with escapes spread through it
 * against a byte-by-byte decoding done in this test. */
#include "config.h"
#include "core/json.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_string(const char *text, const char *want, size_t want_len, const char *what)
{
    struct rl_json *j  = NULL;
    rl_status       st = rl_json_parse(&j, text, strlen(text));
    tap_ok(st == RL_OK && j->type == RL_JSON_STRING && j->len == want_len &&
               !memcmp(j->string, want, want_len) && j->string[want_len] == 0,
           "%s: %.40s", what, text);
    rl_json_free(j);
}

static void check_refused(const char *text, size_t len, const char *msg, const char *what)
{
    struct rl_json *j  = NULL;
    rl_status       st = rl_json_parse(&j, text, len);
    tap_ok(st != RL_OK && strstr(rl_last_error(), msg), "%s refused: %s", what, rl_last_error());
    rl_json_free(j);
}

int main(void)
{
    check_string("\"plain\"", "plain", 5, "plain text");
    check_string("\"\"", "", 0, "empty string");
    check_string("\"a\\\"b\"", "a\"b", 3, "escaped quote");
    check_string("\"a\\\\\"", "a\\", 2, "escaped backslash just before the closing quote");
    check_string("\"\\\\\\\\\\\"x\"", "\\\\\"x", 4,
                 "two escaped backslashes, then an escaped quote");
    check_string("\"\\/\\b\\f\\n\\r\\t\"", "/\b\f\n\r\t", 6, "the one-letter escapes");
    check_string("\"\\u00e9\\u20ac\"", "\xc3\xa9\xe2\x82\xac", 5, "\\u escapes to UTF-8");
    check_string("\"\\ud83d\\ude00\"", "\xf0\x9f\x98\x80", 4, "a surrogate pair");
    check_string("\"a\\u0000b\"", "a\0b", 3, "an escaped NUL keeps the length");
    check_refused("\"abc", 4, "unterminated", "no closing quote");
    check_refused("\"abc\\\"", 6, "unterminated", "only an escaped quote");
    check_refused("\"ab\ncd\"", 7, "control character", "a raw newline");
    check_refused("\"ab\\x\"", 6, "bad escape", "an unknown escape");

    /* 64 KiB of text with an escape every 37 bytes, decoded here byte by byte */
    enum { N = 65536 };
    char  *text = malloc(2 * N + 3), *want = malloc(N + 1);
    size_t t = 0, w = 0;
    text[t++] = '"';
    for (int i = 0; i < N; i++) {
        char c = (char)('a' + i % 26);
        if (i % 37 == 0) {
            text[t++] = '\\', text[t++] = i % 74 ? 'n' : '"';
            want[w++] = i % 74 ? '\n' : '"';
        } else {
            text[t++] = c, want[w++] = c;
        }
    }
    text[t++] = '"', text[t] = 0;
    check_string(text, want, w, "a 64 KiB string with escapes every 37 bytes");
    free(text), free(want);
    return tap_done();
}
