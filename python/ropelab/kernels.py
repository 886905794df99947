"""ropelab's attention kernels on NumPy arrays, forward and backward, through the C API.

Shapes (float32; other float arrays are converted, C-contiguous copies are made when
needed): q, k (..., H, N, d), v (..., H, N, dv), the output (..., H, N, dv): any leading
dimensions (a batch), then H heads, N positions, the head and value dimensions.  A 2-D
q (N, d) is one head.  The position-encoding parameters (ALiBi slopes, the T5 table
t5 (H, t5_buckets)) belong to the H heads and are shared by the leading dimensions; the
forget gate's log values logf have the shape (..., H, N), each finite and <= 0.

Options are the C API's names (``Options.names()``, ``Options.help(name)``): ``kind``
(softmax | linear, the option ``attention``), ``feature_map`` (elu1 | softmax | exp),
``pe`` (none | rope | t5 | alibi), ``causal``, ``eps``, ``rope_base``, ``rope_layout``,
``rope_dims``, ``rope_place`` (feature | input), ``rope_denominator`` (plain | rotated),
``t5_buckets``, ``forget_gate``, ...

Threads: a C plan serves one call at a time, so each plan has a lock; an ``Attention``,
the functions and a ``DecodeState`` may be called from several Python threads (calls on
the same plan or state wait for each other; the C calls release the GIL).
"""
import collections
import ctypes
import numbers
import threading

import numpy as np

from . import _lib
from ._lib import check, lib

Grads = collections.namedtuple("Grads", "dq dk dv dt5 dlogf")
Grads.__doc__ = """Gradients of a backward: dq, dk, dv; dt5 with pe='t5' and dlogf with the
forget gate, else None."""


class Options:
    """Attention options by name, as the C API holds them (opaque, set by name)."""

    def __init__(self, **options):
        self._h = ctypes.c_void_p()
        check(lib.rl_api_opts_create(ctypes.byref(self._h)))
        for name, value in options.items():
            self[name] = value

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h and lib is not None:
            lib.rl_api_opts_free(h)

    def __setitem__(self, name, value):
        n = name.encode()
        if isinstance(value, str):
            check(lib.rl_api_opts_set(self._h, n, value.encode()))
        elif isinstance(value, (bool, np.bool_)):
            check(lib.rl_api_opts_set(self._h, n, b"true" if value else b"false"))
        elif isinstance(value, numbers.Real):
            check(lib.rl_api_opts_set_number(self._h, n, float(value)))
        else:
            raise TypeError(f"{name}: expected a name, a number or a bool, got {value!r}")

    def text(self, name):
        """The value of an option as the library writes it."""
        buf = ctypes.create_string_buffer(256)
        check(lib.rl_api_opts_get(self._h, name.encode(), buf, len(buf)))
        return buf.value.decode()

    def __getitem__(self, name):
        return _typed(self.text(name))

    def as_dict(self):
        return {n: self[n] for n in self.names()}

    def key(self):
        """A hashable summary of every option's value."""
        return tuple(self.text(n) for n in self.names())

    def describe(self):
        buf = ctypes.create_string_buffer(256)
        check(lib.rl_api_opts_describe(self._h, buf, len(buf)))
        return buf.value.decode()

    def check(self, heads, d, dv):
        """Raises InvalidArgument when the options do not go together for this shape."""
        check(lib.rl_api_opts_check(self._h, int(heads), int(d), int(dv)))

    def __repr__(self):
        return f"Options({self.describe()})"

    @staticmethod
    def names():
        """Every option name the library takes."""
        out, i = [], 0
        while lib.rl_api_opts_name(i):
            out.append(lib.rl_api_opts_name(i).decode())
            i += 1
        return out

    @staticmethod
    def help(name):
        """One line on an option: what it accepts, its default, what it means."""
        buf = ctypes.create_string_buffer(512)
        check(lib.rl_api_opts_help(name.encode(), buf, len(buf)))
        return buf.value.decode()


def _typed(text):
    if text in ("true", "false"):
        return text == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _options(kind, feature_map, pe, options):
    if "attention" in options:
        raise TypeError("give the kernel as kind=, not attention=")
    return Options(attention=kind, feature_map=feature_map, pe=pe, **options)


def _f32(x):
    return None if x is None else np.ascontiguousarray(x, dtype=np.float32)


def _ptr(x):
    return None if x is None else x.ctypes.data


