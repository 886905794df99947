/* init.h -- library start-up: the BLIS kernel set and the thread count. */
#ifndef RL_INIT_H
#define RL_INIT_H

/* Choose the BLIS kernel set (gemm.h: rl_blis_arch) and set the thread count (threads.h):
 * nthreads, or rl_threads_default() when 0.  Safe to call more than once; call before
 * the first GEMM. */
void rl_init(int nthreads);

#endif
