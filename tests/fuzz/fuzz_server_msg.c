/* fuzz_server_msg.c: libFuzzer target for tb_proto_decode_server (what the load
 * generator and tests run on every server frame). Decoded contacts are read back and
 * welcome mesh index lists walked, so their pointers into the frame get exercised. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "tb_proto.h"

static tb_proto_server_msg msg;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tb_proto_err err;
    int rc = tb_proto_decode_server(data, size, &msg, &err);
    if (rc != TB_OK) {
        if (rc <= 0 || rc >= TB_ERR__COUNT || err.msg[0] == '\0') abort();
        return 0;
    }
    unsigned sum = 0;
    if (msg.type == TB_MSG_CONTACTS) {
        for (uint32_t i = 0; i < msg.u.contacts.count; i++) {
            tb_proto_contact c;
            tb_proto_contact_get(&msg, i, &c);
            if (!isfinite(c.impulse)) abort();
        }
    } else if (msg.type == TB_MSG_WELCOME || msg.type == TB_MSG_SCENE) {
        const tb_proto_static *st = &msg.u.welcome.st;
        for (uint32_t m = 0; m < st->mesh_count; m++) {
            for (uint32_t i = 0; i < 6 * st->meshes[m].tri_count; i++) sum += st->meshes[m].tris[i];
            for (uint32_t i = 0; i < 2 * st->meshes[m].pin_count; i++) sum += st->meshes[m].pins[i];
        }
    }
    return (int)(sum & 0);
}
