## src/kernels/local.mk -- position encodings and attention kernels (uses core).
noinst_LTLIBRARIES += src/kernels/libkernels.la
src_kernels_libkernels_la_SOURCES = \
	%D%/rope.c %D%/rope.h \
	%D%/posbias.c %D%/posbias.h \
	%D%/featmap.c %D%/featmap.h \
	%D%/attn_opts.c %D%/attn_opts.h %D%/attn.c %D%/attn.h %D%/attn_impl.h \
	%D%/attn_run_softmax.c %D%/attn_run_linear.c \
	%D%/attn_softmax.c %D%/attn_softmax.h \
	%D%/attn_linear.c %D%/attn_linear.h %D%/attn_linear_impl.h \
	%D%/attn_linear_scan.c %D%/attn_linear_shen.c \
	%D%/attn_linear_plan.h %D%/attn_linear_gate.c %D%/attn_linear_quad.c %D%/attn_linear_split.c \
	%D%/attn_toeplitz.c %D%/attn_toeplitz.h %D%/attn_toeplitz_impl.h \
	%D%/attn_toeplitz_split.c \
	%D%/attn_step.c %D%/attn_step.h
## (the kernels headers are not installed: the library exports the API alone, src/api)
