#!/usr/bin/python3
"""t_py_runs.py -- the Python package's readers of what `ropelab run` writes, on a tiny run
made here with the built program (a sweep of two points, pe = none and rope, two updates
each), against the same files parsed independently in this test: results.csv with the
csv module (every cell: n/a and empty as missing, numbers as numbers, text as written),
metrics.jsonl line by line with json, a checkpoint by a minimal safetensors parse (the
8-byte little-endian header length, the JSON header, each tensor's bytes as NumPy reads
them), its metadata and configuration, CRC-32C verification (a damaged byte is caught),
pandas DataFrames where pandas is installed, and the checkpoint as a PyTorch state_dict
where torch is."""
import configparser
import csv
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [here]
import pytap as T  # noqa: E402

try:
    import numpy as np
except ImportError:
    T.skip_all("python3-numpy not installed")
try:
    import ropelab
except ImportError as e:
    T.skip_all(f"the ropelab package cannot load libropelab: {e}".replace("\n", " "))

ROPELAB = os.environ.get("ROPELAB", os.path.join(os.path.dirname(here), "src", "ropelab"))
ROPELAB = os.path.abspath(ROPELAB)
if not os.access(ROPELAB, os.X_OK):
    T.skip_all(f"the ropelab program is not built ({ROPELAB})")

# the small experiment the run tests share (tests/lib.sh's tiny_ini), swept over two PEs
INI = """[experiment]
name = tiny
[model]
d_model = 16
heads = 2
layers = 1
attention = linear
[task]
name = copy
length = 8
[train]
steps = 2
batch = 2
log_every = 1
[eval]
batches = 1
[sweep]
model.pe = none, rope
"""
POINTS = ("pe=none", "pe=rope")


