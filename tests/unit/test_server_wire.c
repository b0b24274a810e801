/* test_server_wire.c: the server's adapter to the protocol (server/sim/wire.c):
 * client messages from the golden vectors become the right tb_input, and
 * hostile frames are refused with the right protocol code. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sim/error.h"
#include "sim/wire.h"
#include "net/ws_frame.h"

static uint8_t *read_vector(const char *name, size_t *len)
{
    char path[256];
    snprintf(path, sizeof path, "proto/vectors/%s.mpk", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *buf = malloc(1 << 16);
    *len = fread(buf, 1, 1 << 16, f);
    fclose(f);
    return buf;
}

static int decode_vector(const char *name, tb_client_msg *m, tb_proto_err *err)
{
    size_t len = 0;
    uint8_t *buf = read_vector(name, &len);
    if (!buf)
        fail_msg("missing proto/vectors/%s.mpk (run from the repository root)", name);
    int rc = tb_wire_decode(buf, len, m, err);
    free(buf);
    return rc;
}

/* RFC 6455 5.2 read back: FIN and opcode, then the payload length in 7,
 * 7+16 or 7+64 bits, no mask (a server's frame). */
static size_t parse_len(const unsigned char *p, size_t *header)
{
    assert_int_equal(p[0], 0x82);
    size_t n = p[1] & 0x7f;
    assert_int_equal(p[1] & 0x80, 0);
    if (n < 126) {
        *header = 2;
        return n;
    }
    if (n == 126) {
        *header = 4;
        return (size_t)p[2] << 8 | p[3];
    }
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[2 + i];
    *header = 10;
    return (size_t)v;
}

static void a_batched_frames_header_reads_back_as_its_length(void **state)
{
    (void)state;
    const size_t lengths[] = {0, 1, 125, 126, 127, 300, 65535, 65536, 70000, (size_t)1 << 33};
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        unsigned char p[16];
        memset(p, 0xee, sizeof p);
        size_t written = tb_ws_frame_header(p, lengths[i]), header = 0;
        assert_int_equal(parse_len(p, &header), lengths[i]);
        assert_int_equal(written, header);
        assert_int_equal(tb_ws_frame_size(lengths[i]), header + lengths[i]);
        assert_int_equal(p[written], 0xee); /* nothing past the header */
    }
}

static void hello_becomes_a_join_with_name_and_scene(void **state)
{
    (void)state;
    tb_client_msg m;
    tb_proto_err err;
    assert_int_equal(decode_vector("c_hello_create", &m, &err), TB_OK);
    assert_int_equal(m.kind, TB_CLIENT_JOIN);
    assert_string_equal(m.room, "my-room_2");
    assert_string_equal(m.scene, "cape");
    assert_string_equal(m.wanted_kind, "cloth");
    assert_true(strlen(m.name) > 0);
    assert_int_equal(decode_vector("c_hello", &m, &err), TB_OK);
    assert_string_equal(m.room, "tower");
    assert_string_equal(m.scene, "");
}

static void inputs_map_onto_room_records(void **state)
{
    (void)state;
    tb_client_msg m;
    tb_proto_err err;
    assert_int_equal(decode_vector("c_throw_die", &m, &err), TB_OK);
    assert_int_equal(m.kind, TB_CLIENT_INPUT);
    assert_int_equal(m.input.type, TB_INPUT_THROW);
    assert_int_equal(m.input.flags, 1);
    assert_int_equal(m.input.seq, 70000);
    assert_float_equal(m.input.pos[2], 6.0f, 1e-6f);

    assert_int_equal(decode_vector("c_poke", &m, &err), TB_OK);
    assert_int_equal(m.input.type, TB_INPUT_POKE);
    assert_int_equal(m.input.target, 17);
    assert_int_equal(decode_vector("c_poke_vertex", &m, &err), TB_OK);
    assert_int_equal(m.input.target, -1);

    assert_int_equal(decode_vector("c_grab_start_body", &m, &err), TB_OK);
    assert_int_equal(m.input.type, TB_INPUT_GRAB_START);
    assert_int_equal(m.input.pointer, 1);
    assert_int_equal(m.input.target, 4);

    assert_int_equal(decode_vector("c_param", &m, &err), TB_OK);
    assert_int_equal(m.input.type, TB_INPUT_PARAM);
    assert_string_equal(m.input.name, "friction");
    assert_true(m.input.value_d > 0.349 && m.input.value_d < 0.351);

    assert_int_equal(decode_vector("c_action_knock", &m, &err), TB_OK);
    assert_int_equal(m.input.type, TB_INPUT_RESET);
    assert_int_equal(m.input.flags, 1);
    assert_int_equal(decode_vector("c_action_select", &m, &err), TB_OK);
    assert_int_equal(m.input.type, TB_INPUT_SCENE);
    assert_string_equal(m.input.name, "dice");

    assert_int_equal(decode_vector("c_contacts_view", &m, &err), TB_OK);
    assert_int_equal(m.input.type, TB_INPUT_CONTACTS);
    assert_int_equal(decode_vector("c_ping", &m, &err), TB_OK);
    assert_int_equal(m.kind, TB_CLIENT_PING);
    assert_false(m.link.has_ack_tick || m.link.has_rtt || m.link.has_recv_bytes); /* an old client's ping */
    assert_int_equal(decode_vector("c_resync", &m, &err), TB_OK);
    assert_int_equal(m.kind, TB_CLIENT_RESYNC);
    assert_int_equal(decode_vector("c_lobby_req", &m, &err), TB_OK);
    assert_int_equal(m.kind, TB_CLIENT_LOBBY);
}

