/* report_data.h -- a finished (or partly finished) run read back from its directory:
 * its points with their results.csv rows, metrics.jsonl loss curves, positions.csv
 * bins and orders.csv accuracies, the table rows (points that differ only in train.seed form a
 * group), and the statistics the table and plot writers (report_table.c, report_plot.c) compute
 * from them.  Reading never writes. */
#ifndef RL_REPORT_DATA_H
#define RL_REPORT_DATA_H

#include <stdint.h>
#include <stdio.h>
#include "../config/cfg.h"
#include "../core/json.h"
#include "../config/sweep.h"

/* The columns of results.csv from `length` on (a point's file has pe and attention before
 * them, a sweep's combined file the swept keys): the numbers, then how the row was
 * evaluated, then the 95 % intervals and their sample sizes, then the task's baseline (the
 * loss and accuracy of the best guess without context; train.h's rl_eval_row). */
#define RL_REP_RESULT_COLUMNS                                                                      \
    "length,acc,exact,loss,ppl,ms_per_1k_tokens,den_le_eps,note,rope_extend,rope_factor,stride,"   \
    "acc_lo,acc_hi,exact_lo,exact_hi,loss_lo,loss_hi,ppl_lo,ppl_hi,targets,sequences,ref_loss,"    \
    "ref_acc"

/* Lines of a point's results.csv: lengths x rope_extend methods. */
#define RL_REP_MAX_ROWS (RL_CFG_MAX_LENGTHS * RL_CFG_EXTEND_MAX)

/* One line of a point's results.csv. */
struct rl_rep_row {
    int    length, na;
    char   method[8];                 /* rope_extend ("none" in runs written before the column) */
    double acc, exact, loss, ppl, ms; /* NaN where empty or n/a */
    /* 95 % intervals (NaN where empty: one sequence, n/a, or a run written before them) */
    double acc_lo, acc_hi, exact_lo, exact_hi, loss_lo, loss_hi, ppl_lo, ppl_hi;
    double ref_loss, ref_acc; /* the task's baseline (NaN in runs written before it) */
    double den;               /* linear attention: fraction of denominators <= eps, else NaN */
    char   tail[512];         /* the line from its length field on, as the combined file has it */
    char   note[96];
};

struct rl_rep_point {
    char              name[RL_SWEEP_NAME]; /* directory under the run ("" without a sweep) */
    int               done;                /* results.csv was read */
    int               group;               /* index into rl_report.grp */
    int               task;                /* index into rl_report.task */
    int               lm;                  /* charlm / tokens: perplexity is the headline metric */
    char              pe[16], attention[16];
    int               n_rows;
    struct rl_rep_row rows[RL_REP_MAX_ROWS];
    int               n_rec; /* metrics.jsonl records */
    int64_t          *step;
    double           *loss;
    double            tok_s, ms_fwd, ms_bwd, ms_opt; /* NaN without records */
    double            cpu_per_wall; /* CPU time / wall time of the updates (NaN: not logged) */
    char             *pos_text;     /* positions.csv's data lines (LM tasks), NULL if none */
    int               pos_len;      /* the longest length in them */
    int               pos_method;   /* they have the rope_extend column */
    int               pos_ci;       /* they have loss_lo and loss_hi */
    int               n_pos;        /* its bins: positions [pos0, pos1), loss, targets, and */
    int              *pos0, *pos1;  /* the 95 % interval (NaN in runs written before it) */
    double           *pos_loss, *pos_targets, *pos_lo, *pos_hi;
    char             *ord_text; /* orders.csv's data lines (causal tasks but LM), NULL if none */
    int               n_ord;    /* its lines of the primary method: length, order, accuracy */
    int              *ord_len, *ord_k;
    double           *ord_acc;
};

#define RL_REP_MAX_COLS (RL_CFG_MAX_SWEEP + 2)

/* A table row: the points that differ only in train.seed and train.data_seed. */
struct rl_rep_group {
    int  task;
    char col[RL_REP_MAX_COLS][RL_SWEEP_VALUE]; /* values of rl_report.colname */
    char line[512];                            /* plot label: the columns but attention */
    int  n_points;
};

#define RL_REP_MAX_TASKS 8

