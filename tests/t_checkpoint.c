/* t_checkpoint.c -- safetensors checkpoints (checkpoint.h): round trip, the file read by an
 * independent minimal reader written here (and by NumPy through tests/ref/
 * read_safetensors.py where python3-numpy is installed), and refusals: truncated files,
 * header length beyond the file, bad JSON, wrong dtype/shape, offsets outside the file,
 * overlapping or not covering the data, missing/foreign tensors, random header damage --
 * each refused with a message, none crashing (run under ASan in CI), the model unchanged. */
#include "config.h"
#include "model/checkpoint.h"
#include "core/threads.h"
#include "core/init.h"
#include "core/json.h"
#include "model/model.h"
#include "tap.h"
#include "core/util.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <unistd.h>

static char dir[256];

static rl_model *make_model(int D, int layers, int learned)
{
    struct rl_model_config c;
    memset(&c, 0, sizeof c);
    rl_attn_opts_default(&c.attn);
    c.vocab = 11, c.d_model = D, c.heads = 2, c.layers = layers, c.max_len = 16;
    c.input_pe             = learned ? RL_INPUT_PE_LEARNED : RL_INPUT_PE_NONE;
    c.attn.pe              = learned ? RL_ATTN_PE_NONE : RL_ATTN_PE_T5;
    c.attn.causal          = 1;
    c.attn.t5_buckets      = 6;
    c.attn.t5_max_distance = 8;
    rl_model *m;
    if (rl_model_create(&m, &c) != RL_OK) tap_bail("create: %s", rl_last_error());
    return m;
}

/* --- an independent minimal safetensors reader: string search in the header ------------ */

/* the header length: the file's first 8 bytes, little-endian */
static size_t header_len(const unsigned char *buf)
{
    size_t hl = 0;
    for (int i = 7; i >= 0; i--)
        hl = hl << 8 | buf[i];
    return hl;
}

struct mini {
    char                *hdr; /* NUL-terminated copy */
    const unsigned char *data;
    size_t               data_len;
    unsigned long long   hl;
};

static int mini_open(struct mini *r, const unsigned char *buf, size_t len)
{
    if (len < 8) return 0;
    r->hl = header_len(buf);
    if (r->hl > len - 8) return 0;
    r->hdr = malloc(r->hl + 1);
    memcpy(r->hdr, buf + 8, r->hl);
    r->hdr[r->hl] = 0;
    r->data       = buf + 8 + r->hl;
    r->data_len   = len - 8 - r->hl;
    return 1;
}

/* "name":{"dtype":"F32","shape":[a,b],"data_offsets":[x,y]} (the order this writer uses) */
static int mini_tensor(const struct mini *r, const char *name, long long shape[2], int *ndim,
                       size_t *b, size_t *e)
{
    char key[200];
    snprintf(key, sizeof key, "\"%s\":{\"dtype\":\"F32\",\"shape\":[", name);
    const char *p = strstr(r->hdr, key);
    if (!p) return 0;
    p += strlen(key);
    *ndim = sscanf(p, "%lld,%lld", &shape[0], &shape[1]);
    p     = strstr(p, "\"data_offsets\":[");
    return p && sscanf(p, "\"data_offsets\":[%zu,%zu]", b, e) == 2 && *e <= r->data_len;
}

