## docs/local.mk -- documentation shipped in the tarball.
dist_doc_DATA += docs/attention.md docs/performance.md
