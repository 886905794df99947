/* checkpoint.c -- safetensors checkpoints; see checkpoint.h for the format and rules.
 * The reader first validates the file as safetensors (header bounds, JSON, every entry's
 * dtype/shape/offsets, offsets tiling the data exactly), then matches it to the model,
 * and only then copies: a refused file never leaves a half-loaded model. */
#include "config.h"
#include "checkpoint.h"
#include "../core/crc32c.h"
#include "../core/json.h"
#include "../core/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_HEADER (100u << 20) /* the safetensors library's own limit */
#define MAX_DIMS 8

struct st_entry {
    const char *name, *dtype;
    int         ndim;
    int64_t     shape[MAX_DIMS];
    size_t      begin, end; /* bytes, relative to the data section */
};

struct st_file {
    const char           *path;
    unsigned char        *buf;
    size_t                len;
    struct rl_json       *hdr;
    const unsigned char  *data;
    size_t                data_len;
    int                   n;
    struct st_entry      *e;
    const struct rl_json *meta;
};

static int host_le(void)
{
    const uint16_t one = 1;
    unsigned char  b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* Copy n float32 between memory and little-endian bytes (swapped on big-endian hosts). */
static void copy_le32(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n * 4);
    if (host_le()) return;
    unsigned char *p = dst;
    for (size_t i = 0; i < n; i++, p += 4) {
        unsigned char t = p[0];
        p[0] = p[3], p[3] = t, t = p[1], p[1] = p[2], p[2] = t;
    }
}

/* parameters, then the AdamW moments */
static const char *const tensor_prefix[3] = {"", "optim.m.", "optim.v."};

/* --- writing ---------------------------------------------------------------------------- */

static void put_entry(struct rl_json_buf *b, const char *prefix, const struct rl_tensor_info *t,
                      size_t *off)
{
    char name[160];
    snprintf(name, sizeof name, "%s%s", prefix, t->name);
    size_t bytes = t->count * 4;
    rl_json_buf_puts(b, ",\n");
    rl_json_buf_string(b, name, strlen(name));
    rl_json_buf_puts(b, ":{\"dtype\":\"F32\",\"shape\":[");
    for (int d = 0; d < t->ndim; d++)
        rl_json_buf_printf(b, "%s%lld", d ? "," : "", (long long)t->shape[d]);
    rl_json_buf_printf(b, "],\"data_offsets\":[%zu,%zu]}", *off, *off + bytes);
    *off += bytes;
}

/* CRC-32C of the metadata texts: step, config and rng, each followed by a NUL. */
static uint32_t meta_crc(const char *step, const char *config, const char *rng)
{
    const char *t[3] = {step, config ? config : "", rng ? rng : ""};
    uint32_t    c    = 0;
    for (int i = 0; i < 3; i++)
        c = rl_crc32c(c, t[i], strlen(t[i]) + 1);
    return c;
}

/* The metadata: step, config, rng, then "checksum": "crc32c" and one "crc32c.<tensor>"
 * per tensor (8 hex digits of the CRC-32C of its little-endian bytes). */
static void put_meta(struct rl_json_buf *b, int64_t step, const char *config, const char *rng,
                     rl_model *m, const unsigned char *body)
{
    char s[32];
    snprintf(s, sizeof s, "%lld", (long long)step);
    rl_json_buf_puts(b, "{\"__metadata__\":{\"step\":");
    rl_json_buf_string(b, s, strlen(s));
    rl_json_buf_puts(b, ",\"config\":");
    rl_json_buf_string(b, config ? config : "", config ? strlen(config) : 0);
    rl_json_buf_puts(b, ",\"rng\":");
    rl_json_buf_string(b, rng ? rng : "", rng ? strlen(rng) : 0);
    rl_json_buf_puts(b, ",\"checksum\":\"crc32c\"");
    rl_json_buf_printf(b, ",\"crc32c.__metadata__\":\"%08x\"", (unsigned)meta_crc(s, config, rng));
    const int    nt  = rl_model_num_tensors(m);
    const size_t off = rl_model_num_params(m) * 4;
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < nt; i++) {
            const struct rl_tensor_info *t = rl_model_tensor(m, i);
            char                         name[192];
            snprintf(name, sizeof name, "crc32c.%s%s", tensor_prefix[k], t->name);
            rl_json_buf_puts(b, ",");
            rl_json_buf_string(b, name, strlen(name));
            rl_json_buf_printf(
                b, ":\"%08x\"",
                (unsigned)rl_crc32c(0, body + k * off + t->offset * 4, t->count * 4));
        }
    rl_json_buf_puts(b, "}");
}

