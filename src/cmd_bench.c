/* cmd_bench.c -- `ropelab bench` (placeholder while the kernels land). */
#include "config.h"
#include "cli.h"

#include <stdio.h>

int rl_cmd_bench(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "ropelab bench: not built yet\n");
    return RL_EXIT_FAIL;
}
