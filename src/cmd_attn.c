/* cmd_attn.c -- `ropelab attn` (placeholder while the kernels land). */
#include "config.h"
#include "cli.h"

#include <stdio.h>

int rl_cmd_attn(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "ropelab attn: not built yet\n");
    return RL_EXIT_FAIL;
}
