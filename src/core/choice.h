/* choice.h -- an enumerated choice as one table (ggml's habit: one array of names beside
 * its enum, and the build fails when they drift).
 *
 * Every enum a user names by a word (attention kind, feature map, position encoding, RoPE
 * layout, task, ...) has one table next to it: each value once, with its name and a line
 * of help, ended by {NULL}.  The configuration parser, every command-line flag, the help
 * texts, the error messages and the reports read the table; nothing else spells a name.
 *
 *   enum rl_fmap { RL_FMAP_ELU1 = 0, RL_FMAP_SOFTMAX, RL_FMAP_EXP, RL_FMAP_COUNT };
 *   const struct rl_choice rl_fmaps[] = {{"elu1", RL_FMAP_ELU1, "elu(x) + 1"}, ..., {NULL}};
 *   RL_CHOICE_TABLE_CHECK(rl_fmaps, RL_FMAP_COUNT);
 *
 * Lookups are linear scans (a table holds a handful of names), so a value outside the
 * table is never an index: rl_choice_name() answers "unknown" for it. */
#ifndef RL_CHOICE_H
#define RL_CHOICE_H

#include <stddef.h>

struct rl_choice {
    const char *name; /* NULL ends the table */
    int         value;
    const char *help; /* one line: what the value means */
};

/* At file scope after a table's definition: the table holds exactly count entries and its
 * terminator, so adding an enum value without its name (or a name without its value) stops
 * the build.  The values' uniqueness and order are checked by tests/t_choice.c. */
#define RL_CHOICE_TABLE_CHECK(table, count)                                                        \
    _Static_assert(sizeof(table) / sizeof((table)[0]) == (size_t)(count) + 1,                      \
                   #table ": one entry per value of its enum, then {NULL}")

/* Entries before the terminator. */
int rl_choice_count(const struct rl_choice *t);
/* 0 with *value set when name is one of t's names (exact match), else -1 (*value kept). */
int rl_choice_parse(const struct rl_choice *t, const char *name, int *value);
/* The name of value, or "unknown" when no entry has it. */
const char *rl_choice_name(const struct rl_choice *t, int value);
/* The names joined by sep into buf (", " gives "a, b, c"; "|" gives "a|b|c"); returns buf.
 * A buffer too small for them all ends with "...". */
const char *rl_choice_list(const struct rl_choice *t, const char *sep, char *buf, size_t len);
/* The name nearest to word within two edits (a misspelling), or NULL. */
const char *rl_choice_suggest(const struct rl_choice *t, const char *word);
/* Why word is refused, into buf: "expected one of a, b, c, got 'word'", followed by
 * " (did you mean 'x'?)" when a name is near; returns buf. */
const char *rl_choice_refusal(const struct rl_choice *t, const char *word, char *buf, size_t len);

#endif
