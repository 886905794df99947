## src/local.mk -- libropelab and the ropelab program (included by ../Makefile.am).
##
## The layers, each a libtool convenience library; calls and includes point down only
## (cli -> experiment -> report -> config -> tasks -> model -> kernels -> core), which tests/t_layering.sh checks:
##   core        status, memory and files, generator, JSON, .npy, GEMM (the only
##               <blis.h>), tile GEMM, vector exp, FFT (the only <fftw3.h>)
##   kernels     RoPE, feature maps, position biases, every attention kernel
##   model       batch, layers, the transformer, AdamW, safetensors checkpoints
##   tasks       the data generators (copy, reverse, sort, MQAR, ListOps, passkey,
##               charlm, tokens) and their options
##   config      experiment files: INI reading, the key table and checks, sweeps
##   report      a finished run read back: combined results, tables, plots
##   experiment  the training loop, evaluation, the experiment runner, thread governor
##   cli         the ropelab program: main, option helpers, one file per subcommand
## libropelab is the union of the library layers.
include %D%/core/local.mk
include %D%/kernels/local.mk
include %D%/model/local.mk
include %D%/tasks/local.mk
include %D%/config/local.mk
include %D%/report/local.mk
include %D%/experiment/local.mk

lib_LTLIBRARIES += src/libropelab.la
src_libropelab_la_SOURCES =
## (no sources of its own; the dummy only makes libtool link with the C compiler)
nodist_EXTRA_src_libropelab_la_SOURCES = dummy.c
src_libropelab_la_LDFLAGS = -version-info 0:0:0 $(AM_LDFLAGS)
## the link order states the layering: upper layers first
src_libropelab_la_LIBADD  = src/experiment/libexperiment.la src/report/libreport.la \
	src/config/libconfig.la src/tasks/libtasks.la src/model/libmodel.la \
	src/kernels/libkernels.la src/core/libcore.la \
	$(BLIS_LIBS) $(FFTW3_LIBS) $(INIH_LIBS) $(MPI_LIBS) $(OPENMP_CFLAGS)

## installed headers: <ropelab/ropelab.h> and the layer folders it includes
pkginclude_HEADERS += %D%/ropelab.h

include %D%/cli/local.mk