rl_status rl_checkpoint_save(const char *path, rl_model *m, const float *adam_m,
                             const float *adam_v, int64_t step, const char *config_text,
                             const char *rng_text)
{
    const int    nt   = rl_model_num_tensors(m);
    const size_t np   = rl_model_num_params(m);
    float       *body = rl_alloc(3 * np * sizeof(float));
    if (!body) RL_FAIL(RL_ENOMEM, "%s: cannot allocate the checkpoint image", path);
    copy_le32(body, rl_model_params(m), np);
    if (adam_m) copy_le32(body + np, adam_m, np); /* rl_alloc zeroes: NULL moments are 0 */
    if (adam_v) copy_le32(body + 2 * np, adam_v, np);
    struct rl_json_buf b;
    rl_json_buf_init(&b);
    rl_json_buf_append(&b, "\0\0\0\0\0\0\0\0", 8); /* the length, filled in below */
    put_meta(&b, step, config_text, rng_text, m, (const unsigned char *)body);
    size_t off = 0;
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < nt; i++)
            put_entry(&b, tensor_prefix[k], rl_model_tensor(m, i), &off);
    rl_json_buf_puts(&b, "}");
    while ((b.len - 8) % 8)
        rl_json_buf_puts(&b, " "); /* data 8-byte aligned, as the library */
    if (b.failed) {
        rl_free(body);
        rl_json_buf_free(&b);
        RL_FAIL(RL_ENOMEM, "%s: cannot allocate the checkpoint header", path);
    }
    uint64_t hl = b.len - 8;
    for (int i = 0; i < 8; i++)
        b.p[i] = (char)(hl >> (8 * i) & 0xFF);
    rl_status st = rl_write_file_atomic(path, b.p, b.len, body, 3 * np * sizeof(float));
    rl_free(body);
    rl_json_buf_free(&b);
    return st;
}

/* --- reading: the safetensors layer ------------------------------------------------------ */

