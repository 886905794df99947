/* threads.h -- the library's start-up and its one thread count.
 *
 * ropelab has one owner of threads at a time: OpenMP outer loops use rl_threads_get()
 * threads, and so do BLIS products called outside a parallel region (gemm.h); inside a
 * region a product runs on the calling thread.  No result depends on the count. */
#ifndef RL_THREADS_H
#define RL_THREADS_H

/* Threads used by GEMMs outside parallel regions and by OpenMP outer loops. */
void rl_threads_set(int n);
int  rl_threads_get(void);
/* The count rl_init(0) takes: OMP_NUM_THREADS when set, else the cores this process may
 * run on (1 without OpenMP). */
int rl_threads_default(void);
/* The calling thread's number in the innermost active OpenMP team (0 outside any): the
 * index of its per-thread buffers, also inside a one-thread region nested in a team. */
int rl_thread_slot(void);
/* Cores this process may run on (sched_getaffinity), >= 1. */
int rl_cores_available(void);
/* When the OpenMP runtime has bound the calling thread to one place (OMP_PROC_BIND), gives
 * it back every CPU of the runtime's places (the process's CPUs at start): called before
 * ropelab runs itself again, so the new process does not start bound to one core. */
void rl_affinity_widen_to_places(void);
/* Lowers the thread count to rl_cores_available() when it is above (threads that share a
 * core wait for each other; results do not depend on the count); returns the count it had.
 * ROPELAB_OVERSUBSCRIBE=1 in the environment keeps the count as it is: tests run 16 threads
 * on a 2-core machine to check that the count changes no bit. */
int rl_threads_fit(void);

/* Parallel regions split by the problem: a region is cut into `pieces` independent pieces
 * whose number and bounds depend on the problem's size only (never on the thread count),
 * so that every count gives the same sums.  rl_team(pieces) is the team for such a region:
 * rl_threads_get() threads at most, never more than pieces (no thread wakes without
 * work), and 1 inside any enclosing parallel region (also a one-thread one). */
int rl_team(long pieces);
/* Whether the caller runs inside a parallel region (active or not). */
int rl_nested(void);
/* Runs body(ctx, p) for p = 0 .. pieces-1, independent pieces of a region split by the
 * problem: outside any region, on rl_team(pieces) threads and booked (rl_region_begin /
 * rl_region_end below); nested in a region, in order on the calling thread without a region
 * of its own (opening even a one-thread region costs microseconds). */
void rl_pieces_named(long pieces, void (*body)(void *ctx, long p), void *ctx, const char *name);
/* rl_pieces(pieces, body, ctx): the region is named after its body (the profile below). */
#define rl_pieces(pieces, body, ctx) rl_pieces_named(pieces, body, ctx, #body)

/* Where a step's time goes, for the serial fraction `bench --train` reports (Amdahl's law
 * judged on a machine with fewer cores than the target).  Between rl_regions_count(1)
 * (which zeroes the sums) and rl_regions_count(0), each parallel region bracketed by
 * t0 = rl_region_begin() ... rl_region_end(t0, pieces) books its wall time and the part of
 * it that cannot spread over `target` threads: with p = pieces < target, a 1-thread time t
 * takes at least t/p on target threads, i.e. a serial part s = (t/p - t/target) /
 * (1 - 1/target).  Call both outside parallel regions (nested calls book nothing). */
struct rl_regions {
    double ms;        /* wall time inside booked regions */
    double serial_ms; /* the part of it that cannot spread over `target` threads */
    long   regions;
    int    target;
};
void              rl_regions_count(int on, int target);
struct rl_regions rl_regions_counted(void);
/* The thread count a choice between two equivalent forms of a region (the same bits, cut
 * into different pieces) is made for: rl_threads_get(), or while regions are counted the
 * count's target when that is larger, so that a 1-thread measurement books the form the
 * target's threads would run. */
int rl_threads_planned(void);
/* The serial part of the same regions judged against another thread count (the regions are
 * kept by their number of pieces, so any target can be asked after the count). */
double rl_regions_serial_ms(int target);
double rl_region_begin(void);
void   rl_region_end_named(double t0, long pieces, const char *name);
/* The same for a region whose pieces include a tail: tail_ms of its (1-thread) time in
 * work of only tail_pieces pieces that waits for others of the region (a per-head pass
 * run by the thread that finishes the head's last block).  The tail is booked as a region
 * of tail_pieces pieces, the rest as one of `pieces`. */
void rl_region_end_tail(double t0, long pieces, const char *name, double tail_ms, long tail_pieces);
/* rl_region_end(t0, pieces): the region is named after the function it is in. */
#define rl_region_end(t0, pieces) rl_region_end_named(t0, pieces, __func__)

/* The region profile (`bench --train --regions`): between rl_region_sites(1) (which zeroes
 * it) and rl_region_sites(0), each booked region adds its wall time, calls and pieces to
 * its name's row, on any thread count, so that the rows of two counts show which regions
 * stop scaling.  rl_region_sites_get fills up to `max` rows, largest time first, and gives
 * the number filled. */
#define RL_REGION_SITES_MAX 96 /* names kept; a region of a further name is not booked */
struct rl_region_site {
    const char *name;
    long        calls, pieces; /* pieces summed over the calls */
    double      ms;
};
void rl_region_sites(int on);
int  rl_region_sites_get(struct rl_region_site *rows, int max);

#endif
