"""ropelab from Python: the attention kernels of libropelab (softmax and linear attention
with RoPE as RoFormer's eq. 19 and its ablations, T5, ALiBi, the forget gate), forward and
backward, on NumPy arrays (this module) and as PyTorch autograd functions and modules
(``ropelab.torch``), recurrent decoding, and readers of what ``ropelab run`` writes.

    import ropelab
    out = ropelab.attention(q, k, v, kind="linear", pe="rope", causal=True)
    g = ropelab.attention_grad(dout, q, k, v, kind="linear", pe="rope", causal=True)

The kernels need NumPy; the readers need nothing (pandas when installed).  How the
package finds libropelab: ``ropelab._lib`` (``ROPELAB_LIBRARY`` overrides).
"""
from ._lib import (API_VERSION, Error, InvalidArgument, get_num_threads, set_num_threads,
                   version)
from .runs import crc32c, model_tensors, read_checkpoint, read_metrics, read_results

__version__ = version()

_KERNELS = ("Attention", "DecodeState", "Grads", "Options", "attention", "attention_grad")

__all__ = ["API_VERSION", "Error", "InvalidArgument", "get_num_threads", "set_num_threads",
           "version", "crc32c", "model_tensors", "read_checkpoint", "read_metrics",
           "read_results"] + list(_KERNELS)


def __getattr__(name):
    # the kernels need NumPy: imported on first use, so the readers work without it
    if name in _KERNELS:
        from . import kernels
        return getattr(kernels, name)
    raise AttributeError(f"module 'ropelab' has no attribute {name!r}")
