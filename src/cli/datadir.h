/* datadir.h -- where the shipped experiments and their data are: $ROPELAB_DATADIR, else
 * the installation's $(pkgdatadir) (experiments/ and data/ side by side, as in the source
 * tree), and the lookup that lets `ropelab run quickstart` run an installed experiment. */
#ifndef RL_CLI_DATADIR_H
#define RL_CLI_DATADIR_H

#include <stddef.h>
#include <stdio.h>

/* The directory holding experiments/ and data/. */
const char *rl_cli_datadir(void);

/* The experiment file that `arg` names: arg itself when it exists, or, for a bare name
 * (no '/') that does not, DATADIR/experiments/arg or arg.ini.  Returns 1 and the path in
 * buf when found, 0 (buf = arg) otherwise. */
int rl_cli_find_experiment(const char *arg, char *buf, size_t len);

/* The shipped experiments: one line each, the name and the first line of its header
 * comment; returns the exit status (1 when the directory cannot be read). */
int rl_cli_list_experiments(FILE *f);

#endif
