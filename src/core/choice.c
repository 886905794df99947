/* choice.c -- lookups in a choice table (choice.h). */
#include "config.h"
#include "choice.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

int rl_choice_count(const struct rl_choice *t)
{
    int n = 0;
    while (t[n].name)
        n++;
    return n;
}

int rl_choice_parse(const struct rl_choice *t, const char *name, int *value)
{
    for (int i = 0; name && t[i].name; i++)
        if (!strcmp(name, t[i].name)) return *value = t[i].value, 0;
    return -1;
}

const char *rl_choice_name(const struct rl_choice *t, int value)
{
    for (int i = 0; t[i].name; i++)
        if (t[i].value == value) return t[i].name;
    return "unknown";
}

const char *rl_choice_list(const struct rl_choice *t, const char *sep, char *buf, size_t len)
{
    size_t n = 0;
    if (len) buf[0] = 0;
    for (int i = 0; t[i].name && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? sep : "", t[i].name);
    if (n >= len && len > 3) memcpy(buf + len - 4, "...", 4);
    return buf;
}

const char *rl_choice_suggest(const struct rl_choice *t, const char *word)
{
    struct rl_near near;
    rl_near_init(&near, word);
    for (int i = 0; t[i].name; i++)
        rl_near_offer(&near, t[i].name);
    return near.best;
}

const char *rl_choice_refusal(const struct rl_choice *t, const char *word, char *buf, size_t len)
{
    char        names[512];
    const char *near = rl_choice_suggest(t, word);
    int         n    = snprintf(buf, len, "expected one of %s, got '%s'",
                                rl_choice_list(t, ", ", names, sizeof names), word);
    if (near && n >= 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " (did you mean '%s'?)", near);
    return buf;
}
