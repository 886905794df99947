## src/local.mk -- libropelab and the ropelab program (included by ../Makefile.am).
##
## The layers, each a libtool convenience library; calls and includes point down only
## (cli -> api -> experiment -> report -> config -> tasks -> model -> kernels -> core), which
## tests/t_layering.sh checks:
##   core        status, memory and files, generator, JSON, .npy, GEMM (the only
##               <blis.h>), tile GEMM, vector exp, FFT (the only <fftw3.h>)
##   kernels     RoPE, feature maps, position biases, every attention kernel
##   model       batch, layers, the transformer, AdamW, safetensors checkpoints
##   tasks       the data generators (copy, reverse, sort, MQAR, ListOps, passkey,
##               charlm, tokens) and their options
##   config      experiment files: INI reading, the key table and checks, sweeps
##   report      a finished run read back: combined results, tables, plots
##   experiment  the training loop, evaluation, the experiment runner, thread governor
##   api         the C interface for other programs (docs/api.md)
##   cli         the ropelab program: main, option helpers, one file per subcommand
include %D%/core/local.mk
include %D%/kernels/local.mk
include %D%/model/local.mk
include %D%/tasks/local.mk
include %D%/config/local.mk
include %D%/report/local.mk
include %D%/experiment/local.mk
include %D%/api/local.mk

## Two libraries of the same code:
## - libropelab_internal (not installed): the union of every library layer, with all of
##   its functions; the ropelab program and the tests link it (statically, as a libtool
##   convenience library), since they call the layers directly.
## - libropelab (installed): the API and the layers it uses, exporting the API's functions
##   only (rl_version and rl_api_*; tests/t_api_symbols.sh compares the list with
##   api/api.h), so that nothing else becomes an interface by accident.
noinst_LTLIBRARIES += src/libropelab_internal.la
src_libropelab_internal_la_SOURCES =
## (no sources of its own; the dummy only makes libtool link with the C compiler)
nodist_EXTRA_src_libropelab_internal_la_SOURCES = dummy.c
## the link order states the layering: upper layers first
src_libropelab_internal_la_LIBADD = src/api/libapi.la \
	src/experiment/libexperiment.la src/report/libreport.la \
	src/config/libconfig.la src/tasks/libtasks.la src/model/libmodel.la \
	src/kernels/libkernels.la src/core/libcore.la \
	$(BLIS_LIBS) $(FFTW3_LIBS) $(INIH_LIBS) $(MPI_LIBS) $(OPENMP_CFLAGS)

lib_LTLIBRARIES += src/libropelab.la
src_libropelab_la_SOURCES =
nodist_EXTRA_src_libropelab_la_SOURCES = dummy.c
## -version-info 1:0:0 -- the exports changed from every function to the API (soname .1)
src_libropelab_la_LDFLAGS = -version-info 1:0:0 -export-symbols-regex '^rl_(api_|version$$)' \
	$(AM_LDFLAGS)
src_libropelab_la_LIBADD  = src/api/libapi.la src/kernels/libkernels.la src/core/libcore.la \
	$(BLIS_LIBS) $(FFTW3_LIBS) $(MPI_LIBS) $(OPENMP_CFLAGS)

## installed headers: <ropelab/ropelab.h>, which includes <ropelab/api/api.h>
pkginclude_HEADERS += %D%/ropelab.h

include %D%/cli/local.mk
