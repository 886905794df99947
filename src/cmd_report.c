/* cmd_report.c -- `ropelab report` (placeholder until experiments land). */
#include "config.h"
#include "cli.h"

#include <stdio.h>
#include <string.h>

int rl_cmd_report(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        printf("Usage: ropelab report RUN_DIR\n(not built yet)\n");
        return RL_EXIT_OK;
    }
    fprintf(stderr, "ropelab report: not built yet\n");
    return RL_EXIT_FAIL;
}
