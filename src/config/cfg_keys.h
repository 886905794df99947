/* cfg_keys.h -- the configuration key table shared by cfg.c (parsing) and cfg_check.c
 * (rendering, resolution).  Private to those two files. */
#ifndef RL_CFG_KEYS_H
#define RL_CFG_KEYS_H

#include <stddef.h>

enum rl_cfg_key_type {
    RL_K_INT,
    RL_K_U64,
    RL_K_DBL,
    RL_K_BOOL,
    RL_K_ENUM,
    RL_K_STR,
    RL_K_LENGTHS,
    RL_K_EXTEND,
    RL_K_FACTOR,
    RL_K_BATCHES /* a positive integer, or all (stored as 0) */
};
/* ranges of RL_K_DBL keys (stored in lo) */
enum { RL_D_ANY = 0, RL_D_POS, RL_D_NONNEG, RL_D_UNIT_OPEN, RL_D_UNIT };

struct rl_cfg_key {
    const char          *section, *key;
    enum rl_cfg_key_type type;
    size_t               off;    /* into struct rl_cfg */
    long                 lo, hi; /* int range; RL_K_DBL: lo = range kind; RL_K_STR: hi = size */
    const char *const   *names;  /* RL_K_ENUM: value names in enum order, NULL-terminated */
    const char          *doc;
};

extern const struct rl_cfg_key rl_cfg_keys[];
extern const int               rl_cfg_nkeys;

int rl_cfg_find_key(const char *section, const char *key);

#endif
