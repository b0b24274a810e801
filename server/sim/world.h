/* world.h: what a room needs from a world kind (rigid, cloth, soft).
 *
 * A room does not know what it simulates. It holds a `void *world` and a
 * table of functions for its kind; the worker calls step(), the room applies
 * inputs and asks for the state to encode. Adding a world kind is one adapter
 * file (sim/world_<kind>.c) that fills a tb_world_ops, plus its scenes in
 * sim/scenes.c. Every function runs on the room's worker thread only.
 *
 * The adapter speaks the protocol's plain value types (proto/c/tb_proto.h):
 * it describes the room once (tb_proto_welcome: parameters and the static
 * description) and fills a tb_snap_input per snapshot, pointing into memory
 * it owns. It never encodes bytes itself: the room's snapshot encoder does.
 */
#ifndef TB_WORLD_H
#define TB_WORLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/input.h"
#include "tb_proto.h"

/* param_set: applied, and describe() now gives another static description. */
#define TB_WORLD_STATIC_CHANGED 1

typedef struct tb_world_info {
    int bodies; /* bodies, or points for cloth/soft */
    int awake;  /* bodies not asleep (all points for cloth/soft) */
} tb_world_info;

/* Something a world tells everyone in the room after a step; the scheduler
 * turns each kind into its message (sim/wire.h). */
enum {
    TB_WORLD_EVENT_DICE = 1, /* the thrown dice came to rest: values = their top faces */
    TB_WORLD_EVENT_POKE,     /* a poke or grab start was applied before this step: client, body, view
                                age (steps), the world point it was applied at as 3 float32 bit
                                patterns, then the input type (TB_INPUT_POKE / TB_INPUT_GRAB_START) */
};
#define TB_WORLD_EVENT_VALUES 8
#define TB_WORLD_EVENTS_PER_STEP 4
typedef struct tb_world_event {
    int kind;       /* TB_WORLD_EVENT_* */
    uint32_t count; /* values used (<= TB_WORLD_EVENT_VALUES) */
    uint32_t values[TB_WORLD_EVENT_VALUES];
} tb_world_event;

/* Debug views a client can switch on for itself; the scheduler sends each
 * viewer the overlay's items with every snapshot. */
enum {
    TB_WORLD_OVERLAY_CONTACTS = 1, /* contact points, normals and impulses of the last step */
};
typedef struct tb_world_overlay {
    int kind;                         /* TB_WORLD_OVERLAY_* */
    uint32_t count;
    const tb_proto_contact *contacts; /* CONTACTS: count items in world memory, valid until the next call */
} tb_world_overlay;

/* What a world may share beyond itself, owned by the scheduler (sim/sched.h)
 * and valid for the world's whole life: passed to create and load. NULL
 * (tests, tools) shares nothing: a tower rebuild then settles anew, with the
 * same bits. */
struct tb_tower_memo;
struct tb_rigid_world;
struct tb_rigid_scratch;
typedef struct tb_world_env {
    struct tb_tower_memo *tower_memo; /* settled towers (sim/tower_memo.h) */
    /* tb_tower_memo_build, handed in with the memo rather than called by
     * name, so the adapters link without the memo and its mutex (the
     * WebAssembly build of sim for the browser's replay has no threads). */
    int (*tower_memo_build)(struct tb_tower_memo *memo, struct tb_rigid_world *world, int *plank_ids);
    /* The calling worker's scratch for the rigid worlds it steps (physics/rigid.h:
     * tb_rigid_world_use_scratch), NULL on any other thread. A rigid world
     * moves onto it at its first step there, so the rooms a worker steps in
     * turn share one working set instead of each bringing its own back into
     * the cache. NULL: every world keeps its own. */
    struct tb_rigid_scratch *(*rigid_scratch)(void);
} tb_world_env;

typedef struct tb_world_ops {
    const char *kind;
    /* Build the scene; *world set on success. TB_EBADSCENE, TB_ENOMEM. */
    int (*create)(const char *scene, uint64_t seed, const tb_world_env *env, void **world);
    void (*destroy)(void *world);
    /* Every input except JOIN and PARAM (LEAVE too, so a leaving client's
     * grabs end). 0 or a TB_E* code the client is told (sim/error.h);
     * TB_ECAP means "done, but the oldest projectile was recycled". */
    int (*apply_input)(void *world, const tb_input *in);
    void (*step)(void *world, float dt);
    void (*info)(const void *world, tb_world_info *out);
    /* Parameters (with ranges) and the static description. Fills
     * out->param_count, out->params and out->st; leaves the rest. */
    void (*describe)(const void *world, tb_proto_welcome *out);
    /* Snapshot state: bodies sorted by id and mesh vertices, pointing into
     * world-owned memory valid until the next call. Sets everything but tick. */
    void (*fill_snapshot)(void *world, tb_snap_input *in);
    /* Largest body count fill_snapshot can report (sizes the encoder). */
    uint32_t (*max_bodies)(const void *world);
    /* Parameter by name: TB_EUNKNOWN, TB_ERANGE (out of range or not finite).
     * 0 when applied, or TB_WORLD_STATIC_CHANGED when applied and the static
     * description changed with it (the cloth grid: other meshes), so the
     * room must rebuild its encoder and send everyone a `scene`. */
    int (*param_set)(void *world, const char *name, double value);
    int (*param_get)(const void *world, const char *name, double *value);
    /* After a step: 1 with *out filled while the world has an event to tell
     * (each is given once), else 0; the caller takes at most
     * TB_WORLD_EVENTS_PER_STEP a step. May be NULL (no events). */
    int (*poll_event)(void *world, tb_world_event *out);
    /* Bit (1 << TB_WORLD_OVERLAY_x) for each overlay this kind can draw. */
    unsigned overlays;
    /* The overlay's items now (a kind in `overlays`). May be NULL when overlays is 0. */
    void (*overlay)(void *world, int kind, tb_world_overlay *out);

    /* Persistence and replay (sim/persist.c, sim/record.c). save: the whole
     * state (physics image plus the adapter's own: scene, rng, projectiles,
     * parameters) into a malloc'ed buffer the caller frees; grabs are not
     * kept (their clients are gone after a restart). load: a world of that
     * scene with the saved state; the image is untrusted (TB_EINVAL when it
     * is not a valid save). hash: FNV-1a over the simulated state, equal
     * for bit-identical worlds. check: after a step, bodies or points that
     * went non-finite or left the room are reset or removed; returns how
     * many (0 normally). May be NULL. */
    int (*save)(const void *world, unsigned char **buf, size_t *len);
    int (*load)(const char *scene, uint64_t seed, const tb_world_env *env, const unsigned char *buf, size_t len,
                void **world);
    uint64_t (*hash)(const void *world);
    int (*check)(void *world);
} tb_world_ops;