static void test_round_trip(void)
{
    rl_model *m = make_model(8, 2, 1);
    rl_model_init_weights(m, 3);
    size_t n  = rl_model_num_params(m);
    float *am = malloc(n * 4), *av = malloc(n * 4), *lm = malloc(n * 4), *lv = malloc(n * 4);
    tap_fill_normal(am, n, 1e-2), tap_fill_normal(av, n, 1e-4);
    const char *cfg = "[model]\nd_model = 8\n; quote \" backslash \\ tab \t bell \a caf\xc3\xa9\n";
    const char *rng = "xoshiro256** 0123456789abcdef 0 1 2";
    char        path[300];
    snprintf(path, sizeof path, "%s/a.safetensors", dir);
    tap_ok(rl_checkpoint_save(path, m, am, av, 7, cfg, rng) == RL_OK, "save: %s", path);
    /* independent reader */
    unsigned char *buf;
    size_t         len;
    struct mini    r;
    if (rl_read_file(&buf, &len, path) != RL_OK || !mini_open(&r, buf, len)) tap_bail("reread");
    int ok = r.hl % 8 == 0 && strstr(r.hdr, "\"__metadata__\":{\"step\":\"7\"") != NULL;
    tap_ok(ok, "header: 8-byte aligned data (%llu bytes), __metadata__.step = \"7\"", r.hl);
    tap_ok(r.data_len == 3 * n * 4, "data holds params + optim.m + optim.v (%zu bytes)",
           r.data_len);
    int bitwise = 1, shapes = 1;
    for (int i = 0; i < rl_model_num_tensors(m); i++) {
        const struct rl_tensor_info *t      = rl_model_tensor(m, i);
        const char                  *pre[3] = {"", "optim.m.", "optim.v."};
        const float                 *src[3] = {rl_model_params(m), am, av};
        for (int k = 0; k < 3; k++) {
            char      name[160];
            long long shape[2] = {0, 0};
            int       nd       = 0;
            size_t    b = 0, e = 0;
            snprintf(name, sizeof name, "%s%s", pre[k], t->name);
            if (!mini_tensor(&r, name, shape, &nd, &b, &e)) {
                shapes = 0;
                tap_diag("mini reader: no '%s'", name);
                continue;
            }
            shapes &=
                nd == t->ndim && shape[0] == t->shape[0] && (nd < 2 || shape[1] == t->shape[1]);
            shapes &= e - b == t->count * 4;
            bitwise &= memcmp(r.data + b, src[k] + t->offset, t->count * 4) == 0; /* LE host */
        }
    }
    tap_ok(shapes, "independent reader finds every tensor with its documented shape (out x in)");
    tap_ok(bitwise, "independent reader: every tensor's bytes are the float32 values");
    free(r.hdr), free(buf);
    /* load into a differently initialised model */
    rl_model *m2 = make_model(8, 2, 1);
    rl_model_init_weights(m2, 99);
    int64_t step = -1;
    char   *c2 = NULL, *r2 = NULL;
    TAP_CHECK(rl_checkpoint_load(path, m2, lm, lv, &step, &c2, &r2) == RL_OK, "load");
    tap_ok(!memcmp(rl_model_params(m), rl_model_params(m2), n * 4) && !memcmp(am, lm, n * 4) &&
               !memcmp(av, lv, n * 4),
           "round trip: parameters and moments bitwise equal");
    tap_ok(step == 7 && c2 && !strcmp(c2, cfg) && r2 && !strcmp(r2, rng),
           "round trip: step, config text (escapes, UTF-8) and rng text");
    free(c2), free(r2);
    char *c3 = NULL;
    tap_ok(rl_checkpoint_read_meta(path, &step, &c3, NULL) == RL_OK && step == 7 &&
               !strcmp(c3, cfg),
           "metadata alone");
    free(c3);
    tap_ok(rl_checkpoint_load(path, m2, NULL, NULL, NULL, NULL, NULL) == RL_OK,
           "load of parameters only");
    /* step-0 style: no moments -> zeros */
    tap_ok(rl_checkpoint_save(path, m, NULL, NULL, 0, NULL, NULL) == RL_OK &&
               rl_checkpoint_load(path, m2, lm, lv, &step, NULL, NULL) == RL_OK && step == 0,
           "save without moments");
    ok = 1;
    for (size_t i = 0; i < n; i++)
        ok &= lm[i] == 0.0f && lv[i] == 0.0f;
    tap_ok(ok, "the step-0 checkpoint holds zero moments");
    /* atomic write leaves no temporary files */
    DIR           *d     = opendir(dir);
    int            stray = 0;
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (strstr(de->d_name, ".tmp")) stray++;
    if (d) closedir(d);
    tap_ok(stray == 0, "no temporary files left after saving");
    char bad[300];
    snprintf(bad, sizeof bad, "%s/no/such/dir/x.safetensors", dir);
    TAP_CHECK(rl_checkpoint_save(bad, m, NULL, NULL, 0, NULL, NULL) == RL_EIO,
          "save into a missing directory fails: %s", rl_last_error());
    free(am), free(av), free(lm), free(lv);
    rl_model_free(m), rl_model_free(m2);
}