struct rl_report {
    char                 dir[2048];
    struct rl_cfg        base;
    struct rl_sweep      sw;
    long                 n_points, n_done;
    struct rl_rep_point *pt;
    int                  n_cols; /* pe, attention, then the other swept keys but seed/task */
    char                 colname[RL_REP_MAX_COLS][96];
    int                  colkey[RL_REP_MAX_COLS]; /* sweep key index; -1 pe, -2 attention */
    int                  seed_key;                /* sweep index of train.seed, or -1 */
    int                  data_seed_key;           /* sweep index of train.data_seed, or -1 */
    int                  n_groups;
    struct rl_rep_group *grp;
    int                  n_tasks;
    char                 task[RL_REP_MAX_TASKS][16];
    int                  task_length[RL_REP_MAX_TASKS]; /* training length (0 = unknown) */
    int                  task_lm[RL_REP_MAX_TASKS];
    int                  n_methods; /* rope_extend methods in the rows, in the order none, pi, .. */
    char                 method[RL_CFG_EXTEND_MAX][8];
};

/* Do the tables need one table per method (some row was evaluated under an extension)? */
int rl_rep_per_method(const struct rl_report *r);

/* Sorted union of the evaluation lengths of the finished points of task t (t < 0: all). */
int rl_rep_lengths(const struct rl_report *r, int t, int *lengths, int max);
/* Mean and sample standard deviation over the finished points of group g of field f
 * ('a' acc, 'e' exact match, 'l' loss, 'p' ppl, 'm' ms per 1k tokens, 'd' fraction of
 * linear-attention denominators <= eps) at length L, over the rows of rope_extend method
 * (NULL: every method).  Returns the number of values (0: none; -1: every point has n/a
 * there). */
int rl_rep_stat(const struct rl_report *r, int g, const char *method, char f, int L, double *mean,
                double *sd);
/* The seeds of a row: the product of the numbers of values of the swept train.seed and
 * train.data_seed (1 when neither is swept). */
int rl_rep_seeds(const struct rl_report *r);
/* Are seeds swept (rl_rep_seeds > 1)?  Then the tables' cells are "mean ± std (n)", the
 * headline tables are marked and the plots have error bars. */
int rl_rep_seeded(const struct rl_report *r);

/* The 95 % interval of field f ('a', 'e', 'l', 'p') of group g at length L under method m:
 * one point, the interval of its results.csv row (over its tokens or sequences); several
 * (seeds), the t interval of their mean, mean +- t(0.975, n-1) std / sqrt(n).  Returns the
 * number of values (0: none, or no interval there: an older run, a single sequence). */
int rl_rep_interval(const struct rl_report *r, int g, const char *method, char f, int L, double *lo,
                    double *hi);

/* Is a higher value of field f better (accuracy, exact match)?  Else lower is (loss,
 * perplexity, time, denominators). */
int rl_rep_higher_better(char f);

/* How a row (group g under method m) compares at one length with the best row of its
 * attention kind (the groups of the same task and attention, under every method, whose
 * field f has a mean there):
 * RL_REP_BEST it is that row (the first of equal means); RL_REP_NS the difference of the
 * means is not larger than the seeds' spread, |mean - best mean| <= std + best std (not
 * significant); RL_REP_SIG it is larger; RL_REP_FEW one of the two has fewer than 2
 * values, so there is no spread to judge by; RL_REP_NONE the row has no mean there. */
enum { RL_REP_NONE, RL_REP_BEST, RL_REP_NS, RL_REP_SIG, RL_REP_FEW };
struct rl_rep_cmp {
    int         mark;
    int         best;         /* the best group, -1 for RL_REP_NONE */
    const char *best_method;  /* and its method (NULL: the rows have none) */
    double      diff, spread; /* mean - best mean; std + best std */
};
void rl_rep_compare(const struct rl_report *r, int g, const char *method, char f, int L,
                    struct rl_rep_cmp *c);

/* The longest length in the positions.csv of task t's finished points (0: none). */
int rl_rep_position_length(const struct rl_report *r, int t);
/* 1 when a finished point of task t (any task: t < 0) has training records
 * (metrics.jsonl); an evaluation directory has none. */
int rl_rep_has_training(const struct rl_report *r, int t);

/* Read the run directory dir (its config.ini, then each point's files); *out is freed
 * with rl_rep_free. */
rl_status rl_rep_load(struct rl_report **out, const char *dir);
void      rl_rep_free(struct rl_report *r);

#endif
