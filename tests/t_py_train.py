#!/usr/bin/python3
"""t_py_train.py -- ropelab's attention inside a PyTorch model that trains: a tiny language
model trained for 20 AdamW updates with ropelab.torch's attention and, from the same
initial weights on the same batches, with a PyTorch reference attention
(tests/ref/torch_attn_ref.py in float32): every update's loss agrees within 1e-4
(relative), for RoFormer eq. 19 linear attention and for softmax attention with a learned
T5 table and a learned forget gate.  Then the complete example of docs/python.md runs as
printed there and its loss falls, and its kernel check (a hand-written eq. 19 against
ropelab's) meets the tolerances it states."""
import io
import os
import re
import sys
import contextlib

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [here, os.path.join(here, "ref")]
import pytap as T  # noqa: E402

try:
    import numpy as np  # noqa: F401
    import torch
    import torch.nn.functional as F
except ImportError as e:
    T.skip_all(f"python3-torch or python3-numpy not installed ({e})")
try:
    import ropelab.torch as rt
except ImportError as e:
    T.skip_all(f"the ropelab package cannot load libropelab: {e}".replace("\n", " "))
import torch_attn_ref as ref  # noqa: E402

V, W, H, N, B = 12, 16, 2, 24, 4


class Tiny(torch.nn.Module):
    """Embedding, LayerNorm, one attention layer (q, k, v projections, the attention given
    as a function, the output projection, a residual), the output head; optionally a
    learned T5 table and a forget gate log sigmoid(wf . x + 3) per head."""

    def __init__(self, attend, opts, t5=False, gate=False):
        super().__init__()
        self.attend, self.opts = attend, opts
        self.emb = torch.nn.Embedding(V, W)
        self.ln = torch.nn.LayerNorm(W)
        self.qkv = torch.nn.Linear(W, 3 * W)
        self.wo = torch.nn.Linear(W, W)
        self.wf = torch.nn.Linear(W, H) if gate else None
        self.t5 = torch.nn.Parameter(0.3 * torch.randn(H, opts["t5_buckets"])) if t5 else None
        self.head = torch.nn.Linear(W, V)

    def forward(self, tok):
        x = self.emb(tok)
        h = self.ln(x)
        q, k, v = self.qkv(h).view(B, N, 3, H, W // H).permute(2, 0, 3, 1, 4)
        logf = F.logsigmoid(self.wf(h) + 3).transpose(1, 2) if self.wf is not None else None
        o = self.attend(q, k, v, self.t5, logf, **self.opts)
        x = x + self.wo(o.transpose(1, 2).reshape(B, N, W))
        return self.head(x)


def train(attend, opts, t5, gate, steps=20):
    torch.manual_seed(3)
    model = Tiny(attend, opts, t5, gate)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = torch.Generator().manual_seed(5)
    losses = []
    for _ in range(steps):
        tok = torch.randint(0, V, (B, N + 1), generator=data)
        tok[:, N // 2 + 1:] = tok[:, 1:N // 2 + 1].flip(1)[:, : N - N // 2]  # a mirrored half
        logits = model(tok[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, V), tok[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def compare(name, opts, t5=False, gate=False):
    ours = train(rt.attention, opts, t5, gate)
    theirs = train(ref.attention, opts, t5, gate)
    rel = [abs(a - b) / abs(b) for a, b in zip(ours, theirs)]
    T.diag(f"{name}: losses ropelab {ours[0]:.6f} -> {ours[-1]:.6f}, reference "
           f"{theirs[0]:.6f} -> {theirs[-1]:.6f}")
    T.ok(max(rel) <= 1e-4 and ours[-1] < ours[0],
         f"{name}: 20 updates, every loss within {max(rel):.1e} of the reference's (tol 1e-4)")


def docs_example():
    """The ```python block under 'A complete example' in docs/python.md, run as printed."""
    top = os.environ.get("top_srcdir", os.path.dirname(here))
    with open(os.path.join(top, "docs", "python.md")) as f:
        text = f.read()
    m = re.search(r"## A complete example.*?```python\n(.*?)```", text, re.S)
    if not T.ok(m is not None, "docs/python.md has its complete example"):
        return
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(m.group(1), "docs/python.md", "exec"), {"__name__": "__main__"})
    losses = [float(x) for x in re.findall(r"loss ([0-9.]+)", out.getvalue())]
    T.diag(out.getvalue().strip())
    T.ok(len(losses) >= 2 and losses[-1] < 0.7 * losses[0],
         f"the example trains: loss {losses[0] if losses else '?'} -> "
         f"{losses[-1] if losses else '?'}")


def docs_check():
    """The ```python block under 'Checking a kernel' in docs/python.md: its hand-written
    eq. 19 (mine) against ropelab's kernel, errors within the tolerances it prints."""
    top = os.environ.get("top_srcdir", os.path.dirname(here))
    with open(os.path.join(top, "docs", "python.md")) as f:
        text = f.read()
    m = re.search(r"## Checking a kernel.*?```python\n(.*?)```", text, re.S)
    if not T.ok(m is not None, "docs/python.md has its kernel check"):
        return
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(m.group(1), "docs/python.md", "exec"), {"__name__": "__main__"})
    errs = [float(x) for x in out.getvalue().split()]
    T.ok(len(errs) == 4 and errs[0] <= 1e-4 and max(errs[1:]) <= 1e-3,
         f"the kernel check of docs/python.md: out, dq, dk, dv errors {errs} (tol 1e-4, 1e-3)")


torch.set_num_threads(1)
compare("linear(elu1) rope causal (eq. 19)",
        dict(kind="linear", feature_map="elu1", pe="rope", causal=True))
compare("softmax t5 + forget gate, causal",
        dict(kind="softmax", pe="t5", causal=True, forget_gate=True, t5_buckets=8,
             t5_max_distance=16), t5=True, gate=True)
compare("linear(exp) alibi + forget gate, causal",
        dict(kind="linear", feature_map="exp", pe="alibi", causal=True, forget_gate=True),
        gate=True)
docs_example()
docs_check()
T.done()
