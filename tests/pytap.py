"""pytap.py -- TAP output for the Python tests (tests/t_py_*.py), as tests/tap.c does for the
C ones: one line per check, the numbers of a comparison as diagnostics, an exit status
that is 1 when any check failed."""
import sys

_n = 0
_failed = 0


def skip_all(reason):
    print(f"1..0 # SKIP {reason}")
    sys.exit(0)


def diag(msg):
    for line in str(msg).splitlines():
        print(f"# {line}")


def ok(cond, msg):
    global _n, _failed
    _n += 1
    print(f"{'ok' if cond else 'not ok'} {_n} - {msg}")
    _failed += not cond
    sys.stdout.flush()
    return bool(cond)


def skip(reason, msg):
    global _n
    _n += 1
    print(f"ok {_n} - {msg} # SKIP {reason}")


def scaled_error(got, want):
    """max |got - want| / max |want| (in float64)."""
    import numpy as np
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return float("inf")
    scale = max(float(np.abs(want).max()) if want.size else 0.0, 1e-30)
    return float(np.abs(got - want).max()) / scale if want.size else 0.0


def close(got, want, tol, msg):
    """The error relative to want's largest magnitude is at most tol."""
    err = scaled_error(got, want)
    return ok(err <= tol, f"{msg} (max|err|/max|ref| = {err:.2e}, tol {tol:g})")


def done():
    print(f"1..{_n}")
    sys.exit(1 if _failed else 0)
