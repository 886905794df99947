#!/usr/bin/python3
"""Independent float64 evaluation of the attention kernels and position encodings for
`ropelab attn`, with gradients by central finite differences, written from the formulas
of docs/attention.md and the kernel pages it links (quadratic form, no tricks).

Usage: attn_ref.py check ROPELAB WORKDIR SEED -- [ropelab attn options]
Generates random inputs (H,N,d)/(H,N,dv) (+ t5_bias, logf with --forget, dout), runs
`ROPELAB attn`, and compares out (and dq, dk, dv, dt5_bias, dlogf) with this reference:
max |err| / max |ref| must be <= 1e-4 (forward) and <= 1e-3 (gradients).  Prints one
line per tensor and exits 1 on any failure.

--ref-sample K (the reference's own option): gradients by central differences at K elements
per tensor only (random ones and the rows around position 256, where the kernels' blocks
of rows end), compared with ropelab's at those elements: long sequences at a bearable cost.

Forget gate (--forget, causal): logf (H, N) holds log forget values lambda[l] <= 0 per
head; c[m] = sum_{l <= m} lambda[l] and g(m, n) = c[m] - c[n] for n <= m.  Softmax
attention adds g to the scores; linear attention multiplies every numerator and
denominator weight by exp(g) (for eq. 19 the rotated numerator weights, and the rotated
denominator's; the Shen map's positional normaliser over the prefix is not decayed).
A bias PE (t5, alibi) adds to g.
"""
import json
import math
import os
import subprocess
import sys

import numpy as np


def parse_opts(argv):
    o = dict(attention="softmax", feature_map="elu1", pe="none", causal=False, rope_base=1e4,
             rope_layout="pairs", rope_dims=0, rope_scale=1.0, rope_ntk=1.0,
             rope_place="feature", rope_denominator="plain", t5_buckets=32,
             t5_max_distance=128, eps=1e-6, alibi_scan=False, rope_yarn=1.0,
             rope_yarn_orig=0, xpos=False, xpos_scale_base=512.0, forget=False)
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--causal":
            o["causal"] = True
        elif a == "--alibi-scan":
            o["alibi_scan"] = True
        elif a == "--xpos":
            o["xpos"] = True
        elif a == "--forget":
            o["forget"] = True
        else:
            key = a[2:].replace("-", "_")
            val = argv[i + 1]
            i += 1
            cur = o[key]
            o[key] = type(cur)(val) if not isinstance(cur, bool) else val
        i += 1
    return o


