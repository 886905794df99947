/* t_choice.c -- the tables of the enumerated choices (core/choice.h): every value of every
 * enum has one unique name and a help line, names and values round-trip, a value outside
 * the enum reads "unknown", an unknown name is refused with the list of names, a
 * misspelling gets the name it misspells; and the configuration reads the same tables. */
#include "config.h"
#include "core/choice.h"
#include "kernels/attn.h"
#include "model/decode.h"
#include "tasks/task_opts.h"
#include "config/cfg.h"
#include "tap.h"

#include <stdio.h>
#include <string.h>

static const struct table {
    const char             *what;
    const struct rl_choice *t;
    int                     count; /* the enum's *_COUNT */
    const char             *key;   /* its configuration key, or NULL */
} tables[] = {
    {"attention kind", rl_attn_kinds, RL_ATTN_KIND_COUNT, "model.attention"},
    {"feature map", rl_fmaps, RL_FMAP_COUNT, "model.feature_map"},
    {"attention PE", rl_attn_pes, RL_ATTN_PE_COUNT, NULL},
    {"RoPE layout", rl_rope_layouts, RL_ROPE_LAYOUT_COUNT, "model.rope_layout"},
    {"RoPE place", rl_rope_places, RL_ROPE_PLACE_COUNT, "model.rope_place"},
    {"RoPE denominator", rl_rope_denoms, RL_ROPE_DENOM_COUNT, "model.rope_denominator"},
    {"task kind", rl_task_kinds, RL_TASK_KIND_COUNT, "task.name"},
    {"passkey filler", rl_passkey_fillers, RL_PASSKEY_FILLER_COUNT, "task.filler"},
    {"model PE", rl_cfg_pes, RL_CFG_PE_COUNT, "model.pe"},
    {"rope_extend method", rl_cfg_extends, RL_CFG_EXTEND_COUNT, "eval.rope_extend"},
    {"decode mode", rl_decode_modes, RL_DECODE_MODE_COUNT, NULL},
};
#define N_TABLES ((int)(sizeof tables / sizeof tables[0]))

/* Every value 0 .. count-1 once, every name once and not empty, every help line there. */
static void test_complete(const struct table *T)
{
    int seen[64] = {0}, names_ok = 1, help_ok = 1, n = rl_choice_count(T->t);
    for (int i = 0; i < n; i++) {
        int v = T->t[i].value;
        if (v >= 0 && v < 64) seen[v]++;
        names_ok &= T->t[i].name[0] != 0;
        help_ok &= T->t[i].help && T->t[i].help[0];
        for (int j = 0; j < i; j++)
            names_ok &= strcmp(T->t[i].name, T->t[j].name) != 0;
    }
    int values_ok = n == T->count;
    for (int v = 0; v < T->count && v < 64; v++)
        values_ok &= seen[v] == 1;
    tap_ok(values_ok, "%s: %d entries, each value of the enum (count %d) once", T->what, n,
           T->count);
    tap_ok(names_ok, "%s: every name unique and not empty", T->what);
    tap_ok(help_ok, "%s: every name has a help line", T->what);
}

/* name -> value -> name for every entry; values outside the enum read "unknown". */
static void test_round_trip(const struct table *T)
{
    int ok = 1;
    for (int v = 0; v < T->count; v++) {
        const char *name = rl_choice_name(T->t, v);
        int         back = -1;
        ok &= rl_choice_parse(T->t, name, &back) == 0 && back == v;
        ok &= strcmp(rl_choice_name(T->t, back), name) == 0;
    }
    tap_ok(ok, "%s: value -> name -> value -> name for all %d values", T->what, T->count);
    tap_ok(!strcmp(rl_choice_name(T->t, T->count), "unknown") &&
               !strcmp(rl_choice_name(T->t, -1), "unknown") &&
               !strcmp(rl_choice_name(T->t, 1 << 30), "unknown"),
           "%s: values -1, %d and 2^30 read 'unknown'", T->what, T->count);
}

