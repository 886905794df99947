/* cfg.h -- experiment configuration (docs/config.md): INI files parsed with libinih, `--set`
 * overrides, validation that names file, line and key, and the resolved INI text.
 *
 * (Named cfg, not config: every .c includes Autoconf's "config.h", which a src/config.h
 * would shadow.)
 *
 * Life of a configuration:
 *   rl_cfg_defaults(c)                 every key at its documented default (0 / "" = automatic)
 *   rl_cfg_load(c, "exp.ini")          the file, key by key; errors "exp.ini:12: [model] heads:
 * ..." rl_cfg_set(c, "model.heads=8")     a --set override; errors "--set model.heads=x: ..."
 *   rl_cfg_check(c)                    combinations that need no data (d_model % heads, ...)
 *   rl_cfg_resolve(c, task_length, task_vocab, task_max_length, task_min_length)
 *                                      automatic values made explicit (task length, max_len,
 *                                      rope_dims, eval lengths) and the checks that need them
 *   rl_cfg_render(c, buf, len, 0)      INI text with every key and its effective value; parsing
 *                                      it back gives the same configuration (tested).
 * Automatic values (0 or ""): experiment.name (file stem), experiment.threads (all cores),
 * task.length / task.vocab (the task's, or the data's for tokens), model.max_len (task
 * length), model.rope_dims (head dim), eval.lengths (task length). */
#ifndef RL_CFG_H
#define RL_CFG_H

#include <stddef.h>
#include <stdint.h>
#include "../kernels/attn.h"
#include "../model/model.h"
#include "../core/choice.h"
#include "../core/status.h"
#include "../tasks/task.h"

#define RL_CFG_PATH 1024
#define RL_CFG_NAME 128
#define RL_CFG_MAX_LENGTHS 32
#define RL_CFG_MAX_SWEEP 16
#define RL_CFG_MAX_KEYS 80
#define RL_CFG_WHERE 160

/* model.pe: input-level (none, sinusoidal, learned) or attention-level (t5, alibi, rope);
 * the names are rl_cfg_pes (cfg.c). */
enum rl_cfg_pe {
    RL_CFG_PE_NONE = 0,
    RL_CFG_PE_SINUSOIDAL,
    RL_CFG_PE_LEARNED,
    RL_CFG_PE_T5,
    RL_CFG_PE_ALIBI,
    RL_CFG_PE_ROPE,
    RL_CFG_PE_COUNT
};
extern const struct rl_choice rl_cfg_pes[];

/* eval.rope_extend: how RoPE positions are rescaled at evaluation length M (factor s):
 * none; pi (rope_scale = s); ntk (rope_ntk = s); yarn (rope_yarn = s, rope_yarn_orig = N).
 * The names are rl_cfg_extends (cfg.c). */
enum rl_cfg_extend {
    RL_CFG_EXTEND_NONE = 0,
    RL_CFG_EXTEND_PI,
    RL_CFG_EXTEND_NTK,
    RL_CFG_EXTEND_YARN,
    RL_CFG_EXTEND_COUNT
};
extern const struct rl_choice rl_cfg_extends[];
/* eval.rope_extend lists each method at most once */
#define RL_CFG_EXTEND_MAX RL_CFG_EXTEND_COUNT

struct rl_cfg_sweep_key {
    char key[64];     /* "section.key" */
    char values[512]; /* the raw list "v1, v2, ..." */
    int  n_values;
    int  line;                /* 0 when the key came from --set */
    char where[RL_CFG_WHERE]; /* "exp.ini:12" or "--set sweep.model.pe=..." */
    char dir[RL_CFG_PATH];    /* the directory of the file that lists it ("" for --set):
                                 a relative swept path is read against it */
};

