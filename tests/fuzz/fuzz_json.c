/* fuzz_json.c -- libFuzzer target: the JSON reader (core/json.h) on arbitrary bytes, the
 * duplicate-key check on every object, and the writer's escaping round trip of every
 * string read (escape, parse back, compare). */
#include "config.h"
#include "core/json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void walk(const struct rl_json *j, int depth)
{
    if (j->type == RL_JSON_OBJECT) rl_json_has_duplicate_keys(j);
    if (j->type == RL_JSON_STRING && depth < 4) {
        struct rl_json_buf b;
        rl_json_buf_init(&b);
        rl_json_buf_string(&b, j->string, j->len);
        struct rl_json *back = NULL;
        if (!b.failed) {
            if (rl_json_parse(&back, b.p, b.len) != RL_OK) abort(); /* the writer's text */
            if (back->len != j->len || memcmp(back->string, j->string, j->len)) abort();
            rl_json_free(back);
        }
        rl_json_buf_free(&b);
    }
    if (j->type == RL_JSON_OBJECT || j->type == RL_JSON_ARRAY)
        for (int i = 0; i < j->n; i++)
            walk(&j->items[i], depth + 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rl_json *j = NULL;
    if (rl_json_parse(&j, (const char *)data, size) == RL_OK) {
        walk(j, 0);
        rl_json_free(j);
    }
    return 0;
}
