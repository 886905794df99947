## src/api/local.mk -- the C API for other programs (uses kernels and core): options by
## name, plans, forward and backward, the decoding step; its functions are the only
## symbols the installed libropelab exports (src/local.mk).
noinst_LTLIBRARIES += src/api/libapi.la
src_api_libapi_la_SOURCES = %D%/api.c %D%/api_opts.c %D%/api_step.c %D%/api.h %D%/api_impl.h
ropelab_apidir = $(pkgincludedir)/api
ropelab_api_HEADERS = %D%/api.h
