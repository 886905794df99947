/* npy.c -- NumPy .npy reader/writer; see npy.h.  Format: magic "\x93NUMPY", major,
 * minor, header length (u16 for 1.0, u32 for 2.0/3.0), a Python-dict header
 * {'descr': ..., 'fortran_order': ..., 'shape': (...), } padded with spaces and '\n',
 * then the raw data. */
#include "config.h"
#include "npy.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Find the value text after 'key': in the header dict; NULL if absent. */
static const char *dict_value(const char *h, const char *key)
{
    char pat[32];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(h, pat);
    if (!p) {
        snprintf(pat, sizeof pat, "\"%s\"", key);
        p = strstr(h, pat);
    }
    if (!p) return NULL;
    p += strlen(pat);
    while (*p == ' ') p++;
    if (*p != ':') return NULL;
    p++;
    while (*p == ' ') p++;
    return p;
}

static rl_status parse_header(struct rl_npy *a, int *swap, const char *h, const char *name)
{
    const char *d = dict_value(h, "descr"), *f = dict_value(h, "fortran_order"),
               *s = dict_value(h, "shape");
    if (!d || !f || !s)
        RL_FAIL(RL_EFORMAT, "%s: .npy header lacks descr, fortran_order or shape", name);
    if (*d != '\'' && *d != '"') RL_FAIL(RL_EFORMAT, "%s: .npy descr is not a string", name);
    char q = *d++, descr[16];
    int  i = 0;
    while (*d && *d != q && i < 15) descr[i++] = *d++;
    descr[i] = 0;
    if (*d != q) RL_FAIL(RL_EFORMAT, "%s: .npy descr is malformed", name);
    char  endian = descr[0];
    char *t      = descr + 1;
    if (endian != '<' && endian != '>' && endian != '=' && endian != '|')
        RL_FAIL(RL_EFORMAT, "%s: unsupported dtype '%s'", name, descr);
    *swap = endian == '>';
    if (!strcmp(t, "f4")) a->dtype = RL_NPY_F32;
    else if (!strcmp(t, "f8")) a->dtype = RL_NPY_F64;
    else if (!strcmp(t, "i4")) a->dtype = RL_NPY_I32;
    else if (!strcmp(t, "i8")) a->dtype = RL_NPY_I64;
    else
        RL_FAIL(RL_EFORMAT, "%s: unsupported dtype '%s' (need float32, float64, int32 or int64)",
                name, descr);
    if (!strncmp(f, "True", 4))
        RL_FAIL(RL_EFORMAT, "%s: Fortran-order arrays are not supported (save with C order)", name);
    if (strncmp(f, "False", 5)) RL_FAIL(RL_EFORMAT, "%s: .npy fortran_order is malformed", name);
    if (*s != '(') RL_FAIL(RL_EFORMAT, "%s: .npy shape is not a tuple", name);
    s++;
    a->ndim  = 0;
    a->count = 1;
    for (;;) {
        while (*s == ' ') s++;
        if (*s == ')') break;
        if (!isdigit((unsigned char)*s)) RL_FAIL(RL_EFORMAT, "%s: .npy shape is malformed", name);
        errno        = 0;
        char     *e  = NULL;
        long long v  = strtoll(s, &e, 10);
        if (errno || v < 0 || v > (1LL << 40))
            RL_FAIL(RL_EFORMAT, "%s: .npy dimension out of range", name);
        if (a->ndim == RL_NPY_MAX_DIMS)
            RL_FAIL(RL_EFORMAT, "%s: more than %d dimensions", name, RL_NPY_MAX_DIMS);
        a->shape[a->ndim++] = v;
        if (v && a->count > ((size_t)1 << 40) / (size_t)v)
            RL_FAIL(RL_EFORMAT, "%s: .npy array too large", name);
        a->count *= (size_t)v;
        s = e;
        while (*s == ' ') s++;
        if (*s == ',') s++;
        else if (*s != ')') RL_FAIL(RL_EFORMAT, "%s: .npy shape is malformed", name);
    }
    return RL_OK;
}

static size_t dtype_size(enum rl_npy_dtype t) { return t == RL_NPY_F32 || t == RL_NPY_I32 ? 4 : 8; }

