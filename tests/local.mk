## tests/local.mk -- TAP tests run by `make check` through Automake's tap-driver.sh.
LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) $(top_srcdir)/build-aux/tap-driver.sh
AM_TESTS_ENVIRONMENT = \
	top_srcdir='$(top_srcdir)'; export top_srcdir; \
	top_builddir='$(top_builddir)'; export top_builddir; \
	ROPELAB='$(abs_top_builddir)/src/ropelab'; export ROPELAB; \
	PYTHON='$(PYTHON)'; export PYTHON; \
	OMP_PROC_BIND=true; export OMP_PROC_BIND;

noinst_LTLIBRARIES = tests/libtap.la
tests_libtap_la_SOURCES = %D%/tap.c %D%/tap.h
TEST_LIBS = tests/libtap.la src/libropelab.la -lm $(OPENMP_CFLAGS)

## --- foundation tests ---
check_PROGRAMS += tests/t_gemm tests/t_npy tests/t_rope
tests_t_gemm_LDADD = $(TEST_LIBS)
tests_t_npy_LDADD  = $(TEST_LIBS)
tests_t_rope_LDADD = $(TEST_LIBS)

## --- attention tests: softmax ---
## --- attention tests: linear ---
## --- attention tests: toeplitz ---

## script tests (TAP from shell)
dist_check_SCRIPTS = tests/t_cli.sh
TESTS = $(check_PROGRAMS) $(dist_check_SCRIPTS)

dist_noinst_SCRIPTS += tests/ref/make_npy_fixtures.py
