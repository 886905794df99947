## docs/local.mk -- documentation shipped in the tarball.
dist_doc_DATA += docs/attention.md docs/attention_softmax.md docs/attention_linear.md \
	docs/attention_toeplitz.md docs/model.md docs/performance.md docs/results.md docs/api.md
## --- experiments ---
dist_doc_DATA += docs/experiments.md
dist_noinst_DATA += docs/img/rope_decay.svg
