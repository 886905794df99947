#!/usr/bin/python3
"""t_py_torch.py -- ropelab.torch against PyTorch's autograd of a float64 reference
(tests/ref/torch_attn_ref.py, quadratic forms written from the formulas): for every
attention kind, feature map and position encoding, causal and not, with and without the
forget gate, on (B, H, N, d) tensors, the Function's output within 1e-4 and its backward
(q, k, v, the T5 table, the log forget values) within 1e-3 of the reference's gradients
for random cotangents, relative to the largest magnitude (torch.autograd.gradcheck's
comparison of a backward with a reference, in float64); the nn.Module with its learned T5
table; strided inputs; refusals; the module's decoder."""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [here, os.path.join(here, "ref")]
import pytap as T  # noqa: E402

try:
    import numpy as np  # noqa: F401
    import torch
except ImportError as e:
    T.skip_all(f"python3-torch or python3-numpy not installed ({e})")
try:
    import ropelab
    import ropelab.torch as rt
except ImportError as e:
    T.skip_all(f"the ropelab package cannot load libropelab: {e}".replace("\n", " "))
import torch_attn_ref as ref  # noqa: E402

B, H, N, D, DV = 2, 2, 9, 4, 3
torch.manual_seed(0)


def inputs(pe, options):
    x = {"q": torch.randn(B, H, N, D), "k": torch.randn(B, H, N, D), "v": torch.randn(B, H, N, DV),
         "t5": 0.5 * torch.randn(H, options.get("t5_buckets", 32)) if pe == "t5" else None,
         "logf": None}
    if options.get("forget_gate"):
        x["logf"] = torch.nn.functional.logsigmoid(1.0 + 1.5 * torch.randn(B, H, N))
    return x


def grads(f, x, dout):
    """f(**x) and the gradients of sum(dout * f) w.r.t. every tensor of x."""
    leaves = {n: t.detach().clone().requires_grad_() for n, t in x.items() if t is not None}
    out = f(**{n: leaves.get(n) for n in x})
    g = torch.autograd.grad(out, list(leaves.values()), dout.to(out.dtype))
    return out.detach(), dict(zip(leaves, g))


def check(kind, fmap="elu1", pe="none", **options):
    name = f"{kind}({fmap}) pe={pe} " + " ".join(f"{k}={v}" for k, v in options.items())
    x = inputs(pe, options)
    dout = torch.randn(B, H, N, DV)
    args = dict(kind=kind, feature_map=fmap, pe=pe, **options)
    out, g = grads(lambda **a: rt.attention(a["q"], a["k"], a["v"], a["t5"], a["logf"], **args),
                   x, dout)
    x64 = {n: None if t is None else t.double() for n, t in x.items()}
    want, gw = grads(lambda **a: ref.attention(a["q"], a["k"], a["v"], a["t5"], a["logf"], **args),
                     x64, dout)
    T.close(out, want, 1e-4, f"{name}: forward vs float64 reference")
    errs = {"d" + n: T.scaled_error(g[n], gw[n]) for n in gw}
    T.ok(max(errs.values()) <= 1e-3 and all(g[n].dtype == torch.float32 for n in g),
         f"{name}: backward vs autograd of the float64 reference: "
         + ", ".join(f"{k} {v:.1e}" for k, v in errs.items()) + " (tol 1e-3)")


def functions():
    for causal in (False, True):
        gates = (False, True) if causal else (False,)
        for kind, fmaps in (("softmax", ["elu1"]), ("linear", ["elu1", "softmax", "exp"])):
            for fmap in fmaps:
                pes = [("none", {}), ("rope", {}), ("rope", dict(rope_layout="halves", rope_dims=2)),
                       ("t5", dict(t5_buckets=8, t5_max_distance=16)), ("alibi", {})]
                if kind == "linear":
                    pes += [("rope", dict(rope_place="input")),
                            ("rope", dict(rope_denominator="rotated", eps=0.1))]
                for pe, extra in pes:
                    for gate in gates:
                        opts = dict(extra, causal=causal)
                        if gate:
                            opts["forget_gate"] = True
                        check(kind, fmap, pe, **opts)


def module():
    """The module owns the T5 table; its gradient lands in t5_bias.grad."""
    att = rt.Attention("softmax", pe="t5", heads=H, causal=True, t5_buckets=8, t5_max_distance=16)
    with torch.no_grad():
        att.t5_bias.copy_(0.5 * torch.randn(H, 8))
    x = inputs("none", {})
    q, k, v = (x[n].clone().requires_grad_() for n in ("q", "k", "v"))
    dout = torch.randn(B, H, N, DV)
    (att(q, k, v) * dout).sum().backward()
    x64 = {n: x[n].double() for n in ("q", "k", "v")}
    x64["t5"], x64["logf"] = att.t5_bias.detach().double(), None
    _, gw = grads(lambda **a: ref.attention(a["q"], a["k"], a["v"], a["t5"], None, kind="softmax",
                                            pe="t5", causal=True, t5_buckets=8, t5_max_distance=16),
                  x64, dout)
    T.close(att.t5_bias.grad, gw["t5"], 1e-3, f"module {att}: t5_bias.grad")
    T.close(q.grad, gw["q"], 1e-3, "module: q.grad")
    T.ok([n for n, _ in att.named_parameters()] == ["t5_bias"], "the module's one parameter: t5_bias")


def strided_and_refusals():
    att = rt.Attention("linear", "elu1", "rope", causal=True)
    q = torch.randn(B, N, H, D).transpose(1, 2)  # (B, H, N, D), not contiguous
    o1 = att(q, q, q)
    o2 = att(q.contiguous(), q.contiguous(), q.contiguous())
    T.ok(torch.equal(o1, o2), "strided inputs give the contiguous inputs' output")
    try:
        att(q.double(), q.double(), q.double())
        T.ok(False, "float64 tensors accepted")
    except TypeError as e:
        T.ok("CPU float32" in str(e), f"float64 refused: {e}")
    try:
        rt.Attention("softmax", pe="t5")
        T.ok(False, "pe='t5' without heads accepted")
    except ValueError as e:
        T.ok("heads" in str(e), f"pe='t5' without heads refused: {e}")
    try:
        rt.Attention("linear", "elu1", "rope", rope_denominator="rotaded")
        T.ok(False, "a misspelt option value accepted")
    except ropelab.InvalidArgument as e:
        T.ok("did you mean 'rotated'" in str(e), f"a misspelt value refused: {e}")
    with torch.no_grad():
        o3 = att(q, q, q)
    T.ok(torch.equal(o1.detach(), o3), "no_grad: the same output")


def decoder():
    att = rt.Attention("linear", "exp", "rope", heads=H, causal=True)
    x = inputs("none", {})
    full = att(x["q"], x["k"], x["v"])[0]
    st = att.decoder(D, DV)
    rows = torch.stack([torch.from_numpy(st.step(x["q"][0, :, m], x["k"][0, :, m], x["v"][0, :, m]))
                        for m in range(N)], 1)
    T.close(rows, full, 1e-4, f"the module's decoder: {N} steps = the forward ({st.state_bytes} bytes)")


def threads():
    n = torch.get_num_threads()
    rt.attention(*(torch.randn(1, 4, 8) for _ in range(3)))
    T.ok(ropelab.get_num_threads() == n, f"the kernels follow torch.get_num_threads() = {n}")


functions()
module()
strided_and_refusals()
decoder()
threads()
T.done()