static size_t dtype_size(const char *dt)
{
    static const struct {
        const char *name;
        size_t      size;
    } t[] = {{"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4}, {"I16", 2},
             {"I8", 1},  {"U64", 8}, {"U32", 4}, {"U16", 2},  {"U8", 1},  {"BOOL", 1}};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        if (strcmp(dt, t[i].name) == 0) return t[i].size;
    return 0;
}

static rl_status parse_entry(const struct st_file *f, struct st_entry *e, const char *name,
                             const struct rl_json *j)
{
    const struct rl_json *dt = rl_json_get(j, "dtype"), *sh = rl_json_get(j, "shape");
    const struct rl_json *of = rl_json_get(j, "data_offsets");
    e->name                  = name;
    if (j->type != RL_JSON_OBJECT || !dt || dt->type != RL_JSON_STRING || !sh ||
        sh->type != RL_JSON_ARRAY || !of || of->type != RL_JSON_ARRAY)
        RL_FAIL(RL_EFORMAT, "%s: tensor '%s': expected {\"dtype\", \"shape\", \"data_offsets\"}",
                f->path, name);
    e->dtype      = dt->string;
    size_t elsize = dtype_size(e->dtype);
    if (!elsize)
        RL_FAIL(RL_EFORMAT, "%s: tensor '%s': unknown dtype \"%s\"", f->path, name, e->dtype);
    if (sh->n > MAX_DIMS)
        RL_FAIL(RL_EFORMAT, "%s: tensor '%s': %d dimensions (at most %d)", f->path, name, sh->n,
                MAX_DIMS);
    uint64_t bytes = elsize;
    e->ndim        = sh->n;
    for (int d = 0; d < sh->n; d++) {
        const struct rl_json *x = &sh->items[d];
        if (x->type != RL_JSON_NUMBER || !x->is_int || x->integer < 0 || x->integer > (1LL << 40))
            RL_FAIL(RL_EFORMAT, "%s: tensor '%s': shape[%d] is not a size", f->path, name, d);
        e->shape[d] = x->integer;
        bytes       = x->integer && bytes > UINT64_MAX / (uint64_t)x->integer
                          ? UINT64_MAX
                          : bytes * (uint64_t)x->integer;
    }
    if (of->n != 2)
        RL_FAIL(RL_EFORMAT, "%s: tensor '%s': data_offsets must be [begin, end]", f->path, name);
    for (int k = 0; k < 2; k++)
        if (of->items[k].type != RL_JSON_NUMBER || !of->items[k].is_int || of->items[k].integer < 0)
            RL_FAIL(RL_EFORMAT, "%s: tensor '%s': data_offsets[%d] is not a byte offset", f->path,
                    name, k);
    int64_t b = of->items[0].integer, en = of->items[1].integer;
    if (b > en || (uint64_t)en > f->data_len)
        RL_FAIL(RL_EFORMAT, "%s: tensor '%s': data_offsets [%lld, %lld] outside the %zu data bytes",
                f->path, name, (long long)b, (long long)en, f->data_len);
    if ((uint64_t)(en - b) != bytes)
        RL_FAIL(RL_EFORMAT,
                "%s: tensor '%s': data_offsets [%lld, %lld] hold %lld bytes, its "
                "shape and dtype need %llu",
                f->path, name, (long long)b, (long long)en, (long long)(en - b),
                (unsigned long long)bytes);
    e->begin = (size_t)b, e->end = (size_t)en;
    return RL_OK;
}

static int by_begin(const void *a, const void *b)
{
    const struct st_entry *x = a, *y = b;
    return x->begin < y->begin   ? -1
           : x->begin > y->begin ? 1
                                 : (x->end > y->end) - (x->end < y->end);
}

/* The tensors must tile the data section: sorted by begin, each starts where the last ended. */
static rl_status check_tiling(const struct st_file *f)
{
    struct st_entry *s = malloc((size_t)(f->n ? f->n : 1) * sizeof *s);
    if (!s) RL_FAIL(RL_ENOMEM, "%s: out of memory", f->path);
    memcpy(s, f->e, (size_t)f->n * sizeof *s);
    qsort(s, (size_t)f->n, sizeof *s, by_begin);
    size_t    at = 0;
    rl_status st = RL_OK;
    for (int i = 0; i < f->n && st == RL_OK; i++) {
        if (s[i].begin < at)
            st =
                rl_error_report(RL_EFORMAT, __FILE__, __LINE__, "%s: tensors '%s' and '%s' overlap",
                                f->path, s[i - 1].name, s[i].name);
        else if (s[i].begin > at)
            st = rl_error_report(RL_EFORMAT, __FILE__, __LINE__,
                                 "%s: bytes %zu..%zu of the data belong to no tensor (before '%s')",
                                 f->path, at, s[i].begin, s[i].name);
        at = s[i].end;
    }
    if (st == RL_OK && at != f->data_len)
        st = rl_error_report(RL_EFORMAT, __FILE__, __LINE__,
                             "%s: the tensors cover %zu of the %zu data bytes", f->path, at,
                             f->data_len);
    free(s);
    return st;
}

static void st_close(struct st_file *f)
{
    rl_json_free(f->hdr);
    free(f->buf);
    free(f->e);
    memset(f, 0, sizeof *f);
}

static rl_status st_parse(struct st_file *f)
{
    if (f->len < 8)
        RL_FAIL(RL_EFORMAT, "%s: truncated: %zu bytes, no room for the 8-byte header length",
                f->path, f->len);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--)
        hl = hl << 8 | f->buf[i];
    if (hl > f->len - 8)
        RL_FAIL(RL_EFORMAT,
                "%s: header length %llu is beyond the end of the file (%zu bytes): "
                "truncated or not safetensors",
                f->path, (unsigned long long)hl, f->len);
    if (hl > MAX_HEADER)
        RL_FAIL(RL_EFORMAT, "%s: header of %llu bytes is too large", f->path,
                (unsigned long long)hl);
    rl_status st = rl_json_parse(&f->hdr, (const char *)f->buf + 8, (size_t)hl);
    if (st != RL_OK) {
        char why[256]; /* rl_last_error's buffer is the one RL_FAIL writes */
        snprintf(why, sizeof why, "%s", rl_last_error());
        RL_FAIL(st, "%s: bad safetensors header: %s", f->path, why);
    }
    if (f->hdr->type != RL_JSON_OBJECT)
        RL_FAIL(RL_EFORMAT, "%s: the header is not a JSON object", f->path);
    int dup = rl_json_has_duplicate_keys(f->hdr);
    if (dup >= 0) RL_FAIL(RL_EFORMAT, "%s: tensor '%s' appears twice", f->path, f->hdr->keys[dup]);
    f->data     = f->buf + 8 + hl;
    f->data_len = f->len - 8 - (size_t)hl;
    if (!(f->e = calloc((size_t)f->hdr->n + 1, sizeof *f->e)))
        RL_FAIL(RL_ENOMEM, "%s: out of memory", f->path);
    for (int i = 0; i < f->hdr->n; i++) {
        const char *k = f->hdr->keys[i];
        if (strcmp(k, "__metadata__") == 0) {
            f->meta = &f->hdr->items[i];
            if (f->meta->type != RL_JSON_OBJECT)
                RL_FAIL(RL_EFORMAT, "%s: __metadata__ is not an object", f->path);
            for (int j = 0; j < f->meta->n; j++)
                if (f->meta->items[j].type != RL_JSON_STRING)
                    RL_FAIL(RL_EFORMAT, "%s: __metadata__.%s is not a string", f->path,
                            f->meta->keys[j]);
            continue;
        }
        RL_TRY(parse_entry(f, &f->e[f->n], k, &f->hdr->items[i]));
        f->n++;
    }
    return check_tiling(f);
}

