/* cmd_run.c -- `ropelab run` (placeholder until the trainer lands). */
#include "config.h"
#include "cli.h"

#include <stdio.h>
#include <string.h>

int rl_cmd_run(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        printf("Usage: ropelab run EXPERIMENT.ini [--out DIR] [--threads N] [--set section.key=value]... [--resume]\n"
               "(not built yet)\n");
        return RL_EXIT_OK;
    }
    fprintf(stderr, "ropelab run: not built yet\n");
    return RL_EXIT_FAIL;
}