/* NumPy as an outside reader (skipped without python3-numpy) */
static void test_numpy(void)
{
    const char *py = getenv("PYTHON"), *src = getenv("top_srcdir");
    if (!py || !*py || !src) {
        tap_skip("PYTHON or top_srcdir not set", "checkpoint read by NumPy");
        return;
    }
    rl_model *m = make_model(8, 1, 0);
    rl_model_init_weights(m, 5);
    char path[300], cmd[1200];
    snprintf(path, sizeof path, "%s/np.safetensors", dir);
    rl_checkpoint_save(path, m, NULL, NULL, 3, "x", "y");
    snprintf(cmd, sizeof cmd, "'%s' '%s/tests/ref/read_safetensors.py' '%s'", py, src, path);
    FILE *p = popen(cmd, "r");
    char  line[512];
    int   lines = 0, ok = 1, step_ok = 0;
    while (p && fgets(line, sizeof line, p)) {
        char   name[160], dtype[16], shape[64];
        double sum;
        if (sscanf(line, "__metadata__ step %15s", dtype) == 1) {
            step_ok = !strcmp(dtype, "3");
            continue;
        }
        if (sscanf(line, "%159s %15s %63s %lf", name, dtype, shape, &sum) != 4) continue;
        if (!strncmp(name, "optim.", 6)) continue;
        const struct rl_tensor_info *t   = rl_model_tensor_by_name(m, name);
        double                       ref = 0;
        for (size_t j = 0; t && j < t->count; j++)
            ref += rl_model_params(m)[t->offset + j];
        char want[64];
        if (t && t->ndim == 2)
            snprintf(want, sizeof want, "%lld,%lld", (long long)t->shape[0],
                     (long long)t->shape[1]);
        else if (t)
            snprintf(want, sizeof want, "%lld", (long long)t->shape[0]);
        ok &= t && !strcmp(dtype, "F32") && !strcmp(shape, want) &&
              fabs(sum - ref) <= 1e-9 * (1 + fabs(ref));
        lines++;
    }
    int rc = p ? pclose(p) : -1;
    if (rc != -1 && WEXITSTATUS(rc) == 77)
        tap_skip("python3-numpy not installed", "checkpoint read by NumPy");
    else
        tap_ok(rc == 0 && ok && step_ok && lines == rl_model_num_tensors(m),
               "NumPy reads every tensor (%d) with its shape and values, and the step", lines);
    rl_model_free(m);
}

/* --- refusals ---------------------------------------------------------------------------- */

static void write_bytes(const char *path, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b, 1, n, f) != n) tap_bail("cannot write %s", path);
    fclose(f);
}

/* a file with a hand-written header (padded) and `data` zero bytes of data */
static void write_st(const char *path, const char *json, size_t data)
{
    size_t         hl  = strlen(json);
    unsigned char *buf = calloc(8 + hl + data + 1, 1);
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)((unsigned long long)hl >> (8 * i));
    memcpy(buf + 8, json, hl);
    write_bytes(path, buf, 8 + hl + data);
    free(buf);
}

/* Saves m (with the moments am, av, or NULL for zeros) as update step to path; returns the
 * file's bytes. */
static unsigned char *save_reread(const char *path, rl_model *m, const float *am, const float *av,
                                  int64_t step, size_t *len)
{
    unsigned char *buf;
    if (rl_checkpoint_save(path, m, am, av, step, "c", "r") != RL_OK ||
        rl_read_file(&buf, len, path) != RL_OK)
        tap_bail("save and reread %s: %s", path, rl_last_error());
    return buf;
}

static int refused(rl_model *m, const char *path, rl_status want, const char *needle)
{
    size_t n    = rl_model_num_params(m);
    float *keep = malloc(n * 4);
    memcpy(keep, rl_model_params(m), n * 4);
    rl_status st = rl_checkpoint_load(path, m, NULL, NULL, NULL, NULL, NULL);
    int ok = st != RL_OK && (!want || st == want) && (!needle || strstr(rl_last_error(), needle)) &&
             !memcmp(keep, rl_model_params(m), n * 4);
    free(keep);
    return ok;
}

