/* init.c -- library start-up (init.h). */
#include "config.h"
#include "init.h"
#include "gemm.h"
#include "threads.h"

void rl_init(int nthreads)
{
    rl_gemm_init();
    rl_threads_set(nthreads > 0 ? nthreads : rl_threads_default());
}