static rl_status st_open(struct st_file *f, const char *path)
{
    memset(f, 0, sizeof *f);
    f->path = path;
    RL_TRY(rl_read_file(&f->buf, &f->len, path));
    rl_status st = st_parse(f);
    if (st != RL_OK) st_close(f);
    return st;
}

static const struct st_entry *st_find(const struct st_file *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->e[i].name, name) == 0) return &f->e[i];
    return NULL;
}

/* --- reading: checksums and values ---------------------------------------------------- */

struct meta_key {
    const char           *key;
    const struct rl_json *value;
};

static int by_meta_key(const void *a, const void *b)
{
    return strcmp(((const struct meta_key *)a)->key, ((const struct meta_key *)b)->key);
}

static rl_status check_crc(const struct st_file *f, const struct st_entry *e,
                           const struct meta_key *keys, size_t nkeys)
{
    size_t len = strlen(e->name) + 8;
    char  *key = malloc(len);
    if (!key) RL_FAIL(RL_ENOMEM, "%s: out of memory", f->path);
    snprintf(key, len, "crc32c.%s", e->name);
    struct meta_key        probe = {key, NULL};
    const struct meta_key *hit   = bsearch(&probe, keys, nkeys, sizeof *keys, by_meta_key);
    free(key);
    if (!hit)
        RL_FAIL(RL_EFORMAT, "%s: tensor '%s' has no __metadata__ checksum (crc32c.%s)", f->path,
                e->name, e->name);
    const char   *v = hit->value->string;
    char         *end;
    unsigned long want = strtoul(v, &end, 16);
    if (hit->value->len != 8 || *end || v[0] == '+' || v[0] == '-' || v[0] == ' ')
        RL_FAIL(RL_EFORMAT, "%s: __metadata__ crc32c.%s \"%.20s\" is not 8 hex digits", f->path,
                e->name, v);
    uint32_t got = rl_crc32c(0, f->data + e->begin, e->end - e->begin);
    if (got != (uint32_t)want)
        RL_FAIL(RL_EFORMAT,
                "%s: tensor '%s': checksum mismatch (stored %08lx, data %08x): the file is "
                "damaged",
                f->path, e->name, want, (unsigned)got);
    return RL_OK;
}

/* "crc32c.__metadata__", when present, covers step, config and rng: damaged metadata is
 * reported as damage, not as a changed configuration. */
