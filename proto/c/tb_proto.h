/* tb_proto.h: the Tumble wire protocol (tumble.v1), C side.
 *
 * Everything the server, the load generator and the tests need to speak to
 * each other: message type numbers, error codes, limits, plain value structs,
 * encoders for every message and hostile-input decoders for every message.
 * proto/PROTOCOL.md is the specification; this header follows it.
 *
 * Shape of the API
 *   - Client -> server:  tb_proto_encode_client()  /  tb_proto_decode_client()
 *   - Server -> client:  tb_proto_encode_<msg>()    /  tb_proto_decode_server()
 *   - Snapshots: one tb_snap_encoder per room keeps the last quantized state;
 *     tb_snap_encoder_step() makes ONE delta tail per snapshot tick shared by
 *     every up-to-date client; tb_snap_encoder_key() a keyframe for a client
 *     that skipped or just joined; tb_snap_write() adds the 3-byte-ish
 *     per-client prefix (last input seq). tb_snap_decoder applies keyframes
 *     and deltas on the receiving side.
 *
 * Using the snapshot encoder in a server (threads): the encoder and its blobs
 * belong to the room's worker. A blob's tail points into the encoder and is
 * overwritten by the next step, so copy it (once per room per tick, e.g. into
 * a reference-counted buffer) before handing it to the network thread; there,
 * tb_snap_write(out, cap, &blob_with_copied_tail, client_last_seq) frames it
 * for each client. Send the delta to a client whose last written snapshot has
 * tick == blob.base_tick; anyone else gets the keyframe (tb_snap_encoder_key,
 * encoded at most once per step; a worker may simply produce both every tick).
 * Step the encoder once before the first welcome: key() is NULL until then.
 *
 * Encoders write into a msgpack_sbuffer the caller owns (inputs are trusted,
 * but still checked for finiteness). Decoders never trust their input: every
 * count is capped, every number checked, and nothing is allocated beyond a
 * bound proportional to the input length (see tb_proto__prescan).
 *
 * This file depends on msgpack-c and libc only; it knows nothing of physics. */
#ifndef TB_PROTO_H
#define TB_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <msgpack.h>

#define TB_PROTO_VERSION      1
#define TB_PROTO_SUBPROTOCOL  "tumble.v1"

/* ---- limits (PROTOCOL.md "Limits") ---------------------------------------- */
#define TB_PROTO_MAX_CLIENT_MSG   4096        /* bytes, client -> server frame */
#define TB_PROTO_MAX_SERVER_MSG   (1u << 21)  /* bytes, server -> client frame */
#define TB_PROTO_MAX_DEPTH        8           /* msgpack container nesting */
#define TB_PROTO_NAME_MAX         32          /* bytes in room/kind/scene/display/param/shape/action names */
#define TB_PROTO_TEXT_MAX         200         /* bytes in an error message */
#define TB_PROTO_MAX_BODIES       4096
#define TB_PROTO_MAX_MESHES       4
#define TB_PROTO_MAX_VERTS        16384       /* per mesh */
#define TB_PROTO_MAX_TRIS         32768       /* per mesh */
#define TB_PROTO_MAX_PINS         1024        /* per mesh */
#define TB_PROTO_MAX_PLANES       16
#define TB_PROTO_MAX_CAPSULES     32
#define TB_PROTO_MAX_BOXES        64          /* static boxes (tray rims, walls) */
#define TB_PROTO_MAX_PARAMS       32
#define TB_PROTO_MAX_PEERS        64
#define TB_PROTO_MAX_ROOMS        256         /* rooms in one lobby message */
#define TB_PROTO_MAX_CONTACTS     512
#define TB_PROTO_MAX_DICE         8
#define TB_PROTO_MAX_COORD        10000.0     /* |x| limit for any position in metres */
#define TB_PROTO_MAX_SPEED        1000.0      /* m/s */
#define TB_PROTO_MAX_IMPULSE      100000.0    /* N s */
#define TB_PROTO_MAX_RTT_MS       60000.0     /* ping.rtt_ms: a minute */
#define TB_PROTO_MAX_PARAM_ABS    1e9

