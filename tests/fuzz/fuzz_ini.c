/* fuzz_ini.c -- libFuzzer target: an experiment INI file (config/cfg.h) from arbitrary
 * bytes: parsed (every error reported, never a crash), checked, and when its lines pass
 * rl_cfg_check_lines (what a run checks before it writes config.ini: a relative path
 * resolved against the file's folder can outgrow an INI line) rendered and parsed back,
 * which must succeed and render the same text again (the writer never writes what the
 * reader would read differently). */
#include "config.h"
#include "config/cfg.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { TEXT = 1 << 16 };
static struct rl_cfg c, back;
static char          a[TEXT], b[TEXT];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16 || memchr(data, 0, size)) return 0; /* files with NUL are refused */
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    rl_cfg_defaults(&c);
    if (rl_cfg_load_string(&c, text, "fuzz.ini") == RL_OK) {
        rl_cfg_check(&c);
        int n = rl_cfg_check_lines(&c) == RL_OK ? rl_cfg_render(&c, a, TEXT, 0) : TEXT;
        if (n < TEXT) {
            rl_cfg_defaults(&back);
            if (rl_cfg_load_string(&back, a, "fuzz.ini") != RL_OK) abort(); /* must read back */
            rl_cfg_render(&back, b, TEXT, 0);
            if (strcmp(a, b)) abort(); /* ... to the same configuration */
        }
    }
    free(text);
    return 0;
}
