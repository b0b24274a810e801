/* fuzz_snapshot.c: libFuzzer target for tb_snap_decoder_apply (welcome/scene/keyframe/
 * delta application). The input is a sequence of frames, each prefixed by its length
 * as 2 big-endian bytes, applied in order to one decoder, so the fuzzer can build a
 * baseline and then attack it with deltas; an input that does not split that way is
 * applied as one frame. After every successful apply the whole state is read back and
 * must be finite and inside the room bounds. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "tb_proto.h"

static void check(const tb_snap_decoder *d)
{
    const tb_proto_frame *f = tb_snap_decoder_frame(d);
    for (uint32_t i = 0; i < tb_snap_decoder_body_count(d); i++) {
        tb_proto_body b;
        tb_snap_decoder_body(d, i, &b);
        for (int a = 0; a < 3; a++)
            if (!isfinite(b.pos[a]) || b.pos[a] < (float)f->bounds_min[a] - 0.01f || b.pos[a] > (float)f->bounds_max[a] + 0.01f) abort();
        float n = b.rot[0] * b.rot[0] + b.rot[1] * b.rot[1] + b.rot[2] * b.rot[2] + b.rot[3] * b.rot[3];
        if (!(n > 0.99f && n < 1.01f)) abort();
        if (i > 0) {
            tb_proto_body prev;
            tb_snap_decoder_body(d, i - 1, &prev);
            if (prev.id >= b.id) abort();
        }
    }
    static float v[3 * TB_PROTO_MAX_VERTS];
    for (uint32_t m = 0; m < f->mesh_count; m++) {
        uint32_t n = tb_snap_decoder_verts(d, m, v, TB_PROTO_MAX_VERTS);
        for (uint32_t i = 0; i < 3 * n; i++) if (!isfinite(v[i])) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tb_snap_decoder *d = tb_snap_decoder_create(64);
    tb_proto_err err;
    size_t pos = 0;
    int frames = 0;
    while (size - pos >= 2) {
        size_t n = (size_t)data[pos] << 8 | data[pos + 1];
        if (n > size - pos - 2) break;
        pos += 2;
        if (tb_snap_decoder_apply(d, data + pos, n, &err) == TB_OK) check(d);
        else if (err.msg[0] == '\0') abort();
        pos += n;
        frames++;
    }
    if (frames == 0 || pos != size) {
        if (tb_snap_decoder_apply(d, data, size, &err) == TB_OK) check(d);
    }
    tb_snap_decoder_destroy(d);
    return 0;
}