/* An unknown word is refused with the whole list; a misspelt name is suggested. */
static void test_refusal(const struct table *T)
{
    char list[512], want[640], why[640], typo[64];
    int  v = 12345;
    rl_choice_list(T->t, ", ", list, sizeof list);
    snprintf(want, sizeof want, "expected one of %s, got 'zzzzzzzz'", list);
    rl_choice_refusal(T->t, "zzzzzzzz", why, sizeof why);
    tap_ok(rl_choice_parse(T->t, "zzzzzzzz", &v) == -1 && v == 12345 && !strcmp(why, want),
           "%s: an unknown name is refused with the names: %s", T->what, why);
    int ok = 1;
    for (int i = 0; T->t[i].name; i++) { /* the last letter changed: one edit */
        const char *name = T->t[i].name;
        size_t      l    = strlen(name);
        if (l < 3) continue;
        snprintf(typo, sizeof typo, "%.*s%c", (int)l - 1, name, name[l - 1] == 'q' ? 'x' : 'q');
        const char *near = rl_choice_suggest(T->t, typo);
        ok &= rl_choice_parse(T->t, typo, &v) == -1 && near && !strcmp(near, name);
        snprintf(want, sizeof want, "(did you mean '%s'?)", name);
        ok &= strstr(rl_choice_refusal(T->t, typo, why, sizeof why), want) != NULL;
    }
    tap_ok(ok, "%s: each name misspelt by one letter gets it as the suggestion", T->what);
}

/* The configuration key reads the same table: every name sets the key and renders back,
 * a misspelling is refused naming the list and the suggestion. */
static void test_config(const struct table *T)
{
    static struct rl_cfg c;
    static char          text[1 << 16];
    char                 set[128], line[128], list[512];
    const char          *key = strchr(T->key, '.') + 1;
    int                  ok  = 1;
    for (int i = 0; T->t[i].name; i++) {
        rl_cfg_defaults(&c);
        snprintf(set, sizeof set, "%s=%s", T->key, T->t[i].name);
        snprintf(line, sizeof line, "\n%s = %s\n", key, T->t[i].name);
        ok &= rl_cfg_set(&c, set) == RL_OK && rl_cfg_render(&c, text, sizeof text, 0) > 0 &&
              strstr(text, line) != NULL;
    }
    tap_ok(ok, "%s: every name of the table sets %s and renders back", T->what, T->key);
    rl_cfg_defaults(&c);
    snprintf(set, sizeof set, "%s=%sq", T->key, T->t[0].name);
    rl_choice_list(T->t, ", ", list, sizeof list);
    TAP_CHECK(rl_cfg_set(&c, set) != RL_OK && strstr(rl_last_error(), list) &&
                  strstr(rl_last_error(), "did you mean"),
              "%s: --set %s refused with the names and a hint: %s", T->what, set, rl_last_error());
}

static void test_list_and_describe(void)
{
    char buf[64], small[12];
    tap_ok(!strcmp(rl_choice_list(rl_attn_pes, "|", buf, sizeof buf), "none|rope|t5|alibi"),
           "the help's form: %s", buf);
    rl_choice_list(rl_task_kinds, ", ", small, sizeof small);
    tap_ok(strlen(small) == sizeof small - 1 && !strcmp(small + sizeof small - 4, "..."),
           "a list longer than its buffer ends with '...': %s", small);
    struct rl_attn_opts o;
    rl_attn_opts_default(&o);
    o.kind = RL_ATTN_LINEAR, o.fmap = (enum rl_fmap)77, o.pe = (enum rl_attn_pe)99;
    rl_attn_describe(&o, buf, sizeof buf);
    tap_ok(!strcmp(buf, "linear(unknown) unknown non-causal"),
           "rl_attn_describe with a feature map and PE outside their enums: %s", buf);
    enum rl_task_kind k;
    TAP_CHECK(rl_task_kind_parse(&k, "revrse") != RL_OK &&
                  strstr(rl_last_error(), "copy, reverse, sort, mqar, listops, charlm, tokens, "
                                          "passkey, got 'revrse' (did you mean 'reverse'?)"),
              "rl_task_kind_parse: %s", rl_last_error());
}

int main(void)
{
    for (int i = 0; i < N_TABLES; i++) {
        test_complete(&tables[i]);
        test_round_trip(&tables[i]);
        test_refusal(&tables[i]);
        if (tables[i].key) test_config(&tables[i]);
    }
    test_list_and_describe();
    return tap_done();
}
