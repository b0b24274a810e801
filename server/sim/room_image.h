/* room_image.h: one room (id, scene, seed, tick and its world's full state)
 * as a byte image, and back. The image is what a state file holds
 * (sim/persist.h) and what a record starts with (sim/record.h); this part
 * does no I/O and takes no lock, so the WebAssembly build of sim (the
 * browser's replay viewer) decodes records with the same code.
 */
#ifndef TB_ROOM_IMAGE_H
#define TB_ROOM_IMAGE_H

#include <stddef.h>

#include "sim/room.h"

/* The image of one room (malloc'ed into *buf). Worker thread of the
 * room, or any thread once the workers have stopped. */
int tb_persist_encode(const tb_room *room, unsigned char **buf, size_t *len);
/* A room (one reference, world built, tick set, not yet adopted) from an
 * image. TB_EINVAL with a reason in why (cap bytes) when the image is not a
 * valid save. */
int tb_persist_decode(const unsigned char *buf, size_t len, const tb_world_env *env, tb_room **out, char *why,
                      size_t cap);

#endif
