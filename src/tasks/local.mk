## src/tasks/local.mk -- the task generators and their options (uses model/batch and core;
## never the configuration, which sits above).
noinst_LTLIBRARIES += src/tasks/libtasks.la
src_tasks_libtasks_la_SOURCES = \
	%D%/task_opts.c %D%/task_opts.h %D%/task_common.c %D%/task_common.h \
	%D%/task.c %D%/task.h \
	%D%/task_seq.c %D%/task_seq.h %D%/task_mqar.c %D%/task_mqar.h \
	%D%/task_listops.c %D%/task_listops.h %D%/task_charlm.c %D%/task_charlm.h \
	%D%/task_tokens.c %D%/task_tokens.h \
	%D%/task_passkey.c %D%/task_passkey.h
dist_noinst_DATA += data/kjv.txt data/kjv-full.txt data/README.md
dist_doc_DATA += docs/tasks.md
