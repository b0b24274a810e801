/* test_proto_codec.c: message codec (proto/c/tb_proto_*.c) round trips and hostile input.
 *
 * Every client and server message survives encode -> decode with every field
 * intact; every malformed frame is refused with the documented code and a
 * reason, and nothing reads out of bounds (this suite also runs under ASan). */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tb_proto.h"

static tb_proto_server_msg smsg;
static tb_proto_welcome wel;

static int decode_client_sb(msgpack_sbuffer *sb, tb_proto_client_msg *m, tb_proto_err *err)
{
    return tb_proto_decode_client((const uint8_t *)sb->data, sb->size, m, err);
}

static void every_client_message_round_trips(void **s)
{
    (void)s;
    tb_proto_client_msg in, out;
    tb_proto_err err;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    for (int type = 1; type <= 12; type++) {
        memset(&in, 0, sizeof in);
        in.type = type;
        in.seq = type == TB_MSG_HELLO || type == TB_MSG_PING || type >= TB_MSG_RESYNC ? 0 : 4000000000u + (uint32_t)type;
        switch (type) {
        case TB_MSG_HELLO: in.u.hello.version = 1; strcpy(in.u.hello.room, "Room-1_x"); strcpy(in.u.hello.name, "Zoë");
            in.u.hello.has_scene = true; strcpy(in.u.hello.scene, "pile"); break;
        case TB_MSG_THROW: in.u.throw_.origin[0] = -9999.5; in.u.throw_.velocity[1] = 999.25; strcpy(in.u.throw_.shape, "heavy_ball"); break;
        case TB_MSG_POKE: in.u.poke.has_body = true; in.u.poke.body = 65535; in.u.poke.impulse[0] = -1e5; break;
        case TB_MSG_GRAB_START: case TB_MSG_GRAB_MOVE: case TB_MSG_GRAB_END:
            in.u.grab.pointer = 65535; in.u.grab.point[2] = 1.0 / 3.0; break;
        case TB_MSG_PARAM: strcpy(in.u.param.name, "wind"); in.u.param.value = -1e9; break;
        case TB_MSG_ACTION: strcpy(in.u.action.action, "rebuild"); break;
        case TB_MSG_CONTACTS_VIEW: in.u.contacts.on = false; break;
        case TB_MSG_PING: in.u.ping.client_time = 1e15 + 0.5; break;
        }
        msgpack_sbuffer_clear(&sb);
        assert_int_equal(tb_proto_encode_client(&sb, &in), TB_OK);
        int rc = decode_client_sb(&sb, &out, &err);
        if (rc) print_error("type %d: %s\n", type, err.msg);
        assert_int_equal(rc, TB_OK);
        assert_int_equal(out.type, type);
        assert_int_equal(out.seq, in.seq);
        if (type == TB_MSG_GRAB_MOVE) in.u.grab.has_body = false;
        if (type == TB_MSG_GRAB_END) memset(in.u.grab.point, 0, sizeof in.u.grab.point);
        assert_memory_equal(&out.u, &in.u, sizeof in.u);
    }
    msgpack_sbuffer_destroy(&sb);
}