/* ---- quantization (PROTOCOL.md "Quantization") ----------------------------- */
#define TB_PROTO_POS_SCALE   2048   /* rigid positions: 1/2048 m grid, error <= 0.25 mm */
#define TB_PROTO_VERT_SCALE  1024   /* cloth/soft vertices: 1/1024 m grid, error <= 0.5 mm */
#define TB_PROTO_KBPS_MIN    16     /* hello.kbps: the smallest and largest cap a client may ask for */
#define TB_PROTO_KBPS_MAX    1000000
#define TB_PROTO_ROT_BITS    12     /* smallest-three component bits, error <= 0.07 deg */
#define TB_PROTO_ROT_HALF    2047   /* cell of component 0: zero is exact */
#define TB_PROTO_ROT_MAXQ    (2 * TB_PROTO_ROT_HALF)   /* 4094; 4095 is never sent */
#define TB_PROTO_GRID_MAX    ((1 << 24) - 1)   /* cells per axis, at most */

/* ---- message types -------------------------------------------------------- */
enum tb_proto_type {
    /* client -> server */
    TB_MSG_HELLO = 1, TB_MSG_THROW = 2, TB_MSG_POKE = 3,
    TB_MSG_GRAB_START = 4, TB_MSG_GRAB_MOVE = 5, TB_MSG_GRAB_END = 6,
    TB_MSG_PARAM = 7, TB_MSG_ACTION = 8, TB_MSG_CONTACTS_VIEW = 9,
    TB_MSG_PING = 10, TB_MSG_RESYNC = 11, TB_MSG_LOBBY_REQ = 12,
    /* server -> client */
    TB_MSG_WELCOME = 32, TB_MSG_SNAP_KEY = 33, TB_MSG_SNAP_DELTA = 34,
    TB_MSG_CONTACTS = 35, TB_MSG_DICE = 36, TB_MSG_PARAM_CHANGED = 37,
    TB_MSG_PEER_JOINED = 38, TB_MSG_PEER_LEFT = 39, TB_MSG_RESET = 40,
    TB_MSG_SCENE = 41, TB_MSG_PONG = 42, TB_MSG_ERROR = 43, TB_MSG_LOBBY = 44, TB_MSG_WATCHERS = 45,
};

/* ---- error codes (sent in ERROR messages; also returned by decoders) -------- */
enum tb_proto_code {
    TB_OK = 0,
    TB_ERR_MALFORMED = 1,        /* not one well-formed msgpack value, or trailing bytes, or too deep */
    TB_ERR_BAD_MESSAGE = 2,      /* envelope or field of the wrong type / missing field / over a count limit */
    TB_ERR_UNKNOWN_TYPE = 3,     /* envelope type number not defined for this direction */
    TB_ERR_VERSION = 4,          /* hello with another protocol version (fatal: close 4004) */
    TB_ERR_NOT_JOINED = 5,       /* input before hello */
    TB_ERR_ALREADY_JOINED = 6,   /* second hello on one connection */
    TB_ERR_BAD_ROOM = 7,         /* bad room id, unknown kind or scene */
    TB_ERR_ROOM_FULL = 8,
    TB_ERR_TOO_MANY_ROOMS = 9,
    TB_ERR_BAD_VALUE = 10,       /* number non-finite or out of range, unknown name in an enum-like string */
    TB_ERR_UNKNOWN_PARAM = 11,
    TB_ERR_UNKNOWN_BODY = 12,
    TB_ERR_RATE_LIMITED = 13,
    TB_ERR_TOO_BIG = 14,         /* frame over the size limit (fatal: close 1009) */
    TB_ERR_PROJECTILE_CAP = 15,  /* projectile cap reached: the oldest was recycled */
    TB_ERR_NOT_ALLOWED = 16,     /* input meaningless for this room kind */
    TB_ERR_BAD_SNAPSHOT = 17,    /* (client side) snapshot does not fit the baseline */
    TB_ERR_SHUTTING_DOWN = 18,   /* server going away (close 1001) */
    TB_ERR_INTERNAL = 19,
    TB_ERR_TEXT_FRAME = 20,      /* a WebSocket text frame: only binary frames carry messages */
    TB_ERR_WATCH_ONLY = 21,      /* an input from a watcher: watchers send none */
    TB_ERR__COUNT
};

