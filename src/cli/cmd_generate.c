/* cmd_generate.c -- `ropelab generate CHECKPOINT`: sample a continuation of a prompt from a
 * trained causal model (model/decode.h, model/sample.h).  The model is rebuilt from the
 * resolved configuration in the checkpoint's metadata, then its weights are loaded.
 * Exit status: 0 success, 1 runtime failure (file, model), 2 usage error (options, prompt). */
#include "config.h"
#include "cli.h"
#include "opts.h"
#include "../config/cfg.h"
#include "../experiment/train.h"
#include "../model/checkpoint.h"
#include "../model/decode.h"
#include "../model/sample.h"
#include "../core/gemm.h"
#include "../core/npy.h"
#include "../core/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct gen_args {
    char                ckpt_path[2300]; /* a directory's latest checkpoint */
    const char         *ckpt, *prompt, *prompt_file, *logits;
    int                 tokens, top_k, threads;
    double              temperature;
    uint64_t            seed;
    enum rl_decode_mode mode;
};

#define A struct gen_args
static const struct rl_opt gen_opts[] = {
    RL_OPT_OPERAND("CHECKPOINT|RUN_DIR", A, ckpt),
    RL_OPT_STRING("prompt", A, prompt, "TEXT",
                  "the prompt (charlm: its bytes; others: ids such as '3 1 4')"),
    RL_OPT_STRING("prompt-file", A, prompt_file, "F",
                  "the prompt from file F (all of its bytes, or its ids)\n"
                  "An empty prompt is refused: the models have no begin-of-text token, so give "
                  "at least one (charlm: e.g. a newline)."),
    RL_OPT_INT("tokens", A, tokens, 1, 1 << 24, "K", "tokens to generate (default 100)"),
    RL_OPT_DOUBLE("temperature", A, temperature, RL_GE(0), "T",
                  "0 = greedy (argmax); else sample softmax(logits / T) (default 1)"),
    RL_OPT_INT("top-k", A, top_k, 0, 1 << 30, "K",
               "sample among the K largest logits only; 0 = all (default 0); K = 1 is greedy"),
    RL_OPT_U64("seed", A, seed, "S",
               "seed of the sampler; equal seeds give equal text (default 1)"),
    RL_OPT_CHOICE("mode", A, mode, rl_decode_modes,
                  "how each token is computed (default recurrent; same logits up to rounding). "
                  "Linear attention with T5 has no recurrence: it recomputes, and says so on "
                  "stderr."),
    RL_OPT_STRING("logits", A, logits, "OUT.npy",
                  "write the logits every generated token was sampled from (K x vocab float32): "
                  "row 0 those after the last prompt token, row i those after generated token "
                  "i-1"),
    RL_OPT_INT("threads", A, threads, 1, 4096, "N",
               "threads (default 1: one row at a time gains nothing from more, and idle "
               "spinning threads slow a busy machine down)"),
    RL_OPT_HELP,
    RL_OPT_END};
#undef A

static const struct rl_command gen_command = {
    "generate", gen_opts,
    "Usage: ropelab generate CHECKPOINT|RUN_DIR [--prompt TEXT | --prompt-file F] [--tokens K]\n"
    "                        [--temperature T] [--top-k K] [--seed S] [--mode {mode}]\n"
    "                        [--logits OUT.npy] [--threads N]\n"
    "\n"
    "Continue a prompt with a trained causal model: the model is rebuilt from the\n"
    "configuration stored in the checkpoint (checkpoints/step-<k>.safetensors of a run).\n"
    "A run or point directory stands for its latest checkpoint (a sweep's run directory\n"
    "for its point when it has one; else name the point, runs/NAME/pe=rope,...).\n"
    "charlm models read the prompt as bytes and print text (bytes that are not valid\n"
    "UTF-8, and control characters other than newline, tab and carriage return, are\n"
    "printed as \\xNN); the other language-model tasks (tokens, copy, ...) read and print\n"
    "token ids as whitespace-separated integers.  stdout gets the continuation only, then\n"
    "a newline.  Classifier checkpoints (listops) are refused.\n"
    "\n"
    "Options:\n",
    "\n"
    "Exit status: 0 success, 1 runtime failure, 2 usage error.\n",
    0};

static int is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Returns RL_OPTS_GO_ON, or an exit status. */
static int parse_args(struct gen_args *a, int argc, char **argv)
{
    int rc;
    *a = (struct gen_args){.tokens = 100, .temperature = 1.0, .seed = 1, .threads = 1};
    if ((rc = rl_opts_parse(&gen_command, a, argc, argv, NULL)) != RL_OPTS_GO_ON) return rc;
    if (a->prompt && a->prompt_file)
        return rl_usage_error("generate", "--prompt and --prompt-file exclude each other");
    if (!a->prompt && !a->prompt_file)
        return rl_usage_error("generate", "missing --prompt or --prompt-file");
    if (is_dir(a->ckpt)) { /* a run or point directory: its latest checkpoint */
        if (rl_train_dir_checkpoint(a->ckpt, a->ckpt_path, sizeof a->ckpt_path) != RL_OK) {
            fprintf(stderr, "ropelab generate: %s\n", rl_last_error());
            return RL_EXIT_FAIL;
        }
        a->ckpt = a->ckpt_path;
    }
    return RL_OPTS_GO_ON;
}

