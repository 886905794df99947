#!/usr/bin/python3
"""install_check.py LIBDIR -- run by `make installcheck` with PYTHONPATH set to the
installed $(pythondir) alone: the installed package imports, finds the installed
libropelab under LIBDIR (not the build tree's), runs a kernel, and `import ropelab.torch`
works where PyTorch is installed."""
import os
import sys

import ropelab

libdir = os.path.realpath(sys.argv[1])
where = os.path.realpath(ropelab._lib.path)
if not where.startswith(libdir + os.sep):
    sys.exit(f"install_check.py: the installed package loaded {where}, not a library in {libdir}")
print(f"install_check.py: ropelab {ropelab.__version__} from {os.path.dirname(ropelab.__file__)} "
      f"loads {where}")
try:
    import numpy as np
except ImportError:
    print("install_check.py: NumPy not installed: the kernels are not run")
    sys.exit(0)
q = np.linspace(-1, 1, 2 * 8 * 4, dtype=np.float32).reshape(2, 8, 4)
o = ropelab.attention(q, q, q, kind="linear", pe="rope", causal=True)
if not np.allclose(o[:, 0], q[:, 0], rtol=1e-5, atol=1e-6):  # row 0 attends to itself
    sys.exit(f"install_check.py: linear attention's first row {o[:, 0]} is not v's {q[:, 0]}")
try:
    import torch  # noqa: F401
except ImportError:
    print("install_check.py: PyTorch not installed: ropelab.torch is not imported")
    sys.exit(0)
import ropelab.torch  # noqa: E402,F401
print("install_check.py: import ropelab.torch works")
