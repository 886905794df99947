/* governor.h -- the training loop's thread count, adapted to the machine's load.
 *
 * ropelab's results do not depend on the thread count (every sum runs in an order fixed
 * by the data, not by the threads), so the count may change between two updates without
 * changing a single bit of the run.  On a machine where another process keeps a core
 * busy, T threads are slower than fewer: at every parallel region the threads wait for
 * the one that shares its core.  The governor watches each update's wall time and the
 * process's CPU time.  When the threads get much less CPU time than T cores' worth, it
 * times up to 3 updates at the other count (T and ceil(T/2); one, when that one is already
 * 10 % slower than the steady updates) and keeps the faster; from the
 * smaller count it tries T again now and then (after 8 updates, then 16, 32, ... 512 while
 * T stays slower), so a load that goes away gives the cores back.  At the lower count the
 * calling thread may run on any core (it is bound to one when the runtime binds
 * threads), so it can leave a core another process keeps busy.  The first look is
 * after 3 updates, so a run started on a busy machine spends few updates at T.
 *
 * Off when OMP_DYNAMIC=false (OpenMP's own switch for "the runtime may adjust the number
 * of threads") or when the count asked for is 1. */
#ifndef RL_GOVERNOR_H
#define RL_GOVERNOR_H

#define RL_GOVERNOR_WINDOW 3

struct rl_governor {
    int    hi, lo, cur; /* the counts chosen between; the count of the steady phase */
    int    probing;     /* updates left to time at the other count (0: steady) */
    int    skip;        /* the next update is not timed (first after a change of count) */
    int    gap, since;  /* updates between probes from lo, and since the last probe */
    int    ns, np;      /* timed updates in the steady ring and in the probe */
    double wall[RL_GOVERNOR_WINDOW], cpu[RL_GOVERNOR_WINDOW], probe[RL_GOVERNOR_WINDOW];
    long   switches; /* times the steady count changed */
    /* The calling thread's own CPU set at the start of the run (a cpu_set_t, kept as
     * bytes so this header needs no _GNU_SOURCE); have_home: it was read. */
    unsigned long home[1024 / (8 * sizeof(unsigned long))];
    int           have_home;
};

/* Starts at `threads` (the count asked for, in effect now). */
void rl_governor_init(struct rl_governor *g, int threads);
/* After each update: its wall time and the process's CPU time during it, in ms.  May call
 * rl_threads_set() for the next update. */
void rl_governor_update(struct rl_governor *g, double wall_ms, double cpu_ms);
/* At the end of the run: the count asked for, and the calling thread on its own CPUs. */
void rl_governor_end(struct rl_governor *g);
/* The count the next update runs with. */
int rl_governor_threads(const struct rl_governor *g);

#endif
