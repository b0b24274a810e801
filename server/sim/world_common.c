/* world_common.c: pieces every world adapter (sim/world_<kind>.c) needs the
 * same way: who holds which grab, and the frame around a saved world.
 *
 * Grabs: the physics worlds key a grab by (client, pointer) and know nothing
 * of sessions, so the adapter keeps the pairs it started, to end a leaving
 * client's grabs and to name them in a save.
 *
 * Saves: an adapter's save is its own fixed header followed by the physics
 * image. Every such header starts with `uint32_t magic, header_size` and ends
 * with `uint64_t world_len` (the image's length); the rest is the adapter's.
 * The bytes are exactly the header struct's, so files written before this
 * module existed still load. */
#include <stdlib.h>
#include <string.h>

#include "physics/result.h"
#include "sim/error.h"
#include "sim/world.h"

bool tb_world_grabs_find(const tb_world_grabs *g, uint32_t client, uint32_t pointer, int *handle)
{
    for (int i = 0; i < g->count; i++)
        if (g->client[i] == client && g->pointer[i] == pointer) {
            *handle = g->handle[i];
            return true;
        }
    return false;
}

void tb_world_grabs_add(tb_world_grabs *g, uint32_t client, uint32_t pointer, int handle)
{
    if (g->count >= TB_WORLD_MAX_GRABS)
        return;
    g->client[g->count] = client;
    g->pointer[g->count] = pointer;
    g->handle[g->count++] = handle;
}

static void tb__grabs_remove(tb_world_grabs *g, int i)
{
    g->client[i] = g->client[--g->count];
    g->pointer[i] = g->pointer[g->count];
    g->handle[i] = g->handle[g->count];
}

bool tb_world_grabs_forget(tb_world_grabs *g, uint32_t client, uint32_t pointer, int *handle)
{
    for (int i = 0; i < g->count; i++)
        if (g->client[i] == client && g->pointer[i] == pointer) {
            *handle = g->handle[i];
            tb__grabs_remove(g, i);
            return true;
        }
    return false;
}

bool tb_world_grabs_take(tb_world_grabs *g, uint32_t client, int *handle)
{
    for (int i = 0; i < g->count; i++)
        if (g->client[i] == client) {
            *handle = g->handle[i];
            tb__grabs_remove(g, i);
            return true;
        }
    return false;
}

int32_t tb_world_grabs_copy(const tb_world_grabs *g, uint32_t *client, uint32_t *pointer)
{
    for (int i = 0; i < g->count; i++) {
        client[i] = g->client[i];
        pointer[i] = g->pointer[i];
    }
    return g->count;
}

unsigned char *tb_world_save_begin(void *header, size_t header_size, uint32_t magic, size_t world_len)
{
    uint32_t size32 = (uint32_t)header_size;
    uint64_t len64 = world_len;
    memcpy(header, &magic, sizeof magic);
    memcpy((unsigned char *)header + 4, &size32, sizeof size32);
    memcpy((unsigned char *)header + header_size - 8, &len64, sizeof len64);
    unsigned char *out = calloc(1, header_size + world_len);
    if (out)
        memcpy(out, header, header_size);
    return out;
}

int tb_world_save_end(unsigned char *out, bool image_ok, size_t total, unsigned char **buf, size_t *len)
{
    if (!image_ok) {
        free(out);
        return TB_EINVAL;
    }
    *buf = out;
    *len = total;
    return 0;
}

const unsigned char *tb_world_load_begin(const unsigned char *buf, size_t len, uint32_t magic, void *header,
                                         size_t header_size)
{
    if (len < header_size)
        return NULL;
    memcpy(header, buf, header_size);
    uint32_t got_magic, got_size;
    uint64_t world_len;
    memcpy(&got_magic, buf, sizeof got_magic);
    memcpy(&got_size, buf + 4, sizeof got_size);
    memcpy(&world_len, buf + header_size - 8, sizeof world_len);
    if (got_magic != magic || got_size != header_size || world_len != len - header_size)
        return NULL;
    return buf + header_size;
}

int tb_world_error(int phys_err)
{
    switch (phys_err) {
    case TB_PHYS_OK: return 0;
    case TB_PHYS_ERR_NO_BODY:
    case TB_PHYS_ERR_UNKNOWN_GRAB:
    case TB_PHYS_ERR_NOTHING_THERE: return TB_ENOBODY;
    case TB_PHYS_ERR_BUSY: return TB_EBUSY;
    case TB_PHYS_ERR_TOO_MANY_GRABS: return TB_ELIMIT;
    case TB_PHYS_ERR_FULL: return TB_ECAP;
    case TB_PHYS_ERR_NO_MEMORY: return TB_ENOMEM;
    default: return TB_ERANGE; /* invalid or out-of-range numbers, no such piece */
    }
}

uint64_t tb_fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}