static rl_status verify_meta(const struct st_file *f)
{
    const struct rl_json *want = rl_json_get(f->meta, "crc32c.__metadata__");
    if (!want) return RL_OK;
    const struct rl_json *s = rl_json_get(f->meta, "step"), *c = rl_json_get(f->meta, "config");
    const struct rl_json *r   = rl_json_get(f->meta, "rng");
    char                 *end = NULL;
    unsigned long         w   = strtoul(want->string, &end, 16);
    uint32_t got = meta_crc(s ? s->string : "", c ? c->string : "", r ? r->string : "");
    if (want->len != 8 || *end || (uint32_t)w != got || (s && strlen(s->string) != s->len) ||
        (c && strlen(c->string) != c->len) || (r && strlen(r->string) != r->len))
        RL_FAIL(RL_EFORMAT,
                "%s: __metadata__ checksum mismatch (stored %.8s, metadata %08x): the file is "
                "damaged",
                f->path, want->string, (unsigned)got);
    return RL_OK;
}

/* Files written with "checksum": "crc32c" in __metadata__ carry the CRC-32C of every
 * tensor's bytes; each is verified.  Older files without it load unchecked. */
static rl_status verify_checksums(const struct st_file *f)
{
    const struct rl_json *kind = rl_json_get(f->meta, "checksum");
    if (!kind) return RL_OK;
    if (strcmp(kind->string, "crc32c") != 0)
        RL_FAIL(RL_EFORMAT, "%s: __metadata__ checksum \"%.20s\": only crc32c is known", f->path,
                kind->string);
    size_t           n    = (size_t)f->meta->n;
    struct meta_key *keys = malloc((n ? n : 1) * sizeof *keys);
    if (!keys) RL_FAIL(RL_ENOMEM, "%s: out of memory", f->path);
    for (size_t i = 0; i < n; i++)
        keys[i].key = f->meta->keys[i], keys[i].value = &f->meta->items[i];
    qsort(keys, n, sizeof *keys, by_meta_key);
    rl_status st = RL_OK;
    for (int i = 0; i < f->n && st == RL_OK; i++)
        st = check_crc(f, &f->e[i], keys, n);
    free(keys);
    return st;
}

/* Every value of an F32 tensor is finite (exponent bits not all ones). */
static rl_status check_finite(const struct st_file *f, const struct st_entry *e)
{
    const unsigned char *p = f->data + e->begin;
    size_t               n = (e->end - e->begin) / 4;
    for (size_t i = 0; i < n; i++, p += 4)
        if ((p[3] & 0x7F) == 0x7F && (p[2] & 0x80))
            RL_FAIL(RL_EFORMAT,
                    "%s: tensor '%s' holds a non-finite value (NaN or infinity) at element %zu: "
                    "the file is damaged or its run diverged",
                    f->path, e->name, i);
    return RL_OK;
}

/* --- reading: matching the model ----------------------------------------------------------- */