typedef struct tb_proto_err {
    int code;                          /* enum tb_proto_code */
    char msg[TB_PROTO_TEXT_MAX + 1];   /* human-readable reason, NUL-terminated */
} tb_proto_err;

/* Stable lower-case name of an error code ("bad_message"), or "unknown". */
const char *tb_proto_code_name(int code);
/* Name of a message type ("snap_delta"), or NULL when not defined. */
const char *tb_proto_type_name(int type);

typedef char tb_proto_name[TB_PROTO_NAME_MAX + 1];

/* ---- client -> server messages --------------------------------------------- */
typedef struct tb_proto_client_msg {
    int type;            /* enum tb_proto_type, 1..12 */
    uint32_t seq;        /* input sequence number (0 for hello/ping/resync/lobby_req) */
    union {
        /* watch: join as a watcher (PROTOCOL.md "Watchers"); false when absent or nil.
         * kbps: the bandwidth cap the client asks for (PROTOCOL.md "Bandwidth budgets"),
         * TB_PROTO_KBPS_MIN..MAX kbit/s; 0 when absent or nil */
        struct { uint32_t version; tb_proto_name room, kind, scene, name;
                 bool has_kind, has_scene, watch; uint32_t kbps; } hello;
        struct { double origin[3], velocity[3]; tb_proto_name shape;
                 bool has_view_tick; uint32_t view_tick; } throw_;
        /* view_tick (throw, poke, grab_start; PROTOCOL.md "Lag compensation"): the tick the player was
         * looking at; has_view_tick false when absent or nil (= now) */
        struct { bool has_body; uint32_t body; double point[3], impulse[3];
                 bool has_view_tick; uint32_t view_tick; } poke;
        struct { uint32_t pointer; double point[3]; bool has_body; uint32_t body;
                 bool has_view_tick; uint32_t view_tick; } grab; /* start/move/end */
        struct { tb_proto_name name; double value; } param;
        struct { tb_proto_name action, scene; bool has_scene; } action;
        struct { bool on; } contacts;
        /* ping; the ack fields (PROTOCOL.md "Link reports") are optional: has_* false when absent or nil */
        struct { double client_time; bool has_ack_tick, has_rtt, has_recv_bytes;
                 uint32_t ack_tick; double rtt_ms; uint32_t recv_bytes; } ping;
    } u;
} tb_proto_client_msg;

/* Decode one client frame (hostile). Returns TB_OK or an error code, with
 * err->msg saying why. Extra trailing envelope fields are ignored; a hello
 * with another version decodes (version field set) and returns TB_ERR_VERSION. */
int tb_proto_decode_client(const uint8_t *buf, size_t len, tb_proto_client_msg *out, tb_proto_err *err);
/* Encode (for the load tool and tests). Numbers are written the way the JS
 * codec (@msgpack/msgpack) writes them: integral values as the smallest int,
 * others as float64 -- so both encoders agree byte for byte. */
int tb_proto_encode_client(msgpack_sbuffer *sb, const tb_proto_client_msg *m);

/* ---- static room description ---------------------------------------------- */
enum tb_proto_shape_kind { TB_SHAPE_BOX = 0, TB_SHAPE_SPHERE = 1, TB_SHAPE_CAPSULE = 2 };

