/* ropelab.h -- umbrella header of libropelab: position encodings (RoPE, sinusoidal,
 * learned, T5, ALiBi) in softmax and linear attention, with a small trainer. */
#ifndef ROPELAB_H
#define ROPELAB_H

#include "core/status.h"
#include "core/gemm.h"
#include "core/threads.h"
#include "core/init.h"
#include "core/npy.h"
#include "kernels/rope.h"
#include "kernels/posbias.h"
#include "kernels/attn.h"

#endif