rl_status rl_npy_parse(struct rl_npy *a, const unsigned char *buf, size_t len, const char *name)
{
    memset(a, 0, sizeof *a);
    if (len < 10 || memcmp(buf, "\x93NUMPY", 6))
        RL_FAIL(RL_EFORMAT, "%s: not a .npy file (bad magic)", name);
    int    major = buf[6];
    size_t hlen, hoff;
    if (major == 1) {
        hlen = buf[8] | (size_t)buf[9] << 8;
        hoff = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12) RL_FAIL(RL_EFORMAT, "%s: truncated .npy header", name);
        hlen = buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        hoff = 12;
    } else {
        RL_FAIL(RL_EFORMAT, "%s: unsupported .npy format version %d.%d", name, major, buf[7]);
    }
    if (hlen > len - hoff) RL_FAIL(RL_EFORMAT, "%s: truncated .npy header", name);
    char *h = malloc(hlen + 1);
    if (!h) RL_FAIL(RL_ENOMEM, "%s: out of memory", name);
    memcpy(h, buf + hoff, hlen);
    h[hlen]   = 0;
    int       swap = 0;
    rl_status st   = parse_header(a, &swap, h, name);
    free(h);
    if (st != RL_OK) return st;
    size_t es = dtype_size(a->dtype), need = a->count * es, have = len - hoff - hlen;
    if (have < need)
        RL_FAIL(RL_EFORMAT, "%s: truncated .npy data (%zu bytes, shape needs %zu)", name, have, need);
    if (have > need)
        RL_FAIL(RL_EFORMAT, "%s: .npy file has %zu bytes after the data its shape describes",
                name, have - need);
    a->data = malloc(need ? need : 1);
    if (!a->data) RL_FAIL(RL_ENOMEM, "%s: cannot allocate %zu bytes", name, need);
    memcpy(a->data, buf + hoff + hlen, need);
    if (swap) {
        unsigned char *p = a->data;
        for (size_t i = 0; i < a->count; i++, p += es)
            for (size_t j = 0; j < es / 2; j++) {
                unsigned char c = p[j];
                p[j]            = p[es - 1 - j];
                p[es - 1 - j]   = c;
            }
    }
    return RL_OK;
}

rl_status rl_npy_read(struct rl_npy *a, const char *path)
{
    memset(a, 0, sizeof *a);
    unsigned char *buf = NULL;
    size_t         len = 0;
    RL_TRY(rl_read_file(&buf, &len, path));
    rl_status st = rl_npy_parse(a, buf, len, path);
    free(buf);
    return st;
}

void rl_npy_free(struct rl_npy *a)
{
    free(a->data);
    a->data = NULL;
}

rl_status rl_npy_read_f32(float **out, int64_t *shape, int ndim, const char *path)
{
    struct rl_npy a;
    *out = NULL;
    RL_TRY(rl_npy_read(&a, path));
    if (a.ndim != ndim) {
        rl_npy_free(&a);
        RL_FAIL(RL_ESHAPE, "%s: expected %d dimensions, found %d", path, ndim, a.ndim);
    }
    if (a.dtype == RL_NPY_I32 || a.dtype == RL_NPY_I64) {
        rl_npy_free(&a);
        RL_FAIL(RL_EFORMAT, "%s: expected float32 data, found an integer dtype", path);
    }
    if (a.dtype == RL_NPY_F64) {
        float  *f = malloc((a.count ? a.count : 1) * sizeof(float));
        double *d = a.data;
        if (!f) {
            rl_npy_free(&a);
            RL_FAIL(RL_ENOMEM, "%s: out of memory", path);
        }
        for (size_t i = 0; i < a.count; i++) f[i] = (float)d[i];
        free(a.data);
        a.data = f;
    }
    for (int i = 0; i < ndim; i++) shape[i] = a.shape[i];
    *out = a.data;
    return RL_OK;
}

static rl_status write_npy(const char *path, const void *data, size_t es, const char *descr,
                           int ndim, const int64_t *shape)
{
    char   dict[512];
    size_t count = 1;
    int    n     = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                            descr);
    for (int i = 0; i < ndim; i++) {
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld%s", (long long)shape[i],
                      ndim == 1 ? "," : (i + 1 < ndim ? ", " : ""));
        count *= (size_t)shape[i];
    }
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    /* header (magic+version+len+dict+pad+'\n') is a multiple of 64 bytes */
    size_t pre = 10, total = pre + (size_t)n + 1;
    total      = (total + 63) / 64 * 64;
    size_t hl  = total - pre;
    if (hl > 65535) RL_FAIL(RL_EINVAL, "%s: .npy header too long", path);
    unsigned char head[1024];
    memcpy(head, "\x93NUMPY\x01\x00", 8);
    head[8] = (unsigned char)(hl & 0xff);
    head[9] = (unsigned char)(hl >> 8);
    memcpy(head + pre, dict, (size_t)n);
    memset(head + pre + n, ' ', hl - (size_t)n - 1);
    head[total - 1] = '\n';
    return rl_write_file_atomic(path, head, total, data, count * es);
}

rl_status rl_npy_write_f32(const char *path, const float *data, int ndim, const int64_t *shape)
{
    return write_npy(path, data, 4, "<f4", ndim, shape);
}

rl_status rl_npy_write_f64(const char *path, const double *data, int ndim, const int64_t *shape)
{
    return write_npy(path, data, 8, "<f8", ndim, shape);
}