typedef struct tb_proto_shape {
    uint8_t kind;       /* tb_proto_shape_kind */
    uint8_t material;   /* free-form look id (PROTOCOL.md "Looks") */
    uint32_t color;     /* 0xRRGGBB */
    float size[3];      /* box: half extents; sphere: radius,0,0; capsule: radius, half height (y), 0 */
} tb_proto_shape;

typedef struct tb_proto_plane { double normal[3], offset; } tb_proto_plane;   /* n.x = offset */
typedef struct tb_proto_capsule {
    bool has_body; uint32_t body;   /* attached to a (kinematic) body, else world */
    double a[3], b[3], radius; uint32_t color;
} tb_proto_capsule;
typedef struct tb_proto_box { double center[3], half[3], rot[4]; uint32_t color, material; } tb_proto_box;
typedef struct tb_proto_mesh {
    tb_proto_name kind;         /* "cloth" or "soft" */
    uint32_t verts, tri_count, pin_count, color, grid_w, grid_h;
    const uint8_t *tris;        /* tri_count*3 uint16 little-endian (encode: input; decode: points into the frame) */
    const uint8_t *pins;        /* pin_count uint16 little-endian */
} tb_proto_mesh;
typedef struct tb_proto_param { tb_proto_name name; double value, min, max, def, step; } tb_proto_param;
typedef struct tb_proto_peer { uint32_t id; tb_proto_name name; } tb_proto_peer;

typedef struct tb_proto_static {
    double bounds_min[3], bounds_max[3];
    uint32_t plane_count, capsule_count, box_count, mesh_count;
    tb_proto_plane planes[TB_PROTO_MAX_PLANES];
    tb_proto_capsule capsules[TB_PROTO_MAX_CAPSULES];
    tb_proto_box boxes[TB_PROTO_MAX_BOXES];
    tb_proto_mesh meshes[TB_PROTO_MAX_MESHES];
} tb_proto_static;

/* ---- snapshots: plain pose structs (no physics types) ---------------------- */
typedef struct tb_proto_body {
    uint16_t id;
    tb_proto_shape shape;
    float pos[3];       /* metres, world */
    float rot[4];       /* unit quaternion x, y, z, w */
} tb_proto_body;

/* What the quantizer needs to know about a room: bounds and mesh sizes. */
typedef struct tb_proto_frame {
    double bounds_min[3], bounds_max[3];
    uint32_t mesh_count;
    uint32_t mesh_verts[TB_PROTO_MAX_MESHES];
} tb_proto_frame;
/* Checks a frame (finite bounds, at most TB_PROTO_GRID_MAX cells per axis, caps). */
int tb_proto_frame_check(const tb_proto_frame *f, tb_proto_err *err);
void tb_proto_frame_from_static(tb_proto_frame *f, const tb_proto_static *st);

/* One world state to be sent. bodies sorted by strictly increasing id. */
typedef struct tb_snap_input {
    uint32_t tick, awake;
    const tb_proto_body *bodies; uint32_t body_count;
    const float *verts[TB_PROTO_MAX_MESHES];   /* xyz per vertex, frame.mesh_verts[m] vertices */
} tb_snap_input;

/* An encoded snapshot body shared by every client: tb_snap_write() turns it
 * into a frame for one client. Valid until the encoder's next step. */
typedef struct tb_snap_blob {
    int type;            /* TB_MSG_SNAP_KEY or TB_MSG_SNAP_DELTA */
    uint32_t tick;       /* tick of the state it carries */
    uint32_t base_tick;  /* delta: the baseline tick the client must hold */
    uint32_t fields;     /* envelope array length (the per-client prefix needs it) */
    const uint8_t *tail; size_t tail_len;
} tb_snap_blob;

typedef struct tb_snap_encoder tb_snap_encoder;
tb_snap_encoder *tb_snap_encoder_create(const tb_proto_frame *frame, uint32_t max_bodies);
void tb_snap_encoder_destroy(tb_snap_encoder *enc);
/* Quantize a new state. Returns TB_OK; afterwards tb_snap_encoder_delta()
 * holds the delta from the previous state (NULL after the first step). */
