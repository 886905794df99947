## src/config/local.mk -- experiment files: INI reading, the key table and its checks,
## sweeps (uses tasks, model, kernels, core).
noinst_LTLIBRARIES += src/config/libconfig.la
src_config_libconfig_la_SOURCES = \
	%D%/cfg.c %D%/cfg_check.c %D%/cfg_ckpt.c %D%/cfg_path.c %D%/cfg.h %D%/cfg_keys.h \
	%D%/sweep.c %D%/sweep.h
dist_doc_DATA += docs/config.md