static void test_refusals(void)
{
    rl_model *m = make_model(8, 1, 0);
    rl_model_init_weights(m, 1);
    char good[300], path[300];
    snprintf(good, sizeof good, "%s/good.safetensors", dir);
    snprintf(path, sizeof path, "%s/bad.safetensors", dir);
    size_t         len;
    unsigned char *buf = save_reread(good, m, NULL, NULL, 1, &len);
    size_t         hl  = header_len(buf);
    /* truncations */
    size_t cuts[] = {0, 4, 7, 8, 9, 8 + hl / 2, 8 + hl, len / 2, len - 4, len - 1};
    int    ok     = 1;
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
        write_bytes(path, buf, cuts[i]);
        ok &= refused(m, path, RL_EFORMAT, NULL);
    }
    TAP_CHECK(ok, "truncated files (10 cut points) refused: %s", rl_last_error());
    unsigned char *cp = malloc(len + 8);
    memcpy(cp, buf, len);
    for (int i = 0; i < 8; i++)
        cp[i] = 0xFF;
    write_bytes(path, cp, len);
    TAP_CHECK(refused(m, path, RL_EFORMAT, "beyond the end"), "header length beyond the file: %s",
          rl_last_error());
    memcpy(cp, buf, len);
    cp[8] = '[';
    write_bytes(path, cp, len);
    TAP_CHECK(refused(m, path, RL_EFORMAT, "JSON"), "bad JSON: %s", rl_last_error());
    /* same-length edits of the real header */
    memcpy(cp, buf, len);
    char *h = (char *)cp + 8,
         *s = strstr(h, "\"embed.weight\":{\"dtype\":\"F32\",\"shape\":[11,8]");
    if (!s) tap_bail("header layout");
    memcpy(strstr(s, "[11,8]"), "[8,11]", 6);
    write_bytes(path, cp, len);
    TAP_CHECK(
        refused(m, path, RL_ESHAPE, "'embed.weight' has shape [8, 11], the model expects [11, 8]"),
        "transposed shape refused, naming the tensor: %s", rl_last_error());
    memcpy(cp, buf, len);
    s = strstr(h, "\"head.bias\"");
    memcpy(s, "\"head.bia_\"", 11);
    write_bytes(path, cp, len);
    TAP_CHECK(refused(m, path, RL_ESHAPE, "head.bia"), "missing / foreign tensor refused: %s",
          rl_last_error());
    /* a random byte of the header replaced, 300 times: refused or (harmless) accepted, never a
     * crash */
    int accepted = 0;
    for (int trial = 0; trial < 300; trial++) {
        memcpy(cp, buf, len);
        size_t at = 8 + (size_t)(tap_uniform() * hl);
        cp[at]    = (unsigned char)(tap_uniform() * 256);
        write_bytes(path, cp, len);
        if (rl_checkpoint_load(path, m, NULL, NULL, NULL, NULL, NULL) == RL_OK) accepted++;
    }
    tap_ok(1, "300 random header bytes: no crash (%d edits harmless, e.g. inside a string)",
           accepted);
    rl_checkpoint_load(good, m, NULL, NULL, NULL, NULL, NULL);
    free(cp), free(buf);
    rl_model_free(m);
}

