#!/usr/bin/python3
"""t_py_kernels.py -- every attention kernel through the Python package's NumPy functions
(ropelab.attention, ropelab.attention_grad) against the float64 NumPy reference of
tests/ref/attn_ref.py: the output within 1e-4 and every gradient (q, k, v, the T5 table,
the log forget values) within 1e-3 of the reference's central differences, relative to
the largest magnitude, for each attention kind, feature map and position encoding, causal
and not, with and without the forget gate; a batch as leading dimensions; the decoding
state against the full forward, with and without the forget gate; the binding's
refusals; Python threads sharing a plan."""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [here, os.path.join(here, "ref")]
import pytap as T  # noqa: E402

try:
    import numpy as np
except ImportError:
    T.skip_all("python3-numpy not installed")
try:
    import ropelab
except ImportError as e:
    T.skip_all(f"the ropelab package cannot load libropelab: {e}".replace("\n", " "))
import attn_ref  # noqa: E402

H, N, D, DV = 2, 7, 4, 3


def ref_opts(kind, fmap, pe, options):
    """The reference's option dict for the binding's options."""
    o = attn_ref.parse_opts([])
    o.update(attention=kind, feature_map=fmap, pe=pe, H=H)
    for name, value in options.items():
        o["forget" if name == "forget_gate" else name] = value
    return o


