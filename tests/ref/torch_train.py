#!/usr/bin/env python3
"""torch_train.py -- an independent PyTorch (float32) implementation of ropelab's transformer and
optimizer, trained from a ropelab run's step-0 checkpoint on the same `tokens` batches;
compares its per-update loss with the run's metrics.jsonl.

    ropelab run exp.ini --set train.checkpoint_initial=true --set train.log_every=1
    /usr/bin/python3 tests/ref/torch_train.py RUN_DIR [--steps K] [--tol 1e-4]

RUN_DIR holds config.ini (the resolved configuration), checkpoints/step-0.safetensors and
metrics.jsonl.  Also checked: the step-0 checkpoint holds zero AdamW moments for every
parameter, the sinusoid's gain pos.scale is float32(D^-1/2) there, and, when the run saved
checkpoints/step-K.safetensors for the last compared update K, pos.scale and its AdamW
moments after K updates (a scalar whose gradient sums over every token and feature).  Supported: the tokens task (a causal LM), attention softmax or linear with
the elu1 feature map, pe none / sinusoidal / learned / rope (pairs or halves layout, any
rope_dims, rope_scale, rope_ntk; rope_place feature) / alibi (softmax), and the forget gate
(forget_gate = true): per block a_h[m] = wf_h . x_m + bf_h on the LN1 output,
lambda = log sigmoid(a), c[m] = sum_{l <= m} lambda[l] (summed in float64), and the pair
n <= m weighted by exp(c[m] - c[n]) -- a score term in softmax attention, a factor on the
numerator and denominator weights in linear attention.  Only NumPy, json and torch are used:
the checkpoint is read with a few lines of safetensors parsing (python3-safetensors is
not installed here).  Exit status: 0 all compared steps within tol (relative), 1 otherwise,
77 (the Automake "skip" code) when torch or NumPy is missing.
"""
import argparse
import configparser
import json
import math
import os
import struct
import sys

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover
    print(f"# skip: {e}")
    sys.exit(77)


def read_safetensors(path):
    """name -> numpy array, and the __metadata__ dict."""
    with open(path, "rb") as f:
        raw = f.read()
    (hlen,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + hlen])
    meta = header.pop("__metadata__", {})
    data = raw[8 + hlen:]
    kinds = {"F32": "<f4", "F64": "<f8", "I32": "<i4", "I64": "<i8"}
    out = {}
    for name, t in header.items():
        b, e = t["data_offsets"]
        out[name] = np.frombuffer(data[b:e], dtype=kinds[t["dtype"]]).reshape(t["shape"]).copy()
    return out, meta


def read_config(run):
    cp = configparser.ConfigParser(inline_comment_prefixes=(";", "#"))
    cp.read(os.path.join(run, "config.ini"))
    return cp


def rope_tables(N, R, base, scale, ntk):
    """cos, sin (N, R/2) of angle (m / scale) * theta_i in float64, stored as float32."""
    if ntk != 1.0:
        base = base * ntk ** (R / (R - 2))
    i = np.arange(R // 2, dtype=np.float64)
    theta = base ** (-2.0 * i / R)
    ang = (np.arange(N, dtype=np.float64)[:, None] / scale) * theta[None, :]
    return torch.tensor(np.cos(ang), dtype=torch.float32), torch.tensor(np.sin(ang), dtype=torch.float32)


def alibi_slopes(H):
    """ALiBi slopes: 2^(-8(h+1)/H) for H a power of two, else those of the power of two P
    below H followed by every other slope of 2P."""
    def pow2(n):
        return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]
    if H & (H - 1) == 0:
        return pow2(H)
    P = 1 << (H.bit_length() - 1)
    return pow2(P) + pow2(2 * P)[0::2][: H - P]


