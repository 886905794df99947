/* report_table.h -- summary.md and the headline table of a run read by report_data.h. */
#ifndef RL_REPORT_TABLE_H
#define RL_REPORT_TABLE_H

#include <stdio.h>
#include "report_data.h"

/* summary.md into b; the headline table as aligned text into f. */
rl_status rl_rep_summary(const struct rl_report *r, struct rl_json_buf *b);
void      rl_rep_print_table(const struct rl_report *r, FILE *f);

#endif