class _Plan:
    """A C plan for one shape."""

    def __init__(self, opts, H, N, d, dv):
        self._h = ctypes.c_void_p()
        check(lib.rl_api_plan_create(ctypes.byref(self._h), opts._h, H, N, d, dv))
        self.lock = threading.Lock()  # one call at a time on a C plan

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h and lib is not None:
            lib.rl_api_plan_free(h)

    def stat(self, name):
        v = ctypes.c_double()
        check(lib.rl_api_plan_stat(self._h, name.encode(), ctypes.byref(v)))
        return v.value


class Attention:
    """One attention configuration (its options are fixed when it is made), with a C plan
    per shape, made on first use and kept (the last ``max_plans`` shapes).

    >>> att = Attention("linear", "elu1", "rope", causal=True)
    >>> out, saved = att.forward(q, k, v)
    >>> g = att.backward(dout, out, saved, q, k, v)      # Grads(dq, dk, dv, dt5, dlogf)
    """

    max_plans = 8

    def __init__(self, kind="softmax", feature_map="elu1", pe="none", **options):
        self._opts = _options(kind, feature_map, pe, options)
        self._plans = collections.OrderedDict()
        self._plans_lock = threading.Lock()
        self.t5_buckets = self._opts["t5_buckets"]
        self.bad_denominators = 0  #: of the last forward (linear attention)

    @property
    def options(self):
        """Every option's value (a copy: make a new Attention to change them)."""
        return self._opts.as_dict()

    def describe(self):
        return self._opts.describe()

    def __repr__(self):
        return f"ropelab.Attention({self.describe()})"

    def plan(self, H, N, d, dv):
        key = (H, N, d, dv, _lib.get_num_threads())
        with self._plans_lock:
            p = self._plans.pop(key, None) or _Plan(self._opts, H, N, d, dv)
            self._plans[key] = p
            while len(self._plans) > self.max_plans:
                self._plans.popitem(last=False)
        return p

    def _shape(self, q, k, v, t5, logf):
        """(H, N, d, dv, G), after checking every array against q."""
        if q.ndim < 2:
            raise ValueError(f"q: expected (..., N, d), got shape {q.shape}")
        N, d = q.shape[-2:]
        H = q.shape[-3] if q.ndim >= 3 else 1
        if k.shape != q.shape:
            raise ValueError(f"k: expected the shape of q {q.shape}, got {k.shape}")
        if v.ndim != q.ndim or v.shape[:-1] != q.shape[:-1]:
            raise ValueError(f"v: expected {q.shape[:-1] + ('dv',)}, got {v.shape}")
        if logf is not None and logf.shape != q.shape[:-1]:
            raise ValueError(f"logf: expected {q.shape[:-1]}, got {logf.shape}")
        if t5 is not None and t5.shape != (H, self.t5_buckets):
            raise ValueError(f"t5: expected ({H}, {self.t5_buckets}), got {t5.shape}")
        if q.size == 0:
            raise ValueError(f"q: empty shape {q.shape}")
        return H, N, d, v.shape[-1], q.size // (N * d)

    def forward(self, q, k, v, t5=None, logf=None):
        """(out, saved): saved (..., H, N) is what the backward reads back."""
        q, k, v, t5, logf = (_f32(x) for x in (q, k, v, t5, logf))
        H, N, d, dv, G = self._shape(q, k, v, t5, logf)
        plan = self.plan(H, N, d, dv)
        out = np.empty(q.shape[:-1] + (dv,), np.float32)
        saved = np.empty(q.shape[:-1], np.float32)
        with plan.lock:
            check(lib.rl_api_forward(plan._h, _ptr(out), _ptr(saved), _ptr(q), _ptr(k),
                                     _ptr(v), _ptr(t5), _ptr(logf), G))
            self.bad_denominators = int(plan.stat("bad_denominators"))
        return out, saved

    def backward(self, dout, out, saved, q, k, v, t5=None, logf=None):
        """Grads(dq, dk, dv, dt5, dlogf) from dout and the forward's out and saved."""
        q, k, v, t5, logf = (_f32(x) for x in (q, k, v, t5, logf))
        dout, out, saved = _f32(dout), _f32(out), _f32(saved)
        H, N, d, dv, G = self._shape(q, k, v, t5, logf)
        if dout.shape != v.shape or out.shape != v.shape or saved.shape != q.shape[:-1]:
            raise ValueError(f"dout, out: expected {v.shape} and saved {q.shape[:-1]}, got "
                             f"{dout.shape}, {out.shape}, {saved.shape}")
        g = Grads(np.empty_like(q), np.empty_like(k), np.empty_like(v),
                  None if t5 is None else np.zeros_like(t5),
                  None if logf is None else np.empty_like(logf))
        plan = self.plan(H, N, d, dv)
        with plan.lock:
            check(lib.rl_api_backward(plan._h, *(_ptr(x) for x in g), _ptr(dout), _ptr(out),
                                      _ptr(saved), _ptr(q), _ptr(k), _ptr(v), _ptr(t5),
                                      _ptr(logf), G))
        return g