int tb_snap_encoder_step(tb_snap_encoder *enc, const tb_snap_input *in, tb_proto_err *err);
const tb_snap_blob *tb_snap_encoder_delta(tb_snap_encoder *enc);
/* Steps whose input was bit-identical to the previous one (a room at rest):
 * they skip quantization and write the "nothing changed" delta directly. */
uint64_t tb_snap_encoder_idle_steps(const tb_snap_encoder *enc);
/* Error the encoder may spend to send fewer and smaller residuals (see
 * tb_snap_encoder.c). Defaults below; capped at 0.49 mm, 0.095 degrees, 0.98 mm
 * so the promised bounds hold; 0 sends the nearest cells (pure quantization). */
#define TB_SNAP_TOL_POS      0.00049
#define TB_SNAP_TOL_ROT_DEG  0.095
#define TB_SNAP_TOL_VERT     0.00098
void tb_snap_encoder_set_tolerance(tb_snap_encoder *enc, double pos_m, double rot_deg, double vert_m);
/* A bandwidth budget (issue 17, PROTOCOL.md §16): each delta may spend about
 * `bits_per_snapshot` (a credit carried from snapshot to snapshot, at most two
 * snapshots' worth, so a quiet snapshot lends to a busy one). When the items
 * out of tolerance would cost more, they go out by accumulated priority (as in
 * Glenn Fiedler's priority accumulator: every snapshot an item waits adds its
 * current error, in metres, to its priority; sending it resets it), and the
 * others keep the client's old pose (the receiver's rule for unlisted items).
 * An item that has waited `refresh_snapshots` goes out whatever it costs.
 * 0 bits: no budget (the default; the bytes are those of the plain encoder).
 * Keyframes are never cut. */
void tb_snap_encoder_set_budget(tb_snap_encoder *enc, uint32_t bits_per_snapshot, uint32_t refresh_snapshots);
typedef struct tb_snap_budget_stats {
    uint64_t cut_steps;      /* deltas that left items out for the budget */
    uint64_t items_deferred; /* item-snapshots left out */
    uint64_t items_forced;   /* items sent past the budget because they had waited refresh_snapshots */
    uint32_t max_age;        /* the longest wait seen, in snapshots */
    uint32_t pending;        /* items the last step left out (0: everything that changed went out) */
} tb_snap_budget_stats;
tb_snap_budget_stats tb_snap_encoder_budget_stats(const tb_snap_encoder *enc);
/* Where players touched the world lately (xyz per point, up to
 * TB_SNAP_FOCUS_MAX; 0 points: none): under a budget, a body or vertex within
 * TB_SNAP_FOCUS_NEAR metres of one gathers priority (TB_SNAP_FOCUS_GAIN + 1)
 * times as fast, falling off to the plain rate at twice that distance. Kept
 * until set again; it changes nothing without a budget. */
#define TB_SNAP_FOCUS_MAX 8
#define TB_SNAP_FOCUS_NEAR 0.5
#define TB_SNAP_FOCUS_GAIN 3.0
void tb_snap_encoder_set_focus(tb_snap_encoder *enc, const float *xyz, uint32_t count);
/* Makes dst's baseline src's (same frame and capacity; src stepped at least
 * once): dst's next delta then chains from src's last state, so a client
 * holding that state moves from src's stream to dst's without a keyframe. */
int tb_snap_encoder_copy_baseline(tb_snap_encoder *dst, const tb_snap_encoder *src);
/* Keyframe of the current state (encoded lazily, once per step). */
const tb_snap_blob *tb_snap_encoder_key(tb_snap_encoder *enc);
/* One client's frame: [type, last_seq, ...tail]. Returns bytes written, 0 if cap too small. */
size_t tb_snap_write(uint8_t *out, size_t cap, const tb_snap_blob *blob, uint32_t last_seq);
int tb_snap_write_sbuf(msgpack_sbuffer *sb, const tb_snap_blob *blob, uint32_t last_seq);

