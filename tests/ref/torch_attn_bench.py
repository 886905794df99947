#!/usr/bin/python3
"""PyTorch peer for `ropelab bench`: explicit softmax attention and chunked causal
linear attention with RoPE (RoFormer eq. 19), forward+backward, H heads, d = dv; and
(--impl ropelab) the same eq. 19 linear attention by ropelab's kernel called from PyTorch
through the Python package (ropelab.torch.attention: the binding's cost included).

Run beside ropelab in one session, same thread count, pinned threads:
    OMP_PROC_BIND=true BLIS_ARCH_TYPE=0 /usr/bin/python3 tests/ref/torch_attn_bench.py \
        --threads 1 --n 1024,2048,4096,16384
    PYTHONPATH=python /usr/bin/python3 tests/ref/torch_attn_bench.py --impl linear,ropelab \
        --n 4096 --threads 1 --interleave --reps 21
Each (kernel, N) runs in a fresh subprocess so its peak RSS is its own.  Prints CSV:
impl,N,H,d,threads,ms_fwd_bwd,peak_rss_mb,extra_rss_mb
With --interleave the implementations take turns in one process instead (the same load
for each on a shared machine): impl,N,H,d,threads,ms_median,ms_min,cpu_ms_median
"""
import argparse
import os
import resource
import subprocess
import sys
import time


