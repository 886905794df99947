/* status.c -- error reporting: one function through which every failure passes. */
#include "config.h"
#include "status.h"

#include <stdarg.h>
#include <string.h>

static _Thread_local char        rl_errbuf[4096];
static _Thread_local const char *rl_err_section, *rl_err_key;

const char *rl_strerror(rl_status s)
{
    switch (s) {
    case RL_OK:
        return "success";
    case RL_EINVAL:
        return "invalid argument";
    case RL_ENOMEM:
        return "out of memory";
    case RL_EIO:
        return "input/output error";
    case RL_EFORMAT:
        return "malformed file";
    case RL_ESHAPE:
        return "shape mismatch";
    case RL_EFFT:
        return "FFT plan failed";
    case RL_EINTR:
        return "interrupted";
    }
    return "unknown error";
}

static void report(const char *file, int line, const char *section, const char *key,
                   const char *fmt, va_list ap)
{
    /* format into a local buffer first: a message may quote rl_last_error() itself */
    char msg[sizeof rl_errbuf];
    int  k = key ? snprintf(msg, sizeof msg, "[%s] %s: ", section, key) : 0;
    if (k < 0 || (size_t)k >= sizeof msg) k = 0;
    vsnprintf(msg + k, sizeof msg - (size_t)k, fmt, ap);
    memcpy(rl_errbuf, msg, sizeof msg);
    rl_err_section = key ? section : NULL;
    rl_err_key     = key;
    if (getenv("RL_TRACE_ERRORS")) fprintf(stderr, "ropelab: %s:%d: %s\n", file, line, rl_errbuf);
}

rl_status rl_error_report(rl_status s, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(file, line, NULL, NULL, fmt, ap);
    va_end(ap);
    return s;
}

rl_status rl_error_report_key(rl_status s, const char *file, int line, const char *section,
                              const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(file, line, section, key, fmt, ap);
    va_end(ap);
    return s;
}

int rl_last_error_key(const char **section, const char **key)
{
    if (section) *section = rl_err_section;
    if (key) *key = rl_err_key;
    return rl_err_key != NULL;
}

const char *rl_last_error(void) { return rl_errbuf[0] ? rl_errbuf : "(no message)"; }

void rl_assert_fail(const char *cond, const char *file, int line)
{
    fprintf(stderr, "ropelab: assertion failed: %s (%s:%d)\n", cond, file, line);
    abort();
}