/* Receiving side: holds the baseline (quantized) and applies snapshots.
 * Capacities are fixed at create; nothing grows afterwards. */
typedef struct tb_snap_decoder tb_snap_decoder;
tb_snap_decoder *tb_snap_decoder_create(uint32_t max_bodies);
void tb_snap_decoder_destroy(tb_snap_decoder *dec);
/* Applies a WELCOME or SCENE (sets the frame from the static description and
 * applies the embedded keyframe), a SNAP_KEY or a SNAP_DELTA frame. On error
 * the previous state is kept (a failing WELCOME/SCENE leaves the decoder not
 * ready). Other message types: TB_ERR_UNKNOWN_TYPE. */
int tb_snap_decoder_apply(tb_snap_decoder *dec, const uint8_t *buf, size_t len, tb_proto_err *err);
bool tb_snap_decoder_ready(const tb_snap_decoder *dec);
uint32_t tb_snap_decoder_tick(const tb_snap_decoder *dec);
uint32_t tb_snap_decoder_last_seq(const tb_snap_decoder *dec);
uint32_t tb_snap_decoder_awake(const tb_snap_decoder *dec);
const tb_proto_frame *tb_snap_decoder_frame(const tb_snap_decoder *dec);
uint32_t tb_snap_decoder_body_count(const tb_snap_decoder *dec);
/* Dequantized body i (ascending id order). */
void tb_snap_decoder_body(const tb_snap_decoder *dec, uint32_t i, tb_proto_body *out);
/* Quantized state of body i: qpos (grid cells), rot index and 3 components, velocity states. */
void tb_snap_decoder_body_q(const tb_snap_decoder *dec, uint32_t i, int32_t qpos[3], int *ridx,
                            int32_t rc[3], int32_t vpos[3], int32_t vrot[3]);
/* Dequantized vertices of mesh m into out (3*count floats). Returns count. */
uint32_t tb_snap_decoder_verts(const tb_snap_decoder *dec, uint32_t m, float *out, uint32_t cap_verts);
const int32_t *tb_snap_decoder_verts_q(const tb_snap_decoder *dec, uint32_t m, const int32_t **vel);

/* ---- server -> client messages --------------------------------------------- */
typedef struct tb_proto_welcome {
    uint32_t version, client_id, tick_rate, snap_rate;
    tb_proto_name room, kind, scene, server;
    uint32_t peer_count, param_count;
    uint32_t watchers;          /* welcome only: watchers in the room (written when > 0; absent reads 0) */
    tb_proto_peer peers[TB_PROTO_MAX_PEERS];
    tb_proto_param params[TB_PROTO_MAX_PARAMS];
    tb_proto_static st;
} tb_proto_welcome;

typedef struct tb_proto_room_info {
    tb_proto_name id, kind, scene;
    uint32_t clients, bodies, awake;
    uint32_t watchers;          /* written when > 0; absent reads 0 */
} tb_proto_room_info;

typedef struct tb_proto_contact { float point[3], normal[3], impulse; } tb_proto_contact;

typedef struct tb_proto_server_msg {
    int type;
    union {
        tb_proto_welcome welcome;              /* WELCOME and SCENE (SCENE fills kind, scene, params, st) */
        struct { uint32_t last_seq, tick, tick_gap, awake; bool key; } snap;  /* header only: use tb_snap_decoder */
        struct { uint32_t tick, count; const uint8_t *raw; } contacts;  /* raw: count*7 float32 LE, points into buf */
        struct { uint32_t tick, count, sum; uint32_t faces[TB_PROTO_MAX_DICE]; } dice;
        struct { tb_proto_name name, by_name; double value; uint32_t by; } param_changed;
        struct { uint32_t id; tb_proto_name name; } peer;               /* joined (name) / left */
        struct { tb_proto_name action, by_name; uint32_t by; } reset;
        struct { double client_time, server_time; } pong;
        struct { uint32_t code; tb_proto_name name; char text[TB_PROTO_TEXT_MAX + 1];
                 bool has_seq; uint32_t seq; } error;
        struct { uint32_t count; tb_proto_room_info rooms[TB_PROTO_MAX_ROOMS]; } lobby;
        struct { uint32_t count; } watchers;
    } u;
} tb_proto_server_msg;