_kernels = collections.OrderedDict()
_kernels_lock = threading.Lock()


def _kernel(kind, feature_map, pe, options):
    key = (kind, feature_map, pe) + tuple(sorted(options.items()))
    with _kernels_lock:
        a = _kernels.pop(key, None) or Attention(kind, feature_map, pe, **options)
        _kernels[key] = a
        while len(_kernels) > 16:
            _kernels.popitem(last=False)
    return a


def attention(q, k, v, t5=None, logf=None, *, kind="softmax", feature_map="elu1", pe="none",
              **options):
    """The attention output (..., H, N, dv) of q, k (..., H, N, d) and v (..., H, N, dv)."""
    return _kernel(kind, feature_map, pe, options).forward(q, k, v, t5, logf)[0]


def attention_grad(dout, q, k, v, t5=None, logf=None, *, kind="softmax", feature_map="elu1",
                   pe="none", **options):
    """Grads(dq, dk, dv, dt5, dlogf) of sum(dout * attention(q, k, v, ...))."""
    a = _kernel(kind, feature_map, pe, options)
    out, saved = a.forward(q, k, v, t5, logf)
    return a.backward(dout, out, saved, q, k, v, t5, logf)


class DecodeState:
    """Causal attention one token at a time (recurrent decoding) for H heads: a key/value
    cache for softmax attention, the O(1) state of RoFormer eq. 19 (and every variant)
    for linear attention.  ``step`` gives the row that the full forward computes for the
    same position.

    >>> st = DecodeState(4, 32, kind="linear", pe="rope")
    >>> o = st.step(q_m, k_m, v_m)        # (H, d), (H, d), (H, dv) -> (H, dv)

    With forget_gate=True every step takes the token's log forget values logf (H), each
    finite and <= 0; with pe='t5' the table t5 (H, t5_buckets).
    """

    def __init__(self, heads, d, dv=None, kind="softmax", feature_map="elu1", pe="none",
                 **options):
        options.setdefault("causal", True)
        self._opts = _options(kind, feature_map, pe, options)
        self.heads, self.d, self.dv = int(heads), int(d), int(d if dv is None else dv)
        self.t5_buckets = self._opts["t5_buckets"]
        self._h = ctypes.c_void_p()
        check(lib.rl_api_step_create(ctypes.byref(self._h), self._opts._h, self.heads, self.d,
                                     self.dv))
        self._lock = threading.Lock()

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h and lib is not None:
            lib.rl_api_step_free(h)

    def _stat(self, name):
        v = ctypes.c_double()
        check(lib.rl_api_step_stat(self._h, name.encode(), ctypes.byref(v)))
        return int(v.value)

    @property
    def position(self):
        """Tokens consumed: the position of the next step."""
        return self._stat("position")

    @property
    def state_bytes(self):
        return self._stat("state_bytes")

    @property
    def bad_denominators(self):
        """Heads of the last step whose linear denominator before eps was <= eps."""
        return self._stat("bad_denominators")

    def reset(self):
        with self._lock:
            lib.rl_api_step_reset(self._h)

    def step(self, q, k, v, t5=None, logf=None):
        """out (H, dv) for the token's q, k (H, d) and v (H, dv) (and its log forget
        values logf (H) with the forget gate); the position advances by one, except when
        the step is refused."""
        q, k, v, t5, logf = (_f32(x) for x in (q, k, v, t5, logf))
        H, d, dv = self.heads, self.d, self.dv
        if q.shape != (H, d) or k.shape != (H, d) or v.shape != (H, dv):
            raise ValueError(f"q, k: expected ({H}, {d}) and v ({H}, {dv}), got {q.shape}, "
                             f"{k.shape}, {v.shape}")
        if t5 is not None and t5.shape != (H, self.t5_buckets):
            raise ValueError(f"t5: expected ({H}, {self.t5_buckets}), got {t5.shape}")
        if logf is not None and logf.shape != (H,):
            raise ValueError(f"logf: expected ({H},), got {logf.shape}")
        out = np.empty((H, dv), np.float32)
        with self._lock:
            check(lib.rl_api_step_forward(self._h, _ptr(out), _ptr(q), _ptr(k), _ptr(v),
                                          _ptr(t5), _ptr(logf)))
        return out