static void ping_link_report_reaches_the_server(void **state)
{
    (void)state;
    tb_client_msg m;
    tb_proto_err err;
    assert_int_equal(decode_vector("c_ping_report", &m, &err), TB_OK);
    assert_int_equal(m.kind, TB_CLIENT_PING);
    assert_true(m.link.has_ack_tick && m.link.has_rtt && m.link.has_recv_bytes);
    assert_int_equal(m.link.ack_tick, 72060);
    assert_true(m.link.rtt_ms == 84.5);
    assert_int_equal(m.link.recv_bytes, 3000000000u);
    assert_int_equal(decode_vector("c_ping_report_tick_only", &m, &err), TB_OK);
    assert_true(m.link.has_ack_tick && !m.link.has_rtt && !m.link.has_recv_bytes);
    assert_int_equal(m.link.ack_tick, 120);
    assert_int_equal(decode_vector("x_ping_report_negative_rtt", &m, &err), TB_ERR_BAD_VALUE);
}

static void a_watchers_hello_reaches_the_server(void **state)
{
    (void)state;
    tb_client_msg m;
    tb_proto_err err;
    assert_int_equal(decode_vector("c_hello_watch", &m, &err), TB_OK);
    assert_int_equal(m.kind, TB_CLIENT_JOIN);
    assert_true(m.watch);
    assert_string_equal(m.name, "Eve");
    assert_int_equal(decode_vector("c_hello", &m, &err), TB_OK);
    assert_false(m.watch); /* an old client's hello joins as a player */
    assert_int_equal(decode_vector("x_hello_watch_nil", &m, &err), TB_OK);
    assert_false(m.watch);
    assert_int_equal(decode_vector("x_hello_watch_not_bool", &m, &err), TB_ERR_BAD_MESSAGE);
}

static void a_view_tick_reaches_the_input(void **state)
{
    (void)state;
    tb_client_msg m;
    tb_proto_err err;
    assert_int_equal(decode_vector("c_poke_view_tick", &m, &err), TB_OK);
    assert_int_equal(m.input.type, TB_INPUT_POKE);
    assert_int_equal(m.input.view_tick, 70001);
    assert_int_equal(m.input.view_age, 0); /* the worker works it out against its tick */
    assert_int_equal(decode_vector("c_grab_start_view_tick", &m, &err), TB_OK);
    assert_int_equal(m.input.view_tick, 4242);
    assert_int_equal(decode_vector("c_poke", &m, &err), TB_OK);
    assert_int_equal(m.input.view_tick, 0); /* none: now */
    assert_int_equal(decode_vector("x_poke_view_tick_float", &m, &err), TB_ERR_BAD_MESSAGE);
}

static void hostile_frames_get_the_protocol_code(void **state)
{
    (void)state;
    tb_client_msg m;
    tb_proto_err err;
    assert_int_equal(decode_vector("x_wrong_version", &m, &err), TB_ERR_VERSION);
    assert_int_equal(decode_vector("x_unknown_type", &m, &err), TB_ERR_UNKNOWN_TYPE);
    assert_int_equal(decode_vector("x_truncated", &m, &err), TB_ERR_MALFORMED);
    assert_int_not_equal(decode_vector("x_huge_array", &m, &err), TB_OK);
    assert_int_not_equal(decode_vector("x_nan", &m, &err), TB_OK);
    assert_int_not_equal(decode_vector("x_deep", &m, &err), TB_OK);
    assert_int_not_equal(decode_vector("x_server_type", &m, &err), TB_OK);
    const uint8_t garbage[] = {0xc1, 0xff, 0x00};
    assert_int_equal(tb_wire_decode(garbage, sizeof garbage, &m, &err), TB_ERR_MALFORMED);
    /* an unknown throw shape and action are bad values, not crashes */
    const uint8_t bad_shape[] = {0x95, 0x02, 0x01, 0x93, 0, 1, 0, 0x93, 0, 0, 0, 0xa4, 'r', 'o', 'c', 'k'};
    assert_int_equal(tb_wire_decode(bad_shape, sizeof bad_shape, &m, &err), TB_ERR_BAD_VALUE);
}

static void server_errors_map_to_protocol_codes(void **state)
{
    (void)state;
    assert_int_equal(tb_wire_code(TB_ERANGE), TB_ERR_BAD_VALUE);
    assert_int_equal(tb_wire_code(TB_EUNKNOWN), TB_ERR_UNKNOWN_PARAM);
    assert_int_equal(tb_wire_code(TB_ECAP), TB_ERR_PROJECTILE_CAP);
    assert_int_equal(tb_wire_code(TB_EMAXROOMS), TB_ERR_TOO_MANY_ROOMS);
    assert_int_equal(tb_wire_code(TB_EROOMFULL), TB_ERR_ROOM_FULL);
    assert_int_equal(tb_wire_code(TB_ENOTSUP), TB_ERR_NOT_ALLOWED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_batched_frames_header_reads_back_as_its_length),
        cmocka_unit_test(hello_becomes_a_join_with_name_and_scene),
        cmocka_unit_test(inputs_map_onto_room_records),
        cmocka_unit_test(ping_link_report_reaches_the_server),
        cmocka_unit_test(a_watchers_hello_reaches_the_server),
        cmocka_unit_test(a_view_tick_reaches_the_input),
        cmocka_unit_test(hostile_frames_get_the_protocol_code),
        cmocka_unit_test(server_errors_map_to_protocol_codes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
