"""Reading what ``ropelab run`` writes: results.csv, metrics.jsonl and checkpoints.

The tables come back as pandas DataFrames when pandas is installed (``pandas=None``, the
default, means "if available"), else as lists of dicts with numbers converted.  A
checkpoint is a safetensors file (8-byte little-endian header length, JSON header, raw
little-endian data) with PyTorch's conventions (``nn.Linear`` weights out x in); it comes
back as NumPy arrays by name with its metadata (step, the resolved configuration, the
generator state and one CRC-32C per tensor).
"""
import collections
import configparser
import csv
import io
import json
import os
import struct


def _pandas(pandas):
    if pandas is False:
        return None
    try:
        import pandas as pd
    except ImportError:
        if pandas:
            raise
        return None
    return pd


def _number(text):
    """A CSV cell: int, float, None for empty and n/a, else the text."""
    if text in ("", "n/a"):
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def _path(path, name):
    return os.path.join(path, name) if os.path.isdir(path) else path


def read_results(path, pandas=None):
    """results.csv of a run (the file, or the run's directory): one row per point and
    evaluation length; n/a and empty cells read as missing."""
    path = _path(path, "results.csv")
    pd = _pandas(pandas)
    if pd is not None:
        return pd.read_csv(path, na_values=["n/a"], keep_default_na=True)
    with open(path, newline="") as f:
        return [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(f)]


def read_metrics(path, pandas=None):
    """metrics.jsonl of a point (the file, or the point's directory): one record per logged
    update (step, loss, acc, lr, grad_norm, tokens_per_s, ...)."""
    path = _path(path, "metrics.jsonl")
    with open(path) as f:
        records = [json.loads(line) for line in f if line.strip()]
    pd = _pandas(pandas)
    return pd.DataFrame.from_records(records) if pd is not None else records


_DTYPES = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "BF16": None, "I64": "<i8", "I32": "<i4",
           "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?"}

Checkpoint = collections.namedtuple("Checkpoint", "tensors metadata step config")
Checkpoint.__doc__ = """tensors: name -> NumPy array (model parameters, and the AdamW moments
as optim.m.<name> / optim.v.<name>); metadata: the header's __metadata__ strings; step: the
updates done; config: the resolved configuration (configparser), or None."""


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = None


def crc32c(data, crc=0):
    """CRC-32C (Castagnoli) of bytes, as ropelab stores per tensor (pure Python: about a
    megabyte per second)."""
    global _CRC_TABLE
    if _CRC_TABLE is None:
        _CRC_TABLE = _crc32c_table()
    t, c = _CRC_TABLE, crc ^ 0xFFFFFFFF
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def _header(raw, path):
    if len(raw) < 8:
        raise ValueError(f"{path}: not a safetensors file (shorter than its header length)")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        raise ValueError(f"{path}: header length {n} beyond the file's {len(raw)} bytes")
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    return header, memoryview(raw)[8 + n:]


def read_checkpoint(path, verify=False):
    """A ropelab checkpoint (checkpoints/step-<k>.safetensors) as a Checkpoint.  With
    verify, every tensor's CRC-32C is checked against the metadata (ValueError on damage)."""
    import numpy as np
    with open(path, "rb") as f:
        raw = f.read()
    header, data = _header(raw, path)
    meta = header.pop("__metadata__", {}) or {}
    tensors = collections.OrderedDict()
    for name, t in header.items():
        b, e = t["data_offsets"]
        if not 0 <= b <= e <= len(data) or _DTYPES.get(t["dtype"]) is None:
            raise ValueError(f"{path}: tensor {name!r}: offsets {b}..{e} or dtype "
                             f"{t['dtype']!r} unreadable")
        if verify and f"crc32c.{name}" in meta:
            got = crc32c(data[b:e])
            if f"{got:08x}" != meta[f"crc32c.{name}"]:
                raise ValueError(f"{path}: tensor {name!r}: checksum mismatch (stored "
                                 f"{meta[f'crc32c.{name}']}, data {got:08x}): damaged")
        a = np.frombuffer(data[b:e], dtype=_DTYPES[t["dtype"]]).reshape(t["shape"])
        tensors[name] = a.copy()
    config = None
    if meta.get("config"):
        config = configparser.ConfigParser(inline_comment_prefixes=(";", "#"))
        config.read_file(io.StringIO(meta["config"]))
    step = int(meta["step"]) if meta.get("step", "").isdigit() else None
    return Checkpoint(tensors, meta, step, config)


def model_tensors(checkpoint):
    """The model's parameters only (without the optimizer's moments), by name."""
    return collections.OrderedDict((k, v) for k, v in checkpoint.tensors.items()
                                   if not k.startswith("optim."))
