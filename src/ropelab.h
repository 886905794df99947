/* ropelab.h -- umbrella header of libropelab: position encodings (RoPE, sinusoidal,
 * learned, T5, ALiBi) in softmax and linear attention, with a small trainer. */
#ifndef ROPELAB_H
#define ROPELAB_H

#include "status.h"
#include "gemm.h"
#include "npy.h"
#include "rope.h"
#include "posbias.h"
#include "attn.h"

#endif
