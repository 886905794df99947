/* util.h -- files (whole-file read, atomic write), aligned allocation, timing, RSS. */
#ifndef RL_UTIL_H
#define RL_UTIL_H

#include <stddef.h>
#include "status.h"

rl_status rl_read_file(unsigned char **buf, size_t *len, const char *path);
/* Write head then body to path.tmp.<pid>, fsync, rename over path (never a partial file). */
rl_status rl_write_file_atomic(const char *path, const void *head, size_t head_len,
                               const void *body, size_t body_len);
rl_status rl_mkdir_p(const char *path);
/* 1 if path names anything stat() can see (file, directory, ...). */
int rl_path_exists(const char *path);
/* The next comma-separated item of a list held in a writable string (empty items included,
 * unlike strtok): the item's comma becomes its end, *rest moves past it, or becomes NULL
 * after the last item. */
char *rl_list_item(char **rest);
/* Levenshtein distance of two short words (keys, command names); 99 past 62 bytes. */
int rl_edit_distance(const char *a, const char *b);
/* The candidate nearest to word within two edits (a swap of two letters is two) and fewer
 * edits than word has letters, for "did you mean" hints: rl_near_init, then rl_near_offer
 * each candidate; best stays NULL when none is that near, and the first of equally near
 * candidates wins. */
struct rl_near {
    const char *word, *best;
    int         dist;
};
void rl_near_init(struct rl_near *n, const char *word);
void rl_near_offer(struct rl_near *n, const char *candidate);
/* What an integer in [lo, hi] is called in messages: "a positive integer" (lo 1, hi at
 * least 2^30), "a non-negative integer" (lo 0, the same hi), else "an integer in [lo, hi]". */
void rl_int_expectation(char *buf, size_t len, long long lo, long long hi);
/* Remove the temporary files of interrupted writes in dir: NAME.tmp.<digits> (left by
 * rl_write_file_atomic) and NAME.tmp; *removed counts them.  A missing dir is fine. */
rl_status rl_remove_stale_tmp(const char *dir, int *removed);

void  *rl_alloc(size_t bytes); /* 64-byte aligned, zeroed; NULL on failure */
void   rl_free(void *p);
double rl_now_ms(void);
double rl_cpu_ms(void); /* CPU time of the whole process (all threads) */ /* monotonic clock */
long   rl_peak_rss_kb(void);                                              /* getrusage ru_maxrss */
/* Bytes of memory available now (/proc/meminfo MemAvailable, else free pages); *total
 * (if not NULL) gets the machine's physical memory. */
double rl_mem_available(double *total);

#endif
