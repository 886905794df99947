/* mpi.c -- the MPI wrapper (the only file that includes <mpi.h>) and its one-rank
 * fallbacks; see mpi.h. */
#include "config.h"
#include "mpi.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_MPI
#include <mpi.h>
#include <time.h>

enum { SUM_DOUBLES_MAX = 64 };

static int     rl_mpi_on = 0; /* MPI_Init_thread succeeded and MPI_Finalize not yet called */
static int     rl_rank = 0, rl_size = 1, rl_local = 1;
static double *rl_gathered; /* rl_mpi_sum_doubles: size x SUM_DOUBLES_MAX */

enum { TAG_RING = 101, TAG_ASK = 102, TAG_GIVE = 103 };

int rl_mpi_built_in(void) { return 1; }

const char *rl_mpi_library(void)
{
    static char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int         len = 0;
    if (!v[0]) { /* MPI_Get_library_version may be called before MPI_Init */
        MPI_Get_library_version(v, &len);
        v[strcspn(v, ",\n")] = 0;
    }
    return v;
}

int rl_mpi_launched(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return 1;
    return 0;
}

rl_status rl_mpi_init(int *argc, char ***argv)
{
    int provided, init = 0;
    MPI_Initialized(&init);
    if (init || !rl_mpi_launched()) return RL_OK;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        RL_FAIL(RL_EIO, "MPI_Init_thread failed");
    rl_mpi_on = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rl_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &rl_size);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &rl_local);
    MPI_Comm_free(&node);
    if (!(rl_gathered = malloc((size_t)rl_size * SUM_DOUBLES_MAX * sizeof *rl_gathered)))
        RL_FAIL(RL_ENOMEM, "out of memory");
    return RL_OK;
}

void rl_mpi_finalize(void)
{
    if (!rl_mpi_on) return;
    rl_mpi_on = 0;
    free(rl_gathered);
    rl_gathered = NULL;
    MPI_Finalize();
    rl_rank = 0, rl_size = rl_local = 1;
}

int rl_mpi_rank(void) { return rl_rank; }
int rl_mpi_size(void) { return rl_size; }
int rl_mpi_local_size(void) { return rl_local; }

void rl_mpi_abort(int code)
{
    if (rl_mpi_on && rl_size > 1) MPI_Abort(MPI_COMM_WORLD, code);
}

/* Complete n requests: poll for 20 ms (a large message takes several protocol rounds
 * that each need both ranks polling), then sleep between polls (20 us doubling to 1 ms),
 * so that a waiting rank leaves its core to a rank that computes. */
static rl_status wait_all(int n, MPI_Request *req, MPI_Status *status, const char *what)
{
    double          t0 = MPI_Wtime();
    struct timespec ts = {0, 20000};
    for (;;) {
        int done = 0;
        if (MPI_Testall(n, req, &done, status ? status : MPI_STATUSES_IGNORE) != MPI_SUCCESS)
            RL_FAIL(RL_EIO, "MPI: %s failed", what);
        if (done) return RL_OK;
        if (MPI_Wtime() - t0 < 20e-3) continue;
        nanosleep(&ts, NULL);
        if (ts.tv_nsec < 1000000) ts.tv_nsec *= 2;
    }
}

rl_status rl_mpi_bcast(void *buf, size_t bytes)
{
    if (!rl_mpi_on || rl_size == 1) return RL_OK;
    for (size_t off = 0; off < bytes;) { /* MPI counts are int */
        int         len = bytes - off > (1u << 30) ? (1 << 30) : (int)(bytes - off);
        MPI_Request r;
        MPI_Ibcast((char *)buf + off, len, MPI_BYTE, 0, MPI_COMM_WORLD, &r);
        RL_TRY(wait_all(1, &r, NULL, "broadcast"));
        off += (size_t)len;
    }
    return RL_OK;
}

