/* interrupt.h -- SIGINT and SIGTERM as requests to stop cleanly: the first sets a flag
 * that the library polls (at the end of an update, or of an evaluation's forward) and says
 * so on stderr; a second one of either ends the process at once, as the signal would. */
#ifndef RL_CLI_INTERRUPT_H
#define RL_CLI_INTERRUPT_H

#include <signal.h>
#include <stdio.h>

/* Install the handlers; `what` completes the notice "interrupted: stopping ..." (e.g. "at
 * the end of this update, after saving a checkpoint").  Returns the flag to poll. */
volatile sig_atomic_t *rl_cli_interrupt_install(const char *what);
/* The signal that raised the flag (0: none). */
int rl_cli_interrupt_signal(void);
/* The exit status of a process stopped by that signal: 128 + its number (130, 143). */
int rl_cli_interrupt_status(void);

/* Print "ropelab CMD ARGS... --resume" to f: the command line again (argv as the
 * subcommand got it, argv[0] its name), without --stop-after and with --resume, each
 * argument quoted for a POSIX shell where it needs it. */
void rl_cli_print_resume(FILE *f, int argc, char **argv);

#endif
