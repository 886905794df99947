/* status.h -- error codes and the two assertion tiers.
 *
 * Fallible library code returns enum rl_status and reports through one function,
 * rl_error_report(), via RL_FAIL (GSL's GSL_ERROR idea: one breakpoint catches every
 * error).  The message is kept in a thread-local buffer; rl_last_error() reads it.
 * Programming errors use RL_ASSERT (always on, aborts; FFTW's CK) or RL_DASSERT
 * (hot loops, only with --enable-debug; FFTW's A).  Library code never exits. */
#ifndef RL_STATUS_H
#define RL_STATUS_H

#include <stdio.h>
#include <stdlib.h>

typedef enum rl_status {
    RL_OK = 0,
    RL_EINVAL,  /* invalid argument or option */
    RL_ENOMEM,  /* allocation failed */
    RL_EIO,     /* read/write/open failed */
    RL_EFORMAT, /* malformed file (npy, safetensors, ini) */
    RL_ESHAPE,  /* tensor shape mismatch */
    RL_EFFT,    /* FFTW plan creation failed */
    RL_EINTR,   /* stopped on request (a signal) before the work was done */
} rl_status;

const char *rl_strerror(rl_status s);

/* On a call whose failure leaves its outputs unwritten: the caller must look at the status
 * (a test that ignored one compared two buffers no call had written). */
#define RL_MUST_CHECK __attribute__((warn_unused_result))

/* Record an error (printf-style) and return s.  The message can be fetched with
 * rl_last_error() until the next error on the same thread. */
rl_status rl_error_report(rl_status s, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
const char *rl_last_error(void);
/* The same for an error about one key of an experiment file: the message reads
 * "[section] key: ..." and the section and key travel with it as data, so that a caller
 * can point at the line that set the key.  Any other error clears them. */
rl_status rl_error_report_key(rl_status s, const char *file, int line, const char *section,
                              const char *key, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* The section and key of the last error on this thread when it was about a key (1), else
 * 0 and NULLs.  The strings are the reporter's (string literals or the key table's). */
int rl_last_error_key(const char **section, const char **key);

#define RL_FAIL(status, ...) return rl_error_report((status), __FILE__, __LINE__, __VA_ARGS__)
#define RL_FAIL_KEY(status, section, key, ...)                                                     \
    return rl_error_report_key((status), __FILE__, __LINE__, (section), (key), __VA_ARGS__)
/* Propagate a failing status from a call. */
#define RL_TRY(expr)                                                                               \
    do {                                                                                           \
        rl_status rl_try_s_ = (expr);                                                              \
        if (rl_try_s_ != RL_OK) return rl_try_s_;                                                  \
    } while (0)

void rl_assert_fail(const char *cond, const char *file, int line) __attribute__((noreturn));
#define RL_ASSERT(cond) ((cond) ? (void)0 : rl_assert_fail(#cond, __FILE__, __LINE__))
#ifdef RL_DEBUG
#define RL_DASSERT(cond) RL_ASSERT(cond)
#else
#define RL_DASSERT(cond) ((void)0)
#endif

#endif
