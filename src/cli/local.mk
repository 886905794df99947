## src/cli/local.mk -- the ropelab program: the only code that prints for users or exits.
bin_PROGRAMS += src/ropelab
src_ropelab_SOURCES = %D%/main.c %D%/cli.h %D%/opts.c %D%/opts.h \
	%D%/cmd_run.c %D%/cmd_report.c %D%/cmd_attn.c %D%/cmd_bench.c %D%/bench_train.c \
	%D%/cmd_eval.c %D%/cmd_generate.c %D%/bench_decode.c \
	%D%/interrupt.c %D%/interrupt.h %D%/datadir.c %D%/datadir.h
src_ropelab_LDADD   = src/libropelab_internal.la $(OPENMP_CFLAGS)
## the shipped experiments and data (experiments/local.mk), found by `ropelab run NAME`
src_ropelab_CPPFLAGS = $(AM_CPPFLAGS) -DRL_PKGDATADIR='"$(pkgdatadir)"'