/* hand-written headers: each rule of the format */
static void test_format_rules(void)
{
    rl_model *m = make_model(8, 1, 0);
    char      path[300];
    snprintf(path, sizeof path, "%s/hand.safetensors", dir);
    struct {
        const char *json, *needle, *what;
        size_t      data;
    } c[] = {
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "not a parameter",
         "a foreign tensor", 8},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,16]}}", "outside",
         "offsets beyond the data", 8},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", "need 12",
         "offsets disagreeing with the shape", 8},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\","
         "\"shape\":[2],\"data_offsets\":[4,12]}}",
         "overlap", "overlapping tensors", 12},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"b\":{\"dtype\":\"F32\","
         "\"shape\":[1],\"data_offsets\":[8,12]}}",
         "belong to no tensor", "a gap in the data", 12},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", "cover 4 of the 12",
         "data not covered", 12},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"a\":{\"dtype\":\"F32\","
         "\"shape\":[1],\"data_offsets\":[4,8]}}",
         "twice", "a duplicated name", 8},
        {"{\"a\":{\"dtype\":\"Q4\",\"shape\":[1],\"data_offsets\":[0,4]}}", "unknown dtype",
         "an unknown dtype", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", "not a size",
         "a negative dimension", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", "[begin, end]",
         "one offset", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", "expected", "no offsets", 4},
        {"{\"__metadata__\":{\"step\":3}}", "not a string", "a non-string metadata value", 0},
        {"[1,2]", "not a JSON object", "a header that is an array", 0},
        {"{\"a\":1,}", "JSON", "a trailing comma", 0},
        {"{\"a\":\"\\ud800\"}", "surrogate", "a lone surrogate", 0},
        {"{\"embed.weight\":{\"dtype\":\"F16\",\"shape\":[11,8],\"data_offsets\":[0,176]}}",
         "dtype F16, expected F32", "F16 data", 176},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        write_st(path, c[i].json, c[i].data);
        int ok = refused(m, path, 0, c[i].needle);
        TAP_CHECK(ok, "refused: %s -- %s", c[i].what, rl_last_error());
    }
    /* step that is not a count */
    write_st(path, "{\"__metadata__\":{\"step\":\"-3\"}}", 0);
    int64_t step;
    TAP_CHECK(rl_checkpoint_read_meta(path, &step, NULL, NULL) == RL_EFORMAT, "step \"-3\" refused: %s",
          rl_last_error());
    /* a well-formed checkpoint of another model */
    char other[300];
    snprintf(other, sizeof other, "%s/other.safetensors", dir);
    rl_model *big = make_model(12, 1, 0), *deep = make_model(8, 2, 0), *lrn = make_model(8, 1, 1);
    rl_checkpoint_save(other, big, NULL, NULL, 0, NULL, NULL);
    TAP_CHECK(refused(m, other, RL_ESHAPE, "the model expects"), "d_model 12 into d_model 8: %s",
          rl_last_error());
    rl_checkpoint_save(other, deep, NULL, NULL, 0, NULL, NULL);
    TAP_CHECK(refused(m, other, RL_ESHAPE, "blocks.1."), "2 layers into 1: %s", rl_last_error());
    rl_checkpoint_save(other, m, NULL, NULL, 0, NULL, NULL);
    TAP_CHECK(refused(deep, other, RL_ESHAPE, "missing tensor 'blocks.1."), "1 layer into 2: %s",
          rl_last_error());
    TAP_CHECK(refused(lrn, other, RL_ESHAPE, "t5.bias"), "T5 model into a learned-PE model: %s",
          rl_last_error());
    TAP_CHECK(rl_checkpoint_load("/nonexistent/x.safetensors", m, NULL, NULL, NULL, NULL, NULL) ==
              RL_EIO,
          "missing file: %s", rl_last_error());
    rl_model_free(big), rl_model_free(deep), rl_model_free(lrn), rl_model_free(m);
}

/* the JSON reader and writer under the header (src/json.h) */
static void test_json(void)
{
    char raw[256];
    for (int i = 0; i < 255; i++)
        raw[i] = (char)(i + 1); /* every byte but NUL */
    struct rl_json_buf b;
    rl_json_buf_init(&b);
    rl_json_buf_puts(&b, "{\"s\":");
    rl_json_buf_string(&b, raw, 255);
    rl_json_buf_puts(&b, ",\"n\":[0,-1.5e3,123456789012345,");
    rl_json_buf_number(&b, 0.1);
    rl_json_buf_puts(
        &b, "],\"u\":\"\\u00e9\\ud83d\\ude00\\n\",\"e\":{},\"a\":[],\"t\":[true,false,null]}");
    struct rl_json       *j  = NULL;
    int                   ok = !b.failed && rl_json_parse(&j, b.p, b.len) == RL_OK;
    const struct rl_json *s = ok ? rl_json_get(j, "s") : NULL, *n = ok ? rl_json_get(j, "n") : NULL;
    const struct rl_json *u = ok ? rl_json_get(j, "u") : NULL, *t = ok ? rl_json_get(j, "t") : NULL;
    tap_ok(s && s->len == 255 && !memcmp(s->string, raw, 255),
           "JSON: every byte 1..255 escaped by the writer reads back exactly");
    tap_ok(n && n->n == 4 && n->items[0].is_int && n->items[0].integer == 0 &&
               n->items[1].number == -1500.0 && !n->items[1].is_int &&
               n->items[2].integer == 123456789012345LL && n->items[3].number == 0.1,
           "JSON: integers, exponents, %%.17g doubles");
    tap_ok(u && !strcmp(u->string, "\xc3\xa9\xf0\x9f\x98\x80\n") && t && t->n == 3 &&
               t->items[0].type == RL_JSON_TRUE && t->items[2].type == RL_JSON_NULL,
           "JSON: \\u escapes with a surrogate pair decode to UTF-8; literals");
    rl_json_free(j);
    rl_json_buf_free(&b);
    static const char *bad[] = {"",    "{",    "{\"a\"}",    "{\"a\":}",  "[1 2]",      "01",
                                "1.",  "-",    "1e",         "\"\\x\"",   "\"a",        "\"\t\"",
                                "tru", "[1]]", "{\"a\":1}x", "\"\\u12\"", "\"\\udc00\""};
    ok                       = 1;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        j = NULL;
        ok &= rl_json_parse(&j, bad[i], strlen(bad[i])) == RL_EFORMAT && !j;
    }
    tap_ok(ok, "JSON: %zu malformed texts refused", sizeof bad / sizeof *bad);
    char deep[200];
    memset(deep, '[', sizeof deep);
    ok = rl_json_parse(&j, deep, sizeof deep) == RL_EFORMAT;
    TAP_CHECK(ok && strstr(rl_last_error(), "nesting"), "JSON: nesting limit: %s", rl_last_error());
    ok = rl_json_parse(&j, "{\"a\":1}", 4) == RL_EFORMAT; /* length, not NUL, ends the text */
    tap_ok(ok, "JSON: the text ends at its length");
}

