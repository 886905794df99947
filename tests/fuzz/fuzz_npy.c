/* fuzz_npy.c -- libFuzzer target: the .npy reader (core/npy.h) on arbitrary bytes.  Any
 * input is either parsed (then every element is read) or refused with a message. */
#include "config.h"
#include "core/npy.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rl_npy a;
    if (rl_npy_parse(&a, data, size, "fuzz.npy") == RL_OK) rl_npy_free(&a);
    return 0;
}