static void welcome_round_trips_with_everything(void **s)
{
    (void)s;
    memset(&wel, 0, sizeof wel);
    wel.version = 1; wel.client_id = 77; wel.tick_rate = 120; wel.snap_rate = 60;
    strcpy(wel.room, "abc"); strcpy(wel.kind, "cloth"); strcpy(wel.scene, "cape"); strcpy(wel.server, "tumble-7");
    wel.peer_count = TB_PROTO_MAX_PEERS;
    for (uint32_t i = 0; i < wel.peer_count; i++) { wel.peers[i].id = i; strcpy(wel.peers[i].name, "p"); }
    wel.param_count = 3;
    strcpy(wel.params[0].name, "wind"); wel.params[0].max = 20; wel.params[0].step = 0.5;
    strcpy(wel.params[1].name, "iterations"); strcpy(wel.params[2].name, "grid_size");
    wel.st.bounds_min[0] = -5; wel.st.bounds_min[1] = -1; wel.st.bounds_min[2] = -5;
    wel.st.bounds_max[0] = 5; wel.st.bounds_max[1] = 9; wel.st.bounds_max[2] = 5;
    wel.st.plane_count = 2; wel.st.planes[1].normal[0] = 1; wel.st.planes[1].offset = -4;
    wel.st.capsule_count = 1; wel.st.capsules[0].has_body = true; wel.st.capsules[0].body = 9; wel.st.capsules[0].radius = 0.2;
    wel.st.box_count = 1; wel.st.boxes[0].rot[3] = 1; wel.st.boxes[0].half[0] = 2;
    static uint8_t tris[6] = {0, 0, 1, 0, 2, 0}, pins[2] = {1, 0};
    wel.st.mesh_count = 1;
    strcpy(wel.st.meshes[0].kind, "cloth");
    wel.st.meshes[0].verts = 3; wel.st.meshes[0].tri_count = 1; wel.st.meshes[0].tris = tris;
    wel.st.meshes[0].pin_count = 1; wel.st.meshes[0].pins = pins; wel.st.meshes[0].grid_w = 3; wel.st.meshes[0].grid_h = 1;

    tb_proto_frame fr;
    tb_proto_frame_from_static(&fr, &wel.st);
    tb_snap_encoder *enc = tb_snap_encoder_create(&fr, 4);
    float v[9] = {0, 1, 0, 1, 1, 0, 0, 2, 0};
    tb_snap_input in = {.tick = 9};
    in.verts[0] = v;
    tb_proto_err err;
    assert_int_equal(tb_snap_encoder_step(enc, &in, &err), TB_OK);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    assert_int_equal(tb_proto_encode_welcome(&sb, &wel, tb_snap_encoder_key(enc)), TB_OK);
    int rc = tb_proto_decode_server((const uint8_t *)sb.data, sb.size, &smsg, &err);
    if (rc) print_error("%s\n", err.msg);
    assert_int_equal(rc, TB_OK);
    tb_proto_welcome *w = &smsg.u.welcome;
    assert_int_equal(smsg.type, TB_MSG_WELCOME);
    assert_int_equal(w->client_id, 77);
    assert_string_equal(w->scene, "cape");
    assert_int_equal(w->peer_count, TB_PROTO_MAX_PEERS);
    assert_int_equal(w->param_count, 3);
    assert_true(w->params[0].max == 20);
    assert_int_equal(w->st.plane_count, 2);
    assert_true(w->st.planes[1].offset == -4);
    assert_true(w->st.capsules[0].has_body && w->st.capsules[0].body == 9);
    assert_int_equal(w->st.meshes[0].tri_count, 1);
    assert_memory_equal(w->st.meshes[0].tris, tris, 6);
    assert_int_equal(w->st.meshes[0].pins[0], 1);
    /* and a decoder picks up frame and state from it */
    tb_snap_decoder *d = tb_snap_decoder_create(4);
    assert_int_equal(tb_snap_decoder_apply(d, (const uint8_t *)sb.data, sb.size, &err), TB_OK);
    float got[9];
    assert_int_equal(tb_snap_decoder_verts(d, 0, got, 3), 3);
    for (int i = 0; i < 9; i++) assert_true(fabsf(got[i] - v[i]) < 0.001f);
    tb_snap_decoder_destroy(d);
    tb_snap_encoder_destroy(enc);
    msgpack_sbuffer_destroy(&sb);
}

