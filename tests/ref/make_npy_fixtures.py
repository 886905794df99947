#!/usr/bin/python3
"""Write the tiny .npy fixtures of tests/t_npy.c with NumPy (run once; outputs committed).

Each array holds a pattern t_npy.c recomputes: value[i] = (i - 3) * 0.25 in C order.
Usage: /usr/bin/python3 tests/ref/make_npy_fixtures.py tests/data
"""
import io
import sys

import numpy as np
from numpy.lib import format as npf


def pattern(shape, dtype):
    n = int(np.prod(shape))
    return ((np.arange(n) - 3) * 0.25).astype(dtype).reshape(shape)


def save_version(path, arr, version):
    with open(path, "wb") as f:
        npf.write_array(f, arr, version=version)


def main(out):
    np.save(f"{out}/f32_v1.npy", pattern((2, 3, 4), np.float32))
    np.save(f"{out}/f64_v1.npy", pattern((5, 7), np.float64))
    save_version(f"{out}/f32_v2.npy", pattern((3, 2), np.float32), (2, 0))
    save_version(f"{out}/f32_v3.npy", pattern((4,), np.float32), (3, 0))
    np.save(f"{out}/f32_be.npy", pattern((2, 5), ">f4"))
    np.save(f"{out}/f32_scalar.npy", pattern((), np.float32))
    np.save(f"{out}/i32_tokens.npy", np.arange(12, dtype=np.int32).reshape(3, 4))
    np.save(f"{out}/i64_tokens.npy", np.arange(12, dtype=np.int64).reshape(3, 4))
    np.save(f"{out}/bad_fortran.npy", np.asfortranarray(pattern((3, 4), np.float32)))
    np.save(f"{out}/bad_dtype_f16.npy", pattern((2, 2), np.float16))
    np.save(f"{out}/bad_dtype_c64.npy", pattern((2, 2), np.complex64))
    buf = io.BytesIO()
    np.save(buf, pattern((4, 4), np.float32))
    raw = buf.getvalue()
    with open(f"{out}/bad_truncated.npy", "wb") as f:
        f.write(raw[:-5])
    with open(f"{out}/bad_oversized.npy", "wb") as f:
        f.write(raw + b"\0\0\0\0")
    with open(f"{out}/bad_magic.npy", "wb") as f:
        f.write(b"\x93NUMPZ" + raw[6:])


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data")
