/* fuzz_checkpoint.c -- libFuzzer target: the checkpoint reader and the resume path on
 * arbitrary bytes: the metadata (step, configuration text parsed as INI, generator state),
 * then a full load (safetensors validation, checksums, finite values) into a small model
 * with its AdamW moments.  A refused file must leave the model unchanged.
 * FUZZ_WRITE_SEED=FILE writes a valid checkpoint of that model to FILE (the seed corpus). */
#include "config.h"
#include "core/threads.h"
#include "core/init.h"
#include "core/rng.h"
#include "config/cfg.h"
#include "model/checkpoint.h"
#include "model/model.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static rl_model     *m;
static float        *mom_m, *mom_v, *keep;
static size_t        np;
static char          path[256];
static struct rl_cfg cfg;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    rl_init(1);
    struct rl_model_config c;
    memset(&c, 0, sizeof c);
    rl_attn_opts_default(&c.attn);
    c.vocab = 11, c.d_model = 8, c.heads = 2, c.layers = 1, c.max_len = 16;
    c.attn.pe = RL_ATTN_PE_T5, c.attn.causal = 1, c.attn.t5_buckets = 6;
    c.attn.t5_max_distance = 8;
    if (rl_model_create(&m, &c) != RL_OK) abort();
    rl_model_init_weights(m, 3);
    np    = rl_model_num_params(m);
    mom_m = calloc(np, 4), mom_v = calloc(np, 4), keep = malloc(np * 4);
    const char *seed = getenv("FUZZ_WRITE_SEED");
    if (seed) {
        for (size_t i = 0; i < np; i++)
            mom_m[i] = 0.01f * (float)i, mom_v[i] = 1e-4f;
        exit(rl_checkpoint_save(seed, m, mom_m, mom_v, 7, "[train]\nsteps = 9\n",
                                "xoshiro256** 1 2 3 4") != RL_OK);
    }
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(path, sizeof path, "%s/fuzz_checkpoint.%ld.safetensors", dir, (long)getpid());
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    int64_t step;
    char   *config = NULL, *rng = NULL;
    if (rl_checkpoint_read_meta(path, &step, &config, &rng) == RL_OK) {
        struct rl_rng r;
        rl_cfg_defaults(&cfg);
        rl_cfg_load_string(&cfg, config, "checkpoint"); /* as resume compares configurations */
        rl_rng_from_string(&r, rng);
    }
    free(config), free(rng);
    memcpy(keep, rl_model_params(m), np * 4);
    if (rl_checkpoint_load(path, m, mom_m, mom_v, &step, &config, &rng) == RL_OK) {
        free(config), free(rng);
    } else if (memcmp(keep, rl_model_params(m), np * 4)) {
        abort(); /* a refused file changed the model */
    }
    remove(path);
    return 0;
}
