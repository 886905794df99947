/* t_ini.c -- the INI reader and writer agree: one reader for files and strings (a last
 * line of 198 and 199 characters, with and without a newline, is treated alike from both),
 * every error of a file is reported in one message, string values that would not read
 * back (a comment start, surrounding blanks, control characters) are refused when set,
 * and every accepted value survives render -> parse unchanged. */
#include "config.h"
#include "config/cfg.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static rl_status load_file(struct rl_cfg *c, const char *text)
{
    char path[128];
    snprintf(path, sizeof path, "%s/x.ini", dir);
    FILE *f = fopen(path, "w");
    if (!f) tap_bail("cannot write %s", path);
    fputs(text, f);
    fclose(f);
    rl_cfg_defaults(c);
    rl_status st = rl_cfg_load(c, path);
    remove(path);
    return st;
}

static void test_long_lines(struct rl_cfg *a, struct rl_cfg *b)
{
    static const int lens[] = {198, 199};
    for (int i = 0; i < 2; i++)
        for (int nl = 0; nl < 2; nl++) {
            char text[512];
            /* "[task]\npath = aaaa...": the last line is lens[i] characters long */
            int n = snprintf(text, sizeof text, "[task]\npath = ");
            while (n < 7 + lens[i])
                text[n++] = 'a';
            if (nl) text[n++] = '\n';
            text[n]      = 0;
            rl_status sf = load_file(a, text);
            rl_cfg_defaults(b);
            rl_status ss = rl_cfg_load_string(b, text, "x.ini");
            tap_ok((sf == RL_OK) == (ss == RL_OK) && (lens[i] <= 198) == (sf == RL_OK),
                   "a last line of %d characters %s a newline: file %s, string %s", lens[i],
                   nl ? "with" : "without", sf == RL_OK ? "accepted" : "refused",
                   ss == RL_OK ? "accepted" : "refused");
        }
}

static void test_all_errors(struct rl_cfg *c)
{
    rl_status   st = load_file(c, "[model]\nhead = 4\nheads = x\n[foo]\na = 1\njunk\n[train]\n"
                                    "steps = -1\n");
    const char *m  = rl_last_error();
    tap_ok(st != RL_OK && strstr(m, "x.ini:2: [model] unknown key 'head'") &&
               strstr(m, "x.ini:3: [model] heads:") &&
               strstr(m, "x.ini:4: unknown section [foo]") &&
               strstr(m, "x.ini:6: malformed line") && strstr(m, "x.ini:8: [train] steps:") &&
               !strstr(m, "x.ini:5"),
           "five errors of one file reported together, keys of an unknown section not repeated");
    if (st == RL_OK || !strstr(m, "x.ini:8")) tap_diag("%s", m);
}

static void test_round_trip(struct rl_cfg *a, struct rl_cfg *b)
{
    static const char *refused[] = {";j", "#j", "a ;b", "a #b", "a\t;b", " a", "a ", "a\x01"};
    int                all       = 1;
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        rl_cfg_defaults(a);
        all &= rl_cfg_set_key(a, "task", "path", refused[i], "test") != RL_OK &&
               strstr(rl_last_error(), "would not read back") != NULL;
    }
    tap_ok(all, "values that would not read back are refused when set (%s)", rl_last_error());
    rl_cfg_defaults(a);
    tap_ok(rl_cfg_set_key(a, "experiment", "out", "", "--out") != RL_OK &&
               strstr(rl_last_error(), "expected a directory"),
           "an empty out is refused: %s", rl_last_error());
    static const char *kept[] = {"a;b", "x#y", "d/e f.npy", "caf\xc3\xa9", "a\tb", "[x]", "=y"};
    char              *text   = malloc(1 << 16);
    all                       = 1;
    for (size_t i = 0; i < sizeof kept / sizeof *kept; i++) {
        rl_cfg_defaults(a);
        rl_cfg_defaults(b);
        snprintf(a->experiment.name, sizeof a->experiment.name, "t");
        /* set on the command line: read against the working directory, kept absolute */
        int    ok = rl_cfg_set_key(a, "task", "path", kept[i], "test") == RL_OK;
        size_t n = strlen(a->task.path), k = strlen(kept[i]);
        ok = ok && a->task.path[0] == '/' && n > k && !strcmp(a->task.path + n - k, kept[i]);
        rl_cfg_render(a, text, 1 << 16, 0);
        ok = ok && rl_cfg_load_string(b, text, "rendered.ini") == RL_OK &&
             !strcmp(b->task.path, a->task.path);
        if (!ok) tap_diag("'%s' -> '%s' (%s)", kept[i], b->task.path, rl_last_error());
        all &= ok;
    }
    tap_ok(all, "accepted values survive render -> parse unchanged (%zu values)",
           sizeof kept / sizeof *kept);
    free(text);
}

int main(void)
{
    snprintf(dir, sizeof dir, "t_ini.dir.%ld", (long)getpid());
    mkdir(dir, 0755);
    struct rl_cfg *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    test_long_lines(a, b);
    test_all_errors(a);
    test_round_trip(a, b);
    free(a), free(b);
    rmdir(dir);
    return tap_done();
}
