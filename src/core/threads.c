/* threads.c -- the library's start-up and its one thread count (see threads.h). */
#define _GNU_SOURCE 1 /* sched_getaffinity, sched_setaffinity, CPU_COUNT */
#include "config.h"
#include <sched.h>
#include <unistd.h>
#include "threads.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
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
    int         had = rl_nthreads, cores = rl_cores_available();
    const char *e = getenv("ROPELAB_OVERSUBSCRIBE");
    if (e && atoi(e) > 0) return had;
    if (had > cores) rl_threads_set(cores);
    return had;
}

/* Nested in any region, active or not (a region of one piece runs its body on one thread,
 * and what it calls must not open a team of its own under it): 1. */
int rl_team(long pieces)
{
    if (rl_nested()) return 1;
    if (pieces < 1) return 1;
    return pieces < rl_nthreads ? (int)pieces : rl_nthreads;
}

int rl_nested(void)
{
#ifdef _OPENMP
    return omp_get_level() > 0;
#else
    return 0;
#endif
}

void rl_pieces_named(long pieces, void (*body)(void *ctx, long p), void *ctx, const char *name)
{
    if (rl_nested()) {
        for (long p = 0; p < pieces; p++)
            body(ctx, p);
        return;
    }
    const int    team = rl_team(pieces);
    const double t0   = rl_region_begin();
    /* a one-thread team still opens its region: what the pieces call sees it is nested */
#pragma omp parallel for schedule(static) num_threads(team)
    for (long p = 0; p < pieces; p++)
        body(ctx, p);
    rl_region_end_named(t0, pieces, name);
}

/* Region time by piece count p, bin min(p, PIECE_MAX): a target above PIECE_MAX counts the
 * regions of PIECE_MAX or more pieces as PIECE_MAX (an upper bound of their serial part). */
#define PIECE_MAX 256
static int               regions_on;
static struct rl_regions regions;
static double            ms_by_pieces[PIECE_MAX + 1];

void rl_regions_count(int on, int target)
{
    if (on) {
        regions        = (struct rl_regions){0};
        regions.target = target > 1 ? target : 16;
        for (int p = 0; p <= PIECE_MAX; p++)
            ms_by_pieces[p] = 0;
    }
    regions_on = on;
}

struct rl_regions rl_regions_counted(void) { return regions; }

int rl_threads_planned(void)
{
    const int t = rl_threads_get();
    return regions_on && regions.target > t ? regions.target : t;
}

/* A region of p < target pieces takes at least t/p on `target` threads instead of
 * t/target: its serial part s solves s + (t - s)/target = t/p. */
static double serial_part(double t, double p, double target)
{
    return p < target ? (t / p - t / target) / (1 - 1 / target) : 0;
}

double rl_regions_serial_ms(int target)
{
    double s = 0;
    for (int p = 1; p <= PIECE_MAX; p++)
        s += serial_part(ms_by_pieces[p], p, target > 1 ? target : 1);
    return s;
}

static int                   sites_on, n_sites;
static struct rl_region_site sites[RL_REGION_SITES_MAX];

void rl_region_sites(int on)
{
    if (on) n_sites = 0;
    sites_on = on;
}

static int by_ms_desc(const void *a, const void *b)
{
    const double x = ((const struct rl_region_site *)a)->ms;
    const double y = ((const struct rl_region_site *)b)->ms;
    return (x < y) - (x > y);
}

int rl_region_sites_get(struct rl_region_site *rows, int max)
{
    qsort(sites, (size_t)n_sites, sizeof *sites, by_ms_desc);
    int n = n_sites < max ? n_sites : max;
    for (int i = 0; i < n; i++)
        rows[i] = sites[i];
    return n;
}

/* Names are string literals and __func__: equal names are one row. */
static void site_book(const char *name, long pieces, double t)
{
    int i = 0;
    while (i < n_sites && sites[i].name != name && strcmp(sites[i].name, name) != 0)
        i++;
    if (i == n_sites) {
        if (n_sites == RL_REGION_SITES_MAX) return;
        sites[n_sites++] = (struct rl_region_site){.name = name};
    }
    sites[i].calls++;
    sites[i].pieces += pieces;
    sites[i].ms += t;
}

double rl_region_begin(void)
{
    if (rl_nested()) return -1.0; /* booked by the enclosing region */
    return regions_on || sites_on ? rl_now_ms() : -1.0;
}

/* t ms of a region's time, cut into `pieces` pieces, for the serial fraction */
static void serial_book(double t, long pieces)
{
    regions.ms += t;
    regions.serial_ms += serial_part(t, (double)pieces, regions.target);
    ms_by_pieces[pieces < PIECE_MAX ? pieces : PIECE_MAX] += t;
}

void rl_region_end_tail(double t0, long pieces, const char *name, double tail_ms, long tail_pieces)
{
    if (t0 < 0) return;
    double t = rl_now_ms() - t0;
    if (pieces < 1) pieces = 1;
    if (tail_pieces < 1) tail_pieces = 1;
    tail_ms = tail_ms < 0 ? 0 : tail_ms < t ? tail_ms : t;
    if (sites_on) site_book(name, pieces, t);
    if (!regions_on) return;
    regions.regions++;
    serial_book(t - tail_ms, pieces);
    if (tail_ms > 0) serial_book(tail_ms, tail_pieces);
}

void rl_region_end_named(double t0, long pieces, const char *name)
{
    rl_region_end_tail(t0, pieces, name, 0, 1);
}
