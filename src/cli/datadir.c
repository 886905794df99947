/* datadir.c -- the shipped experiments and their data; see datadir.h. */
#include "config.h"
#include "datadir.h"
#include "opts.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *rl_cli_datadir(void)
{
    const char *e = getenv("ROPELAB_DATADIR");
    return e && *e ? e : RL_PKGDATADIR;
}

static int is_file(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

int rl_cli_find_experiment(const char *arg, char *buf, size_t len)
{
    struct stat sb;
    snprintf(buf, len, "%s", arg);
    if (stat(arg, &sb) == 0) return 1; /* whatever it is: its reader says what is wrong */
    if (strchr(arg, '/') || !*arg) return 0;
    const char *dir = rl_cli_datadir(), *ext = strstr(arg, ".ini") ? "" : ".ini";
    if ((size_t)snprintf(buf, len, "%s/experiments/%s%s", dir, arg, ext) < len && is_file(buf))
        return 1;
    snprintf(buf, len, "%s", arg);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The first paragraph of an experiment file's header comment, after "# NAME.ini -- ", on
 * one line, cut at len - 1 bytes. */
static void summary(const char *path, char *out, size_t len)
{
    char   line[512];
    size_t n = 0;
    FILE  *f = fopen(path, "r");
    out[0]   = 0;
    while (f && fgets(line, sizeof line, f) && line[0] == '#' && n + 1 < len) {
        const char *s = line + 1 + strspn(line + 1, " ");
        if (!*s || *s == '\n') break; /* the paragraph ends */
        const char *dash = n ? NULL : strstr(s, " -- ");
        if (dash) s = dash + 4;
        const char *sep = n && out[n - 1] != '-' ? " " : ""; /* a word cut at its hyphen */
        n += (size_t)snprintf(out + n, len - n, "%s%.*s", sep, (int)strcspn(s, "\n"), s);
    }
    if (f) fclose(f);
    if (n >= len - 1 && len > 4) memcpy(out + len - 4, "...", 4);
}

int rl_cli_list_experiments(FILE *f)
{
    char path[4096], text[80], *name[256];
    int  n = 0;
    DIR *d = (snprintf(path, sizeof path, "%s/experiments", rl_cli_datadir()), opendir(path));
    if (!d) {
        fprintf(stderr,
                "ropelab: %s: no shipped experiments there (is ropelab installed? set "
                "ROPELAB_DATADIR to the directory holding experiments/ and data/)\n",
                path);
        return RL_EXIT_FAIL;
    }
    for (struct dirent *e; (e = readdir(d)) && n < 256;) {
        size_t k = strlen(e->d_name);
        if (k > 4 && !strcmp(e->d_name + k - 4, ".ini") && (name[n] = strdup(e->d_name))) n++;
    }
    closedir(d);
    qsort(name, (size_t)n, sizeof *name, by_name);
    fprintf(f, "Shipped experiments in %s (ropelab run NAME):\n", path);
    for (int i = 0; i < n; i++) {
        char full[4400];
        snprintf(full, sizeof full, "%s/%s", path, name[i]);
        summary(full, text, sizeof text);
        name[i][strlen(name[i]) - 4] = 0;
        fprintf(f, "  %-25s %s\n", name[i], text);
        free(name[i]);
    }
    return RL_EXIT_OK;
}
