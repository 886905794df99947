/* util.c -- file and memory helpers; see util.h. */
#include "config.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STREAM_MAX ((size_t)256 << 20) /* the most read from a pipe or device */

/* A file without a size to trust (a pipe, a FIFO, /dev/stdin, a /proc file that reports
 * 0 bytes): read until its end, growing the buffer, at most STREAM_MAX bytes. */
static rl_status read_stream(unsigned char **buf, size_t *len, FILE *f, const char *path)
{
    size_t         cap = 4096, n = 0;
    unsigned char *b = malloc(cap + 1);
    for (;;) {
        if (!b) RL_FAIL(RL_ENOMEM, "%s: cannot allocate %zu bytes", path, cap + 1);
        size_t want = cap - n, got = fread(b + n, 1, want, f);
        n += got;
        if (got < want) break; /* the end, or an error: fread stops early for nothing else */
        if (cap >= STREAM_MAX) {
            free(b);
            RL_FAIL(RL_EFORMAT, "%s: longer than %zu MiB", path, STREAM_MAX >> 20);
        }
        unsigned char *g = realloc(b, 2 * cap + 1);
        if (!g) free(b);
        b = g, cap *= 2;
    }
    if (ferror(f)) {
        free(b);
        RL_FAIL(RL_EIO, "%s: read error: %s", path, strerror(errno));
    }
    b[n] = 0;
    *buf = b, *len = n;
    return RL_OK;
}

char *rl_list_item(char **rest)
{
    char *item = *rest, *comma = strchr(item, ',');
    if (comma) *comma++ = 0;
    *rest = comma;
    return item;
}

rl_status rl_read_file(unsigned char **buf, size_t *len, const char *path)
{
    *buf    = NULL;
    *len    = 0;
    FILE *f = fopen(path, "rb");
    if (!f) RL_FAIL(RL_EIO, "%s: cannot open: %s", path, strerror(errno));
    /* a directory opens, and seeking to its end reports a size near LONG_MAX */
    struct stat sb;
    const int   have_stat = fstat(fileno(f), &sb) == 0;
    if (have_stat && S_ISDIR(sb.st_mode)) {
        fclose(f);
        RL_FAIL(RL_EIO, "%s: is a directory, not a file", path);
    }
    if (!have_stat || !S_ISREG(sb.st_mode) || sb.st_size == 0) {
        rl_status st = read_stream(buf, len, f, path);
        fclose(f);
        return st;
    }
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        RL_FAIL(RL_EIO, "%s: cannot seek", path);
    }
    long sz = ftell(f);
    rewind(f);
    if (sz < 0) {
        fclose(f);
        RL_FAIL(RL_EIO, "%s: cannot tell size", path);
    }
    unsigned char *b = malloc((size_t)sz + 1);
    if (!b) {
        fclose(f);
        RL_FAIL(RL_ENOMEM, "%s: cannot allocate %ld bytes", path, sz);
    }
    size_t got = fread(b, 1, (size_t)sz, f);
    fclose(f);
    if (got != (size_t)sz) {
        free(b);
        RL_FAIL(RL_EIO, "%s: short read (%zu of %ld bytes)", path, got, sz);
    }
    b[sz] = 0;
    *buf  = b;
    *len  = (size_t)sz;
    return RL_OK;
}

rl_status rl_write_file_atomic(const char *path, const void *head, size_t head_len,
                               const void *body, size_t body_len)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
        RL_FAIL(RL_EINVAL, "%s: path too long", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) RL_FAIL(RL_EIO, "%s: cannot create: %s", tmp, strerror(errno));
    const unsigned char *parts[2] = {head, body};
    size_t               lens[2]  = {head_len, body_len};
    for (int i = 0; i < 2; i++) {
        size_t off = 0;
        while (off < lens[i]) {
            ssize_t w = write(fd, parts[i] + off, lens[i] - off);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                int e = errno;
                close(fd);
                unlink(tmp);
                RL_FAIL(RL_EIO, "%s: write failed: %s", tmp, strerror(e));
            }
            off += (size_t)w;
        }
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        unlink(tmp);
        RL_FAIL(RL_EIO, "%s: fsync/close failed: %s", tmp, strerror(errno));
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        RL_FAIL(RL_EIO, "%s: rename failed: %s", path, strerror(e));
    }
    return RL_OK;
}

