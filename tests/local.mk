## tests/local.mk -- TAP tests run by `make check` through Automake's tap-driver.sh.
LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) $(top_srcdir)/build-aux/tap-driver.sh
AM_TESTS_ENVIRONMENT = \
	top_srcdir='$(top_srcdir)'; export top_srcdir; \
	PYTHONPATH='$(abs_top_srcdir)/python'; export PYTHONPATH; \
	ROPELAB_LIBRARY='$(abs_top_builddir)/src/.libs'; export ROPELAB_LIBRARY; \
	PYTHONDONTWRITEBYTECODE=1; export PYTHONDONTWRITEBYTECODE; \
	top_builddir='$(top_builddir)'; export top_builddir; \
	ROPELAB='$(abs_top_builddir)/src/ropelab'; export ROPELAB; \
	PYTHON='$(PYTHON)'; export PYTHON; \
	OMP_PROC_BIND=true; export OMP_PROC_BIND;

noinst_LTLIBRARIES += tests/libtap.la
tests_libtap_la_SOURCES = %D%/tap.c %D%/tap.h
TEST_LIBS = tests/libtap.la src/libropelab_internal.la -lm $(OPENMP_CFLAGS)
## every test program links the same libraries (the program src/ropelab sets its own)
LDADD = $(TEST_LIBS)

## --- foundation tests ---
check_PROGRAMS += tests/t_gemm tests/t_npy tests/t_rope
check_PROGRAMS += tests/t_json tests/t_stats

## --- attention tests: softmax ---
check_PROGRAMS += tests/t_attn_softmax
## --- attention tests: linear ---
check_PROGRAMS += tests/t_attn_linear
## --- attention tests: YaRN and xPos ---
check_PROGRAMS += tests/t_attn_xpos
## --- attention tests: the forget gate through the entry points ---
check_PROGRAMS += tests/t_attn_forget
## --- attention tests: toeplitz ---
check_PROGRAMS += tests/t_attn_toeplitz

## --- model tests ---
check_PROGRAMS += tests/t_layers tests/t_adamw tests/t_model tests/t_checkpoint
dist_noinst_SCRIPTS += tests/ref/read_safetensors.py

## --- FLOP counts and the measured FMA peak ---
check_PROGRAMS += tests/t_flops

## --- generation: recurrent decoding ---
check_PROGRAMS += tests/t_decode

## --- task tests ---
check_PROGRAMS += tests/t_task

## --- the tables of the enumerated choices ---
check_PROGRAMS += tests/t_choice

## --- the C API, through the installed library's exports alone ---
check_PROGRAMS += tests/t_api
tests_t_api_LDADD = tests/libtap.la src/libropelab.la -lm

## --- config and training tests ---
check_PROGRAMS += tests/t_config tests/t_train tests/t_eval
check_PROGRAMS += tests/t_threads
dist_noinst_SCRIPTS += tests/ref/torch_train.py

## script tests (TAP from shell)
dist_check_SCRIPTS = tests/t_cli.sh tests/t_run.sh tests/t_attn_cli.sh tests/t_layering.sh tests/t_docs.sh
dist_check_SCRIPTS += tests/t_api_symbols.sh
EXTRA_DIST += tests/lib.sh
## the Python package's tests (python/, docs/python.md): each a TAP script run by
## tests/py_run.sh with $(PYTHON), skipped without NumPy or PyTorch
TEST_EXTENSIONS = .py
PY_LOG_DRIVER = $(LOG_DRIVER)
PY_LOG_COMPILER = $(SHELL) $(top_srcdir)/tests/py_run.sh
python_tests = tests/t_py_kernels.py tests/t_py_torch.py tests/t_py_train.py tests/t_py_runs.py
EXTRA_DIST += tests/py_run.sh tests/pytap.py $(python_tests)
TESTS = $(check_PROGRAMS) $(dist_check_SCRIPTS) $(python_tests)

dist_noinst_SCRIPTS += tests/ref/make_npy_fixtures.py tests/ref/attn_ref.py tests/ref/torch_attn_bench.py tests/ref/torch_train_bench.py \
	tests/ref/torch_attn_ref.py

## NumPy-written fixtures of t_npy (made once by tests/ref/make_npy_fixtures.py)
dist_check_DATA += \
	tests/data/bad_dtype_c64.npy \
	tests/data/bad_dtype_f16.npy \
	tests/data/bad_fortran.npy \
	tests/data/bad_magic.npy \
	tests/data/bad_oversized.npy \
	tests/data/bad_truncated.npy \
	tests/data/f32_be.npy \
	tests/data/f32_scalar.npy \
	tests/data/f32_v1.npy \
	tests/data/f32_v2.npy \
	tests/data/f32_v3.npy \
	tests/data/f64_v1.npy \
	tests/data/i32_tokens.npy \
	tests/data/i64_tokens.npy

## --- experiment tests ---
check_PROGRAMS += tests/t_sweep
dist_check_SCRIPTS += tests/t_experiment.sh tests/t_eval.sh tests/t_interrupt.sh
## summary.md over seeds: mean ± std and the significance marks
check_PROGRAMS += tests/t_report
dist_check_SCRIPTS += tests/t_seeds.sh

## --- scale-out under mpirun (skipped when built without MPI) ---
dist_check_SCRIPTS += tests/t_mpi_sweep.sh tests/t_mpi_dp.sh
dist_check_SCRIPTS += tests/t_generate.sh

## --- robustness: exact resume, refused inputs, parsers under damage ---
check_PROGRAMS += tests/t_rng
dist_check_SCRIPTS += tests/t_kill.sh
check_PROGRAMS += tests/t_ini
dist_check_SCRIPTS += tests/t_refuse.sh
dist_noinst_SCRIPTS += tests/bench_load.sh

## every shipped experiment at 1 and 16 threads, the same tensors and results (not part of
## make check: ~2 minutes on 2 cores; .ci/run runs it): `make check-threads`
dist_noinst_SCRIPTS += tests/shipped_threads.sh
check-threads: all
	top_srcdir=$(abs_top_srcdir) $(SHELL) $(srcdir)/tests/shipped_threads.sh $(abs_top_builddir)/src/ropelab 16
.PHONY: check-threads

## fuzz targets (libFuzzer through clang; not part of make check): `make fuzz` builds them
## and runs each for FUZZ_SECONDS (tests/fuzz/run.sh; README.md "Fuzzing")
FUZZ_SECONDS = 10
EXTRA_DIST += tests/fuzz/README.md tests/fuzz/build.sh tests/fuzz/run.sh \
	tests/fuzz/fuzz_npy.c tests/fuzz/fuzz_json.c tests/fuzz/fuzz_checkpoint.c tests/fuzz/fuzz_ini.c \
	tests/fuzz/corpus
fuzz: all
	$(SHELL) $(srcdir)/tests/fuzz/build.sh $(abs_top_builddir)
	$(SHELL) $(srcdir)/tests/fuzz/run.sh $(FUZZ_SECONDS) $(abs_top_builddir)
.PHONY: fuzz