def rope(x, cos, sin, R, layout):
    """x (B, H, N, d): RoPE on the first R features (pairs or halves layout)."""
    xr, rest = x[..., :R], x[..., R:]
    if layout == "pairs":
        a, b = xr[..., 0::2], xr[..., 1::2]
    else:
        a, b = xr[..., : R // 2], xr[..., R // 2:]
    ra = a * cos - b * sin
    rb = a * sin + b * cos
    if layout == "pairs":
        out = torch.stack((ra, rb), dim=-1).flatten(-2)
    else:
        out = torch.cat((ra, rb), dim=-1)
    return torch.cat((out, rest), dim=-1)


class Model(torch.nn.Module):
    def __init__(self, cfg, w):
        super().__init__()
        m = cfg["model"]
        self.D, self.H, self.L = int(m["d_model"]), int(m["heads"]), int(m["layers"])
        self.d = self.D // self.H
        self.attention, self.fmap, self.pe = m["attention"], m["feature_map"], m["pe"]
        self.eps = float(m["eps"])
        self.rope_dims = int(m["rope_dims"]) or self.d
        self.rope_layout = m["rope_layout"]
        self.rope_args = (float(m["rope_base"]), float(m["rope_scale"]), float(m["rope_ntk"]))
        if self.attention == "linear" and (self.fmap != "elu1" or m["rope_place"] != "feature"
                                           or m["rope_denominator"] != "plain"):
            raise SystemExit("torch_train.py: linear attention supports elu1, rope_place feature, plain")
        if self.pe not in ("none", "sinusoidal", "learned", "rope", "alibi"):
            raise SystemExit(f"torch_train.py: pe = {self.pe} is not implemented here")
        if self.pe == "alibi" and self.attention != "softmax":
            raise SystemExit("torch_train.py: alibi is implemented for softmax attention only")
        self.forget = m.get("forget_gate", "false") == "true"
        self.p = torch.nn.ParameterDict()
        for name, a in w.items():
            if not name.startswith("optim."):
                self.p[name.replace(".", "__")] = torch.nn.Parameter(torch.tensor(a))

    def w(self, name):
        return self.p[name.replace(".", "__")]

    def attn(self, x, i):
        B, N, D = x.shape
        pre = f"blocks.{i}.attn."
        q = F.linear(x, self.w(pre + "wq.weight"), self.w(pre + "wq.bias"))
        k = F.linear(x, self.w(pre + "wk.weight"), self.w(pre + "wk.bias"))
        v = F.linear(x, self.w(pre + "wv.weight"), self.w(pre + "wv.bias"))
        q, k, v = (t.view(B, N, self.H, self.d).transpose(1, 2) for t in (q, k, v))
        mask = torch.ones(N, N, dtype=torch.bool).tril()
        # the forget gate: g(m, n) = c[m] - c[n] = sum_{l=n+1}^{m} lambda[l] for n <= m
        g = torch.zeros(1, 1, N, N)
        if self.forget:
            a = F.linear(x, self.w(pre + "wf.weight"), self.w(pre + "wf.bias"))  # (B, N, H)
            c = torch.cumsum(F.logsigmoid(a).transpose(1, 2).double(), dim=-1)  # (B, H, N)
            g = (c[..., :, None] - c[..., None, :]).float().masked_fill(~mask, 0.0)
        if self.pe == "alibi":
            dist = (torch.arange(N)[:, None] - torch.arange(N)[None, :]).abs().float()
            slopes = torch.tensor(alibi_slopes(self.H), dtype=torch.float32)
            g = g - slopes[:, None, None] * dist
        if self.pe == "rope":
            cos, sin = rope_tables(N, self.rope_dims, *self.rope_args)
        if self.attention == "softmax":
            if self.pe == "rope":
                q = rope(q, cos, sin, self.rope_dims, self.rope_layout)
                k = rope(k, cos, sin, self.rope_dims, self.rope_layout)
            s = q @ k.transpose(-1, -2) / math.sqrt(self.d) + g
            s = s.masked_fill(~mask, float("-inf"))
            o = torch.softmax(s, dim=-1) @ v
        else:  # RoFormer eq. 19 with elu1; the denominator is unrotated
            fq, fk = F.elu(q) + 1, F.elu(k) + 1
            w = torch.exp(g).masked_fill(~mask, 0)  # the gate's weights (1 without it)
            den = ((fq @ fk.transpose(-1, -2)) * w).sum(-1, keepdim=True)
            if self.pe == "rope":
                fq = rope(fq, cos, sin, self.rope_dims, self.rope_layout)
                fk = rope(fk, cos, sin, self.rope_dims, self.rope_layout)
            num = ((fq @ fk.transpose(-1, -2)) * w) @ v
            o = num / (den + self.eps)
        o = o.transpose(1, 2).reshape(B, N, D)
        return F.linear(o, self.w(pre + "wo.weight"), self.w(pre + "wo.bias"))

    def forward(self, tok):
        B, N = tok.shape
        x = F.embedding(tok, self.w("embed.weight"))
        if self.pe == "learned":
            x = x + self.w("pos.weight")[:N]
        elif self.pe == "sinusoidal":
            pos = np.arange(N, dtype=np.float64)[:, None]
            t = np.arange(0, self.D, 2, dtype=np.float64)
            p = np.zeros((N, self.D))
            p[:, 0::2] = np.sin(pos / 10000 ** (t / self.D))
            p[:, 1::2] = np.cos(pos / 10000 ** (t[: self.D // 2] / self.D))
            # scaled sinusoid (x-transformers' ScaledSinusoidalEmbedding): one learned gain
            x = x + self.w("pos.scale") * torch.tensor(p, dtype=torch.float32)
        for i in range(self.L):
            b = f"blocks.{i}."
            h = F.layer_norm(x, (self.D,), self.w(b + "ln1.weight"), self.w(b + "ln1.bias"), 1e-5)
            x = x + self.attn(h, i)
            h = F.layer_norm(x, (self.D,), self.w(b + "ln2.weight"), self.w(b + "ln2.bias"), 1e-5)
            h = F.linear(h, self.w(b + "mlp.fc1.weight"), self.w(b + "mlp.fc1.bias"))
            h = F.gelu(h, approximate="tanh")
            x = x + F.linear(h, self.w(b + "mlp.fc2.weight"), self.w(b + "mlp.fc2.bias"))
        x = F.layer_norm(x, (self.D,), self.w("ln_f.weight"), self.w("ln_f.bias"), 1e-5)
        return F.linear(x, self.w("head.weight"), self.w("head.bias"))


def check_step0(cfg, w):
    """Zero moments for every parameter; pos.scale = float32(D^-1/2).  Returns failures."""
    params = [n for n in w if not n.startswith("optim.")]
    bad = [n for n in params for k in ("m", "v")
           if f"optim.{k}.{n}" not in w or np.any(w[f"optim.{k}.{n}"] != 0)]
    failed = 0
    if bad:
        print(f"# step-0 checkpoint: missing or nonzero moments: {bad[:4]}")
        failed += 1
    if cfg["model"]["pe"] == "sinusoidal":
        D = int(cfg["model"]["d_model"])
        want = np.float32(D ** -0.5)
        got = w.get("pos.scale")
        ok = got is not None and got.shape == (1,) and got[0] == want
        print(f"# step-0 pos.scale {None if got is None else got.tolist()} (want [{want!r}]): "
              f"{'ok' if ok else 'WRONG'}")
        failed += not ok
    return failed


def check_final(run, model, opt, K, tol=1e-4):
    """pos.scale, and the forget gate's wf of every block, with their AdamW moments after K
    updates against the run's step-K checkpoint, where both exist (the moments see the
    gradient's size, which Adam's step hides).  Errors relative to the tensor's largest
    magnitude; the gate's weights themselves to 10 x tol, since Adam's normalised step turns
    float rounding in an element whose gradient is near zero into a step of up to lr (the
    moments, which see the gradients linearly and squared, keep tol)."""
    path = os.path.join(run, "checkpoints", f"step-{K}.safetensors")
    names = ["pos.scale"] if model.pe == "sinusoidal" else []
    if model.forget:
        names += [f"blocks.{i}.attn.wf.{t}" for i in range(model.L) for t in ("weight", "bias")]
    if not names or not os.path.exists(path):
        return 0
    w, meta = read_safetensors(path)
    failed = 0
    for n in names:
        p = model.w(n)
        st = opt.state[p]
        for name, want in ((n, p), (f"optim.m.{n}", st["exp_avg"]),
                           (f"optim.v.{n}", st["exp_avg_sq"])):
            want = want.detach().double().numpy().reshape(-1)
            got = w[name].astype(np.float64).reshape(-1)
            rel = np.abs(got - want).max() / np.abs(want).max()
            t = 10 * tol if name.endswith("wf.weight") and not name.startswith("optim.") else tol
            print(f"# {name} after {K} updates: torch {want[0]:.9g} ropelab {got[0]:.9g} "
                  f"(first element), max rel {rel:.2e} (tol {t:g}) {'ok' if rel <= t else 'WRONG'}")
            failed += not (rel <= t)
    return int(failed > 0)


def lr_at(s, lr, W, r, T):
    """Linear warm-up then cosine to r*lr at the last update T = steps - 1."""
    if s < W:
        return lr * (s + 1) / W
    if T <= W:
        return lr
    s = min(s, T)
    return lr * (r + (1 - r) * 0.5 * (1 + math.cos(math.pi * (s - W) / (T - W))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="ropelab run directory")
    ap.add_argument("--steps", type=int, default=10, help="updates to compare (default 10)")
    ap.add_argument("--tol", type=float, default=1e-4, help="relative loss tolerance")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    cfg = read_config(a.run)
    if cfg["task"]["name"] != "tokens":
        raise SystemExit("torch_train.py: only the tokens task is supported")
    w, meta = read_safetensors(os.path.join(a.run, "checkpoints", "step-0.safetensors"))
    if int(meta.get("step", "0")) != 0:
        raise SystemExit("torch_train.py: step-0.safetensors is not at step 0")
    failed = check_step0(cfg, w)
    model = Model(cfg, w)
    t = cfg["train"]
    steps, B, A = int(t["steps"]), int(t["batch"]), int(t["accumulate"])
    decay, no_decay = [], []
    for name, p in model.p.items():
        n = name.replace("__", ".")
        is_weight = n.endswith(".weight") and ("attn.w" in n or "mlp.fc" in n or n == "head.weight")
        (decay if n == "embed.weight" or is_weight else no_decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": float(t["weight_decay"])},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=float(t["lr"]), betas=(float(t["beta1"]), float(t["beta2"])),
                            eps=float(t["adam_eps"]))
    path = cfg["task"]["path"]
    if not os.path.isabs(path) and not os.path.exists(path):
        path = os.path.join(a.run, path)
    ids = np.load(path).astype(np.int64)
    S = ids.shape[0]
    ours = {}
    with open(os.path.join(a.run, "metrics.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            ours[r["step"]] = r
    K = min(a.steps, steps)
    worst = 0.0
    for s in range(K):
        rows = ids[[(s * B + j) % S for j in range(B)]]
        x, y = torch.tensor(rows[:, :-1]), torch.tensor(rows[:, 1:])
        lr = lr_at(s, float(t["lr"]), int(t["warmup"]), float(t["min_lr_ratio"]), steps - 1)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.zero_grad()
        total, loss_sum = y.numel(), 0.0
        for i in range(A):  # micro-batches: sum of CE / targets of the whole update
            sl = slice(i * B // A, (i + 1) * B // A)
            logits = model(x[sl])
            l = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y[sl].reshape(-1),
                                reduction="sum") / total
            l.backward()
            loss_sum += l.item()
        norm = torch.nn.utils.clip_grad_norm_(list(model.p.values()), float(t["clip"])) \
            if float(t["clip"]) > 0 else None
        opt.step()
        if s + 1 not in ours:
            print(f"# update {s + 1}: not in metrics.jsonl (set train.log_every = 1)")
            continue
        got = ours[s + 1]["loss"]
        rel = abs(got - loss_sum) / abs(loss_sum)
        worst = max(worst, rel)
        ok = rel <= a.tol
        failed += not ok
        gn = f" grad_norm torch {norm.item():.6f} ropelab {ours[s + 1]['grad_norm']:.6f}" if norm is not None else ""
        print(f"{'ok' if ok else 'not ok'} {s + 1} - loss torch {loss_sum:.7f} ropelab {got:.7f} "
              f"rel {rel:.2e}{gn}")
    failed += check_final(a.run, model, opt, K)
    print(f"1..{K}")
    print(f"# worst relative loss difference over {K} updates: {worst:.3e} (tol {a.tol:g})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