static void events_round_trip(void **s)
{
    (void)s;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    tb_proto_err err;
#define DEC() assert_int_equal(tb_proto_decode_server((const uint8_t *)sb.data, sb.size, &smsg, &err), TB_OK); msgpack_sbuffer_clear(&sb)
    uint32_t faces[3] = {1, 6, 3};
    tb_proto_encode_dice(&sb, 42, faces, 3); DEC();
    assert_int_equal(smsg.u.dice.sum, 10); assert_int_equal(smsg.u.dice.faces[1], 6);
    tb_proto_encode_param_changed(&sb, "restitution", 0.9, 5, "Ada"); DEC();
    assert_true(smsg.u.param_changed.value == 0.9); assert_string_equal(smsg.u.param_changed.by_name, "Ada");
    tb_proto_encode_peer_joined(&sb, 8, "Lin"); DEC();
    assert_int_equal(smsg.u.peer.id, 8);
    tb_proto_encode_peer_left(&sb, 8); DEC();
    assert_int_equal(smsg.type, TB_MSG_PEER_LEFT);
    tb_proto_encode_reset(&sb, "rebuild", 0, "server"); DEC();
    assert_string_equal(smsg.u.reset.action, "rebuild");
    tb_proto_encode_pong(&sb, 1.5, 2.25); DEC();
    assert_true(smsg.u.pong.server_time == 2.25);
    tb_proto_room_info r = {"x", "soft", "dough", 1, 2, 3, 0};
    tb_proto_encode_lobby(&sb, &r, 1); DEC();
    assert_int_equal(smsg.u.lobby.rooms[0].awake, 3);
    assert_int_equal(smsg.u.lobby.rooms[0].watchers, 0);
    r.watchers = 7; /* PROTOCOL.md §14: a seventh field, read back */
    tb_proto_encode_lobby(&sb, &r, 1); DEC();
    assert_int_equal(smsg.u.lobby.rooms[0].watchers, 7);
    tb_proto_encode_watchers(&sb, 5); DEC();
    assert_int_equal(smsg.type, TB_MSG_WATCHERS);
    assert_int_equal(smsg.u.watchers.count, 5);
    tb_proto_contact c = {{1, 2, 3}, {0, 0, 1}, 0.5f};
    tb_proto_encode_contacts(&sb, 3, &c, 1); DEC();
    tb_proto_contact back;
    tb_proto_contact_get(&smsg, 0, &back);
    assert_memory_equal(&back, &c, sizeof c);
    msgpack_sbuffer_destroy(&sb);
}

static void error_messages_are_cut_at_the_limit_on_a_character_boundary(void **s)
{
    (void)s;
    char text[400];
    for (int i = 0; i < 199; i++) text[i] = 'a';
    strcpy(text + 199, "한국어 and control\x01 chars");
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    tb_proto_encode_error(&sb, TB_ERR_RATE_LIMITED, text, 12);
    tb_proto_err err;
    int rc = tb_proto_decode_server((const uint8_t *)sb.data, sb.size, &smsg, &err);
    if (rc) print_error("%s\n", err.msg);
    assert_int_equal(rc, TB_OK);
    assert_int_equal(smsg.u.error.code, TB_ERR_RATE_LIMITED);
    assert_string_equal(smsg.u.error.name, "rate_limited");
    assert_int_equal(strlen(smsg.u.error.text), 199);
    assert_true(smsg.u.error.has_seq && smsg.u.error.seq == 12);
    msgpack_sbuffer_destroy(&sb);
}

static void a_wrong_version_is_refused_with_its_code_and_close_4004(void **s)
{
    (void)s;
    tb_proto_client_msg m = {.type = TB_MSG_HELLO};
    m.u.hello.version = 2;
    strcpy(m.u.hello.room, "tower"); strcpy(m.u.hello.name, "x");
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    tb_proto_encode_client(&sb, &m);
    tb_proto_client_msg out;
    tb_proto_err err;
    assert_int_equal(decode_client_sb(&sb, &out, &err), TB_ERR_VERSION);
    assert_int_equal(out.u.hello.version, 2);
    assert_non_null(strstr(err.msg, "version"));
    assert_int_equal(tb_proto_close_code(TB_ERR_VERSION), 4004);
    assert_int_equal(tb_proto_close_code(TB_ERR_TOO_BIG), 1009);
    assert_int_equal(tb_proto_close_code(TB_ERR_BAD_VALUE), 0);
    msgpack_sbuffer_destroy(&sb);
}

