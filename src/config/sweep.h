/* sweep.h -- the [sweep] section of an experiment (docs/config.md): the cross product of every
 * swept key's values, one sub-run ("point") per element.
 *
 * Order: the first swept key varies slowest (row-major over the keys in the order the file
 * lists them), so `model.pe = ...` then `model.attention = ...` runs every attention kind
 * of one PE before the next PE.
 *
 * A point's directory name joins "key=value" for every swept key with ',' in that order,
 * e.g. `pe=rope,attention=linear`.  The key is the short name (`pe`) unless two swept keys
 * share it (`task.vocab` and a future `model.vocab`), then the full `section.key`.  The
 * value is the text as written in the list, trimmed; characters outside [A-Za-z0-9._+-]
 * become '_' (a swept path keeps the directory flat).  Two values of one key that give
 * the same text are an error (the points would share a directory).
 *
 * A point's configuration is the base configuration with [sweep] emptied and each swept
 * key set to its value; the key's origin is the [sweep] line, so a combination check that
 * fails on a swept value names that file, line and key. */
#ifndef RL_SWEEP_H
#define RL_SWEEP_H

#include "cfg.h"
#include "../core/status.h"

#define RL_SWEEP_MAX_VALUES 64
#define RL_SWEEP_MAX_POINTS 4096
#define RL_SWEEP_VALUE 128
#define RL_SWEEP_NAME 1024

struct rl_sweep {
    int  n_keys;
    long n_points; /* 1 when nothing is swept (the run itself is the only point) */
    char section[RL_CFG_MAX_SWEEP][32], key[RL_CFG_MAX_SWEEP][64];
    char column[RL_CFG_MAX_SWEEP][96]; /* short or full name, as in directory names */
    char where[RL_CFG_MAX_SWEEP][RL_CFG_WHERE];
    char dir[RL_CFG_MAX_SWEEP][RL_CFG_PATH]; /* paths' base directory ("": working dir) */
    int  n_values[RL_CFG_MAX_SWEEP];
    char values[RL_CFG_MAX_SWEEP][RL_SWEEP_MAX_VALUES][RL_SWEEP_VALUE];
};

/* Expand c's [sweep] section (already validated value by value by the parser). */
rl_status rl_sweep_init(struct rl_sweep *s, const struct rl_cfg *c);
/* Index of the value of key k at point p. */
int rl_sweep_value_index(const struct rl_sweep *s, long p, int k);
/* Value text of key k at point p. */
const char *rl_sweep_value(const struct rl_sweep *s, long p, int k);
/* Index of the swept key "section.key", or -1. */
int rl_sweep_find(const struct rl_sweep *s, const char *section, const char *key);
/* Directory name of point p ("" when nothing is swept). */
void rl_sweep_point_name(const struct rl_sweep *s, long p, char *buf, size_t len);
/* The configuration of point p: base with [sweep] emptied and the point's values set. */
rl_status rl_sweep_point_cfg(const struct rl_sweep *s, const struct rl_cfg *base, long p,
                             struct rl_cfg *out);

#endif
