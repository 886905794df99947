#!/usr/bin/python3
"""A differentiable PyTorch evaluation of ropelab's attention kernels, written from the
formulas of docs/attention.md as quadratic forms (every (m, n) pair materialised, no
tricks), for any dtype: float64 for gradient checks through torch.autograd, float32 as a
"reference attention" inside a PyTorch model.

    attention(q, k, v, t5=None, logf=None, kind=..., feature_map=..., pe=..., **options)

q, k (..., H, N, d), v (..., H, N, dv), t5 (H, t5_buckets), logf (..., H, N); the options
are the C API's names (causal, eps, rope_base, rope_layout, rope_dims, rope_scale,
rope_ntk, rope_yarn, rope_yarn_orig, rope_place, rope_denominator, t5_buckets,
t5_max_distance, alibi_scan, forget_gate).  Not covered: xpos.

- softmax: s[m,n] = (R_m q_m).(R_n k_n)/sqrt(d) + b_h(m,n) + g(m,n), masked n <= m when
  causal; o_m = sum_n softmax(s[m])_n v_n.  YaRN multiplies rotated q and k by
  a = 0.1 ln s + 1.
- linear: w(m,n) = exp(b_h(m,n) + g(m,n)) (1 without a bias or gate), masked;
  o_m = sum_n A(m,n) w v_n / (sum_n B(m,n) w + eps) with A = B = phi_q(q_m).phi_k(k_n),
  except RoPE on the features (eq. 19): A = (R_m phi_q).(R_n phi_k), B plain (or A with
  rope_denominator = rotated); RoPE on the input rotates q, k before the maps.  Maps:
  elu1 (elu + 1 both), exp (softmax of q over features, exp(k)), softmax (Shen: softmax of
  q over features, of each key feature over the positions -- the prefix n' <= m of the
  query when causal).
- g(m,n) = c[m] - c[n], c = cumsum(logf) (the forget gate), b: T5 table by bucket(n - m)
  or ALiBi -slope_h |m - n| (attn_ref.py's bucket and slope rules).
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attn_ref  # noqa: E402  (the bucket and slope rules, shared with the NumPy reference)

DEFAULTS = dict(causal=False, eps=1e-6, rope_base=1e4, rope_layout="pairs", rope_dims=0,
                rope_scale=1.0, rope_ntk=1.0, rope_yarn=1.0, rope_yarn_orig=0,
                rope_place="feature", rope_denominator="plain", t5_buckets=32,
                t5_max_distance=128, alibi_scan=False, forget_gate=False)


def rope(x, o, amp=1.0):
    """amp R_n x_n for rows n = 0 .. N-1 of x (..., N, d); angles in float64."""
    N, d = x.shape[-2:]
    R = o["rope_dims"] or d
    base = o["rope_base"] * (o["rope_ntk"] ** (R / (R - 2)) if o["rope_ntk"] != 1 else 1.0)
    theta = [base ** (-2.0 * i / R) for i in range(R // 2)]
    if o["rope_yarn"] != 1:
        L = o["rope_yarn_orig"] or N
        theta = [attn_ref.yarn_theta(t, i, R, base, o["rope_yarn"], L) for i, t in enumerate(theta)]
    ang = (torch.arange(N, dtype=torch.float64)[:, None] / o["rope_scale"]) * \
        torch.tensor(theta, dtype=torch.float64)[None, :]
    cos, sin = torch.cos(ang).to(x.dtype), torch.sin(ang).to(x.dtype)
    if o["rope_layout"] == "pairs":
        a, b = x[..., 0:R:2], x[..., 1:R:2]
    else:
        a, b = x[..., :R // 2], x[..., R // 2:R]
    ra, rb = a * cos - b * sin, a * sin + b * cos
    rot = torch.stack((ra, rb), -1).flatten(-2) if o["rope_layout"] == "pairs" else \
        torch.cat((ra, rb), -1)
    return amp * torch.cat((rot, x[..., R:]), -1)


def bias(o, pe, H, N, t5, dtype):
    """b_h(m, n) (H, N, N), or None."""
    if pe == "t5":
        idx = torch.tensor([[attn_ref.t5_bucket(n - m, not o["causal"], o["t5_buckets"],
                                                o["t5_max_distance"]) for n in range(N)]
                            for m in range(N)])
        return t5[:, idx]
    if pe == "alibi":
        dist = (torch.arange(N)[:, None] - torch.arange(N)[None, :]).abs().to(dtype)
        slopes = torch.tensor(attn_ref.alibi_slopes(H), dtype=dtype)
        return -slopes[:, None, None] * dist
    return None


def gate(logf):
    """c[m] - c[n] (..., H, N, N)."""
    c = torch.cumsum(logf, -1)
    return c[..., :, None] - c[..., None, :]


def _softmax(o, pe, q, k, v, mask, extra):
    if pe == "rope":
        s = o["rope_yarn"]
        amp = 0.1 * math.log(s) + 1 if s > 1 else 1.0
        q, k = rope(q, o, amp), rope(k, o, amp)
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if extra is not None:
        s = s + extra
    s = s.masked_fill(~mask, float("-inf"))
    return torch.softmax(s, -1) @ v


def _phi_k(fmap, k, causal):
    """phi_k (..., N, d), or for the causal Shen map (..., N_m, N_n, d): the normaliser of
    query row m sums over the prefix n' <= m."""
    if fmap == "elu1":
        return F.elu(k) + 1
    if fmap == "exp":
        return torch.exp(k)
    e = torch.exp(k - k.max(-2, keepdim=True).values.detach())
    if not causal:
        return e / e.sum(-2, keepdim=True)
    return e[..., None, :, :] / torch.cumsum(e, -2)[..., :, None, :]


