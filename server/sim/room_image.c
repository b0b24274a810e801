/* room_image.c: a room as bytes and back (see room_image.h). No I/O: the
 * state files (sim/persist.c), the records (sim/record.c) and the browser's
 * replay (the WebAssembly build) all read and write rooms through here.
 *
 * Image layout (native endian, every field of a fixed size, so x86-64 and
 * wasm32 lay it out alike; the magic and sizes refuse anything else):
 *
 *   tb__file_header   magic "TUMBLEST", version, header size, id, scene,
 *                     keep, seed, tick, world length, FNV-1a 64 checksum
 *                     of the header (checksum field zero) and the world
 *   world bytes       the world kind's save image (sim/world.h)
 */
#include "sim/room_image.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"

#define TB__MAGIC "TUMBLEST"
#define TB__VERSION 1u

typedef struct {
    char magic[8];
    uint32_t version, header_size;
    char id[40];
    char scene[24];
    uint32_t keep, pad;
    uint64_t seed, tick, world_len, checksum;
} tb__file_header;
_Static_assert(sizeof(tb__file_header) == 120, "the header has one layout on every platform (x86-64, wasm32)");


static uint64_t tb__checksum(const tb__file_header *h, const unsigned char *world, size_t len)
{
    tb__file_header c = *h;
    c.checksum = 0;
    return tb_fnv1a(tb_fnv1a(TB_FNV_OFFSET, &c, sizeof c), world, len);
}

int tb_persist_encode(const tb_room *room, unsigned char **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    if (!room->world || !room->ops->save)
        return TB_ENOTSUP;
    unsigned char *world = NULL;
    size_t wlen = 0;
    int rc = room->ops->save(room->world, &world, &wlen);
    if (rc < 0)
        return rc;
    unsigned char *out = malloc(sizeof(tb__file_header) + wlen);
    if (!out) {
        free(world);
        return TB_ENOMEM;
    }
    tb__file_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, TB__MAGIC, 8);
    h.version = TB__VERSION;
    h.header_size = sizeof h;
    snprintf(h.id, sizeof h.id, "%s", room->id);
    snprintf(h.scene, sizeof h.scene, "%s", room->scene);
    h.keep = room->keep;
    h.seed = room->seed;
    h.tick = room->tick;
    h.world_len = wlen;
    h.checksum = tb__checksum(&h, world, wlen);
    memcpy(out, &h, sizeof h);
    memcpy(out + sizeof h, world, wlen);
    free(world);
    *buf = out;
    *len = sizeof h + wlen;
    return 0;
}

int tb_persist_decode(const unsigned char *buf, size_t len, const tb_world_env *env, tb_room **out, char *why,
                      size_t cap)
{
    *out = NULL;
    tb__file_header h;
    if (len < sizeof h) {
        snprintf(why, cap, "truncated: %zu bytes, header alone is %zu", len, sizeof h);
        return TB_EINVAL;
    }
    memcpy(&h, buf, sizeof h);
    if (memcmp(h.magic, TB__MAGIC, 8) != 0 || h.version != TB__VERSION || h.header_size != sizeof h) {
        snprintf(why, cap, "not a tumble state file of this version");
        return TB_EINVAL;
    }
    if (h.world_len != len - sizeof h) {
        snprintf(why, cap, "truncated or padded: world is %zu bytes, header says %llu", len - sizeof h,
                 (unsigned long long)h.world_len);
        return TB_EINVAL;
    }
    if (tb__checksum(&h, buf + sizeof h, len - sizeof h) != h.checksum) {
        snprintf(why, cap, "checksum mismatch (corrupt)");
        return TB_EINVAL;
    }
    if (memchr(h.id, 0, sizeof h.id) == NULL || memchr(h.scene, 0, sizeof h.scene) == NULL ||
        !tb_room_id_valid(h.id)) {
        snprintf(why, cap, "bad room id");
        return TB_EINVAL;
    }
    tb_room *room = NULL;
    int rc = tb_room_new(h.id, h.scene, h.seed, h.keep != 0, &room);
    if (rc < 0) {
        snprintf(why, cap, "room: %s", tb_strerror(rc));
        return TB_EINVAL;
    }
    if (!room->ops->load) {
        tb_room_unref(room);
        snprintf(why, cap, "world kind %s cannot be restored", room->ops->kind);
        return TB_EINVAL;
    }
    room->env = env;
    rc = room->ops->load(room->scene, h.seed, env, buf + sizeof h, len - sizeof h, &room->world);
    if (rc < 0) {
        room->world = NULL;
        tb_room_unref(room);
        snprintf(why, cap, "world state refused: %s", tb_strerror(rc));
        return rc == TB_ENOMEM ? TB_ENOMEM : TB_EINVAL;
    }
    room->tick = h.tick;
    *out = room;
    return 0;
}