static void an_oversized_frame_is_too_big(void **s)
{
    (void)s;
    static uint8_t big[TB_PROTO_MAX_CLIENT_MSG + 1];
    tb_proto_client_msg m;
    tb_proto_err err;
    assert_int_equal(tb_proto_decode_client(big, sizeof big, &m, &err), TB_ERR_TOO_BIG);
}

static void a_header_promising_two_to_the_32_elements_allocates_nothing(void **s)
{
    (void)s;
    const uint8_t arr32[] = {0xdd, 0xff, 0xff, 0xff, 0xff};
    const uint8_t map32[] = {0x91, 0xdf, 0xff, 0xff, 0xff, 0xff};
    const uint8_t bin32[] = {0x92, 0x23, 0xc6, 0xff, 0xff, 0xff, 0xff, 0x00};
    const uint8_t str32[] = {0x92, 0x01, 0xdb, 0xff, 0xff, 0xff, 0xff};
    const uint8_t *cases[] = {arr32, map32, bin32, str32};
    size_t lens[] = {sizeof arr32, sizeof map32, sizeof bin32, sizeof str32};
    for (int i = 0; i < 4; i++) {
        tb_proto_client_msg m;
        tb_proto_err err;
        assert_int_equal(tb_proto_decode_client(cases[i], lens[i], &m, &err), TB_ERR_MALFORMED);
        assert_int_equal(tb_proto_decode_server(cases[i], lens[i], &smsg, &err), TB_ERR_MALFORMED);
        assert_non_null(strstr(err.msg, "truncated") ? err.msg : strstr(err.msg, "promises"));
    }
}

static void nan_and_inf_in_every_numeric_field_are_bad_values(void **s)
{
    (void)s;
    const double bad[] = {NAN, INFINITY, -INFINITY, 1e300};
    for (int b = 0; b < 4; b++)
        for (int type = TB_MSG_THROW; type <= TB_MSG_PARAM; type++)
            for (int field = 0; field < 6; field++) {
                tb_proto_client_msg m;
                memset(&m, 0, sizeof m);
                m.type = type;
                strcpy(m.u.throw_.shape, "ball");
                double *slot = NULL;
                switch (type) {
                case TB_MSG_THROW: slot = field < 3 ? &m.u.throw_.origin[field] : &m.u.throw_.velocity[field - 3]; break;
                case TB_MSG_POKE: slot = field < 3 ? &m.u.poke.point[field] : &m.u.poke.impulse[field - 3]; break;
                case TB_MSG_GRAB_START: case TB_MSG_GRAB_MOVE: slot = &m.u.grab.point[field % 3]; break;
                case TB_MSG_PARAM: strcpy(m.u.param.name, "friction"); slot = &m.u.param.value; break;
                default: continue;
                }
                *slot = bad[b];
                msgpack_sbuffer sb;
                msgpack_sbuffer_init(&sb);
                tb_proto_encode_client(&sb, &m);
                tb_proto_client_msg out;
                tb_proto_err err;
                assert_int_equal(decode_client_sb(&sb, &out, &err), TB_ERR_BAD_VALUE);
                msgpack_sbuffer_destroy(&sb);
            }
}

static void random_bytes_never_crash_either_decoder(void **s)
{
    (void)s;
    uint64_t x = 12345;
    static uint8_t buf[512];
    int accepted = 0;
    tb_snap_decoder *d = tb_snap_decoder_create(16);
    for (int trial = 0; trial < 200000; trial++) {
        size_t n = 1 + trial % 64;
        for (size_t i = 0; i < n; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; buf[i] = (uint8_t)x; }
        if (trial % 2) buf[0] = (uint8_t)(0x90 | (n % 8));   /* look like an array envelope */
        if (trial % 4 == 1) buf[1] = (uint8_t)(trial % 45);  /* with a plausible type */
        tb_proto_client_msg m;
        tb_proto_err err;
        int rc = tb_proto_decode_client(buf, n, &m, &err);
        if (rc == TB_OK) accepted++;
        else assert_true(err.msg[0] != '\0' && rc > 0 && rc < TB_ERR__COUNT);
        rc = tb_proto_decode_server(buf, n, &smsg, &err);
        if (rc) assert_true(err.msg[0] != '\0');
        tb_snap_decoder_apply(d, buf, n, &err);
    }
    tb_snap_decoder_destroy(d);
    print_message("%d random frames happened to be valid client messages\n", accepted);
}

