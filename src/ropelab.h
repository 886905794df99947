/* ropelab.h -- the installed header of libropelab: position encodings (RoPE and its linear
 * attention form, RoFormer eq. 19; T5, ALiBi, the forget gate) in softmax and linear
 * attention, for other programs.  It declares the C API (api/api.h, docs/api.md), the
 * only interface the shared library exports. */
#ifndef ROPELAB_H
#define ROPELAB_H

#include "api/api.h"

#endif