def run(tmp):
    ini = os.path.join(tmp, "tiny.ini")
    with open(ini, "w") as f:
        f.write(INI)
    env = dict(os.environ, OMP_NUM_THREADS="1", ROPELAB_GNUPLOT="none")
    r = subprocess.run([ROPELAB, "run", ini, "--out", os.path.join(tmp, "runs"), "--threads",
                        "1", "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, env=env)
    d = os.path.join(tmp, "runs", "tiny")
    made = all(os.path.isfile(os.path.join(d, p, "metrics.jsonl")) for p in POINTS)
    if not T.ok(r.returncode == 0 and made and os.path.isfile(os.path.join(d, "results.csv")),
                f"ropelab run: a sweep of {len(POINTS)} points, 2 updates each (exit "
                f"{r.returncode})"):
        T.diag(r.stderr[-2000:])
        T.done()
    return d


def cell(text):
    """What a results.csv cell should read as, decided here: missing, a number, or text."""
    if text in ("", "n/a"):
        return None
    try:
        return float(text)
    except ValueError:
        return text


def same_cell(got, text):
    want = cell(text)
    if want is None or isinstance(want, str):
        return got == want
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        return False
    return (math.isnan(want) and math.isnan(got)) or got == want


def csv_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def results(d):
    path = os.path.join(d, "results.csv")
    raw = csv_rows(path)
    for where in (d, path):
        rows = ropelab.read_results(where, pandas=False)
        bad = [(i, k, r[k], w[k]) for i, (r, w) in enumerate(zip(rows, raw)) for k in w
               if not same_cell(r.get(k), w[k])]
        T.ok(len(rows) == len(raw) >= 2 and [list(r) for r in rows] == [list(w) for w in raw]
             and not bad, f"read_results({os.path.basename(where)}): {len(rows)} rows, "
             f"{len(raw[0])} columns, every cell as the csv module reads it"
             + (f"; first difference {bad[0]}" if bad else ""))
    T.ok(sorted({r["pe"] for r in rows}) == ["none", "rope"] and
         all(isinstance(r["length"], int) for r in rows),
         f"read_results: both points' rows, lengths as integers ({rows[0]['length']!r})")
    na = os.path.join(d, "na.csv")
    with open(na, "w") as f:
        f.write("pe,length,acc,note\nlearned,128,n/a,learned PE has max_len rows\n"
                "rope,64,,\n")
    got = ropelab.read_results(na, pandas=False)
    T.ok([r["acc"] for r in got] == [None, None] and got[1]["note"] is None and
         got[0]["note"] == "learned PE has max_len rows" and got[0]["length"] == 128,
         f"read_results: n/a and empty cells read as None, text kept ({got[0]})")
    return raw


def metrics(d):
    for p in POINTS:
        path = os.path.join(d, p, "metrics.jsonl")
        with open(path) as f:
            want = [json.loads(line) for line in f if line.strip()]
        got = ropelab.read_metrics(os.path.join(d, p), pandas=False)
        T.ok(got == want and ropelab.read_metrics(path, pandas=False) == want and
             [r["step"] for r in got] == [1, 2] and all("loss" in r for r in got),
             f"read_metrics({p}): {len(got)} records, as json reads each line "
             f"(fields {', '.join(sorted(got[0]))})")


def parse_safetensors(path):
    """(header without __metadata__, metadata, {name: array}): the file's own layout."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    data = raw[8 + n:]
    dtypes = {"F32": "<f4", "F64": "<f8", "I64": "<i8", "I32": "<i4", "U8": "u1"}
    arrays = {}
    for name, t in header.items():
        b, e = t["data_offsets"]
        arrays[name] = np.frombuffer(data[b:e], dtype=dtypes[t["dtype"]]).reshape(t["shape"])
    return header, meta, arrays


def checkpoint(d):
    folder = os.path.join(d, "pe=rope", "checkpoints")
    names = sorted(os.listdir(folder))
    path = os.path.join(folder, "step-2.safetensors")
    T.ok("step-2.safetensors" in names, f"checkpoints of pe=rope: {', '.join(names)}")
    header, meta, want = parse_safetensors(path)
    ck = ropelab.read_checkpoint(path, verify=True)
    diff = [n for n in want if n not in ck.tensors or ck.tensors[n].dtype != want[n].dtype
            or ck.tensors[n].shape != want[n].shape
            or not np.array_equal(ck.tensors[n], want[n])]
    T.ok(list(ck.tensors) == list(want) and not diff and len(want) > 10,
         f"read_checkpoint: {len(want)} tensors, names in the header's order, dtypes, shapes "
         f"and every value as the file holds them" + (f"; differ: {diff[:3]}" if diff else ""))
    T.ok(ck.metadata == meta and ck.step == int(meta["step"]) == 2,
         f"metadata: {len(meta)} entries as in the header, step {ck.step}")
    cfg = configparser.ConfigParser(inline_comment_prefixes=(";", "#"))
    cfg.read_string(meta["config"])
    T.ok(isinstance(ck.config, configparser.ConfigParser) and
         ck.config["model"]["pe"] == cfg["model"]["pe"] == "rope" and
         ck.config["model"]["d_model"] == "16" and
         {s: dict(ck.config[s]) for s in ck.config.sections()} ==
         {s: dict(cfg[s]) for s in cfg.sections()},
         f"config: the resolved configuration, {len(cfg.sections())} sections "
         f"([model] pe = {ck.config['model']['pe']})")
    model = ropelab.model_tensors(ck)
    optim = [n for n in want if n.startswith("optim.")]
    T.ok(list(model) == [n for n in want if not n.startswith("optim.")] and
         len(optim) == 2 * len(model) and
         all(f"optim.m.{n}" in want and f"optim.v.{n}" in want for n in model),
         f"model_tensors: {len(model)} parameters; the file also holds their "
         f"{len(optim)} AdamW moments")
    T.ok(ropelab.crc32c(b"123456789") == 0xE3069283 and ropelab.crc32c(b"") == 0,
         "crc32c: the Castagnoli check value e3069283")
    last = max(header, key=lambda n: header[n]["data_offsets"][1])
    crc = ropelab.crc32c(want[last].tobytes())
    T.ok(meta.get(f"crc32c.{last}") == f"{crc:08x}",
         f"crc32c of {last}'s bytes = the stored {meta.get(f'crc32c.{last}')}")
    damaged(d, path, last)
    return path, want


def damaged(d, path, last):
    with open(path, "rb") as f:
        raw = bytearray(f.read())
    raw[-3] ^= 0x10  # inside the last tensor's data
    bad = os.path.join(d, "damaged.safetensors")
    with open(bad, "wb") as f:
        f.write(raw)
    ropelab.read_checkpoint(bad)  # read without verify: no check
    try:
        ropelab.read_checkpoint(bad, verify=True)
        T.ok(False, "a damaged byte was not caught")
    except ValueError as e:
        T.ok("checksum mismatch" in str(e) and repr(last) in str(e),
             f"a damaged byte caught by verify=True: {e}")
    with open(bad, "wb") as f:
        f.write(raw[:5])
    try:
        ropelab.read_checkpoint(bad)
        T.ok(False, "a truncated file was read")
    except ValueError as e:
        T.ok("not a safetensors file" in str(e), f"a truncated file refused: {e}")


def frames(d, raw):
    try:
        import pandas  # noqa: F401
    except ImportError:
        try:
            ropelab.read_results(d, pandas=True)
            T.ok(False, "pandas=True without pandas did not raise")
        except ImportError:
            T.ok(True, "pandas=True without pandas raises ImportError")
        got = ropelab.read_results(d)
        T.ok(isinstance(got, list), "without pandas the default is a list of dicts")
        T.skip("pandas not installed", "read_results / read_metrics as DataFrames")
        return
    df, mf = ropelab.read_results(d), ropelab.read_metrics(os.path.join(d, "pe=rope"))
    T.ok(list(df.columns) == list(raw[0]) and len(df) == len(raw) and
         list(mf["step"]) == [1, 2], f"DataFrames with pandas: {df.shape}, {mf.shape}")
    T.ok(ropelab.read_results(os.path.join(d, "na.csv"))["acc"].isna().all(),
         "n/a is missing (NaN) in pandas too")


def state_dict(path, want):
    try:
        import torch
        import ropelab.torch as rt
    except ImportError:
        T.skip("python3-torch not installed", "load_state_dict")
        return
    sd = rt.load_state_dict(path)
    full = rt.load_state_dict(path, optimizer=True, verify=True)
    T.ok(list(full) == list(want) and all(isinstance(t, torch.Tensor) and
                                          np.array_equal(t.numpy(), want[n])
                                          for n, t in full.items()) and
         list(sd) == [n for n in want if not n.startswith("optim.")],
         f"load_state_dict: {len(sd)} tensors ({len(full)} with optimizer=True), the file's "
         "values")
    w = [n for n in sd if n.endswith(".weight") and sd[n].dim() == 2 and
         n.replace(".weight", ".bias") in sd][0]
    b = w.replace(".weight", ".bias")
    lin = torch.nn.Linear(sd[w].shape[1], sd[w].shape[0])
    lin.load_state_dict({"weight": sd[w], "bias": sd[b]})
    x = torch.randn(3, sd[w].shape[1])
    T.ok(torch.allclose(lin(x), x @ sd[w].T + sd[b]),
         f"nn.Linear({sd[w].shape[1]}, {sd[w].shape[0]}) loads {w} (out x in)")


tmp = tempfile.mkdtemp(prefix="t_py_runs.")
try:
    d = run(tmp)
    raw = results(d)
    metrics(d)
    frames(d, raw)
    state_dict(*checkpoint(d))
finally:
    shutil.rmtree(tmp)
T.done()
