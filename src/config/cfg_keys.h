/* cfg_keys.h -- the configuration key table shared by cfg.c (parsing), cfg_check.c
 * (rendering, resolution) and cfg_path.c (paths).  Private to the configuration. */
#ifndef RL_CFG_KEYS_H
#define RL_CFG_KEYS_H

#include <stddef.h>
#include "../core/choice.h"

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
    const char             *section, *key;
    enum rl_cfg_key_type    type;
    size_t                  off;     /* into struct rl_cfg */
    long                    lo, hi;  /* int range; RL_K_DBL: lo = range kind; RL_K_STR: hi = size */
    const struct rl_choice *choices; /* RL_K_ENUM, RL_K_EXTEND: the enum's table */
    const char             *doc;
};

extern const struct rl_cfg_key rl_cfg_keys[];
extern const int               rl_cfg_nkeys;

int rl_cfg_find_key(const char *section, const char *key);
/* Does a string value read back unchanged from a rendered INI file (cfg.c)? */
int rl_cfg_reads_back(const char *v);

/* cfg_path.c: the absolute directory of an INI file, which its relative paths are read
 * against (0, or 1 when it does not fit in len). */
int rl_cfg_file_dir(char *out, size_t len, const char *file);
/* A path key's value resolved into out: relative input paths (task.path, valid_path,
 * init_from) against dir, the absolute directory of the file that gives them, or the
 * working directory when dir is NULL (the command line), and out given in a file against
 * dir; value itself when it stays as given (absolute, empty, none, another key, a value
 * that would not read back -- left to the parser to refuse).  NULL, with the reason in
 * why, when the result is too long. */
const char *rl_cfg_resolve_path(const struct rl_cfg_key *k, const char *value, const char *dir,
                                char *out, size_t len, char *why, size_t wlen);

#endif