/* FNV-1a 64 over bytes, continuing from h (start with TB_FNV_OFFSET). */
#define TB_FNV_OFFSET 0xcbf29ce484222325ull
uint64_t tb_fnv1a(uint64_t h, const void *data, size_t len);

/* The scenes the server knows and the kind each belongs to. */
typedef struct tb_scene {
    const char *name;
    const char *kind;
    const tb_world_ops *ops;
} tb_scene;

/* NULL when unknown. */
const tb_scene *tb_scene_find(const char *name);
/* The table, terminated by a zeroed entry. */
const tb_scene *tb_scene_table(void);

/* Shared by the adapters: a physics error code (physics/result.h, from any
 * kernel) as the TB_E* code the client is told. */
int tb_world_error(int phys_err);

/* Shared by the adapters: a parameter with its range, stored as a double. */
typedef struct tb_world_param {
    const char *name;
    double min, max, def, step;
} tb_world_param;

/* Fills a tb_proto_param; value from the world. */
void tb_world_param_describe(const tb_world_param *p, double value, tb_proto_param *out);
/* The shortest decimal that names value's float32 (0.2f -> 0.2): how a
 * parameter value goes out on the wire. */
double tb_world_param_decimal(double value);
/* TB_ERANGE unless finite and, at float32 precision, within [min, max]. */
int tb_world_param_check(const tb_world_param *p, double value);
/* Index of the parameter called name in params[0..count), or -1. */
int tb_world_param_find(const tb_world_param *params, int count, const char *name);

/* Shared by the adapters (sim/world_common.c): the one map from who grabs
 * (a client's pointer) to what the physics world gave for it (the grab's
 * opaque handle). Physics knows handles only; clients exist only here. */
#define TB_WORLD_MAX_GRABS 16
typedef struct tb_world_grabs {
    uint32_t client[TB_WORLD_MAX_GRABS], pointer[TB_WORLD_MAX_GRABS];
    int handle[TB_WORLD_MAX_GRABS];
    int count;
} tb_world_grabs;

/* The handle (client, pointer) holds; false when it holds none. */
bool tb_world_grabs_find(const tb_world_grabs *g, uint32_t client, uint32_t pointer, int *handle);
/* Remember a grab the physics world accepted (ignored when full). */
void tb_world_grabs_add(tb_world_grabs *g, uint32_t client, uint32_t pointer, int handle);
/* Forget (client, pointer)'s grab and give its handle; false when it holds none. */
bool tb_world_grabs_forget(tb_world_grabs *g, uint32_t client, uint32_t pointer, int *handle);
/* Removes one grab of client and gives its handle; false when it holds none.
 * A leave is `while (take) end that grab in the physics world`. */
bool tb_world_grabs_take(tb_world_grabs *g, uint32_t client, int *handle);
/* Copies the pairs into a save header's arrays (room for g->count); returns the count. */
int32_t tb_world_grabs_copy(const tb_world_grabs *g, uint32_t *client, uint32_t *pointer);

/* Save framing (sim/world_common.c): an adapter's save is its header struct
 * (first `uint32_t magic, header_size`, last `uint64_t world_len`) followed
 * by the physics image.
 * begin: fills magic, header_size and world_len into header, allocates the
 * whole save (zeroed) with the header copied in; NULL when out of memory.
 * The caller writes the image at out + header_size, then end: hands out the
 * buffer (0) or frees it when the image could not be written (TB_EINVAL).
 * load_begin: copies the header out of buf and checks the frame; returns
 * the image (len - header_size bytes) or NULL when buf is not such a save. */
unsigned char *tb_world_save_begin(void *header, size_t header_size, uint32_t magic, size_t world_len);
int tb_world_save_end(unsigned char *out, bool image_ok, size_t total, unsigned char **buf, size_t *len);
const unsigned char *tb_world_load_begin(const unsigned char *buf, size_t len, uint32_t magic, void *header,
                                         size_t header_size);
/* Each adapter checks its header against the frame above. */
#define TB_WORLD_SAVE_HEADER_OK(type)                                                                          \
    _Static_assert(offsetof(type, magic) == 0 && offsetof(type, header_size) == 4 &&                         \
                       offsetof(type, world_len) == sizeof(type) - 8,                                          \
                   #type " starts with magic, header_size and ends with world_len")

#endif
