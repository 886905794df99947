"""ropelab's attention kernels inside PyTorch models: an autograd Function, a functional
form, an ``nn.Module`` and checkpoints as a ``state_dict``.

Tensors are CPU float32 with batch and heads as leading dimensions: q, k (..., H, N, d),
v (..., H, N, dv), the output (..., H, N, dv), log forget values logf (..., H, N); the
T5 table t5 (H, t5_buckets) is shared by the leading dimensions.  Non-contiguous inputs
are copied.  The kernels run on ``torch.get_num_threads()`` threads (followed at every
call); results do not depend on the count.

    import ropelab.torch as rt
    att = rt.Attention("linear", "elu1", "rope", causal=True)
    o = att(q, k, v)                     # (B, H, N, d) -> (B, H, N, d)
    o.sum().backward()
"""
import collections

import numpy as np
import torch

from . import _lib
from . import kernels as _k
from .runs import model_tensors, read_checkpoint

__all__ = ["AttentionFunction", "attention", "Attention", "load_state_dict"]


def _follow_torch_threads():
    n = torch.get_num_threads()
    if _lib.get_num_threads() != n:
        _lib.set_num_threads(n)


def _array(t, name):
    """A float32 NumPy view of a CPU tensor (a contiguous copy when needed), or None."""
    if t is None:
        return None
    if t.device.type != "cpu" or t.dtype != torch.float32:
        raise TypeError(f"{name}: ropelab takes CPU float32 tensors, got {t.dtype} on "
                        f"{t.device}")
    return t.detach().contiguous().numpy()


class AttentionFunction(torch.autograd.Function):
    """apply(kernel, q, k, v, t5, logf): the attention output, differentiable in q, k, v,
    t5 and logf.  kernel is a ``ropelab.Attention`` (its options and plans)."""

    @staticmethod
    def forward(ctx, kernel, q, k, v, t5=None, logf=None):
        _follow_torch_threads()
        arrays = [_array(x, n) for x, n in zip((q, k, v, t5, logf), ("q", "k", "v", "t5", "logf"))]
        out, saved = kernel.forward(*arrays)
        out, saved = torch.from_numpy(out), torch.from_numpy(saved)
        ctx.kernel = kernel
        ctx.save_for_backward(q, k, v, t5, logf, out, saved)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dout):
        q, k, v, t5, logf, out, saved = ctx.saved_tensors
        _follow_torch_threads()
        g = ctx.kernel.backward(_array(dout, "dout"), out.numpy(), saved.numpy(),
                                *(_array(x, "input") for x in (q, k, v, t5, logf)))
        want = ctx.needs_input_grad
        grads = [torch.from_numpy(x) if x is not None and w else None
                 for x, w in zip(g, want[1:])]
        return (None,) + tuple(grads)


def attention(q, k, v, t5=None, logf=None, *, kind="softmax", feature_map="elu1", pe="none",
              **options):
    """The attention output of q, k, v (and the T5 table, the log forget values), with
    gradients through the kernels' backward."""
    kernel = _k._kernel(kind, feature_map, pe, options)
    return AttentionFunction.apply(kernel, q, k, v, t5, logf)


class Attention(torch.nn.Module):
    """Attention by ropelab's kernels, as a module: ``Attention(kind, feature_map, pe,
    **options)`` with the C API's option names (causal, eps, rope_base, rope_layout,
    rope_dims, rope_place, rope_denominator, t5_buckets, t5_max_distance, alibi_scan,
    forget_gate, ...).

    With pe='t5' the module owns the bias table ``t5_bias`` (heads x t5_buckets, zero
    init, as T5), so ``heads`` must be given; forward(q, k, v, logf=None, t5=None) uses
    ``t5`` instead when a model shares one table between layers.  With forget_gate=True,
    logf (..., H, N) holds the log forget values (<= 0, e.g. F.logsigmoid of a
    projection)."""

    def __init__(self, kind="softmax", feature_map="elu1", pe="none", *, heads=None,
                 **options):
        super().__init__()
        self.kernel = _k.Attention(kind, feature_map, pe, **options)
        self.heads = heads
        if pe == "t5":
            if heads is None:
                raise ValueError("pe='t5' needs heads= (the bias table has a row per head)")
            self.t5_bias = torch.nn.Parameter(torch.zeros(heads, self.kernel.t5_buckets))
        else:
            self.register_parameter("t5_bias", None)

    def forward(self, q, k, v, logf=None, t5=None):
        table = t5 if t5 is not None else self.t5_bias
        if self.heads is not None and q.dim() >= 3 and q.shape[-3] != self.heads:
            raise ValueError(f"q: expected {self.heads} heads at dimension -3, got {q.shape}")
        return AttentionFunction.apply(self.kernel, q, k, v, table, logf)

    def extra_repr(self):
        return self.kernel.describe()

    def decoder(self, d, dv=None):
        """A ``ropelab.DecodeState`` with these options, for step-by-step decoding (pass
        ``t5=module.t5_bias.detach().numpy()`` to its steps with pe='t5')."""
        if self.heads is None:
            raise ValueError("decoder() needs the module's heads=")
        opts = self.kernel.options
        kind, fmap, pe = opts.pop("attention"), opts.pop("feature_map"), opts.pop("pe")
        return _k.DecodeState(self.heads, d, dv, kind, fmap, pe, **opts)


def load_state_dict(path, optimizer=False, verify=False):
    """A ropelab checkpoint as a PyTorch state_dict (an OrderedDict of tensors by
    ropelab's names: embed.weight, blocks.{i}.attn.wq.weight, ...; nn.Linear weights are
    out x in).  With optimizer, the AdamW moments optim.m.<name> and optim.v.<name> too;
    with verify, every tensor's checksum is checked."""
    ck = read_checkpoint(path, verify=verify)
    tensors = ck.tensors if optimizer else model_tensors(ck)
    return collections.OrderedDict((k, torch.from_numpy(np.ascontiguousarray(v)))
                                   for k, v in tensors.items())
