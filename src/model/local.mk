## src/model/local.mk -- the transformer, its optimizer and checkpoints (uses kernels, core).
noinst_LTLIBRARIES += src/model/libmodel.la
src_model_libmodel_la_SOURCES = \
	%D%/batch.c %D%/batch.h \
	%D%/layers.c %D%/layers.h %D%/heads.c %D%/heads.h %D%/forget.c %D%/forget.h \
	%D%/model.c %D%/model.h %D%/model_impl.h %D%/model_step.c %D%/flops.c %D%/flops.h \
	%D%/model_mem.c \
	%D%/adamw.c %D%/adamw.h \
	%D%/checkpoint.c %D%/checkpoint.h \
	%D%/decode.c %D%/decode.h \
	%D%/sample.c %D%/sample.h