struct rl_cfg {
    char file[RL_CFG_PATH]; /* the INI file read last ("" if none) */
    struct {
        char name[RL_CFG_NAME];
        char out[RL_CFG_PATH];
        int  threads;
    } experiment;
    struct {
        int                 d_model, heads, layers;
        enum rl_attn_kind   attention;
        enum rl_fmap        feature_map;
        double              eps;
        enum rl_cfg_pe      pe;
        int                 max_len;
        double              rope_base;
        enum rl_rope_layout rope_layout;
        int                 rope_dims;
        double              rope_scale, rope_ntk;
        enum rl_rope_place  rope_place;
        enum rl_rope_denom  rope_denominator;
        int                 t5_buckets, t5_max_distance, t5_per_layer;
        int                 alibi_scan;
        double              rope_yarn;      /* YaRN factor s (1 = off) */
        int                 rope_yarn_orig; /* YaRN L (0 = the task length) */
        int                 xpos;
        double              xpos_scale_base;
        int                 forget_gate; /* data-dependent forget gate (causal tasks) */
        double              forget_bias; /* its projection's initial bias */
    } model;
    struct {
        enum rl_task_kind name;
        int               length, vocab, symbols, kv_pairs, depth, args;
        char              path[RL_CFG_PATH], valid_path[RL_CFG_PATH];
        int               digits, filler; /* passkey; filler: enum rl_passkey_filler */
        int               train_queries;  /* mqar: enum rl_mqar_queries */
        int               n_train_lengths; /* mqar: training row lengths (0: all N) */
        int               train_lengths[RL_CFG_MAX_LENGTHS];
    } task;
    struct {
        int      steps, batch, accumulate;
        double   lr;
        int      warmup;
        double   min_lr_ratio, beta1, beta2, adam_eps, weight_decay, clip;
        uint64_t seed;
        uint64_t data_seed; /* 0 = seed: initialisation and data vary independently */
        int      log_every, checkpoint_every, checkpoint_initial;
        double   checkpoint_minutes;     /* safety checkpoints by training time (0 = none) */
        char     init_from[RL_CFG_PATH]; /* "" = random initialisation */
        int      data_parallel;          /* every rank trains each point (MPI) */
    } train;
    struct {
        int                n_lengths;
        int                lengths[RL_CFG_MAX_LENGTHS];
        int                batches, every;
        int                stride;   /* LM tasks: 0 = non-overlapping windows */
        int                n_extend; /* rope_extend: methods, in the order given */
        enum rl_cfg_extend extend[RL_CFG_EXTEND_MAX];
        double             rope_factor; /* 0 = auto: max(1, M/N) */
    } eval;
    struct {
        int                     n_keys;
        struct rl_cfg_sweep_key keys[RL_CFG_MAX_SWEEP];
    } sweep;
    /* Where each key got its value ("exp.ini:12", "--set model.heads=8", "" = default),
     * indexed like the key table; used by the combination checks' messages. */
    char where[RL_CFG_MAX_KEYS][RL_CFG_WHERE];
};

void rl_cfg_defaults(struct rl_cfg *c);
/* Read an INI file into c (on top of what c holds). */
rl_status rl_cfg_load(struct rl_cfg *c, const char *path);
/* Parse INI text; `name` stands for the file in messages. */
rl_status rl_cfg_load_string(struct rl_cfg *c, const char *text, const char *name);
/* The configuration a checkpoint was trained with (its __metadata__ "config", over the
 * defaults), and its step if step is not NULL; an error names the file when the metadata
 * has no configuration (not written by ropelab run) or it does not parse (cfg_ckpt.c). */
rl_status rl_cfg_from_checkpoint(struct rl_cfg *c, const char *path, int64_t *step);
/* Apply one "section.key=value" override. */
rl_status rl_cfg_set(struct rl_cfg *c, const char *assignment);
/* Set one key from its text value given in a file in directory dir (absolute; NULL: on
 * the command line): a relative path (task.path, valid_path, train.init_from; out from a
 * file) is read against dir, or the working directory, and kept absolute.  A sweep
 * expansion sets a point's values with the directory of the file that listed them. */
rl_status rl_cfg_set_key_at(struct rl_cfg *c, const char *section, const char *key,
                            const char *value, const char *where, const char *dir);
/* Set one key from its text value; `where` names the origin in messages.  Used by
 * rl_cfg_set and --out (the command line: rl_cfg_set_key_at with no directory). */
rl_status rl_cfg_set_key(struct rl_cfg *c, const char *section, const char *key, const char *value,
                         const char *where);
/* Combination checks that need no data. */
rl_status rl_cfg_check(const struct rl_cfg *c);
/* Every line of the INI text rl_cfg_render writes (with [sweep]) fits libinih's line, so
 * that the run's config.ini reads back; rl_cfg_check includes it. */
rl_status rl_cfg_check_lines(const struct rl_cfg *c);
/* Fill the automatic values from the task (its training length and the largest length it
 * can generate, 0 = unlimited) and check what depends on them. */
rl_status rl_cfg_resolve(struct rl_cfg *c, int task_length, int task_vocab, int task_max_length,
                         int task_min_length);

/* INI text of every key with its value.  flags: RL_CFG_RENDER_NO_RUNTIME leaves out the
 * keys that do not change results (experiment.out, experiment.threads,
 * train.checkpoint_minutes) -- what a resume compares.  Returns the length written (snprintf
 * semantics: >= len means truncated). */
#define RL_CFG_RENDER_NO_RUNTIME 1
int rl_cfg_render(const struct rl_cfg *c, char *buf, size_t len, int flags);
/* Compare two rendered configurations ignoring the runtime keys (above); a key absent
 * from a (written by an older ropelab) whose value in b is its default is no difference.
 * On a difference writes "[section] key: 'a' vs 'b'" into msg and returns nonzero. */
int rl_cfg_text_diff(const char *a, const char *b, char *msg, size_t len);

/* The pieces of the configuration other modules take. */
void        rl_cfg_task_opts(const struct rl_cfg *c, struct rl_task_opts *o);
void        rl_cfg_model_config(const struct rl_cfg *c, int vocab, int causal, int n_classes,
                                struct rl_model_config *mc);
const char *rl_cfg_pe_name(enum rl_cfg_pe pe);
const char *rl_cfg_attention_name(enum rl_attn_kind k);
const char *rl_cfg_extend_name(enum rl_cfg_extend e);

/* The key table, for documentation and tools: section, key, and a one-line meaning. */
int  rl_cfg_num_keys(void);
void rl_cfg_key_info(int i, const char **section, const char **key, const char **doc);

#endif
