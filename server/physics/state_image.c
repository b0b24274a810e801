/* state_image.c: the header + raw state save image of the cloth and soft
 * worlds (see state_image.h for the layout and why it is this simple). */
#include <math.h>
#include <string.h>

#include "physics/state_image.h"

size_t tb_state_image_size(size_t state_size) { return sizeof(tb_state_image_header) + state_size; }

bool tb_state_image_write(void *buffer, size_t capacity, uint32_t magic, uint32_t version, const void *state,
                          size_t state_size, size_t *written)
{
    size_t need = tb_state_image_size(state_size);
    if (capacity < need) return false;
    tb_state_image_header hdr = {magic, version, state_size};
    memcpy(buffer, &hdr, sizeof hdr);
    memcpy((char *)buffer + sizeof hdr, state, state_size);
    if (written) *written = need;
    return true;
}

bool tb_state_image_read(const void *buffer, size_t size, uint32_t magic, uint32_t version, void *state_out,
                         size_t state_size)
{
    tb_state_image_header hdr;
    if (size != tb_state_image_size(state_size)) return false;
    memcpy(&hdr, buffer, sizeof hdr);
    if (hdr.magic != magic || hdr.version != version || hdr.state_size != state_size) return false;
    memcpy(state_out, (const char *)buffer + sizeof hdr, state_size);
    return true;
}

uint64_t tb_state_image_hash(const void *state, size_t state_size)
{
    const unsigned char *b = state;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < state_size; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

bool tb_floats_finite(const float *v, int n)
{
    for (int i = 0; i < n; i++)
        if (!isfinite(v[i])) return false;
    return true;
}
