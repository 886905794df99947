## experiments/local.mk -- shipped experiment configurations (docs/experiments.md) and the
## data they read, installed in $(pkgdatadir)/experiments and $(pkgdatadir)/data: the same
## layout as the source tree, so the files' relative paths (../data/kjv.txt) hold in both,
## and `ropelab run NAME` finds $(pkgdatadir)/experiments/NAME.ini.
experimentsdir = $(pkgdatadir)/experiments
shipdatadir = $(pkgdatadir)/data
dist_shipdata_DATA = data/kjv.txt data/kjv-full.txt data/README.md
dist_experiments_DATA = \
	experiments/quickstart.ini \
	experiments/long_copy.ini experiments/long_reverse.ini experiments/long_sort.ini \
	experiments/long_listops.ini experiments/long_charlm.ini \
	experiments/rope_linear_place.ini experiments/rope_linear_denominator.ini \
	experiments/rope_linear_pe.ini experiments/rope_linear_base.ini \
	experiments/rope_extend.ini \
	experiments/rope_linear_charlm.ini experiments/rope_linear_charlm_den.ini
dist_experiments_DATA += \
	experiments/rope_extend_seeds.ini experiments/rope_extend_xpos.ini \
	experiments/passkey.ini experiments/passkey_seeds.ini experiments/passkey_xpos.ini \
	experiments/passkey_finetune_pi.ini experiments/passkey_finetune_yarn.ini \
	experiments/passkey_finetune_plain.ini
dist_experiments_DATA += experiments/quickstart_seeds.ini
dist_experiments_DATA += experiments/passkey_linear_rope.ini experiments/passkey_linear_rope_den.ini
dist_experiments_DATA += experiments/forget.ini experiments/forget_passkey.ini
dist_experiments_DATA += experiments/mqar.ini
