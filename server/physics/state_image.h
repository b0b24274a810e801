/* state_image.h: a physics world's save image, shared by the cloth and soft
 * worlds (physics/cloth.c, physics/soft.c).
 *
 * Both keep their whole simulated state in one plain struct with no padding
 * and no pointers, so a save is that struct's bytes behind a 16-byte header:
 *
 *     uint32 magic | uint32 version | uint64 state size | state bytes
 *
 * Reading checks the header and the length only; the world then checks the
 * state's contents (counts, indices, finiteness) before using any of it. The
 * hash is FNV-1a 64 over the same bytes, so equal hashes mean equal saves. */
#ifndef TB_STATE_IMAGE_H
#define TB_STATE_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tb_state_image_header {
    uint32_t magic, version;
    uint64_t state_size;
} tb_state_image_header;

_Static_assert(sizeof(tb_state_image_header) == 16, "the saved header is 16 bytes on every target");

/* Bytes a save of a state of state_size takes. */
size_t tb_state_image_size(size_t state_size);
/* Writes header and state into buffer; false when capacity is too small. */
bool tb_state_image_write(void *buffer, size_t capacity, uint32_t magic, uint32_t version, const void *state,
                          size_t state_size, size_t *written);
/* Copies the state out of a save into state_out; false unless the size,
 * magic, version and state size are exactly what this build writes. */
bool tb_state_image_read(const void *buffer, size_t size, uint32_t magic, uint32_t version, void *state_out,
                         size_t state_size);
/* FNV-1a 64 over the state's bytes. */
uint64_t tb_state_image_hash(const void *state, size_t state_size);
/* True when all n floats are finite (a state read from disk is untrusted). */
bool tb_floats_finite(const float *v, int n);

#endif /* TB_STATE_IMAGE_H */