/* The model of the checkpoint: its configuration from the metadata, then its weights. */
static int load_model(rl_model **out, int *charlm, const char *path)
{
    struct rl_cfg *c  = malloc(sizeof *c);
    rl_status      st = c ? rl_cfg_from_checkpoint(c, path, NULL) : RL_ENOMEM;
    int            rc = RL_EXIT_FAIL;
    *out              = NULL;
    if (st != RL_OK) {
        fprintf(stderr, "ropelab generate: %s\n", c ? rl_last_error() : "out of memory");
    } else if (c->task.name == RL_TASK_LISTOPS) {
        fprintf(stderr,
                "ropelab generate: %s is a classifier (task listops), not a causal language "
                "model: nothing to generate\n",
                path);
    } else if (c->task.vocab <= 0) {
        fprintf(stderr, "ropelab generate: %s: the configuration has no task.vocab\n", path);
    } else {
        struct rl_model_config mc;
        rl_cfg_model_config(c, c->task.vocab, 1, 0, &mc);
        st = rl_model_create(out, &mc);
        if (st == RL_OK) st = rl_checkpoint_load(path, *out, NULL, NULL, NULL, NULL, NULL);
        if (st != RL_OK) fprintf(stderr, "ropelab generate: %s\n", rl_last_error());
        *charlm = c->task.name == RL_TASK_CHARLM;
        rc      = st == RL_OK ? RL_EXIT_OK : RL_EXIT_FAIL;
    }
    if (rc != RL_EXIT_OK) rl_model_free(*out), *out = NULL;
    free(c);
    return rc;
}

