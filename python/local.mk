## python/local.mk -- the Python package `ropelab` (docs/python.md): ctypes over the
## installed libropelab's C API, NumPy functions, PyTorch autograd functions and modules,
## readers of runs.  Installed by `make install` under $(pkgpythondir) (Automake's Python
## support, AM_PATH_PYTHON in configure.ac) when configure found a Python 3.7 or newer.
ropelab_python = %D%/ropelab/__init__.py %D%/ropelab/_lib.py %D%/ropelab/kernels.py \
	%D%/ropelab/torch.py %D%/ropelab/runs.py
if RL_PYTHON
pkgpython_PYTHON = $(ropelab_python)
## where `make install` puts the library, so that the installed package finds it
nodist_pkgpython_PYTHON = %D%/ropelab/_config.py
all-local: %D%/ropelab/_config.py
else
EXTRA_DIST += $(ropelab_python)
endif
%D%/ropelab/_config.py: Makefile
	$(AM_V_GEN)$(MKDIR_P) %D%/ropelab && { \
	  echo '"""Where make install puts libropelab and this package (written by make)."""'; \
	  echo 'LIBDIR = "$(libdir)"'; \
	  echo 'PKGPYTHONDIR = "$(pkgpythondir)"'; } > $@-t && mv -f $@-t $@
CLEANFILES += %D%/ropelab/_config.py
