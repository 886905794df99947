/* governor.c -- thread count by measurement; see governor.h. */
#define _GNU_SOURCE 1 /* sched_setaffinity, CPU_SET */
#include "config.h"
#include "governor.h"
#include "../core/threads.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { GAP_FIRST = 8, GAP_MAX = 512 };

/* the share of its threads' cores the process used below which the lower count is tried */
#define LOW_USE 0.75

_Static_assert(sizeof(cpu_set_t) <= sizeof(((struct rl_governor *)0)->home),
               "rl_governor.home holds a cpu_set_t");

/* The calling thread's own CPU set (one core when the runtime binds threads) is kept in
 * g->home: at the lower count the thread may run on any core the process had at start
 * (rl_affinity_widen_to_places: a taskset still holds), so it can leave the core another
 * process is using; at the full count it goes back to its own. */
static void set_count(const struct rl_governor *g, int n)
{
    rl_threads_set(n);
    if (!g->have_home) return;
    if (n >= g->hi) {
        sched_setaffinity(0, sizeof(cpu_set_t), (const cpu_set_t *)(const void *)g->home);
        return;
    }
    rl_affinity_widen_to_places(); /* the process's CPUs at start: taskset still holds */
}

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
    g->gap = RL_GOVERNOR_WINDOW; /* a run that starts on a busy machine learns it early */
    if (g->hi != g->lo)
        g->have_home = sched_getaffinity(0, sizeof(cpu_set_t), (cpu_set_t *)(void *)g->home) == 0;
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
    g->probing = RL_GOVERNOR_WINDOW, g->np = 0;
    set_count(g, rl_governor_threads(g));
}

static void end_probe(struct rl_governor *g, int better)
{
    const int from_hi = g->cur == g->hi;
    g->probing        = 0;
    if (better) {
        g->cur = from_hi ? g->lo : g->hi;
        g->switches++;
        g->gap = GAP_FIRST;
    } else {
        g->gap = g->gap * 2 < GAP_MAX ? g->gap * 2 : GAP_MAX;
    }
    g->ns = 0, g->since = 0, g->skip = 1;
    set_count(g, g->cur);
}

/* Should the steady phase try the other count now?  At most every `gap` updates (3 at the
 * start, 8 after a change of count, doubling after each probe that changed nothing, up
 * to 512); from the
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
        /* a probe update clearly slower than the steady ones ends the probe at once:
         * on a busy machine a probe of the higher count costs one slow update, not 3 */
        const double steady = median3(g->wall, RL_GOVERNOR_WINDOW);
        g->probe[g->np++]   = wall_ms;
        if (wall_ms > 1.1 * steady)
            end_probe(g, 0);
        else if (--g->probing == 0)
            end_probe(g, median3(g->probe, g->np) < 0.95 * steady);
        return;
    }
    g->wall[g->ns % RL_GOVERNOR_WINDOW] = wall_ms;
    g->cpu[g->ns % RL_GOVERNOR_WINDOW]  = cpu_ms;
    g->ns++, g->since++;
    if (want_probe(g)) start_probe(g);
}

void rl_governor_end(struct rl_governor *g)
{
    if (g->hi > 0 && g->hi != g->lo) set_count(g, g->hi);
    g->have_home = 0;
}
