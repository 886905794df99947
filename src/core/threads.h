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
 * core wait for each other; results do not depend on the count); returns the count it had. */
int rl_threads_fit(void);

#endif
