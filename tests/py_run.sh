#!/bin/sh
# py_run.sh SCRIPT -- the log compiler of the Python tests (tests/t_py_*.py): runs SCRIPT
# with $PYTHON, or writes a TAP skip when there is no Python 3.7 or newer.  Each script
# skips on its own (1..0 # SKIP) without NumPy, PyTorch or the shared library.
if [ -z "${PYTHON:-}" ] || [ "$PYTHON" = no ] ||
   ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 7))' 2>/dev/null; then
    echo "1..0 # SKIP no Python 3.7 or newer (PYTHON='${PYTHON:-}')"
    exit 0
fi
exec "$PYTHON" "$@"
