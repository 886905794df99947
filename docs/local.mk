## docs/local.mk -- documentation shipped in the tarball.
dist_doc_DATA += docs/attention.md docs/attention_softmax.md docs/attention_linear.md \
	docs/attention_toeplitz.md docs/model.md docs/performance.md docs/results.md \
	docs/architecture.md docs/api.md docs/python.md
## --- experiments ---
dist_doc_DATA += docs/experiments.md docs/evaluation.md
dist_noinst_DATA += docs/img/rope_decay.svg docs/img/charlm_position.svg
## --- scale-out (MPI) ---
dist_doc_DATA += docs/scale-out.md
## --- generation ---
dist_doc_DATA += docs/generation.md
dist_noinst_DATA += docs/img/decode.svg
## --- the forget gate as a position encoding (docs/results.md section 12) ---
dist_noinst_DATA += docs/img/forget_position.svg