size_t rl_mpi_sum_floats_scratch(size_t n)
{
    size_t k = (size_t)rl_size;
    return (n + k - 1) / k;
}

/* Block c of K near-equal blocks of n elements: [lo, hi). */
static void block(size_t n, int K, int c, size_t *lo, size_t *hi)
{
    *lo = n * (size_t)c / (size_t)K;
    *hi = n * (size_t)(c + 1) / (size_t)K;
}

/* Send block `sc` of x to the next rank while receiving block `rc` from the previous one
 * into dst (rc's elements). */
static rl_status ring_step(float *x, size_t n, int sc, int rc, float *dst)
{
    const int   K = rl_size, next = (rl_rank + 1) % K, prev = (rl_rank + K - 1) % K;
    size_t      slo, shi, rlo, rhi;
    MPI_Request r[2];
    block(n, K, sc, &slo, &shi);
    block(n, K, rc, &rlo, &rhi);
    if (shi - slo > INT32_MAX || rhi - rlo > INT32_MAX)
        RL_FAIL(RL_EINVAL, "MPI sum: blocks of more than 2^31 floats");
    MPI_Irecv(dst, (int)(rhi - rlo), MPI_FLOAT, prev, TAG_RING, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(x + slo, (int)(shi - slo), MPI_FLOAT, next, TAG_RING, MPI_COMM_WORLD, &r[1]);
    return wait_all(2, r, NULL, "ring sum");
}

rl_status rl_mpi_sum_floats(float *x, size_t n, float *scratch)
{
    const int K = rl_size, r = rl_rank;
    if (!rl_mpi_on || K == 1) return RL_OK;
    /* reduce-scatter: at step s this rank passes on the partial sum of block r - s and
     * adds its own values to the partial sum of block r - s - 1 that arrives */
    for (int s = 0; s < K - 1; s++) {
        int    sc = (r - s + 2 * K) % K, rc = (r - s - 1 + 2 * K) % K;
        size_t lo, hi;
        RL_TRY(ring_step(x, n, sc, rc, scratch));
        block(n, K, rc, &lo, &hi);
        for (size_t i = lo; i < hi; i++)
            x[i] = scratch[i - lo] + x[i];
    }
    /* all-gather: this rank holds the full sum of block r + 1; pass the sums around */
    for (int s = 0; s < K - 1; s++) {
        int    sc = (r + 1 - s + 2 * K) % K, rc = (r - s + 2 * K) % K;
        size_t lo, hi;
        block(n, K, rc, &lo, &hi);
        RL_TRY(ring_step(x, n, sc, rc, x + lo));
    }
    return RL_OK;
}

rl_status rl_mpi_sum_doubles(double *v, int n)
{
    double     *all = rl_gathered;
    MPI_Request r;
    if (!rl_mpi_on || rl_size == 1) return RL_OK;
    RL_ASSERT(n > 0 && n <= SUM_DOUBLES_MAX);
    MPI_Iallgather(v, n, MPI_DOUBLE, all, n, MPI_DOUBLE, MPI_COMM_WORLD, &r);
    RL_TRY(wait_all(1, &r, NULL, "sum of doubles"));
    for (int i = 0; i < n; i++) {
        double s = all[i];
        for (int k = 1; k < rl_size; k++)
            s += all[(size_t)k * n + i];
        v[i] = s;
    }
    return RL_OK;
}

/* ---- the work queue ---- */

void rl_mpi_queue_init(struct rl_mpi_queue *q, long n)
{
    q->n     = n;
    q->next  = n < rl_size ? n : rl_size;
    q->first = 1;
    q->done  = 0;
}

/* Rank 0: answer one request from `src` (its message says whether it wants an item). */
static void give(struct rl_mpi_queue *q, int src, int64_t want)
{
    int64_t item = want && q->next < q->n ? q->next++ : -1;
    if (item < 0) q->done++;
    /* the reply is 8 bytes: the eager protocol completes it at once */
    MPI_Send(&item, 1, MPI_INT64_T, src, TAG_GIVE, MPI_COMM_WORLD);
}

rl_status rl_mpi_queue_serve(struct rl_mpi_queue *q)
{
    if (!rl_mpi_on || rl_size == 1 || rl_rank != 0) return RL_OK;
    for (;;) {
        int        flag = 0;
        MPI_Status s;
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_ASK, MPI_COMM_WORLD, &flag, &s);
        if (!flag) return RL_OK;
        int64_t want;
        MPI_Recv(&want, 1, MPI_INT64_T, s.MPI_SOURCE, TAG_ASK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        give(q, s.MPI_SOURCE, want);
    }
}

rl_status rl_mpi_queue_take(struct rl_mpi_queue *q, int want, long *item)
{
    int first = q->first;
    q->first  = 0;
    *item     = -1;
    if (first && want && rl_rank < q->n) return *item = rl_rank, RL_OK;
    if (!rl_mpi_on || rl_size == 1 || rl_rank == 0) {
        RL_TRY(rl_mpi_queue_serve(q));
        if (want && q->next < q->n) *item = q->next++;
        return RL_OK;
    }
    int64_t     ask = want, got = -1;
    MPI_Request r[2];
    MPI_Irecv(&got, 1, MPI_INT64_T, 0, TAG_GIVE, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(&ask, 1, MPI_INT64_T, 0, TAG_ASK, MPI_COMM_WORLD, &r[1]);
    RL_TRY(wait_all(2, r, NULL, "work-queue request"));
    *item = (long)got;
    return RL_OK;
}

rl_status rl_mpi_queue_finish(struct rl_mpi_queue *q)
{
    if (!rl_mpi_on || rl_size == 1 || rl_rank != 0) return RL_OK;
    while (q->done < rl_size - 1) {
        int64_t     want;
        MPI_Status  s;
        MPI_Request r;
        MPI_Irecv(&want, 1, MPI_INT64_T, MPI_ANY_SOURCE, TAG_ASK, MPI_COMM_WORLD, &r);
        RL_TRY(wait_all(1, &r, &s, "work-queue wait"));
        give(q, s.MPI_SOURCE, want);
    }
    return RL_OK;
}

#else /* no MPI: a job of one rank */

int         rl_mpi_built_in(void) { return 0; }
const char *rl_mpi_library(void) { return "not built in"; }
int         rl_mpi_launched(void) { return 0; }
rl_status   rl_mpi_init(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    return RL_OK;
}
void      rl_mpi_finalize(void) {}
int       rl_mpi_rank(void) { return 0; }
int       rl_mpi_size(void) { return 1; }
int       rl_mpi_local_size(void) { return 1; }
void      rl_mpi_abort(int code) { (void)code; }
rl_status rl_mpi_bcast(void *buf, size_t bytes)
{
    (void)buf, (void)bytes;
    return RL_OK;
}
size_t    rl_mpi_sum_floats_scratch(size_t n) { return n ? 1 : 0; }
rl_status rl_mpi_sum_floats(float *x, size_t n, float *scratch)
{
    (void)x, (void)n, (void)scratch;
    return RL_OK;
}
rl_status rl_mpi_sum_doubles(double *v, int n)
{
    (void)v, (void)n;
    return RL_OK;
}
void rl_mpi_queue_init(struct rl_mpi_queue *q, long n)
{
    q->n = n, q->next = 0, q->first = 1, q->done = 0;
}
rl_status rl_mpi_queue_take(struct rl_mpi_queue *q, int want, long *item)
{
    q->first = 0;
    *item    = want && q->next < q->n ? q->next++ : -1;
    return RL_OK;
}
rl_status rl_mpi_queue_serve(struct rl_mpi_queue *q)
{
    (void)q;
    return RL_OK;
}
rl_status rl_mpi_queue_finish(struct rl_mpi_queue *q)
{
    (void)q;
    return RL_OK;
}

#endif
