/* threads.c -- the library's start-up and its one thread count (see threads.h). */
#define _GNU_SOURCE 1 /* sched_getaffinity, sched_setaffinity, CPU_COUNT */
#include "config.h"
#include <sched.h>
#include <unistd.h>
#include "threads.h"
#include "util.h"

#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static int rl_nthreads = 1;

int rl_cores_available(void)
{
#ifdef _OPENMP
    /* the runtime counts the process's affinity mask as it was at start: with
     * OMP_PROC_BIND the initial thread is bound to one core before main runs */
    return omp_get_num_procs();
#endif
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* OMP_NUM_THREADS when set, else the cores this process may run on (its affinity mask,
 * which taskset and container limits narrow): never more threads than cores by default. */
int rl_threads_default(void)
{
    const char *e = getenv("OMP_NUM_THREADS");
    if (e && atoi(e) > 0) return atoi(e);
#ifdef _OPENMP
    return rl_cores_available();
#else
    return 1;
#endif
}

void rl_threads_set(int n)
{
    rl_nthreads = n > 0 ? n : 1;
#ifdef _OPENMP
    omp_set_num_threads(rl_nthreads);
#endif
}

int rl_threads_get(void) { return rl_nthreads; }

int rl_thread_slot(void)
{
#ifdef _OPENMP
    /* the nearest enclosing region with more than one thread: inactive (one-thread)
     * regions -- an `if` clause that was false, a nested loop -- count as levels too */
    for (int l = omp_get_level(); l > 0; l--)
        if (omp_get_team_size(l) > 1) return omp_get_ancestor_thread_num(l);
#endif
    return 0;
}

void rl_affinity_widen_to_places(void)
{
#ifdef _OPENMP
    /* the places were made from the mask the process started with (taskset, container),
     * before the runtime bound this thread to the first of them */
    cpu_set_t set;
    int       n = 0;
    CPU_ZERO(&set);
    for (int p = 0; p < omp_get_num_places(); p++) {
        int k = omp_get_place_num_procs(p), ids[256];
        if (k <= 0 || k > 256) continue;
        omp_get_place_proc_ids(p, ids);
        for (int i = 0; i < k; i++)
            if (ids[i] >= 0 && ids[i] < CPU_SETSIZE) CPU_SET(ids[i], &set), n++;
    }
    if (n > 0) sched_setaffinity(0, sizeof set, &set);
#endif
}

int rl_threads_fit(void)
{
    int had = rl_nthreads, cores = rl_cores_available();
    if (had > cores) rl_threads_set(cores);
    return had;
}

int rl_team(long pieces)
{
#ifdef _OPENMP
    if (omp_in_parallel()) return 1;
#endif
    if (pieces < 1) return 1;
    return pieces < rl_nthreads ? (int)pieces : rl_nthreads;
}

static int               regions_on;
static struct rl_regions regions;

void rl_regions_count(int on, int target)
{
    if (on) {
        regions        = (struct rl_regions){0};
        regions.target = target > 1 ? target : 16;
    }
    regions_on = on;
}

struct rl_regions rl_regions_counted(void) { return regions; }

double rl_region_begin(void)
{
#ifdef _OPENMP
    if (omp_in_parallel()) return -1.0;
#endif
    return regions_on ? rl_now_ms() : -1.0;
}

void rl_region_end(double t0, long pieces)
{
    if (!regions_on || t0 < 0) return;
    double t = rl_now_ms() - t0, T = regions.target;
    regions.ms += t;
    regions.regions++;
    if (pieces < T)
        regions.serial_ms += (t / (double)(pieces > 0 ? pieces : 1) - t / T) / (1 - 1 / T);
}