/* Regression (fuzz_server_msg, UBSan): an empty str arrives from msgpack-c as a NULL
 * pointer, and copying it with memcpy(out, NULL, 0) is undefined behaviour. */
static void empty_strings_decode_without_touching_a_null_pointer(void **s)
{
    (void)s;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    tb_proto_encode_error(&sb, TB_ERR_INTERNAL, "", -1);
    tb_proto_err err;
    assert_int_equal(tb_proto_decode_server((const uint8_t *)sb.data, sb.size, &smsg, &err), TB_OK);
    assert_string_equal(smsg.u.error.text, "");
    msgpack_sbuffer_clear(&sb);
    tb_proto_encode_peer_joined(&sb, 4, "");   /* the fuzzer's input: [38, 4, ""] */
    assert_int_equal(tb_proto_decode_server((const uint8_t *)sb.data, sb.size, &smsg, &err), TB_OK);
    assert_string_equal(smsg.u.peer.name, "");
    msgpack_sbuffer_clear(&sb);
    tb_proto_client_msg m = {.type = TB_MSG_HELLO}, out;
    m.u.hello.version = 1;
    strcpy(m.u.hello.room, "r");
    tb_proto_encode_client(&sb, &m);
    assert_int_equal(tb_proto_decode_client((const uint8_t *)sb.data, sb.size, &out, &err), TB_OK);
    assert_string_equal(out.u.hello.name, "");
    msgpack_sbuffer_destroy(&sb);
}

static void room_ids_are_checked(void **s)
{
    (void)s;
    assert_true(tb_proto_room_id_valid("tower"));
    assert_true(tb_proto_room_id_valid("A-b_9"));
    assert_false(tb_proto_room_id_valid(""));
    assert_false(tb_proto_room_id_valid("a/b"));
    assert_false(tb_proto_room_id_valid("abcdefghijabcdefghijabcdefghijabc"));   /* 33 */
    assert_true(tb_proto_room_id_valid("abcdefghijabcdefghijabcdefghijab"));     /* 32 */
}

static void names_of_codes_and_types_are_stable(void **s)
{
    (void)s;
    assert_string_equal(tb_proto_code_name(TB_ERR_MALFORMED), "malformed");
    assert_string_equal(tb_proto_code_name(TB_ERR_VERSION), "bad_version");
    assert_string_equal(tb_proto_code_name(999), "unknown");
    assert_string_equal(tb_proto_type_name(TB_MSG_SNAP_DELTA), "snap_delta");
    assert_null(tb_proto_type_name(13));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_client_message_round_trips),
        cmocka_unit_test(welcome_round_trips_with_everything),
        cmocka_unit_test(events_round_trip),
        cmocka_unit_test(error_messages_are_cut_at_the_limit_on_a_character_boundary),
        cmocka_unit_test(a_wrong_version_is_refused_with_its_code_and_close_4004),
        cmocka_unit_test(an_oversized_frame_is_too_big),
        cmocka_unit_test(a_header_promising_two_to_the_32_elements_allocates_nothing),
        cmocka_unit_test(nan_and_inf_in_every_numeric_field_are_bad_values),
        cmocka_unit_test(random_bytes_never_crash_either_decoder),
        cmocka_unit_test(empty_strings_decode_without_touching_a_null_pointer),
        cmocka_unit_test(room_ids_are_checked),
        cmocka_unit_test(names_of_codes_and_types_are_stable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
