/* cfg_path.c -- the paths of a configuration: relative ones read against the directory of
 * the INI file that gives them (or, on the command line, the working directory) and kept
 * absolute, lexically normalised; see cfg_keys.h. */
#include "config.h"
#include "cfg.h"
#include "cfg_keys.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define OFF(f) offsetof(struct rl_cfg, f)

/* Keys that name files: data and checkpoints read (resolved against the INI file's
 * directory or, given on the command line, the working directory, and kept absolute so
 * that every config.ini a run writes reads back from anywhere), and the output directory
 * (resolved against the INI file's directory when the file gives it; as given otherwise,
 * relative to the working directory). */
static int is_input_path(size_t off)
{
    return off == OFF(task.path) || off == OFF(task.valid_path) || off == OFF(train.init_from);
}

/* Lexically normalised "base/rel" (rel when absolute): "." and "x/.." parts removed. */
static int join_path(char *out, size_t len, const char *base, const char *rel)
{
    char   buf[2 * RL_CFG_PATH + 2], *part[512], *save = NULL;
    int    n = 0;
    size_t k = 0;
    if ((size_t)snprintf(buf, sizeof buf, "%s/%s", rel[0] == '/' ? "" : base, rel) >= sizeof buf)
        return 1;
    for (char *t = strtok_r(buf, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
        if (!strcmp(t, ".")) continue;
        if (!strcmp(t, "..")) {
            n -= n > 0;
            continue;
        }
        if (n == 512) return 1;
        part[n++] = t;
    }
    out[0] = 0;
    for (int i = 0; i < n && k < len; i++)
        k += (size_t)snprintf(out + k, len - k, "/%s", part[i]);
    if (!n && len > 1) snprintf(out, len, "/");
    return k >= len;
}

/* The absolute directory of `file`, which its relative paths are read against (the
 * working directory when file has no '/'). */
int rl_cfg_file_dir(char *out, size_t len, const char *file)
{
    char        cwd[RL_CFG_PATH], dir[RL_CFG_PATH];
    const char *slash = strrchr(file, '/');
    if (!getcwd(cwd, sizeof cwd)) return 1;
    if (!slash) return join_path(out, len, cwd, ".");
    if ((size_t)(slash - file) >= sizeof dir) return 1;
    memcpy(dir, file, (size_t)(slash - file));
    dir[slash - file] = 0;
    return join_path(out, len, cwd, slash == file ? "/" : dir);
}

/* A path key's value resolved (see is_input_path) into out, or value itself when it stays
 * as given.  dir: the absolute directory of the INI file that gives it (NULL: the command
 * line, whose paths are read against the working directory).  A value that would not read
 * back is left to parse_value to refuse. */
const char *rl_cfg_resolve_path(const struct rl_cfg_key *k, const char *value, const char *dir,
                                char *out, size_t len, char *why, size_t wlen)
{
    char cwd[RL_CFG_PATH];
    int  input = is_input_path(k->off), output = k->off == OFF(experiment.out);
    if (!(input || (output && dir)) || !value[0] || value[0] == '/' || !rl_cfg_reads_back(value) ||
        (k->off == OFF(train.init_from) && !strcmp(value, "none")))
        return value;
    if ((!dir && !(dir = getcwd(cwd, sizeof cwd))) || join_path(out, len, dir, value)) {
        snprintf(why, wlen, "'%s' resolved is longer than %zu characters", value, len - 1);
        return NULL;
    }
    return out;
}