def pair_features(o, d, i):
    """The two features that rotate together as pair i."""
    R = o["rope_dims"] or d
    return (2 * i, 2 * i + 1) if o["rope_layout"] == "pairs" else (i, i + R // 2)


def yarn_theta(th, i, R, base, s, L):
    """YaRN's theta'_i (Peng et al. 2023: truncated correction range, beta_fast 32, beta_slow 1)."""
    def cdim(r):
        return R * math.log(L / (2 * math.pi * r)) / (2 * math.log(base))
    lo = max(math.floor(cdim(32.0)), 0)
    hi = min(math.ceil(cdim(1.0)), R - 1)
    if lo == hi:
        hi += 0.001
    ramp = min(max((i - lo) / (hi - lo), 0.0), 1.0)
    return th / s * ramp + th * (1 - ramp)


def rope_rotate(x, o, amp=1.0):
    """amp R_m x for rows m = 0..N-1 of x (N, d) (amp on every feature: the pass-through
    ones of partial rotary too, so that q.k scales by amp**2)."""
    N, d = x.shape
    R = o["rope_dims"] or d
    base = o["rope_base"]
    if o["rope_ntk"] != 1.0:
        base *= o["rope_ntk"] ** (R / (R - 2))
    out = amp * x
    m = np.arange(N, dtype=np.float64) / o["rope_scale"]
    for i in range(R // 2):
        th = base ** (-2.0 * i / R)
        if o["rope_yarn"] != 1.0:
            th = yarn_theta(th, i, R, base, o["rope_yarn"], o["rope_yarn_orig"] or N)
        a, b = pair_features(o, d, i)
        c, s = np.cos(m * th), np.sin(m * th)
        out[:, a] = amp * (x[:, a] * c - x[:, b] * s)
        out[:, b] = amp * (x[:, a] * s + x[:, b] * c)
    return out


def softmax_scores(o, q, k):
    """q.k / sqrt(d), with xPos: feature f of pair i weighted by zeta_i^((m-n)/gamma)."""
    N, d = q.shape
    if not o["xpos"]:
        return q @ k.T / math.sqrt(d)
    R = o["rope_dims"] or d
    w = np.ones((d, N, N))
    dist = (np.arange(N)[:, None] - np.arange(N)[None, :]).astype(np.float64)
    for i in range(R // 2):
        z = (2.0 * i / R + 0.4) / 1.4
        for f in pair_features(o, d, i):
            w[f] = z ** (dist / o["xpos_scale_base"])
    return np.einsum("mf,nf,fmn->mn", q, k, w) / math.sqrt(d)


def t5_bucket(r, bidirectional, nb_total, max_distance):
    ret = 0
    if bidirectional:
        nb = nb_total // 2
        if r > 0:
            ret = nb
        a = abs(r)
    else:
        nb = nb_total
        a = max(-r, 0)
    max_exact = nb // 2
    if a < max_exact:
        return ret + a
    # float32 arithmetic, as in the T5 reference implementation
    f32 = np.float32
    val = f32(np.log(f32(a) / f32(max_exact))) / f32(math.log(max_distance / max_exact)) * f32(nb - max_exact)
    return ret + min(nb - 1, max_exact + int(val))


def alibi_slopes(H):
    def pow2(n):
        return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]
    if H & (H - 1) == 0:
        return pow2(H)
    P = 1 << (H.bit_length() - 1)
    return pow2(P) + pow2(2 * P)[0::2][: H - P]


def bias_matrix(o, h, N, t5):
    m = np.arange(N)[:, None]
    n = np.arange(N)[None, :]
    if o["pe"] == "t5":
        B = np.zeros((N, N))
        for i in range(N):
            for j in range(N):
                B[i, j] = t5[h, t5_bucket(j - i, not o["causal"], t5.shape[1], o["t5_max_distance"])]
        return B
    if o["pe"] == "alibi":
        return -alibi_slopes(o["H"])[h] * np.abs(m - n)
    return np.zeros((N, N))


def gate_matrix(N, logf):
    """g(m, n) = sum_{l=n+1}^{m} lambda[l] for n <= m (0 on the diagonal), -inf above it
    (the gate is causal only; the mask takes those entries out anyway)."""
    causal = np.tril(np.ones((N, N))) > 0
    c = np.cumsum(logf) if logf is not None else np.zeros(N)
    return np.where(causal, c[:, None] - c[None, :], -np.inf)


def softmax_rows(x):
    x = x - x.max(axis=-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def head(o, h, q, k, v, t5, logf):
    N, d = q.shape
    mask = np.tril(np.ones((N, N))) if o["causal"] else np.ones((N, N))
    bias = bias_matrix(o, h, N, t5)
    if o["forget"]:  # the gate adds to the bias: a data-dependent ALiBi (causal only)
        bias = bias + np.where(mask > 0, gate_matrix(N, logf), 0.0)
    if o["attention"] == "softmax":
        if o["pe"] == "rope":
            s_ = o["rope_yarn"]
            amp = 0.1 * math.log(s_) + 1 if s_ > 1 else 1.0  # YaRN, softmax only
            q, k = rope_rotate(q, o, amp), rope_rotate(k, o, amp)
        s = softmax_scores(o, q, k) + bias
        s = np.where(mask > 0, s, -np.inf)
        return softmax_rows(s) @ v
    fm = o["feature_map"]
    rope = o["pe"] == "rope"
    if rope and o["rope_place"] == "input":
        q, k = rope_rotate(q, o), rope_rotate(k, o)
    phq = (np.where(q > 0, q + 1, np.exp(q)) if fm == "elu1" else softmax_rows(q))
    out = np.zeros((N, v.shape[1]))
    E = np.exp(bias)
    for mi in range(N):
        if fm == "elu1":
            phk = np.where(k > 0, k + 1, np.exp(k))
        elif fm == "exp":
            phk = np.exp(k)
        else:  # Shen: softmax over positions (prefix when causal)
            kk = k[: mi + 1] if o["causal"] else k
            mx = kk.max(axis=0)
            phk = np.exp(k - mx) / np.exp(kk - mx).sum(axis=0)
        w = mask[mi]
        if rope and o["rope_place"] == "feature":
            rq = rope_rotate(phq, o)[mi]
            rk = rope_rotate(phk, o)
            num = ((rk @ rq) * w * E[mi]) @ v
            if o["rope_denominator"] == "rotated":
                den = ((rk @ rq) * w * E[mi]).sum()
            else:
                den = ((phk @ phq[mi]) * w * E[mi]).sum()
        else:
            sim = (phk @ phq[mi]) * w * E[mi]
            num, den = sim @ v, sim.sum()
        out[mi] = num / (den + o["eps"])
    return out


def forward(o, q, k, v, t5, logf=None):
    return np.stack([head(o, h, q[h], k[h], v[h], t5, None if logf is None else logf[h])
                     for h in range(q.shape[0])])


def fd_grad(o, arrs, name, dout, eps=1e-6, idxs=None):
    """Central differences of sum(forward * dout) w.r.t. arrs[name], at every element or at
    the elements idxs (the others stay 0)."""
    x = arrs[name]
    g = np.zeros_like(x)
    for idx in (np.ndindex(*x.shape) if idxs is None else idxs):
        old = x[idx]
        x[idx] = old + eps
        fp = (forward(o, **arrs) * dout).sum()
        x[idx] = old - eps
        fm = (forward(o, **arrs) * dout).sum()
        x[idx] = old
        g[idx] = (fp - fm) / (2 * eps)
    return g


def main():
    _, cmd, rope_bin, work, seed = sys.argv[:5]
    assert cmd == "check"
    opts = sys.argv[sys.argv.index("--") + 1:]
    H, N, d, dv = 2, 9, 4, 3
    if "--ref-shape" in opts:  # the reference's own option: H,N,d,dv
        i = opts.index("--ref-shape")
        H, N, d, dv = (int(t) for t in opts[i + 1].split(","))
        opts = opts[:i] + opts[i + 2:]
    sample = 0
    if "--ref-sample" in opts:  # gradients at sampled elements only
        i = opts.index("--ref-sample")
        sample = int(opts[i + 1])
        opts = opts[:i] + opts[i + 2:]
    o = parse_opts(opts)
    rng = np.random.default_rng(int(seed))
    if o["pe"] == "rope" and o["rope_dims"] == 0 and d % 2:
        d += 1
    o["H"] = H
    q = rng.standard_normal((H, N, d)).astype(np.float32)
    k = rng.standard_normal((H, N, d)).astype(np.float32)
    v = rng.standard_normal((H, N, dv)).astype(np.float32)
    dout = rng.standard_normal((H, N, dv)).astype(np.float32)
    t5 = (0.5 * rng.standard_normal((H, o["t5_buckets"]))).astype(np.float32) if o["pe"] == "t5" else None
    logf = None
    if o["forget"]:  # log sigmoid of N(1, 1.5^2) pre-activations: gates from ~0.03 to ~1
        a = 1.0 + 1.5 * rng.standard_normal((H, N))
        logf = (-np.logaddexp(0.0, -a)).astype(np.float32)
        logf[0, N // 2] = 0.0  # a gate of exactly 1 (lambda = 0) is allowed
    ind, outd = os.path.join(work, "in"), os.path.join(work, "out")
    os.makedirs(ind, exist_ok=True)
    for name, a in dict(q=q, k=k, v=v, dout=dout, t5_bias=t5, logf=logf).items():
        if a is not None:
            np.save(os.path.join(ind, name + ".npy"), a)
    r = subprocess.run([rope_bin, "attn", "--in", ind, "--out", outd, "--threads", "1"] + opts,
                       capture_output=True, text=True)
    if r.returncode != 0:
        print("ropelab attn failed:", r.stderr.strip())
        return 1
    arrs = dict(q=q.astype(np.float64), k=k.astype(np.float64), v=v.astype(np.float64),
                t5=None if t5 is None else t5.astype(np.float64),
                logf=None if logf is None else logf.astype(np.float64))
    ref = {"out": forward(o, **arrs)}
    dd = dout.astype(np.float64)
    picks = {}
    for name, key in (("q", "q"), ("k", "k"), ("v", "v"), ("t5_bias", "t5"), ("logf", "logf")):
        if arrs[key] is None:
            continue
        if sample:  # random elements, and every tensor's rows 254 .. 258 and its last row
            shape = arrs[key].shape
            rows = [r for r in (254, 255, 256, 257, 258, shape[1] - 1) if r < shape[1]]
            idxs = {tuple(int(rng.integers(0, n)) for n in shape) for _ in range(sample)}
            idxs |= {(0, r) + tuple(0 for _ in shape[2:]) for r in rows} if len(shape) > 1 else set()
            picks["d" + name] = sorted(idxs)
        ref["d" + name] = fd_grad(o, arrs, key, dd, idxs=picks.get("d" + name))
    bad = 0
    for name, want in ref.items():
        got = np.load(os.path.join(outd, name + ".npy")).astype(np.float64)
        if name in picks:  # only the sampled elements were differentiated
            sel = tuple(np.array(picks[name]).T)
            got, want = got[sel], want[sel]
        scale = max(np.abs(want).max(), 1e-30)
        err = np.abs(got - want).max() / scale
        tol = 1e-4 if name == "out" else 1e-3
        print(f"{name}: max|err|/max|ref| = {err:.2e} (tol {tol:g})")
        bad += not (err <= tol)
    json.load(open(os.path.join(outd, "stats.json")))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