static void shape_str(char *buf, size_t len, const int64_t *shape, int ndim)
{
    size_t at = (size_t)snprintf(buf, len, "[");
    for (int d = 0; d < ndim && at < len; d++)
        at += (size_t)snprintf(buf + at, len - at, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (at < len) snprintf(buf + at, len - at, "]");
}

/* The entry `prefix + t->name` exists, is F32 and has t's shape. */
static rl_status match(const struct st_file *f, const char *prefix, const struct rl_tensor_info *t,
                       const struct st_entry **out)
{
    char name[160];
    snprintf(name, sizeof name, "%s%s", prefix, t->name);
    const struct st_entry *e = st_find(f, name);
    if (!e)
        RL_FAIL(RL_ESHAPE, "%s: missing tensor '%s'%s", f->path, name,
                *prefix ? " (no optimizer state in this file?)"
                        : " (a checkpoint of another model?)");
    if (strcmp(e->dtype, "F32") != 0)
        RL_FAIL(RL_ESHAPE, "%s: tensor '%s' has dtype %s, expected F32", f->path, name, e->dtype);
    int same = e->ndim == t->ndim;
    for (int d = 0; same && d < t->ndim; d++)
        same = e->shape[d] == t->shape[d];
    if (!same) {
        char got[96], want[96];
        shape_str(got, sizeof got, e->shape, e->ndim);
        shape_str(want, sizeof want, t->shape, t->ndim);
        RL_FAIL(RL_ESHAPE, "%s: tensor '%s' has shape %s, the model expects %s", f->path, name, got,
                want);
    }
    *out = e;
    return RL_OK;
}

/* Every entry of the file is a parameter or a moment of this model. */
static rl_status no_strangers(const struct st_file *f, const rl_model *m)
{
    for (int i = 0; i < f->n; i++) {
        const char *n = f->e[i].name;
        if (!strncmp(n, "optim.m.", 8) || !strncmp(n, "optim.v.", 8)) n += 8;
        if (!rl_model_tensor_by_name(m, n))
            RL_FAIL(RL_ESHAPE,
                    "%s: tensor '%s' is not a parameter of this model (a checkpoint "
                    "of another configuration?)",
                    f->path, f->e[i].name);
    }
    return RL_OK;
}

static rl_status get_meta(const struct st_file *f, int64_t *step, char **config, char **rng)
{
    const struct rl_json *s = rl_json_get(f->meta, "step");
    const struct rl_json *c = rl_json_get(f->meta, "config"), *r = rl_json_get(f->meta, "rng");
    if (step) {
        char *end = NULL;
        if (!s) RL_FAIL(RL_EFORMAT, "%s: no __metadata__.step", f->path);
        errno       = 0;
        long long v = strtoll(s->string, &end, 10);
        if (!*s->string || *end || errno || v < 0 || s->string[0] == '-' || s->string[0] == '+' ||
            s->string[0] == ' ')
            RL_FAIL(RL_EFORMAT, "%s: __metadata__.step \"%.40s\" is not an update count", f->path,
                    s->string);
        *step = v;
    }
    char *cc = NULL, *rr = NULL;
    if (config && !(cc = strdup(c ? c->string : "")))
        RL_FAIL(RL_ENOMEM, "%s: out of memory", f->path);
    if (rng && !(rr = strdup(r ? r->string : ""))) {
        free(cc);
        RL_FAIL(RL_ENOMEM, "%s: out of memory", f->path);
    }
    if (config) *config = cc;
    if (rng) *rng = rr;
    return RL_OK;
}

static rl_status load_checked(const struct st_file *f, rl_model *m, float *am, float *av,
                              int64_t *step, char **config, char **rng)
{
    const int nt = rl_model_num_tensors(m);
    RL_TRY(no_strangers(f, m));
    const struct st_entry **e = calloc(3 * (size_t)nt, sizeof *e);
    if (!e) RL_FAIL(RL_ENOMEM, "%s: out of memory", f->path);
    const char *const *prefix = tensor_prefix;
    float             *dst[3] = {rl_model_params(m), am, av};
    rl_status          st     = RL_OK;
    for (int k = 0; k < 3 && st == RL_OK; k++)
        for (int i = 0; i < nt && st == RL_OK && dst[k]; i++)
            st = match(f, prefix[k], rl_model_tensor(m, i), &e[k * nt + i]);
    if (st == RL_OK) st = verify_meta(f);
    if (st == RL_OK) st = get_meta(f, step, config, rng);
    if (st == RL_OK) st = verify_checksums(f);
    for (int k = 0; k < 3 && st == RL_OK; k++)
        for (int i = 0; i < nt && st == RL_OK && dst[k]; i++)
            st = check_finite(f, e[k * nt + i]);
    if (st != RL_OK && config) free(*config), *config = NULL;
    if (st != RL_OK && rng) free(*rng), *rng = NULL;
    for (int k = 0; k < 3 && st == RL_OK; k++) /* everything checked: now copy */
        for (int i = 0; i < nt && dst[k]; i++) {
            const struct rl_tensor_info *t = rl_model_tensor(m, i);
            copy_le32(dst[k] + t->offset, f->data + e[k * nt + i]->begin, t->count);
        }
    free(e);
    return st;
}

rl_status rl_checkpoint_load(const char *path, rl_model *m, float *adam_m, float *adam_v,
                             int64_t *step, char **config_text, char **rng_text)
{
    if (config_text) *config_text = NULL;
    if (rng_text) *rng_text = NULL;
    struct st_file f;
    RL_TRY(st_open(&f, path));
    rl_status st = load_checked(&f, m, adam_m, adam_v, step, config_text, rng_text);
    st_close(&f);
    return st;
}

rl_status rl_checkpoint_read_meta(const char *path, int64_t *step, char **config_text,
                                  char **rng_text)
{
    if (config_text) *config_text = NULL;
    if (rng_text) *rng_text = NULL;
    struct st_file f;
    RL_TRY(st_open(&f, path));
    rl_status st = verify_meta(&f);
    if (st == RL_OK) st = get_meta(&f, step, config_text, rng_text);
    st_close(&f);
    return st;
}