/* NAME.tmp (results files) or NAME.tmp.<digits> (rl_write_file_atomic) */
static int is_stale_tmp(const char *name)
{
    const char *t = strstr(name, ".tmp");
    if (!t || t == name) return 0;
    while (strstr(t + 1, ".tmp"))
        t = strstr(t + 1, ".tmp");
    if (t[4] == 0) return 1;
    if (t[4] != '.' || !t[5]) return 0;
    for (const char *p = t + 5; *p; p++)
        if (*p < '0' || *p > '9') return 0;
    return 1;
}

rl_status rl_remove_stale_tmp(const char *dir, int *removed)
{
    *removed = 0;
    DIR *d   = opendir(dir);
    if (!d) return RL_OK; /* nothing there yet */
    rl_status st = RL_OK;
    for (struct dirent *e; st == RL_OK && (e = readdir(d));) {
        char path[2400];
        if (!is_stale_tmp(e->d_name)) continue;
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= sizeof path) continue;
        if (remove(path) == 0)
            ++*removed;
        else
            st = rl_error_report(RL_EIO, __FILE__, __LINE__, "%s: cannot remove: %s", path,
                                 strerror(errno));
    }
    closedir(d);
    return st;
}

rl_status rl_mkdir_p(const char *path)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        RL_FAIL(RL_EINVAL, "%s: path too long", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            RL_FAIL(RL_EIO, "%s: cannot create directory: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
        RL_FAIL(RL_EIO, "%s: cannot create directory: %s", buf, strerror(errno));
    return RL_OK;
}

void *rl_alloc(size_t bytes)
{
    size_t n = (bytes + 63) / 64 * 64;
    void  *p = aligned_alloc(64, n ? n : 64);
    if (p) memset(p, 0, n ? n : 64);
    return p;
}

void rl_free(void *p) { free(p); }

double rl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

long rl_peak_rss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* MemAvailable (what can be allocated without swapping out others) and MemTotal from
 * /proc/meminfo; sysconf's free and physical pages elsewhere. */
double rl_mem_available(double *total)
{
    double avail = -1, tot = -1;
    FILE  *f = fopen("/proc/meminfo", "r");
    char   line[256];
    while (f && fgets(line, sizeof line, f)) {
        double kb;
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) avail = kb * 1024;
        if (sscanf(line, "MemTotal: %lf kB", &kb) == 1) tot = kb * 1024;
    }
    if (f) fclose(f);
    const double page = (double)sysconf(_SC_PAGESIZE);
    if (tot < 0) tot = (double)sysconf(_SC_PHYS_PAGES) * page;
    if (avail < 0) avail = (double)sysconf(_SC_AVPHYS_PAGES) * page;
    if (total) *total = tot;
    return avail;
}

double rl_cpu_ms(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return 0;
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

int rl_path_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

int rl_edit_distance(const char *a, const char *b)
{
    int la = (int)strlen(a), lb = (int)strlen(b), row[64];
    if (la > 62 || lb > 62) return 99;
    for (int j = 0; j <= lb; j++)
        row[j] = j;
    for (int i = 1; i <= la; i++) {
        int diag = row[0];
        row[0]   = i;
        for (int j = 1; j <= lb; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up, row[j] = best;
        }
    }
    return row[lb];
}

void rl_near_init(struct rl_near *n, const char *word)
{
    n->word = word, n->best = NULL, n->dist = 3;
}

void rl_near_offer(struct rl_near *n, const char *candidate)
{
    int d = rl_edit_distance(n->word, candidate);
    if (d < n->dist && d < (int)strlen(n->word)) n->dist = d, n->best = candidate;
}

void rl_int_expectation(char *buf, size_t len, long long lo, long long hi)
{
    if (lo == 1 && hi >= 1 << 30)
        snprintf(buf, len, "a positive integer");
    else if (lo == 0 && hi >= 1 << 30)
        snprintf(buf, len, "a non-negative integer");
    else
        snprintf(buf, len, "an integer in [%lld, %lld]", lo, hi);
}
