#!/bin/sh
# py_run.sh SCRIPT -- the log compiler of the Python tests (tests/t_py_*.py): runs SCRIPT
# with $PYTHON, or writes a TAP skip when there is no Python 3.7 or newer.  Each script
# skips on its own (1..0 # SKIP) without NumPy, PyTorch or the shared library.
if [ -z "${PYTHON:-}" ] || [ "$PYTHON" = no ] ||
   ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 7))' 2>/dev/null; then
    echo "1..0 # SKIP no Python 3.7 or newer (PYTHON='${PYTHON:-}')"
    exit 0
fi
# a library built with AddressSanitizer (configure --enable-sanitizers) cannot be loaded
# into a Python process whose runtime was not preloaded: skip there (t_api checks the C API
# in that build)
lib="${ROPELAB_LIBRARY:-.}/libropelab.so"
if [ -f "$lib" ] && nm -D "$lib" 2>/dev/null | grep -q ' __asan_init'; then
    echo "1..0 # SKIP $lib is built with AddressSanitizer: Python cannot load it without its runtime preloaded"
    exit 0
fi
exec "$PYTHON" "$@"
