## src/core/local.mk -- the foundation: no other layer below it.
noinst_LTLIBRARIES += src/core/libcore.la
src_core_libcore_la_SOURCES = \
	%D%/status.c %D%/status.h \
	%D%/util.c %D%/util.h \
	%D%/choice.c %D%/choice.h \
	%D%/rng.c %D%/rng.h \
	%D%/json.c %D%/json.h \
	%D%/npy.c %D%/npy.h \
	%D%/gemm.c %D%/gemm.h \
	%D%/threads.c %D%/threads.h %D%/init.c %D%/init.h \
	%D%/tilemm.c %D%/tilemm.h \
	%D%/vexp.c %D%/vexp.h %D%/vexp512.h \
	%D%/fft.c %D%/fft.h \
	%D%/peak.c %D%/peak.h \
	%D%/mpi.c %D%/mpi.h \
	%D%/crc32c.c %D%/crc32c.h \
	%D%/stats.c %D%/stats.h
## <mpi.h> only for core/mpi.c (MPI_CFLAGS is empty without MPI)
src_core_libcore_la_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
## (the core headers are not installed: the library exports the API alone, src/api)