/* Decode any server frame (hostile). The struct is large (~40 KB): keep it off small stacks.
 * Pointers in it (mesh tris/pins, contacts) point into buf and live as long as buf. */
int tb_proto_decode_server(const uint8_t *buf, size_t len, tb_proto_server_msg *out, tb_proto_err *err);
/* Contact i of a decoded CONTACTS message. */
void tb_proto_contact_get(const tb_proto_server_msg *m, uint32_t i, tb_proto_contact *out);

/* Encoders (server side). Each appends exactly one message to sb. */
int tb_proto_encode_welcome(msgpack_sbuffer *sb, const tb_proto_welcome *w, const tb_snap_blob *key);
int tb_proto_encode_scene(msgpack_sbuffer *sb, const tb_proto_welcome *w, const tb_snap_blob *key);
int tb_proto_encode_contacts(msgpack_sbuffer *sb, uint32_t tick, const tb_proto_contact *c, uint32_t n);
int tb_proto_encode_dice(msgpack_sbuffer *sb, uint32_t tick, const uint32_t *faces, uint32_t n);
int tb_proto_encode_param_changed(msgpack_sbuffer *sb, const char *name, double value, uint32_t by, const char *by_name);
int tb_proto_encode_peer_joined(msgpack_sbuffer *sb, uint32_t id, const char *name);
int tb_proto_encode_peer_left(msgpack_sbuffer *sb, uint32_t id);
int tb_proto_encode_reset(msgpack_sbuffer *sb, const char *action, uint32_t by, const char *by_name);
int tb_proto_encode_pong(msgpack_sbuffer *sb, double client_time, double server_time);
/* seq < 0: no input sequence attached. message NULL: the code's name. */
int tb_proto_encode_error(msgpack_sbuffer *sb, int code, const char *message, int64_t seq);
int tb_proto_encode_lobby(msgpack_sbuffer *sb, const tb_proto_room_info *rooms, uint32_t n);
/* The room's watcher count now (PROTOCOL.md "Watchers"). */
int tb_proto_encode_watchers(msgpack_sbuffer *sb, uint32_t count);

/* WebSocket close code a fatal error asks for (PROTOCOL.md "Closing"), 0 if not fatal. */
int tb_proto_close_code(int code);

/* Helpers shared by the codec and its users. */
bool tb_proto_room_id_valid(const char *s);       /* [A-Za-z0-9_-]{1,32} */

/* A capsule given by its segment a-b (world) as a body: centre, rotation taking
 * +y to b - a, shape capsule (radius, half length, both snapped to 1/1024 m so
 * float noise in the segment's length does not turn into a respawn every
 * snapshot). For moving figure parts. */
void tb_proto_body_from_segment(tb_proto_body *out, uint16_t id, const float a[3], const float b[3],
                                float radius, uint32_t color, uint8_t material);

/* Quantization primitives (exposed for tests and the benchmark). */
int32_t tb_proto_quant_pos(double p, double min, int32_t grid_max, int scale);
double tb_proto_dequant_pos(int32_t q, double min, int scale);
int32_t tb_proto_grid_max(double min, double max, int scale);
void tb_proto_quant_rot(const float q[4], int *index, int32_t c[3]);
void tb_proto_dequant_rot(int index, const int32_t c[3], double q[4]);

#endif
