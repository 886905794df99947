/* heads.c -- the heads layout (heads.h). */
#include "config.h"
#include "heads.h"
#include "../core/threads.h"

/* pieces of about ROW_FLOATS floats of whole rows, as the layers' row loops */
#define ROW_FLOATS 8192

static long piece_rows(int C) { return C < ROW_FLOATS ? ROW_FLOATS / C : 1; }
static long row_pieces(long T, int C) { return (T + piece_rows(C) - 1) / piece_rows(C); }
static void piece_span(long p, long T, int C, long *t0, long *t1)
{
    *t0 = p * piece_rows(C);
    *t1 = *t0 + piece_rows(C) < T ? *t0 + piece_rows(C) : T;
}

/* Each loop walks the (B*N, 3C) or (B*N, C) side row by row -- one contiguous row, read or
 * written once -- and scatters to or gathers from the H per-head rows, so both sides stream
 * through memory (going head by head re-read every qkv row H times, 3 d floats at a time).
 * The bias add's inner loop is an OpenMP simd loop: GCC at -O2 left it scalar. */

static void split_row(float *restrict dst, const float *restrict src, const float *restrict bias,
                      int d)
{
#pragma omp simd
    for (int i = 0; i < d; i++)
        dst[i] = src[i] + bias[i];
}

/* d floats: a loop the compiler vectorises in place (a memcpy of d = 32 floats was a
 * library call per row and head, 100 000 an update at 4096 tokens).  GCC's loop
 * distribution turns such a loop back into a memmove call, in the functions that inline
 * it unless they are marked KEEP_LOOPS (seen in `perf`: memmove 0.6 % of an update). */
static void copy_row(float *restrict dst, const float *restrict src, int d)
{
#pragma omp simd
    for (int i = 0; i < d; i++)
        dst[i] = src[i];
}

#if defined(__GNUC__) && !defined(__clang__)
#define KEEP_LOOPS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define KEEP_LOOPS
#endif

struct heads_ctx {
    float       *q, *k, *v, *rows;
    const float *cq, *ck, *cv, *crows, *bias;
    long         t0, n; /* the token rows [t0, t0 + n) of the batch */
    int          N, H, d;
};

/* the offset of token row t's head h in a (B, H, N, d) tensor */
size_t rl_heads_offset(long t, int h, int N, int H, int d)
{
    return (((size_t)(t / N) * H + h) * N + (size_t)(t % N)) * d;
}

/* the heads of one token row are (N d) floats apart */
static size_t head_stride(const struct heads_ctx *e) { return (size_t)e->N * e->d; }

/* rows [r0, r1) of a piece between the (B*N, 3*H*d) q|k|v rows and the heads: to_rows
 * gathers the three heads' rows (merge3), else scatters the rows plus the bias (split) */
KEEP_LOOPS static void triple_piece(const struct heads_ctx *e, long p, int to_rows)
{
    const int    H = e->H, d = e->d, C = H * d;
    float *const dst[3] = {e->q, e->k, e->v};
    const float *src[3] = {e->cq, e->ck, e->cv};
    long         r0, r1;
    piece_span(p, e->n, 3 * C, &r0, &r1);
    for (long r = r0; r < r1; r++) {
        const size_t o0 = rl_heads_offset(e->t0 + r, 0, e->N, H, d), hs = head_stride(e);
        for (int h = 0; h < H; h++)
            for (int x = 0; x < 3; x++) {
                const size_t off = o0 + h * hs, c = (size_t)x * C + (size_t)h * d;
                if (to_rows)
                    copy_row(e->rows + (size_t)r * 3 * C + c, src[x] + off, d);
                else
                    split_row(dst[x] + off, e->crows + (size_t)r * 3 * C + c, e->bias + c, d);
            }
    }
}

static void split_piece(void *ctx, long p) { triple_piece(ctx, p, 0); }

void rl_heads_split_rows(float *q, float *k, float *v, const float *qkv, const float *bias, long t0,
                         long n, int N, int H, int d)
{
    struct heads_ctx e = {.q     = q,
                          .k     = k,
                          .v     = v,
                          .crows = qkv,
                          .bias  = bias,
                          .t0    = t0,
                          .n     = n,
                          .N     = N,
                          .H     = H,
                          .d     = d};
    rl_pieces(row_pieces(n, 3 * H * d), split_piece, &e);
}

static void merge3_piece(void *ctx, long p) { triple_piece(ctx, p, 1); }

void rl_heads_merge3_rows(float *dqkv, const float *dq, const float *dk, const float *dv, long t0,
                          long n, int N, int H, int d)
{
    struct heads_ctx e = {
        .rows = dqkv, .cq = dq, .ck = dk, .cv = dv, .t0 = t0, .n = n, .N = N, .H = H, .d = d};
    rl_pieces(row_pieces(n, 3 * H * d), merge3_piece, &e);
}

/* rows [r0, r1) of a piece between the (B*N, H*d) rows and the heads: to_rows gathers the
 * heads into rows (merge), else scatters rows to the heads (split1) */
KEEP_LOOPS static void move_piece(const struct heads_ctx *e, long p, int to_rows)
{
    const int H = e->H, d = e->d;
    long      r0, r1;
    piece_span(p, e->n, H * d, &r0, &r1);
    for (long r = r0; r < r1; r++) {
        const size_t o0 = rl_heads_offset(e->t0 + r, 0, e->N, H, d), hs = head_stride(e);
        for (int h = 0; h < H; h++) {
            const size_t ho = o0 + h * hs, ro = ((size_t)r * H + h) * d;
            if (to_rows)
                copy_row(e->rows + ro, e->cq + ho, d);
            else
                copy_row(e->q + ho, e->crows + ro, d);
        }
    }
}

static void merge_piece(void *ctx, long p) { move_piece(ctx, p, 1); }

void rl_heads_merge_rows(float *out, const float *x, long t0, long n, int N, int H, int d)
{
    struct heads_ctx e = {.rows = out, .cq = x, .t0 = t0, .n = n, .N = N, .H = H, .d = d};
    rl_pieces(row_pieces(n, H * d), merge_piece, &e);
}

static void split1_piece(void *ctx, long p) { move_piece(ctx, p, 0); }

void rl_heads_split1_rows(float *out, const float *x, long t0, long n, int N, int H, int d)
{
    struct heads_ctx e = {.q = out, .crows = x, .t0 = t0, .n = n, .N = N, .H = H, .d = d};
    rl_pieces(row_pieces(n, H * d), split1_piece, &e);
}

void rl_heads_split(float *q, float *k, float *v, const float *qkv, const float *bias, int B, int N,
                    int H, int d)
{
    rl_heads_split_rows(q, k, v, qkv, bias, 0, (long)B * N, N, H, d);
}

void rl_heads_merge3(float *dqkv, const float *dq, const float *dk, const float *dv, int B, int N,
                     int H, int d)
{
    rl_heads_merge3_rows(dqkv, dq, dk, dv, 0, (long)B * N, N, H, d);
}

void rl_heads_merge(float *out, const float *x, int B, int N, int H, int d)
{
    rl_heads_merge_rows(out, x, 0, (long)B * N, N, H, d);
}

void rl_heads_split1(float *out, const float *x, int B, int N, int H, int d)
{
    rl_heads_split1_rows(out, x, 0, (long)B * N, N, H, d);
}
