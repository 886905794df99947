## src/experiment/local.mk -- the training loop, evaluation, the experiment runner and the
## thread governor (uses report, config, tasks, model and below).
noinst_LTLIBRARIES += src/experiment/libexperiment.la
src_experiment_libexperiment_la_SOURCES = \
	%D%/governor.c %D%/governor.h \
	%D%/train.c %D%/train_eval.c %D%/train_run.c %D%/train_io.c %D%/train_bench.c %D%/train.h %D%/train_impl.h \
	%D%/experiment.c %D%/experiment.h \
	%D%/evaluate.c %D%/evaluate.h
