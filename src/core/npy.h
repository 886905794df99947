/* npy.h -- NumPy .npy files (format versions 1.0, 2.0, 3.0), how ropelab exchanges arrays.
 *
 * Read: little- or big-endian float32/float64 ('<f4' '<f8' '>f4' '>f8') and int32/int64
 * ('<i4' '<i8'), C order only; Fortran order, other dtypes, malformed headers, and data
 * shorter or longer than the shape says are rejected with RL_EFORMAT and a message.
 * Write: version 1.0 (2.0 when the header needs it), '<f4' or '<f8', C order, written to
 * a temporary file and renamed into place. */
#ifndef RL_NPY_H
#define RL_NPY_H

#include <stddef.h>
#include <stdint.h>
#include "status.h"

#define RL_NPY_MAX_DIMS 8

enum rl_npy_dtype { RL_NPY_F32, RL_NPY_F64, RL_NPY_I32, RL_NPY_I64 };

struct rl_npy {
    enum rl_npy_dtype dtype;
    int               ndim;
    int64_t           shape[RL_NPY_MAX_DIMS];
    size_t            count; /* product of shape */
    void             *data;  /* count elements of dtype, native byte order; owned */
};

/* Read a whole file.  On error *a is left empty and the message names the file. */
rl_status rl_npy_read(struct rl_npy *a, const char *path);
/* Parse from memory (used by rl_npy_read and the tests). */
rl_status rl_npy_parse(struct rl_npy *a, const unsigned char *buf, size_t len, const char *name);
void      rl_npy_free(struct rl_npy *a);

/* Read a float32 file (float64 is converted) and check its rank.  *out is malloc'ed. */
rl_status rl_npy_read_f32(float **out, int64_t *shape, int ndim, const char *path);

rl_status rl_npy_write_f32(const char *path, const float *data, int ndim, const int64_t *shape);
rl_status rl_npy_write_f64(const char *path, const double *data, int ndim, const int64_t *shape);

#endif