def rope_tables(torch, N, d, base=10000.0):
    i = torch.arange(d // 2, dtype=torch.float64)
    theta = base ** (-2.0 * i / d)
    ang = torch.arange(N, dtype=torch.float64)[:, None] * theta[None, :]
    return torch.cos(ang).float(), torch.sin(ang).float()


def rope(x, cos, sin):
    import torch  # noqa: F401  (kept local: the module imports torch lazily)
    # paper layout: pairs (2i, 2i+1)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out = torch_stack_pairs(x0 * cos - x1 * sin, x0 * sin + x1 * cos)
    return out


def torch_stack_pairs(a, b):
    import torch
    return torch.stack((a, b), dim=-1).flatten(-2)


def softmax_attn(torch, q, k, v, cos, sin, causal):
    N, d = q.shape[-2], q.shape[-1]
    q, k = rope(q, cos, sin), rope(k, cos, sin)
    s = q @ k.transpose(-1, -2) / d ** 0.5
    if causal:
        mask = torch.ones(N, N, dtype=torch.bool).triu(1)
        s = s.masked_fill(mask, float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def linear_attn_chunked(torch, q, k, v, cos, sin, C=64, eps=1e-6):
    """Causal linear attention, elu+1, eq. 19: numerator with rotated phi, plain denominator.

    Chunked the way fast PyTorch code does it (no per-chunk Python loop, whose slice
    backward would cost O(N^2/C)): sequences are reshaped into chunks of C, the
    intra-chunk part is a masked batched matmul, the inter-chunk part an exclusive
    cumulative sum of per-chunk states.  N must be a multiple of C.
    """
    fq = torch.nn.functional.elu(q) + 1
    fk = torch.nn.functional.elu(k) + 1
    rq, rk = rope(fq, cos, sin), rope(fk, cos, sin)
    *lead, N, d = q.shape
    dv = v.shape[-1]
    nc = N // C
    ch = lambda t: t.reshape(*lead, nc, C, t.shape[-1])
    rq, rk, fq, fk, vc = ch(rq), ch(rk), ch(fq), ch(fk), ch(v)
    tri = torch.ones(C, C).tril()
    S = rk.transpose(-1, -2) @ vc                      # (..., nc, d, dv) per-chunk states
    S = torch.cumsum(S, dim=-3) - S                    # exclusive prefix over chunks
    z = fk.sum(-2, keepdim=True)                       # (..., nc, 1, d)
    z = torch.cumsum(z, dim=-3) - z
    num = rq @ S + ((rq @ rk.transpose(-1, -2)) * tri) @ vc
    den = (fq * z).sum(-1, keepdim=True) + ((fq @ fk.transpose(-1, -2)) * tri).sum(-1, keepdim=True)
    return (num / (den + eps)).reshape(*lead, N, dv)


def make_inputs(torch, H, N, d):
    torch.manual_seed(0)
    return [torch.randn(H, N, d, requires_grad=True) for _ in range(3)]


def fwd_bwd(torch, impl, q, k, v, cos, sin):
    """One forward and backward of impl (softmax, linear or ropelab) on q, k, v."""
    if impl == "softmax":
        o = softmax_attn(torch, q, k, v, cos, sin, causal=True)
    elif impl == "ropelab":
        import ropelab.torch as rt  # its threads follow torch.get_num_threads()
        o = rt.attention(q, k, v, kind="linear", feature_map="elu1", pe="rope", causal=True)
    else:
        o = linear_attn_chunked(torch, q, k, v, cos, sin)
    o.sum().backward()
    q.grad = k.grad = v.grad = None


def one(args):
    import torch
    torch.set_num_threads(args.threads)
    H, N, d = args.heads, args.one_n, args.d
    cos, sin = rope_tables(torch, N, d)
    q, k, v = make_inputs(torch, H, N, d)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    times = []
    for _ in range(args.reps):
        t0 = time.perf_counter()
        fwd_bwd(torch, args.one_impl, q, k, v, cos, sin)
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"torch-{args.one_impl},{N},{H},{d},{args.threads},{times[len(times) // 2]:.2f},{rss:.0f},{rss - rss0:.0f}")


def interleaved(args):
    """The implementations in turn in one process, --reps rounds after one warm-up call
    each: on a shared machine every implementation meets the same load.  Prints the median
    and the minimum wall time and the median process CPU time per call."""
    import torch
    torch.set_num_threads(args.threads)
    impls = args.impl.split(",")
    print("impl,N,H,d,threads,ms_median,ms_min,cpu_ms_median", flush=True)
    for N in map(int, args.n.split(",")):
        cos, sin = rope_tables(torch, N, args.d)
        q, k, v = make_inputs(torch, args.heads, N, args.d)
        times = {i: [] for i in impls}
        for r in range(args.reps + 1):
            for impl in impls:
                w, c = time.perf_counter(), time.process_time()
                fwd_bwd(torch, impl, q, k, v, cos, sin)
                if r:  # round 0 warms up (plans, tables, first-touch pages)
                    times[impl].append(((time.perf_counter() - w) * 1e3,
                                        (time.process_time() - c) * 1e3))
        for impl, t in times.items():
            wall, cpu = sorted(x[0] for x in t), sorted(x[1] for x in t)
            print(f"torch-{impl},{N},{args.heads},{args.d},{args.threads},"
                  f"{wall[len(wall) // 2]:.2f},{wall[0]:.2f},{cpu[len(cpu) // 2]:.2f}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--n", default="1024,2048,4096,16384")
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--d", type=int, default=32)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--impl", default="softmax,linear")
    ap.add_argument("--budget-s", type=float, default=120)
    ap.add_argument("--one-impl")
    ap.add_argument("--one-n", type=int)
    ap.add_argument("--interleave", action="store_true",
                    help="run the implementations in turn in this process (no RSS column)")
    args = ap.parse_args()
    if args.one_impl:
        return one(args)
    if args.interleave:
        return interleaved(args)
    print("impl,N,H,d,threads,ms_fwd_bwd,peak_rss_mb,extra_rss_mb", flush=True)
    for impl in args.impl.split(","):
        for N in map(int, args.n.split(",")):
            cmd = [sys.executable, __file__, "--one-impl", impl, "--one-n", str(N), "--threads",
                   str(args.threads), "--heads", str(args.heads), "--d", str(args.d), "--reps",
                   str(args.reps)]
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.budget_s)
                print(r.stdout.strip() or f"torch-{impl},{N},failed: {r.stderr.strip()[-200:]}", flush=True)
            except subprocess.TimeoutExpired:
                print(f"torch-{impl},{N},skipped: over {args.budget_s:.0f} s budget", flush=True)


if __name__ == "__main__":
    main()
