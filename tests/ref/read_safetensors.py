#!/usr/bin/env python3
"""read_safetensors.py FILE -- read a ropelab checkpoint with NumPy alone, as a Python user
would without the `safetensors` package, and print one line per tensor:

    name dtype shape(comma-separated) float64-sum first-value(repr)

then `__metadata__ step <value>`.  Exit status 77 (Automake's "skip") when NumPy is
missing.  Used by tests/t_checkpoint.c; the format is the Hugging Face safetensors one:
8-byte little-endian header length, JSON header, raw little-endian data."""
import json
import struct
import sys

try:
    import numpy as np
except ImportError:
    sys.exit(77)

DTYPES = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "I64": "<i8", "I32": "<i4", "U8": "u1"}


def main(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    data = blob[8 + n:]
    meta = header.pop("__metadata__", {})
    for name, t in header.items():
        b, e = t["data_offsets"]
        a = np.frombuffer(data[b:e], dtype=DTYPES[t["dtype"]]).reshape(t["shape"])
        first = repr(float(a.flat[0])) if a.size else "none"
        shape = ",".join(str(s) for s in t["shape"])
        print(name, t["dtype"], shape, repr(float(a.astype(np.float64).sum())), first)
    print("__metadata__ step", meta.get("step", ""))


if __name__ == "__main__":
    main(sys.argv[1])
