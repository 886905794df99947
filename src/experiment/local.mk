## src/experiment/local.mk -- configs, tasks, training, sweeps, reports (uses model and below).
noinst_LTLIBRARIES += src/experiment/libexperiment.la
src_experiment_libexperiment_la_SOURCES = \
	%D%/cfg.c %D%/cfg_check.c %D%/cfg.h %D%/cfg_keys.h \
	%D%/task_opts.c %D%/task_opts.h %D%/task_common.c %D%/task_common.h \
	%D%/task.c %D%/task.h \
	%D%/task_seq.c %D%/task_seq.h %D%/task_mqar.c %D%/task_mqar.h \
	%D%/task_listops.c %D%/task_listops.h %D%/task_charlm.c %D%/task_charlm.h \
	%D%/task_tokens.c %D%/task_tokens.h \
	%D%/task_passkey.c %D%/task_passkey.h \
	%D%/train.c %D%/train_eval.c %D%/train_run.c %D%/train_io.c %D%/train_bench.c %D%/train.h %D%/train_impl.h \
	%D%/sweep.c %D%/sweep.h %D%/experiment.c %D%/experiment.h \
	%D%/evaluate.c %D%/evaluate.h \
	%D%/report_data.c %D%/report_data.h %D%/report_table.c %D%/report_table.h \
	%D%/report_plot.c %D%/report_plot.h %D%/report.c %D%/report.h
dist_noinst_DATA += data/kjv.txt data/kjv-full.txt data/README.md
dist_doc_DATA += docs/tasks.md docs/config.md
