/* status.c -- error reporting: one function through which every failure passes. */
#include "config.h"
#include "status.h"

#include <stdarg.h>
#include <string.h>

static _Thread_local char rl_errbuf[4096];

const char *rl_strerror(rl_status s)
{
    switch (s) {
    case RL_OK: return "success";
    case RL_EINVAL: return "invalid argument";
    case RL_ENOMEM: return "out of memory";
    case RL_EIO: return "input/output error";
    case RL_EFORMAT: return "malformed file";
    case RL_ESHAPE: return "shape mismatch";
    case RL_EFFT: return "FFT plan failed";
    }
    return "unknown error";
}

rl_status rl_error_report(rl_status s, const char *file, int line, const char *fmt, ...)
{
    /* format into a local buffer first: a message may quote rl_last_error() itself */
    char    msg[sizeof rl_errbuf];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(rl_errbuf, msg, sizeof msg);
    if (getenv("RL_TRACE_ERRORS")) fprintf(stderr, "ropelab: %s:%d: %s\n", file, line, rl_errbuf);
    return s;
}

const char *rl_last_error(void) { return rl_errbuf[0] ? rl_errbuf : "(no message)"; }

void rl_assert_fail(const char *cond, const char *file, int line)
{
    fprintf(stderr, "ropelab: assertion failed: %s (%s:%d)\n", cond, file, line);
    abort();
}