static void cleanup(void)
{
    DIR           *d = opendir(dir);
    struct dirent *de;
    char           p[600];
    while (d && (de = readdir(d)))
        if (de->d_name[0] != '.') snprintf(p, sizeof p, "%s/%s", dir, de->d_name), remove(p);
    if (d) closedir(d);
    rmdir(dir);
}

/* --- integrity: checksums, non-finite values, a huge header ----------------------------- */

static void test_integrity(void)
{
    rl_model *m = make_model(8, 1, 0);
    rl_model_init_weights(m, 2);
    char good[300], path[300];
    snprintf(good, sizeof good, "%s/crc.safetensors", dir);
    snprintf(path, sizeof path, "%s/crc_bad.safetensors", dir);
    size_t n  = rl_model_num_params(m);
    float *am = calloc(n, 4), *av = calloc(n, 4);
    tap_fill_normal(am, n, 1e-2);
    size_t         len;
    unsigned char *buf = save_reread(good, m, am, av, 4, &len);
    size_t         hl  = header_len(buf);
    tap_ok(strstr((char *)buf + 8, "\"checksum\":\"crc32c\"") &&
               strstr((char *)buf + 8, "\"crc32c.embed.weight\":\""),
           "__metadata__ holds \"checksum\": \"crc32c\" and one crc32c.<tensor> per tensor");
    /* one flipped mantissa bit in every tensor of the data, one at a time */
    unsigned char *cp = malloc(len);
    int            ok = 1, first = 1;
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < rl_model_num_tensors(m); i++) {
            const struct rl_tensor_info *t = rl_model_tensor(m, i);
            memcpy(cp, buf, len);
            size_t at = 8 + hl + (k * n + t->offset + t->count / 2) * 4;
            cp[at] ^= 0x01; /* lowest mantissa bit of a little-endian float */
            write_bytes(path, cp, len);
            ok &= refused(m, path, RL_EFORMAT, "checksum mismatch") &&
                  strstr(rl_last_error(), t->name) != NULL;
            if (first) tap_diag("%s", rl_last_error()), first = 0;
        }
    tap_ok(ok, "a flipped mantissa bit in any tensor (params and moments) is refused, naming it");
    /* a file without "checksum" (written before checksums) loads unchecked */
    memcpy(cp, buf, len);
    char *c = strstr((char *)cp + 8, "\"checksum\":");
    memcpy(c, "\"checksuX\":", 11);
    cp[8 + hl + 5] ^= 0x01;
    write_bytes(path, cp, len);
    TAP_CHECK(rl_checkpoint_load(path, m, NULL, NULL, NULL, NULL, NULL) == RL_OK,
          "a file without checksums (older writer) loads: %s", rl_last_error());
    /* a changed byte of the metadata (the config text "c" -> "d") is damage too */
    memcpy(cp, buf, len);
    c     = strstr((char *)cp + 8, "\"config\":\"c\"");
    c[10] = 'd';
    write_bytes(path, cp, len);
    int64_t st_step;
    TAP_CHECK(refused(m, path, RL_EFORMAT, "__metadata__ checksum mismatch") &&
              rl_checkpoint_read_meta(path, &st_step, NULL, NULL) == RL_EFORMAT,
          "a damaged config text in the metadata is refused by load and read_meta: %s",
          rl_last_error());
    /* an unknown checksum kind and a malformed checksum are refused */
    memcpy(cp, buf, len);
    c = strstr((char *)cp + 8, "\"checksum\":\"crc32c\"");
    memcpy(c, "\"checksum\":\"crc32x\"", 19);
    write_bytes(path, cp, len);
    TAP_CHECK(refused(m, path, RL_EFORMAT, "only crc32c"), "unknown checksum kind refused: %s",
          rl_last_error());
    memcpy(cp, buf, len);
    c                                       = strstr((char *)cp + 8, "\"crc32c.embed.weight\":\"");
    c[strlen("\"crc32c.embed.weight\":\"")] = 'g';
    write_bytes(path, cp, len);
    TAP_CHECK(refused(m, path, RL_EFORMAT, "not 8 hex digits"), "malformed checksum refused: %s",
          rl_last_error());
    /* non-finite values: written by a diverged run, or in an older file without checksums */
    const struct rl_tensor_info *t    = rl_model_tensor(m, 1);
    rl_model                    *m2   = make_model(8, 1, 0);
    float                        keep = rl_model_params(m)[t->offset + 3];
    rl_model_params(m)[t->offset + 3] = NAN;
    rl_checkpoint_save(path, m, NULL, NULL, 1, NULL, NULL);
    rl_model_params(m)[t->offset + 3] = keep;
    char want[200];
    snprintf(want, sizeof want,
             "tensor '%s' holds a non-finite value (NaN or infinity) at "
             "element 3",
             t->name);
    TAP_CHECK(refused(m2, path, RL_EFORMAT, want), "a NaN weight is refused naming the tensor: %s",
          rl_last_error());
    am[5] = INFINITY;
    rl_checkpoint_save(path, m, am, av, 1, NULL, NULL);
    TAP_CHECK(rl_checkpoint_load(path, m2, am, av, NULL, NULL, NULL) == RL_EFORMAT &&
              strstr(rl_last_error(), "optim.m."),
          "an infinite moment is refused naming it: %s", rl_last_error());
    free(cp), free(buf), free(am), free(av);
    rl_model_free(m), rl_model_free(m2);
}

