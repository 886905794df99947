#!/usr/bin/python3
"""PyTorch peer for `ropelab bench --train`: ropelab's transformer (vocab 64, D 128, 4 heads,
2 layers, pre-LN, GELU-tanh MLP, causal LM, RoPE pairs layout) trained with AdamW on 4096
tokens per update, at N = 256 (batch 16) and N = 4096 (batch 1), with explicit softmax
attention and chunked causal linear attention (elu1, RoFormer eq. 19, chunk 64).

    OMP_PROC_BIND=true BLIS_ARCH_TYPE=0 /usr/bin/python3 tests/ref/torch_train_bench.py --threads 1

Prints CSV: impl,N,B,threads,tokens_per_s,ms_step (median over --steps timed updates
after --warmup untimed ones).
"""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_attn_bench as peer  # noqa: E402  (RoPE tables, rotation, chunked linear attention)


def rope_tables(N, d, base=10000.0):
    return peer.rope_tables(torch, N, d, base)


rope = peer.rope


def softmax_attn(q, k, v, cos, sin):
    return peer.softmax_attn(torch, q, k, v, cos, sin, causal=True)


def linear_attn(q, k, v, cos, sin, C=64, eps=1e-6):
    return peer.linear_attn_chunked(torch, q, k, v, cos, sin, C, eps)


class Block(nn.Module):
    def __init__(self, D, H, kind):
        super().__init__()
        self.H, self.kind = H, kind
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(D, D) for _ in range(4))
        self.fc1, self.fc2 = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

    def forward(self, x, cos, sin):
        B, N, D = x.shape
        h = self.ln1(x)
        sp = lambda t: t.view(B, N, self.H, D // self.H).transpose(1, 2)
        q, k, v = sp(self.wq(h)), sp(self.wk(h)), sp(self.wv(h))
        o = softmax_attn(q, k, v, cos, sin) if self.kind == "softmax" else linear_attn(q, k, v, cos, sin)
        x = x + self.wo(o.transpose(1, 2).reshape(B, N, D))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class Model(nn.Module):
    def __init__(self, V, D, H, L, kind):
        super().__init__()
        self.embed = nn.Embedding(V, D)
        self.blocks = nn.ModuleList(Block(D, H, kind) for _ in range(L))
        self.ln_f, self.head = nn.LayerNorm(D), nn.Linear(D, V)

    def forward(self, tok, cos, sin):
        x = self.embed(tok)
        for b in self.blocks:
            x = b(x, cos, sin)
        return self.head(self.ln_f(x))


def run(kind, N, B, threads, warmup, steps):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    V, D, H, L = 64, 128, 4, 2
    m = Model(V, D, H, L, kind)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.01)
    cos, sin = rope_tables(N, D // H)
    tok = torch.randint(0, V, (B, N + 1))
    times = []
    for s in range(warmup + steps):
        t0 = time.perf_counter()
        logits = m(tok[:, :-1], cos, sin)
        loss = F.cross_entropy(logits.reshape(-1, V), tok[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        if s >= warmup:
            times.append(time.perf_counter() - t0)
    times.sort()
    med = times[len(times) // 2]
    return B * N / med, med * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", default="1")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    print("impl,N,B,threads,tokens_per_s,ms_step", flush=True)
    for t in map(int, args.threads.split(",")):
        for kind in ("softmax", "linear"):
            for N, B in ((256, 16), (4096, 1)):
                tps, ms = run(kind, N, B, t, args.warmup, args.steps)
                print(f"torch-{kind},{N},{B},{t},{tps:.0f},{ms:.1f}", flush=True)


if __name__ == "__main__":
    main()
