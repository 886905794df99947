/* tap.h -- a small TAP (Test Anything Protocol) emitter for Automake's tap-driver.sh.
 *
 * Why our own and not cmocka's TAP output: every numeric check here prints the
 * max absolute and relative error and the first bad index as TAP diagnostics, and a
 * test binary is a flat list of checks on high-entropy data (GSL style), which a
 * 60-line emitter says more directly than cmocka's fixture machinery. */
#ifndef RL_TAP_H
#define RL_TAP_H

#include <stddef.h>

void tap_plan(int n);        /* optional: otherwise the plan is printed by tap_done */
int  tap_ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* |got - ref| <= atol + rtol * |ref| elementwise; got float, ref double */
int  tap_close(const float *got, const double *ref, size_t n, double rtol, double atol,
               const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* max |got - ref| <= tol * max |ref|: the error relative to ref's largest magnitude */
int  tap_close_scaled(const float *got, const double *ref, size_t n, double tol, const char *fmt,
                      ...) __attribute__((format(printf, 5, 6)));
/* |got - ref| <= allowed elementwise: an error allowed per element (for instance from the
 * magnitudes of the terms that make ref, where they cancel) */
int  tap_close_bound(const float *got, const double *ref, const double *allowed, size_t n,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void tap_skip(const char *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tap_bail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* tap_scratch: a fresh directory NAME.XXXXXX under $TMPDIR (or /tmp) written to dir (bails
 * if it cannot be made); tap_scratch_remove deletes it with everything in it. */
void tap_scratch(char *dir, size_t size, const char *name);
void tap_scratch_remove(const char *dir);
int  tap_done(void); /* prints the plan if needed; returns the exit status (1 if any failed) */

/* tap_ok that evaluates expr before the message arguments (so a message quoting
 * rl_last_error() sees the error expr left). */
#define TAP_CHECK(expr, ...)                                                                       \
    do {                                                                                           \
        int tap_check_ok_ = (expr);                                                                \
        tap_ok(tap_check_ok_, __VA_ARGS__);                                                        \
    } while (0)

/* Deterministic high-entropy test data (splitmix64 + Box-Muller). */
void   tap_seed(unsigned long long s);
double tap_uniform(void);  /* [0, 1) */
double tap_normal(void);
void   tap_fill_normal(float *x, size_t n, double scale);

#endif