/* Prompt tokens: charlm the bytes, others whitespace-separated ids in [0, vocab). */
static int read_prompt(int32_t **tok, int *n, const struct gen_args *a, int charlm, int vocab)
{
    unsigned char *buf = NULL;
    size_t         len = 0;
    if (a->prompt_file) {
        if (rl_read_file(&buf, &len, a->prompt_file) != RL_OK) {
            fprintf(stderr, "ropelab generate: %s\n", rl_last_error());
            return RL_EXIT_FAIL;
        }
    } else {
        len = strlen(a->prompt);
        buf = malloc(len + 1);
        if (buf) memcpy(buf, a->prompt, len + 1);
    }
    int32_t *t = malloc((len + 1) * sizeof *t);
    int      k = 0, rc = buf && t ? RL_EXIT_OK : RL_EXIT_FAIL;
    for (size_t i = 0; rc == RL_EXIT_OK && charlm && i < len; i++)
        t[k++] = buf[i];
    const char *s = (const char *)buf;
    while (rc == RL_EXIT_OK && !charlm && s < (const char *)buf + len) {
        char *e = NULL;
        while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
            s++;
        if (!*s) break;
        errno  = 0;
        long v = strtol(s, &e, 10);
        if (e == s || errno || (*e && !strchr(" \t\r\n", *e)))
            rc =
                rl_usage_error("generate", "prompt: token %d is not an integer id ('%.20s')", k, s);
        else if (v < 0 || v >= vocab)
            rc = rl_usage_error("generate",
                                "prompt: token %d is %ld, outside the vocabulary "
                                "[0, %d)",
                                k, v, vocab);
        else
            t[k++] = (int32_t)v, s = e;
    }
    if (rc == RL_EXIT_OK && k == 0)
        rc = rl_usage_error("generate",
                            "empty prompt: the model has no begin-of-text token; "
                            "give at least one token%s",
                            charlm ? " (e.g. a newline)" : "");
    free(buf);
    if (rc != RL_EXIT_OK) free(t), t = NULL;
    *tok = t, *n = k;
    return rc;
}

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0 when it is not valid. */
static int utf8_len(const unsigned char *s, size_t n)
{
    int len = s[0] >= 0xC2 && s[0] <= 0xDF   ? 2
              : s[0] >= 0xE0 && s[0] <= 0xEF ? 3
              : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4
                                             : 0;
    if (!len || (size_t)len > n) return 0;
    unsigned lo = s[0] == 0xE0 ? 0xA0 : s[0] == 0xF0 ? 0x90 : 0x80; /* no overlong forms */
    unsigned hi = s[0] == 0xED ? 0x9F : s[0] == 0xF4 ? 0x8F : 0xBF; /* no surrogates, <= 10FFFF */
    if (s[1] < lo || s[1] > hi) return 0;
    for (int i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return len;
}

/* Text as it is where it is valid UTF-8; other bytes and control characters but newline,
 * tab and carriage return as \xNN. */
static void print_text(FILE *f, const int32_t *tok, int n)
{
    unsigned char *s = malloc((size_t)n + 1);
    if (!s) return;
    for (int i = 0; i < n; i++)
        s[i] = (unsigned char)tok[i];
    for (size_t i = 0; i < (size_t)n;) {
        unsigned char b = s[i];
        int           l = b >= 0x80 ? utf8_len(s + i, (size_t)n - i) : 1;
        if (l > 1) {
            fwrite(s + i, 1, (size_t)l, f);
            i += (size_t)l;
            continue;
        }
        if (!l || (b < 0x20 && b != '\n' && b != '\t' && b != '\r') || b == 0x7F)
            fprintf(f, "\\x%02X", b);
        else
            fputc(b, f);
        i++;
    }
    fputc('\n', f);
    free(s);
}

static void print_ids(FILE *f, const int32_t *tok, int n)
{
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%d", i ? " " : "", tok[i]);
    fputc('\n', f);
}

/* A learned PE has max_len rows: the prompt and the generated tokens but the last (which
 * is never fed back) must fit. */
static int check_positions(const rl_model *m, int P, int K)
{
    const struct rl_model_config *c = rl_model_config_get(m);
    if (c->input_pe != RL_INPUT_PE_LEARNED || P + K - 1 <= c->max_len) return RL_EXIT_OK;
    if (P > c->max_len)
        return rl_usage_error("generate",
                              "the learned PE has max_len=%d rows: prompt token %d "
                              "(of %d) has no row",
                              c->max_len, c->max_len + 1, P);
    return rl_usage_error("generate",
                          "the learned PE has max_len=%d rows: generated token %d "
                          "(token %d counting the %d of the prompt) would need a row; use "
                          "--tokens %d or fewer",
                          c->max_len, c->max_len - P + 2, c->max_len + 1, P, c->max_len - P + 1);
}

/* Feeds the prompt, then samples K tokens; lg: K rows of logits (or one row, reused). */
static rl_status run_decoder(rl_decoder *dc, int32_t *gen, float *lg, int all_rows,
                             const int32_t *prompt, int P, const struct gen_args *a, int V)
{
    struct rl_rng rng;
    void         *work = malloc(rl_sample_work_bytes(V));
    rl_status     st   = work ? RL_OK : RL_ENOMEM;
    rl_rng_seed(&rng, a->seed);
    for (int i = 0; st == RL_OK && i < P; i++)
        st = rl_decoder_step(dc, lg, prompt[i]);
    for (int g = 0; st == RL_OK && g < a->tokens; g++) {
        float *row = lg + (all_rows ? (size_t)g * V : 0);
        gen[g]     = rl_sample(row, V, a->temperature, a->top_k, &rng, work);
        if (g + 1 < a->tokens) {
            float *next = lg + (all_rows ? (size_t)(g + 1) * V : 0);
            st          = rl_decoder_step(dc, next, gen[g]);
        }
    }
    free(work);
    return st;
}

static int generate(rl_model *m, int charlm, const int32_t *prompt, int P, const struct gen_args *a)
{
    const int   V = rl_model_config_get(m)->vocab, K = a->tokens;
    int         rc = check_positions(m, P, K);
    rl_decoder *dc = NULL;
    if (rc != RL_EXIT_OK) return rc;
    int32_t  *gen = malloc((size_t)K * sizeof *gen);
    float    *lg  = malloc((a->logits ? (size_t)K : 1) * V * sizeof *lg);
    rl_status st  = gen && lg ? rl_decoder_create(&dc, m, a->mode, P + K) : RL_ENOMEM;
    if (st == RL_OK && a->mode == RL_DECODE_RECURRENT && rl_decoder_recomputes(dc))
        fprintf(stderr, "ropelab generate: note: linear attention with T5 has no recurrent form; "
                        "every step recomputes the whole prefix (as --mode full)\n");
    if (st == RL_OK) st = run_decoder(dc, gen, lg, a->logits != NULL, prompt, P, a, V);
    if (st == RL_OK && a->logits) {
        int64_t shape[2] = {K, V};
        st               = rl_npy_write_f32(a->logits, lg, 2, shape);
    }
    if (st == RL_OK) {
        if (charlm)
            print_text(stdout, gen, K);
        else
            print_ids(stdout, gen, K);
    } else {
        fprintf(stderr, "ropelab generate: %s\n",
                st == RL_ENOMEM && !dc ? "out of memory" : rl_last_error());
    }
    rl_decoder_free(dc);
    free(gen), free(lg);
    return st == RL_OK ? RL_EXIT_OK : RL_EXIT_FAIL;
}

int rl_cmd_generate(int argc, char **argv)
{
    struct gen_args a;
    int             rc = parse_args(&a, argc, argv);
    if (rc != RL_OPTS_GO_ON) return rc;
    rl_cli_threads("generate", a.threads);
    rl_model *m      = NULL;
    int32_t  *prompt = NULL;
    int       charlm = 0, P = 0;
    rc = load_model(&m, &charlm, a.ckpt);
    if (rc == RL_EXIT_OK) rc = read_prompt(&prompt, &P, &a, charlm, rl_model_config_get(m)->vocab);
    if (rc == RL_EXIT_OK) rc = generate(m, charlm, prompt, P, &a);
    free(prompt);
    rl_model_free(m);
    return rc;
}
