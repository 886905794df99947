/* tap.c -- TAP emitter; see tap.h. */
#include "tap.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int  tap_n, tap_failed, tap_planned;
static unsigned long long tap_state = 0x9E3779B97F4A7C15ull;

void tap_plan(int n)
{
    printf("1..%d\n", n);
    tap_planned = 1;
}

static void vresult(int ok, const char *fmt, va_list ap)
{
    tap_n++;
    if (!ok) tap_failed++;
    printf("%s %d - ", ok ? "ok" : "not ok", tap_n);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
}

int tap_ok(int cond, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vresult(cond != 0, fmt, ap);
    va_end(ap);
    return cond != 0;
}

int tap_close(const float *got, const double *ref, size_t n, double rtol, double atol,
              const char *fmt, ...)
{
    double max_abs = 0, max_rel = 0;
    long   first   = -1;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - ref[i]), r = e / (fabs(ref[i]) + 1e-300);
        if (e > max_abs || isnan(e)) max_abs = isnan(e) ? INFINITY : e;
        if (r > max_rel) max_rel = r;
        if (first < 0 && !(e <= atol + rtol * fabs(ref[i]))) first = (long)i;
    }
    va_list ap;
    va_start(ap, fmt);
    vresult(first < 0, fmt, ap);
    va_end(ap);
    printf("# n=%zu max_abs=%.3g max_rel=%.3g", n, max_abs, max_rel);
    if (first >= 0) printf(" first_bad=%ld got=%.9g ref=%.9g", first, got[first], ref[first]);
    printf("\n");
    return first < 0;
}

int tap_close_scaled(const float *got, const double *ref, size_t n, double tol, const char *fmt,
                     ...)
{
    double scale = 0, max_abs = 0;
    long   worst = -1;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(ref[i]));
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - ref[i]);
        if (isnan(e)) e = INFINITY;
        if (e > max_abs || worst < 0) max_abs = e, worst = (long)i;
    }
    int     ok = n == 0 || max_abs <= tol * (scale > 0 ? scale : 1.0);
    va_list ap;
    va_start(ap, fmt);
    vresult(ok, fmt, ap);
    va_end(ap);
    printf("# n=%zu max_abs=%.3g scale=%.3g rel_to_max=%.3g", n, max_abs, scale,
           max_abs / (scale > 0 ? scale : 1.0));
    if (!ok) printf(" worst=%ld got=%.9g ref=%.9g", worst, got[worst], ref[worst]);
    printf("\n");
    return ok;
}

int tap_close_bound(const float *got, const double *ref, const double *allowed, size_t n,
                    const char *fmt, ...)
{
    double worst_ratio = 0;
    long   worst       = -1;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - ref[i]), r = e == 0 ? 0 : e / allowed[i];
        if (isnan(e)) r = INFINITY;
        if (r > worst_ratio || worst < 0) worst_ratio = r, worst = (long)i;
    }
    int     ok = worst_ratio <= 1;
    va_list ap;
    va_start(ap, fmt);
    vresult(ok, fmt, ap);
    va_end(ap);
    printf("# n=%zu max |got-ref|/allowed=%.3g", n, worst_ratio);
    if (worst >= 0)
        printf(" at %ld: got=%.9g ref=%.9g allowed=%.3g", worst, got[worst], ref[worst],
               allowed[worst]);
    printf("\n");
    return ok;
}

void tap_skip(const char *why, const char *fmt, ...)
{
    va_list ap;
    tap_n++;
    printf("ok %d - ", tap_n);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf(" # SKIP %s\n", why);
}

void tap_diag(const char *fmt, ...)
{
    va_list ap;
    printf("# ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

void tap_bail(const char *fmt, ...)
{
    va_list ap;
    printf("Bail out! ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    exit(1);
}

void tap_scratch(char *dir, size_t size, const char *name)
{
    const char *base = getenv("TMPDIR");
    if ((size_t)snprintf(dir, size, "%s/%s.XXXXXX", base && *base ? base : "/tmp", name) >= size ||
        !mkdtemp(dir))
        tap_bail("cannot make a scratch directory %s", dir);
}

void tap_scratch_remove(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) tap_diag("could not remove %s", dir);
}

int tap_done(void)
{
    if (!tap_planned) printf("1..%d\n", tap_n);
    if (tap_n == 0) return 1; /* a test that checked nothing has failed */
    return tap_failed ? 1 : 0;
}

void tap_seed(unsigned long long s) { tap_state = s * 0x9E3779B97F4A7C15ull + 1; }

static unsigned long long splitmix(void)
{
    unsigned long long z = (tap_state += 0x9E3779B97F4A7C15ull);
    z                    = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z                    = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double tap_uniform(void) { return (splitmix() >> 11) * (1.0 / 9007199254740992.0); }

double tap_normal(void)
{
    double u = tap_uniform(), v = tap_uniform();
    return sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}

void tap_fill_normal(float *x, size_t n, double scale)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)(scale * tap_normal());
}
