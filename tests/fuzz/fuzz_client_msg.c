/* fuzz_client_msg.c: libFuzzer target for tb_proto_decode_client (what the server runs
 * on every frame a browser sends). Beyond "no crash, no leak": whatever decodes must
 * re-encode and decode to the same message, and every refusal carries a reason. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tb_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tb_proto_client_msg m, again;
    tb_proto_err err;
    int rc = tb_proto_decode_client(data, size, &m, &err);
    if (rc != TB_OK) {
        if (rc <= 0 || rc >= TB_ERR__COUNT || err.msg[0] == '\0') abort();
        return 0;
    }
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    if (tb_proto_encode_client(&sb, &m) != TB_OK) abort();
    if (tb_proto_decode_client((const uint8_t *)sb.data, sb.size, &again, &err) != TB_OK) abort();
    if (again.type != m.type || again.seq != m.seq) abort();
    msgpack_sbuffer_destroy(&sb);
    return 0;
}
