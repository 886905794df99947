/* checkpoint.h -- model checkpoints as safetensors files (docs/model.md), readable by the Hugging
 * Face `safetensors` library and by any reader of its format:
 *
 *   8 bytes   little-endian u64 N: length of the JSON header
 *   N bytes   JSON header, padded with spaces to a multiple of 8 bytes:
 *             {"__metadata__": {"step": "<updates done>", "config": "<resolved INI>",
 *                               "rng": "<generator state>", "checksum": "crc32c",
 *                               "crc32c.__metadata__": "<8 hex digits>",
 *                               "crc32c.<name>": "<8 hex digits>", ...},
 *              "<name>": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...}
 *   data      raw little-endian float32; offsets are relative to the start of the data
 *             and the tensors tile it exactly (no gaps, no overlap).
 *
 * Tensors: every model parameter under its checkpoint name (rl_tensor_info, PyTorch nn.Linear
 * convention), then the AdamW moments as optim.m.<name> and optim.v.<name>, all in the
 * model's table order.  Metadata values are strings, as the format requires.
 *
 * "crc32c.__metadata__" is the CRC-32C of step, config and rng (each with its NUL), checked
 * by every reader when present; "crc32c.<name>" is the CRC-32C of tensor <name>'s data
 * bytes (core/crc32c.h); a file
 * with "checksum": "crc32c" must carry one per tensor and each must match, files without
 * it (older writers, other programs) load unchecked.  Every float32 loaded must be finite.
 *
 * Saving is atomic (temporary file, fsync, rename: util.h).  Loading validates the whole
 * file before it touches the model, so a refused file leaves the model unchanged; every
 * refusal is RL_EFORMAT (malformed file) or RL_ESHAPE (a well-formed file for another
 * model) with a message naming the file and, where one is at fault, the tensor. */
#ifndef RL_CHECKPOINT_H
#define RL_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>
#include "model.h"
#include "../core/status.h"

/* adam_m, adam_v: the moments (layout of the parameter buffer), or NULL for zeros (the
 * step-0 checkpoint).  config_text, rng_text: NULL for "". */
rl_status rl_checkpoint_save(const char *path, rl_model *m, const float *adam_m,
                             const float *adam_v, int64_t step, const char *config_text,
                             const char *rng_text);

/* Loads parameters (and the moments into adam_m, adam_v unless NULL).  step, config_text
 * and rng_text may be NULL; the texts are malloc'd (the caller frees them).  The file
 * must hold exactly the model's tensors (and the moments, when asked for), with equal
 * shapes and dtype F32. */
rl_status rl_checkpoint_load(const char *path, rl_model *m, float *adam_m, float *adam_v,
                             int64_t *step, char **config_text, char **rng_text);

/* The metadata alone (e.g. to compare configurations before building a model). */
rl_status rl_checkpoint_read_meta(const char *path, int64_t *step, char **config_text,
                                  char **rng_text);

#endif
