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
	%D%/attn.c %D%/attn.h %D%/task.h %D%/model.h

## --- attention kernels: softmax (tiled) ---
src_libropelab_la_SOURCES += %D%/attn_softmax.c %D%/attn_softmax.h %D%/vexp.c %D%/vexp.h \
	%D%/tilemm.c %D%/tilemm.h
## --- attention kernels: linear ---
src_libropelab_la_SOURCES += \
	%D%/attn_linear.c %D%/attn_linear.h %D%/attn_linear_impl.h \
	%D%/attn_linear_scan.c %D%/attn_linear_shen.c
## --- attention kernels: FFT Toeplitz / decayed scan ---
src_libropelab_la_SOURCES += \
	%D%/fft.c %D%/fft.h \
	%D%/attn_toeplitz.c %D%/attn_toeplitz.h %D%/attn_toeplitz_impl.h \
	%D%/attn_decay.c

## --- model and trainer (library) ---
src_libropelab_la_SOURCES += \
	%D%/rng.c %D%/rng.h %D%/json.c %D%/json.h \
	%D%/layers.c %D%/layers.h %D%/model.c \
	%D%/adamw.c %D%/adamw.h %D%/checkpoint.c %D%/checkpoint.h

## --- tasks ---
src_libropelab_la_SOURCES += \
	%D%/task.c %D%/task_impl.h %D%/task_seq.c %D%/task_mqar.c \
	%D%/task_listops.c %D%/task_charlm.c \
	%D%/task_tokens.c %D%/task_tokens.h
dist_noinst_DATA += data/kjv.txt data/README.md
dist_doc_DATA += docs/tasks.md

## --- config and training loop ---
src_libropelab_la_SOURCES += \
	%D%/cfg.c %D%/cfg_check.c %D%/cfg.h %D%/cfg_keys.h \
	%D%/train.c %D%/train_run.c %D%/train_io.c %D%/train_bench.c %D%/train.h %D%/train_impl.h
dist_doc_DATA += docs/config.md

## --- experiments: sweeps, reports, plots ---
src_libropelab_la_SOURCES += \
	%D%/sweep.c %D%/sweep.h %D%/experiment.c %D%/experiment.h \
	%D%/report.c %D%/report_table.c %D%/report_plot.c %D%/report.h %D%/report_impl.h

pkginclude_HEADERS += %D%/ropelab.h %D%/status.h %D%/gemm.h %D%/npy.h %D%/rope.h \
	%D%/posbias.h %D%/attn.h

bin_PROGRAMS += src/ropelab
src_ropelab_SOURCES = %D%/main.c %D%/cli.h %D%/cmd_run.c %D%/cmd_report.c %D%/cmd_attn.c %D%/cmd_bench.c
src_ropelab_LDADD   = src/libropelab.la $(OPENMP_CFLAGS)
