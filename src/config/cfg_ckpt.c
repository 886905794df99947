/* cfg_ckpt.c -- the configuration a checkpoint was trained with: the resolved INI text
 * that `ropelab run` writes into the safetensors header's __metadata__ "config". */
#include "config.h"
#include "cfg.h"
#include "../model/checkpoint.h"

#include <stdio.h>
#include <stdlib.h>

rl_status rl_cfg_from_checkpoint(struct rl_cfg *c, const char *path, int64_t *step)
{
    char     *text = NULL, name[4200];
    rl_status st   = rl_checkpoint_read_meta(path, step, &text, NULL);
    if (st == RL_OK && (!text || !*text))
        st = rl_error_report(RL_EFORMAT, __FILE__, __LINE__,
                             "%s: no __metadata__ \"config\": not a checkpoint written by "
                             "ropelab run",
                             path);
    snprintf(name, sizeof name, "%s (__metadata__ config)", path);
    if (st == RL_OK) rl_cfg_defaults(c), st = rl_cfg_load_string(c, text, name);
    free(text);
    return st;
}
