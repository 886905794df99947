/* t_npy.c -- .npy reader/writer: files written by NumPy (tests/data, made by
 * tests/ref/make_npy_fixtures.py), round trips, and every malformed input rejected
 * with a message instead of a crash. */
#include "config.h"
#include "core/npy.h"
#include "core/util.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char path_buf[4096];

static const char *fixture(const char *name)
{
    const char *src = getenv("top_srcdir");
    snprintf(path_buf, sizeof path_buf, "%s/tests/data/%s", src ? src : ".", name);
    return path_buf;
}

/* value[i] = (i - 3) * 0.25, the pattern the fixtures hold */
static int pattern_ok(const struct rl_npy *a)
{
    for (size_t i = 0; i < a->count; i++) {
        double want = ((double)i - 3) * 0.25, got;
        if (a->dtype == RL_NPY_F32) got = ((float *)a->data)[i];
        else if (a->dtype == RL_NPY_F64) got = ((double *)a->data)[i];
        else return 0;
        if (got != want) return 0;
    }
    return 1;
}

static void good(const char *name, enum rl_npy_dtype dt, int ndim, const int64_t *shape)
{
    struct rl_npy a;
    rl_status     s  = rl_npy_read(&a, fixture(name));
    int           ok = s == RL_OK && a.dtype == dt && a.ndim == ndim;
    for (int i = 0; ok && i < ndim; i++) ok = a.shape[i] == shape[i];
    ok = ok && pattern_ok(&a);
    tap_ok(ok, "read NumPy file %s", name);
    if (s != RL_OK) tap_diag("%s", rl_last_error());
    rl_npy_free(&a);
}

static void bad(const char *name, const char *expect)
{
    struct rl_npy a;
    rl_status     s = rl_npy_read(&a, fixture(name));
    tap_ok(s != RL_OK && strstr(rl_last_error(), expect) != NULL, "reject %s: %s", name,
           s == RL_OK ? "(accepted!)" : rl_last_error());
    rl_npy_free(&a);
}

static void bad_mem(const char *what, const char *bytes, size_t len, const char *expect)
{
    struct rl_npy a;
    rl_status s = rl_npy_parse(&a, (const unsigned char *)bytes, len, what);
    tap_ok(s != RL_OK && strstr(rl_last_error(), expect) != NULL, "reject %s: %s", what,
           s == RL_OK ? "(accepted!)" : rl_last_error());
    rl_npy_free(&a);
}

