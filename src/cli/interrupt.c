/* interrupt.c -- SIGINT and SIGTERM as requests to stop cleanly; see interrupt.h. */
#include "config.h"
#include "interrupt.h"

#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop_flag, stop_signal;
static char                  notice[256];
static size_t                notice_len;

/* Async-signal-safe: a flag, write(2), and on the second signal the default action. */
static void on_signal(int sig)
{
    if (stop_flag) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    stop_flag = 1, stop_signal = sig;
    ssize_t w = write(STDERR_FILENO, notice, notice_len);
    (void)w;
}

volatile sig_atomic_t *rl_cli_interrupt_install(const char *what)
{
    struct sigaction sa;
    int              n =
        snprintf(notice, sizeof notice,
                 "\nropelab: interrupted: stopping %s (interrupt again to stop at once)\n", what);
    notice_len = n > 0 && (size_t)n < sizeof notice ? (size_t)n : 0;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags   = SA_RESTART; /* reads and writes go on; the flag is polled */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    return &stop_flag;
}

int rl_cli_interrupt_signal(void) { return stop_signal; }

int rl_cli_interrupt_status(void) { return stop_signal ? 128 + stop_signal : 0; }

/* One argument, single-quoted when it holds anything a shell would read specially. */
static void put_arg(FILE *f, const char *s)
{
    if (*s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                        "-_./=,:+@%") == strlen(s)) {
        fprintf(f, " %s", s);
        return;
    }
    fputs(" '", f);
    for (; *s; s++)
        if (*s == '\'')
            fputs("'\\''", f);
        else
            fputc(*s, f);
    fputc('\'', f);
}

void rl_cli_print_resume(FILE *f, int argc, char **argv)
{
    int resume = 0;
    fputs("ropelab", f);
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--stop-after")) {
            i++; /* and its value */
            continue;
        }
        if (!strncmp(argv[i], "--stop-after=", 13)) continue;
        resume |= !strcmp(argv[i], "--resume");
        put_arg(f, argv[i]);
    }
    fputs(resume ? "\n" : " --resume\n", f);
}
