/* governor.c -- thread count by measurement; see governor.h. */
#include "config.h"
#include "governor.h"
#include "gemm.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { GAP_FIRST = 8, GAP_MAX = 512 };

/* the share of its threads' cores the process used below which the lower count is tried */
#define LOW_USE 0.75

static int enabled(void)
{
    const char *e = getenv("OMP_DYNAMIC");
    return !(e && (!strcasecmp(e, "false") || !strcmp(e, "0")));
}

void rl_governor_init(struct rl_governor *g, int threads)
{
    *g     = (struct rl_governor){0};
    g->hi  = threads > 0 ? threads : 1;
    g->lo  = enabled() ? (g->hi + 1) / 2 : g->hi;
    g->cur = g->hi;
    g->gap = GAP_FIRST;
}

int rl_governor_threads(const struct rl_governor *g)
{
    if (!g->probing) return g->cur;
    return g->cur == g->hi ? g->lo : g->hi;
}

static double median3(const double *v, int n)
{
    if (n == 1) return v[0];
    if (n == 2) return 0.5 * (v[0] + v[1]);
    double a = v[0], b = v[1], c = v[2];
    if (a > b) {
        double t = a;
        a = b, b = t;
    }
    return c < a ? a : c > b ? b : c;
}

static void start_probe(struct rl_governor *g)
{
    g->probing = RL_GOVERNOR_WINDOW, g->np = 0, g->skip = 1;
    rl_threads_set(rl_governor_threads(g));
}

static void end_probe(struct rl_governor *g)
{
    const int    n      = g->ns < RL_GOVERNOR_WINDOW ? g->ns : RL_GOVERNOR_WINDOW;
    const double steady = median3(g->wall, n), other = median3(g->probe, g->np);
    const int    from_hi = g->cur == g->hi;
    g->probing           = 0;
    if (other < 0.95 * steady) {
        g->cur = from_hi ? g->lo : g->hi;
        g->switches++;
        g->gap = GAP_FIRST;
    } else {
        g->gap = g->gap * 2 < GAP_MAX ? g->gap * 2 : GAP_MAX;
    }
    g->ns = 0, g->since = 0, g->skip = 1;
    rl_threads_set(g->cur);
}

/* Should the steady phase try the other count now?  At most every `gap` updates (8 after
 * a change of count, doubling after each probe that changed nothing, up to 512); from the
 * higher count only when its threads got clearly less than their cores' worth of CPU
 * time (another process is taking a core). */
static int want_probe(const struct rl_governor *g)
{
    if (g->ns < RL_GOVERNOR_WINDOW || g->since < g->gap) return 0;
    if (g->cur == g->lo) return 1;
    double w = 0, c = 0;
    for (int i = 0; i < RL_GOVERNOR_WINDOW; i++)
        w += g->wall[i], c += g->cpu[i];
    return w > 0 && c < LOW_USE * g->cur * w;
}

void rl_governor_update(struct rl_governor *g, double wall_ms, double cpu_ms)
{
    if (g->hi == g->lo) return;
    if (g->skip) {
        g->skip = 0;
        return;
    }
    if (g->probing) {
        g->probe[g->np++] = wall_ms;
        if (--g->probing == 0) end_probe(g);
        return;
    }
    g->wall[g->ns % RL_GOVERNOR_WINDOW] = wall_ms;
    g->cpu[g->ns % RL_GOVERNOR_WINDOW]  = cpu_ms;
    g->ns++, g->since++;
    if (want_probe(g)) start_probe(g);
}