static void hand_built(void)
{
    /* header dicts built by hand around a valid 1.0 frame */
    struct {
        const char *what, *dict, *expect;
    } cases[] = {
        {"no shape", "{'descr': '<f4', 'fortran_order': False, }", "lacks"},
        {"shape not a tuple", "{'descr': '<f4', 'fortran_order': False, 'shape': 3, }", "tuple"},
        {"negative dim", "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", "malformed"},
        {"garbage dim", "{'descr': '<f4', 'fortran_order': False, 'shape': (2x,), }", "malformed"},
        {"bad fortran", "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }", "fortran"},
        {"int8 dtype", "{'descr': '|i1', 'fortran_order': False, 'shape': (1,), }", "dtype"},
        {"huge dims", "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999,), }",
         "range"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char   buf[256];
        size_t dl = strlen(cases[c].dict);
        memcpy(buf, "\x93NUMPY\x01\x00", 8);
        buf[8] = (char)(dl & 0xff), buf[9] = 0;
        memcpy(buf + 10, cases[c].dict, dl);
        memset(buf + 10 + dl, 0, 8);
        bad_mem(cases[c].what, buf, 10 + dl + 4, cases[c].expect);
    }
    bad_mem("empty", "", 0, "magic");
    bad_mem("version 4", "\x93NUMPY\x04\x00\x10\x00", 10, "version");
    bad_mem("header beyond file", "\x93NUMPY\x01\x00\xff\x00{", 11, "truncated");
    bad_mem("v2 short", "\x93NUMPY\x02\x00\x01", 9, "magic");
}

static void round_trip(void)
{
    char dir[] = "/tmp/rl_npyXXXXXX";
    if (!mkdtemp(dir)) tap_bail("mkdtemp failed");
    char p[4200];
    snprintf(p, sizeof p, "%s/x.npy", dir);
    float   x[2 * 3 * 5];
    int64_t sh[3] = {2, 3, 5}, got_sh[3];
    tap_fill_normal(x, 30, 3.0);
    tap_ok(rl_npy_write_f32(p, x, 3, sh) == RL_OK, "write float32 (2,3,5)");
    float *y = NULL;
    tap_ok(rl_npy_read_f32(&y, got_sh, 3, p) == RL_OK && y && !memcmp(x, y, sizeof x) &&
               got_sh[0] == 2 && got_sh[1] == 3 && got_sh[2] == 5,
           "float32 round trip is bit-exact");
    free(y);
    y = NULL;
    tap_ok(rl_npy_read_f32(&y, got_sh, 2, p) == RL_ESHAPE, "rank mismatch rejected: %s",
           rl_last_error());
    double  dd[4] = {1.5, -2.25, 1e-300, 3e300};
    int64_t s1[1] = {4};
    struct rl_npy a;
    tap_ok(rl_npy_write_f64(p, dd, 1, s1) == RL_OK && rl_npy_read(&a, p) == RL_OK &&
               a.dtype == RL_NPY_F64 && !memcmp(a.data, dd, sizeof dd),
           "float64 1-d round trip is bit-exact");
    rl_npy_free(&a);
    /* the file header is a multiple of 64 bytes, as NumPy writes it */
    FILE *f = fopen(p, "rb");
    unsigned char h[10];
    tap_ok(f && fread(h, 1, 10, f) == 10 && (10 + h[8] + 256 * h[9]) % 64 == 0,
           "header padded to 64 bytes");
    if (f) fclose(f);
    tap_ok(rl_npy_read(&a, "/nonexistent/x.npy") == RL_EIO, "missing file: %s", rl_last_error());
    unlink(p);
    /* a directory named like the file: refused before its "size" (LONG_MAX) is allocated */
    tap_ok(mkdir(p, 0755) == 0 && rl_npy_read(&a, p) == RL_EIO &&
               strstr(rl_last_error(), "is a directory") != NULL,
           "a directory in place of the file: %s", rl_last_error());
    rmdir(p);
    rmdir(dir);
}

/* A file without a trustworthy size -- a pipe (/dev/fd/N, like /dev/stdin), which cannot
 * seek -- is read to its end: 50 000 bytes through a 4 KiB buffer that grows. */
static void stream_read(void)
{
    int fd[2];
    if (pipe(fd) != 0) {
        tap_ok(0, "pipe()");
        return;
    }
    static unsigned char data[50000];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (unsigned char)(i * 131 + 7);
    ssize_t w = write(fd[1], data, sizeof data); /* below the pipe's 64 KiB: no reader needed */
    close(fd[1]);
    char path[64];
    snprintf(path, sizeof path, "/dev/fd/%d", fd[0]);
    unsigned char *b = NULL;
    size_t         n = 0;
    rl_status      st = rl_read_file(&b, &n, path);
    tap_ok(w == (ssize_t)sizeof data && st == RL_OK && n == sizeof data &&
               memcmp(b, data, n) == 0 && b[n] == 0,
           "a pipe is read to its end (%zu bytes of %zu; %s)", n, sizeof data,
           st == RL_OK ? "ok" : rl_last_error());
    free(b);
    close(fd[0]);
}

int main(void)
{
    tap_seed(3);
    good("f32_v1.npy", RL_NPY_F32, 3, (int64_t[]){2, 3, 4});
    good("f64_v1.npy", RL_NPY_F64, 2, (int64_t[]){5, 7});
    good("f32_v2.npy", RL_NPY_F32, 2, (int64_t[]){3, 2});
    good("f32_v3.npy", RL_NPY_F32, 1, (int64_t[]){4});
    good("f32_be.npy", RL_NPY_F32, 2, (int64_t[]){2, 5});
    good("f32_scalar.npy", RL_NPY_F32, 0, NULL);
    struct rl_npy t;
    tap_ok(rl_npy_read(&t, fixture("i64_tokens.npy")) == RL_OK && t.dtype == RL_NPY_I64 &&
               ((int64_t *)t.data)[11] == 11,
           "int64 token array");
    rl_npy_free(&t);
    tap_ok(rl_npy_read(&t, fixture("i32_tokens.npy")) == RL_OK && t.dtype == RL_NPY_I32 &&
               ((int32_t *)t.data)[7] == 7,
           "int32 token array");
    rl_npy_free(&t);
    bad("bad_fortran.npy", "Fortran");
    bad("bad_dtype_f16.npy", "dtype");
    bad("bad_dtype_c64.npy", "dtype");
    bad("bad_truncated.npy", "truncated");
    bad("bad_oversized.npy", "after the data");
    bad("bad_magic.npy", "magic");
    hand_built();
    round_trip();
    stream_read();
    return tap_done();
}