def inputs(seed, pe, options, lead=()):
    rng = np.random.default_rng(seed)
    x = {n: rng.standard_normal(lead + (H, N, w)).astype(np.float32)
         for n, w in (("q", D), ("k", D), ("v", DV), ("dout", DV))}
    x["t5"] = (0.5 * rng.standard_normal((H, options.get("t5_buckets", 32)))).astype(
        np.float32) if pe == "t5" else None
    x["logf"] = None
    if options.get("forget_gate"):  # log sigmoid of N(1, 1.5^2): gates from ~0.03 to ~1
        a = 1.0 + 1.5 * rng.standard_normal(lead + (H, N))
        x["logf"] = (-np.logaddexp(0.0, -a)).astype(np.float32)
        x["logf"][..., 0, N // 2] = 0.0  # a gate of exactly 1
    return x


def check(seed, kind, fmap="elu1", pe="none", **options):
    name = f"{kind}({fmap}) pe={pe} " + " ".join(f"{k}={v}" for k, v in options.items())
    x = inputs(seed, pe, options)
    args = dict(kind=kind, feature_map=fmap, pe=pe, **options)
    out = ropelab.attention(x["q"], x["k"], x["v"], x["t5"], x["logf"], **args)
    g = ropelab.attention_grad(x["dout"], x["q"], x["k"], x["v"], x["t5"], x["logf"], **args)
    o = ref_opts(kind, fmap, pe, options)
    arrs = {n: None if x[n] is None else x[n].astype(np.float64) for n in ("q", "k", "v", "t5", "logf")}
    T.close(out, attn_ref.forward(o, **arrs), 1e-4, f"{name}: forward")
    errs, dd = {}, x["dout"].astype(np.float64)
    for n, got in (("q", g.dq), ("k", g.dk), ("v", g.dv), ("t5", g.dt5), ("logf", g.dlogf)):
        if arrs[n] is not None:
            errs["d" + n] = T.scaled_error(got, attn_ref.fd_grad(o, arrs, n, dd))
    T.ok(max(errs.values()) <= 1e-3, f"{name}: gradients "
         + ", ".join(f"{k} {v:.1e}" for k, v in errs.items()) + " (tol 1e-3)")


def kernels():
    seed = 0
    rope_variants = [dict(), dict(rope_layout="halves", rope_base=50.0),
                     dict(rope_dims=2, rope_scale=2.0), dict(rope_ntk=4.0, rope_base=500.0)]
    for causal in (False, True):
        for kind, fmaps in (("softmax", ["elu1"]), ("linear", ["elu1", "softmax", "exp"])):
            for fmap in fmaps:
                pes = [("none", {})] + [("rope", r) for r in rope_variants]
                pes += [("t5", dict(t5_buckets=8, t5_max_distance=16)), ("alibi", {})]
                if kind == "linear":
                    pes += [("rope", dict(rope_place="input")),
                            ("rope", dict(rope_denominator="rotated", eps=0.1))]
                    if causal:
                        pes += [("alibi", dict(alibi_scan=True))]
                gates = (False, True) if causal else (False,)
                for pe, extra in pes:
                    for gate in gates:
                        plain_variant = pe == "rope" and extra and not (
                            "rope_place" in extra or "rope_denominator" in extra)
                        if gate and plain_variant:
                            continue  # the gate with RoPE's layouts and scalings: once is enough
                        seed += 1
                        opts = dict(extra, causal=causal)
                        if gate:
                            opts["forget_gate"] = True
                        check(seed, kind, fmap, pe, **opts)
    # YaRN (a ramp strictly between 0 and 1 at this base and L) and xPos
    check(100, "softmax", pe="rope", rope_yarn=4.0, rope_yarn_orig=1000, rope_base=100.0)
    check(101, "linear", "exp", pe="rope", rope_yarn=4.0, rope_yarn_orig=1000, rope_base=100.0,
          causal=True)
    check(102, "softmax", pe="rope", causal=True, xpos=True, xpos_scale_base=2.0)


def batch():
    """(B, H, N, d) inputs: each sequence as when called alone."""
    for kind, fmap, pe, options in (("softmax", "elu1", "alibi", dict(causal=True, forget_gate=True)),
                                    ("linear", "softmax", "rope", dict(causal=True)),
                                    ("linear", "exp", "t5", dict(t5_buckets=8, t5_max_distance=16))):
        x = inputs(7, pe, options, lead=(3,))
        args = dict(kind=kind, feature_map=fmap, pe=pe, **options)
        out = ropelab.attention(x["q"], x["k"], x["v"], x["t5"], x["logf"], **args)
        g = ropelab.attention_grad(x["dout"], x["q"], x["k"], x["v"], x["t5"], x["logf"], **args)
        err = 0.0
        for b in range(3):
            lf = None if x["logf"] is None else x["logf"][b]
            ob = ropelab.attention(x["q"][b], x["k"][b], x["v"][b], x["t5"], lf, **args)
            gb = ropelab.attention_grad(x["dout"][b], x["q"][b], x["k"][b], x["v"][b], x["t5"], lf,
                                        **args)
            err = max(err, T.scaled_error(out[b], ob), T.scaled_error(g.dq[b], gb.dq),
                      T.scaled_error(g.dv[b], gb.dv))
        T.ok(out.shape == (3, H, N, DV) and err <= 1e-6,
             f"{kind}({fmap}) {pe}: a batch of 3 = 3 calls of one sequence (err {err:.1e})")


def decoding():
    """The decoding state's steps against the full forward's rows, causal, every
    combination with a recurrence; linear attention with T5 is refused."""
    rng = np.random.default_rng(11)
    Nd = 19
    q, k = (rng.standard_normal((H, Nd, D)).astype(np.float32) for _ in range(2))
    v = rng.standard_normal((H, Nd, DV)).astype(np.float32)
    combos = [("softmax", "elu1", "none", {}), ("softmax", "elu1", "rope", {}),
              ("softmax", "elu1", "alibi", {}), ("softmax", "elu1", "t5", dict(t5_buckets=8, t5_max_distance=16))]
    for fmap in ("elu1", "softmax", "exp"):
        combos += [("linear", fmap, "none", {}), ("linear", fmap, "rope", {}),
                   ("linear", fmap, "rope", dict(rope_place="input")),
                   ("linear", fmap, "rope", dict(rope_denominator="rotated", eps=0.1)),
                   ("linear", fmap, "alibi", {})]
    t5 = (0.5 * rng.standard_normal((H, 8))).astype(np.float32)
    for kind, fmap, pe, options in combos:
        table = t5 if pe == "t5" else None
        full = ropelab.attention(q, k, v, table, kind=kind, feature_map=fmap, pe=pe, causal=True,
                                 **options)
        st = ropelab.DecodeState(H, D, DV, kind, fmap, pe, **options)
        rows = np.stack([st.step(q[:, m], k[:, m], v[:, m], table) for m in range(Nd)], axis=1)
        T.close(rows, full, 1e-4, f"decoding {kind}({fmap}) {pe} {options}: {Nd} steps = the forward"
                f" (position {st.position}, {st.state_bytes} bytes)")
    try:
        ropelab.DecodeState(H, D, DV, "linear", "elu1", "t5")
        T.ok(False, "linear attention with T5 has no recurrent step: not refused")
    except ropelab.InvalidArgument as e:
        T.ok("no recurrent form" in str(e), f"linear attention with T5 refused: {e}")
    decoding_gated(q, k, v, Nd, rng)


def decoding_gated(q, k, v, Nd, rng):
    """The forget gate in the decoding state: each step takes the token's log gates
    logf (H), and the rows equal the gated full forward's; a missing or positive logf is
    refused and leaves the state where it was."""
    a = 1.0 + 1.5 * rng.standard_normal((H, Nd))  # log sigmoid: gates from ~0.03 to ~1
    logf = (-np.logaddexp(0.0, -a)).astype(np.float32)
    logf[0, Nd // 2] = 0.0  # a gate of exactly 1
    combos = [("softmax", "elu1", "none"), ("softmax", "elu1", "rope"),
              ("linear", "elu1", "none"), ("linear", "elu1", "rope")]
    for kind, fmap, pe in combos:
        full = ropelab.attention(q, k, v, None, logf, kind=kind, feature_map=fmap, pe=pe,
                                 causal=True, forget_gate=True)
        st = ropelab.DecodeState(H, D, DV, kind, fmap, pe, forget_gate=True)
        rows = np.stack([st.step(q[:, m], k[:, m], v[:, m], logf=logf[:, m]) for m in range(Nd)],
                        axis=1)
        T.close(rows, full, 1e-4, f"decoding {kind}({fmap}) {pe} with the forget gate: {Nd} "
                f"steps = the gated forward (position {st.position})")
    st = ropelab.DecodeState(H, D, DV, "linear", "elu1", "rope", forget_gate=True)
    st.step(q[:, 0], k[:, 0], v[:, 0], logf=logf[:, 0])
    try:
        st.step(q[:, 1], k[:, 1], v[:, 1])
        T.ok(False, "a step without logf was accepted with forget_gate")
    except ropelab.InvalidArgument as e:
        T.ok("forget_gate needs the token's log forget values logf (H)" in str(e) and
             st.position == 1, f"a step without logf refused (position stays {st.position}): {e}")
    bad = np.array([-0.5, 0.25], np.float32)
    try:
        st.step(q[:, 1], k[:, 1], v[:, 1], logf=bad)
        T.ok(False, "a positive log gate was accepted by the decoding step")
    except ropelab.InvalidArgument as e:
        T.ok("logf[1] = 0.25" in str(e) and "finite and <= 0" in str(e) and st.position == 1,
             f"a positive log gate refused, named: {e}")
    bad[1] = np.nan
    try:
        st.step(q[:, 1], k[:, 1], v[:, 1], logf=bad)
        T.ok(False, "a NaN log gate was accepted by the decoding step")
    except ropelab.InvalidArgument as e:
        T.ok("logf[1] = nan" in str(e), f"a NaN log gate refused: {e}")
    plain = ropelab.DecodeState(H, D, DV, "linear", "elu1", "rope")
    try:
        plain.step(q[:, 0], k[:, 0], v[:, 0], logf=logf[:, 0])
        T.ok(False, "logf was accepted without forget_gate")
    except ropelab.InvalidArgument as e:
        T.ok("forget_gate is off" in str(e), f"logf without forget_gate refused: {e}")
    try:
        st.step(q[:, 1], k[:, 1], v[:, 1], logf=logf[:1, 1])
        T.ok(False, "logf of the wrong shape was accepted")
    except ValueError as e:
        T.ok("logf: expected (2,)" in str(e), f"logf's shape checked: {e}")


def refusals():
    q = np.zeros((H, N, D), np.float32)
    try:
        ropelab.attention(q, q, q, kind="linear", feature_map="exps")
        T.ok(False, "a misspelt feature map was accepted")
    except ropelab.InvalidArgument as e:
        T.ok("expected one of elu1, softmax, exp, got 'exps' (did you mean 'exp'?)" in str(e),
             f"misspelt feature map refused: {e}")
    try:
        ropelab.attention(q, q[:, :5], q)
        T.ok(False, "k of another shape was accepted")
    except ValueError as e:
        T.ok("k: expected the shape of q" in str(e), f"shapes checked: {e}")
    try:
        ropelab.attention(q, q, q, np.zeros((H, 32), np.float32), kind="linear")
        T.ok(False, "a table without pe=t5 was accepted")
    except ropelab.InvalidArgument as e:
        T.ok("a T5 table was given, but pe=none" in str(e), f"a T5 table without pe=t5 refused: {e}")
    lf = -np.ones((H, N), np.float32)
    lf[1, 2] = 0.25
    try:
        ropelab.attention(q, q, q, logf=lf, causal=True, forget_gate=True)
        T.ok(False, "a positive log gate was accepted")
    except ropelab.InvalidArgument as e:
        T.ok("logf[1, 2] = 0.25" in str(e), f"a positive log gate refused, named: {e}")
    a = ropelab.Attention("linear", "elu1", "rope", causal=True)
    o64 = a.forward(q.astype(np.float64) + 1, q + 1, q + 1)[0]
    T.ok(o64.dtype == np.float32, f"float64 inputs converted, float32 out; {a!r}")
    T.ok(a.options["rope_base"] == 10000 and a.options["causal"] is True,
         f"options read back typed: rope_base={a.options['rope_base']!r}")
    names = ropelab.Options.names()
    T.ok(len(names) == 20 and "forget_gate" in names and
         ropelab.Options.help("eps").startswith("eps: a number >= 0 (default 1e-06)"),
         f"{len(names)} option names; {ropelab.Options.help('eps')}")


def python_threads():
    """Several Python threads on one plan (the functions' cached kernel, one shape): each
    call waits for the plan's lock, and every result equals the same call made alone.
    (Without the lock, calls overlapping on one plan's scratch give wrong rows.)"""
    import threading
    rng = np.random.default_rng(5)
    for kind in ("softmax", "linear"):
        xs = [tuple(rng.standard_normal((H, 1024, 16)).astype(np.float32) for _ in range(3))
              for _ in range(4)]
        args = dict(kind=kind, feature_map="elu1", pe="rope", causal=True)
        alone = [ropelab.attention(*x, **args) for x in xs]
        bad = []

        def work(i):
            for r in range(15):
                j = (i + r) % len(xs)
                if not np.array_equal(ropelab.attention(*xs[j], **args), alone[j]):
                    bad.append((i, r))

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        T.ok(not bad, f"{kind}: 4 Python threads x 15 calls on one plan: every output = the "
             f"call alone ({len(bad)} differ)")


kernels()
batch()
decoding()
refusals()
python_threads()
T.done()