def _pairs(a, b):
    """sum_f a[m, f] b[n, f] for b (..., N, d) or (..., N_m, N_n, d)."""
    if b.dim() == a.dim():
        return a @ b.transpose(-1, -2)
    return torch.einsum("...mf,...mnf->...mn", a, b)


def _linear(o, pe, fmap, q, k, v, mask, extra):
    if pe == "rope" and o["rope_place"] == "input":
        q, k = rope(q, o), rope(k, o)
    pq = F.elu(q) + 1 if fmap == "elu1" else torch.softmax(q, -1)
    pk = _phi_k(fmap, k, o["causal"])
    plain = _pairs(pq, pk)
    num = den = plain
    if pe == "rope" and o["rope_place"] == "feature":
        # R_n on the keys' rows (for the causal Shen map, of every query row's keys)
        num = _pairs(rope(pq, o), rope(pk, o))
        den = num if o["rope_denominator"] == "rotated" else plain
    w = mask.to(q.dtype) if extra is None else torch.exp(extra).masked_fill(~mask, 0)
    num, den = num * w, den * w
    return (num @ v) / (den.sum(-1, keepdim=True) + o["eps"])


def attention(q, k, v, t5=None, logf=None, kind="softmax", feature_map="elu1", pe="none",
              **options):
    o = dict(DEFAULTS)
    unknown = set(options) - set(o)
    if unknown:
        raise TypeError(f"options not covered by the reference: {sorted(unknown)}")
    o.update(options)
    N = q.shape[-2]
    H = q.shape[-3] if q.dim() >= 3 else 1
    mask = torch.ones(N, N, dtype=torch.bool)
    if o["causal"]:
        mask = mask.tril()
    extra = bias(o, pe, H, N, t5, q.dtype)
    if o["forget_gate"]:
        g = gate(logf).masked_fill(~mask, 0)
        extra = g if extra is None else extra + g
    if kind == "softmax":
        return _softmax(o, pe, q, k, v, mask, extra)
    return _linear(o, pe, feature_map, q, k, v, mask, extra)
