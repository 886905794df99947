"""Finding and loading libropelab, and the prototypes of its C API (ropelab/api/api.h).

The library is looked for, in this order:

1. ``ROPELAB_LIBRARY``: the path of the shared library (or of the folder holding it);
2. the build tree, when this package is the one in the source tree (``python/ropelab``
   beside ``src/``) and ropelab was built there: ``src/.libs/libropelab.so``;
3. where ``make install`` put it: the package records the installation's ``libdir``
   (``_config.py``, written at build time), tried first relative to the installed package
   (so a ``DESTDIR`` staging copy finds its own library), then as written;
4. the system's search (``ctypes.util.find_library("ropelab")``).
"""
import ctypes
import ctypes.util
import os
import sys

#: the RL_API_VERSION of the C header this module was written for
API_VERSION = 1

_P = ctypes.c_void_p
_I = ctypes.c_int
_S = ctypes.c_char_p
_D = ctypes.c_double
_Z = ctypes.c_size_t

#: name: (result type, argument types) for every exported function
_PROTOTYPES = {
    "rl_version": (_S, []),
    "rl_api_version": (_I, []),
    "rl_api_strerror": (_S, [_I]),
    "rl_api_last_error": (_S, []),
    "rl_api_threads_set": (_I, [_I]),
    "rl_api_threads_get": (_I, []),
    "rl_api_opts_create": (_I, [ctypes.POINTER(_P)]),
    "rl_api_opts_free": (None, [_P]),
    "rl_api_opts_set": (_I, [_P, _S, _S]),
    "rl_api_opts_set_number": (_I, [_P, _S, _D]),
    "rl_api_opts_get": (_I, [_P, _S, _S, _Z]),
    "rl_api_opts_name": (_S, [_I]),
    "rl_api_opts_help": (_I, [_S, _S, _Z]),
    "rl_api_opts_check": (_I, [_P, _I, _I, _I]),
    "rl_api_opts_describe": (_I, [_P, _S, _Z]),
    "rl_api_plan_create": (_I, [ctypes.POINTER(_P), _P, _I, _I, _I, _I]),
    "rl_api_plan_free": (None, [_P]),
    "rl_api_forward": (_I, [_P] * 8 + [_I]),
    "rl_api_backward": (_I, [_P] * 14 + [_I]),
    "rl_api_plan_stat": (_I, [_P, _S, ctypes.POINTER(_D)]),
    "rl_api_step_create": (_I, [ctypes.POINTER(_P), _P, _I, _I, _I]),
    "rl_api_step_free": (None, [_P]),
    "rl_api_step_reset": (None, [_P]),
    "rl_api_step_forward": (_I, [_P] * 7),
    "rl_api_step_stat": (_I, [_P, _S, ctypes.POINTER(_D)]),
}

#: the C API's error codes
EINVAL, ENOMEM, EIO, EFORMAT, ESHAPE, EFFT = 1, 2, 3, 4, 5, 6


class Error(RuntimeError):
    """A failure reported by libropelab: ``code`` (the C API's error code) and the
    library's message."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class InvalidArgument(Error, ValueError):
    """An invalid option, value, shape or input (RL_API_EINVAL)."""


def _file_names():
    if sys.platform == "darwin":
        return ["libropelab.dylib", "libropelab.1.dylib"]
    if sys.platform.startswith("win") or sys.platform == "cygwin":
        return ["libropelab-1.dll", "cygropelab-1.dll"]
    return ["libropelab.so", "libropelab.so.1"]


def _in(folder):
    return [os.path.join(folder, n) for n in _file_names()]


def candidates():
    """The paths tried, in order (see the module's help)."""
    paths = []
    env = os.environ.get("ROPELAB_LIBRARY")
    if env:
        paths += _in(env) if os.path.isdir(env) else [env]
    here = os.path.dirname(os.path.abspath(__file__))
    top = os.path.dirname(os.path.dirname(here))
    if os.path.isfile(os.path.join(top, "src", "api", "api.h")):
        paths += _in(os.path.join(top, "src", ".libs"))
    try:
        from . import _config
        rel = os.path.relpath(_config.LIBDIR, _config.PKGPYTHONDIR)
        paths += _in(os.path.normpath(os.path.join(here, rel))) + _in(_config.LIBDIR)
    except ImportError:
        pass
    found = ctypes.util.find_library("ropelab")
    if found:
        paths.append(found)
    return paths


def _load():
    tried = []
    for path in candidates():
        if os.path.sep in path and not os.path.exists(path):
            tried.append(path + " (missing)")
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({e})")
            continue
        for name, (res, args) in _PROTOTYPES.items():
            f = getattr(lib, name)
            f.restype, f.argtypes = res, args
        if lib.rl_api_version() != API_VERSION:
            raise ImportError(f"{path}: C API version {lib.rl_api_version()}, this package "
                              f"needs {API_VERSION}")
        return lib, path
    raise ImportError("libropelab not found; set ROPELAB_LIBRARY to its path. Tried:\n  "
                      + "\n  ".join(tried or ["(nothing)"]))


lib, path = _load()


def check(code):
    """Raises the library's error for a nonzero code."""
    if code:
        msg = lib.rl_api_last_error().decode("utf-8", "replace")
        if code == EINVAL:
            raise InvalidArgument(code, msg)
        if code == ENOMEM:
            raise MemoryError(msg)
        raise Error(code, f"{lib.rl_api_strerror(code).decode()}: {msg}")


def version():
    """The library's package version ("0.1.0")."""
    return lib.rl_version().decode()


def set_num_threads(n):
    """Threads of the kernels (0: the calling thread's OpenMP count).  Plans made before keep
    the count they were made with at most; results do not depend on it."""
    check(lib.rl_api_threads_set(int(n)))


def get_num_threads():
    return lib.rl_api_threads_get()
