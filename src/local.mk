## src/local.mk -- libropelab and the ropelab program (included by ../Makefile.am).
lib_LTLIBRARIES += src/libropelab.la
src_libropelab_la_LDFLAGS = -version-info 0:0:0 $(AM_LDFLAGS)
src_libropelab_la_LIBADD  = $(BLIS_LIBS) $(FFTW3_LIBS) $(INIH_LIBS) $(OPENMP_CFLAGS)

## --- foundation ---
src_libropelab_la_SOURCES = \
	%D%/status.c %D%/status.h \
	%D%/gemm.c %D%/gemm.h \
	%D%/npy.c %D%/npy.h \
	%D%/util.c %D%/util.h

## --- position encodings and attention ---
src_libropelab_la_SOURCES += \
	%D%/rope.c %D%/rope.h \
	%D%/posbias.c %D%/posbias.h \
	%D%/featmap.c %D%/featmap.h \
	%D%/attn.h %D%/task.h %D%/model.h

## --- attention kernels: softmax (tiled) ---
## --- attention kernels: linear ---
## --- attention kernels: FFT Toeplitz / decayed scan ---

pkginclude_HEADERS += %D%/ropelab.h %D%/status.h %D%/gemm.h %D%/npy.h %D%/rope.h \
	%D%/posbias.h %D%/attn.h

bin_PROGRAMS += src/ropelab
src_ropelab_SOURCES = %D%/main.c %D%/cli.h %D%/cmd_run.c %D%/cmd_report.c %D%/cmd_attn.c %D%/cmd_bench.c
src_ropelab_LDADD   = src/libropelab.la $(OPENMP_CFLAGS)