/* 100 000 keys with one duplicate at the end: refused in well under a second (the
 * duplicate check sorts the keys) */
static void test_huge_header(void)
{
    rl_model *m = make_model(8, 1, 0);
    char      path[300];
    snprintf(path, sizeof path, "%s/huge.safetensors", dir);
    const int nk  = 100000;
    size_t    cap = (size_t)nk * 80 + 256, at = 0;
    char     *j = malloc(cap);
    at += (size_t)snprintf(j + at, cap - at, "{");
    for (int i = 0; i < nk; i++)
        at +=
            (size_t)snprintf(j + at, cap - at,
                             "%s\"t%07d\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}",
                             i ? "," : "", i);
    at +=
        (size_t)snprintf(j + at, cap - at,
                         ",\"t0050000\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}");
    write_st(path, j, 0);
    /* processor time, not wall time: other jobs on the machine do not count */
    clock_t t0 = clock();
    int     ok = refused(m, path, RL_EFORMAT, "'t0050000' appears twice");
    double  ms = 1000.0 * (double)(clock() - t0) / CLOCKS_PER_SEC;
    /* a guard against quadratic work (1e10 key comparisons: minutes), not a benchmark: the
     * linear parse takes 0.3-1 s of CPU here, more on a loaded machine, so the budget is wide */
#if defined(__SANITIZE_ADDRESS__)
    const double budget = 25000; /* ASan's allocator is several times slower */
#else
    const double budget = 5000;
#endif
    TAP_CHECK(ok && ms < budget, "a %d-key header with a duplicate refused in %.0f ms of CPU: %s",
          nk + 1, ms, rl_last_error());
    free(j);
    rl_model_free(m);
}

int main(void)
{
    rl_init(1);
    tap_seed(11);
    snprintf(dir, sizeof dir, "t_checkpoint.dir.%ld", (long)getpid());
    if (rl_mkdir_p(dir) != RL_OK) tap_bail("mkdir %s", dir);
    test_round_trip();
    test_numpy();
    test_refusals();
    test_format_rules();
    test_json();
    test_integrity();
    test_huge_header();
    cleanup();
    return tap_done();
}
