/* mpi.h -- the only door to MPI (Open MPI): the job's ranks, a work queue that hands out
 * items dynamically, a broadcast, and sums in a fixed order.
 *
 * Built without MPI (configure --without-mpi, or no Open MPI found), or run without an MPI
 * launcher, every function behaves as the job of one rank: rank 0 of 1, the sums and the
 * broadcast leave the data as it is, the queue hands out 0, 1, 2, ... .
 *
 * MPI is initialised only when an MPI launcher started the process (mpirun/mpiexec set
 * OMPI_COMM_WORLD_SIZE, Slurm's srun with PMIx or PMI-2 sets PMIX_RANK or PMI_RANK): a
 * plain `ropelab run` of an MPI build starts no MPI runtime.  OpenMP threads never call
 * MPI (MPI_THREAD_FUNNELED).
 *
 * Reproducibility: MPI_Allreduce's summation order is the implementation's choice, so the
 * sums here are written on top of point-to-point messages with an order that depends on
 * the number of ranks K only:
 *   rl_mpi_sum_floats  ring reduce-scatter + all-gather (2 (K-1)/K x the buffer's bytes
 *                      sent per rank): element block c (of K near-equal blocks) is summed
 *                      as ((x_c + x_{c+1}) + x_{c+2}) + ... + x_{c-1}, ranks taken
 *                      cyclically from c; every rank gets the same bits;
 *   rl_mpi_sum_doubles every rank gathers the K vectors and sums them in rank order
 *                      (small vectors: loss sums, counts).
 *
 * Waiting: a rank that waits (for a slower rank, for rank 0 that evaluates alone, for the
 * next item) polls its request for 20 ms, then sleeps between polls (up to 1 ms), so an
 * idle rank does not take a core from a rank that computes.
 *
 * Errors: MPI's own errors abort the job (MPI_ERRORS_ARE_FATAL); rl_mpi_abort ends every
 * rank of the job (MPI_Abort), which a program calls when one rank fails so that no rank
 * waits forever for it. */
#ifndef RL_MPI_H
#define RL_MPI_H

#include <stddef.h>
#include "status.h"

/* 1 when ropelab was built with MPI. */
int rl_mpi_built_in(void);
/* "Open MPI v4.1.4" (the library's version line up to its first comma), or "not built in". */
const char *rl_mpi_library(void);
/* 1 when an MPI launcher started this process (see above). */
int rl_mpi_launched(void);

/* MPI_Init_thread when launched (else nothing); safe to call once per process. */
rl_status rl_mpi_init(int *argc, char ***argv);
/* MPI_Finalize when initialised. */
void rl_mpi_finalize(void);

int rl_mpi_rank(void);       /* 0 .. size-1 */
int rl_mpi_size(void);       /* ranks in the job */
int rl_mpi_local_size(void); /* ranks on this node (sharing its memory) */

/* End every rank of the job with exit code `code` (MPI_Abort); returns only when the job
 * has one rank (then the caller exits as usual). */
void rl_mpi_abort(int code);

/* Copy rank 0's `bytes` bytes at buf to every rank. */
rl_status rl_mpi_bcast(void *buf, size_t bytes);
/* x <- the sum over ranks of every rank's x (n floats), in the ring order above.
 * scratch: rl_mpi_sum_floats_scratch(n) floats. */
rl_status rl_mpi_sum_floats(float *x, size_t n, float *scratch);
size_t    rl_mpi_sum_floats_scratch(size_t n);
/* v <- the sum over ranks of every rank's v (n <= 64 doubles), in rank order. */
rl_status rl_mpi_sum_doubles(double *v, int n);

/* A queue of items 0 .. n-1 handed out dynamically: rank r's first item is r (no
 * message), every later one comes from rank 0's counter, which starts at min(n, size).
 * Rank 0 trains too: it answers the other ranks' requests whenever it calls
 * rl_mpi_queue_serve (after every update) or rl_mpi_queue_take, and, once it has nothing
 * left to do, in rl_mpi_queue_finish until every other rank has been told "no more". */
struct rl_mpi_queue {
    long n, next; /* items; rank 0's counter */
    int  first;   /* this rank has not taken its first item yet */
    int  done;    /* rank 0: other ranks told "no more" */
};
void rl_mpi_queue_init(struct rl_mpi_queue *q, long n);
/* *item <- the next item for this rank, or -1 when none is left.  want = 0: this rank
 * takes nothing more (it stops early); *item is -1. */
rl_status rl_mpi_queue_take(struct rl_mpi_queue *q, int want, long *item);
/* Rank 0: answer the requests that have arrived (no waiting); others: nothing. */
rl_status rl_mpi_queue_serve(struct rl_mpi_queue *q);
/* Rank 0: answer requests until every other rank has been told "no more"; others:
 * nothing.  Call after this rank's last take returned -1. */
rl_status rl_mpi_queue_finish(struct rl_mpi_queue *q);

#endif
