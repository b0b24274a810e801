/* tower_memo.c: settled towers remembered per parameter set (see tower_memo.h). */
#include <stdlib.h>
#include <string.h>

#include "sim/tower_memo.h"

void tb_tower_memo_init(tb_tower_memo *memo)
{
    memset(memo, 0, sizeof *memo);
    pthread_mutex_init(&memo->lock, NULL);
}

void tb_tower_memo_close(tb_tower_memo *memo)
{
    for (int i = 0; i < TB_TOWER_MEMO_ENTRIES; i++) free(memo->entries[i].image);
    pthread_mutex_destroy(&memo->lock);
    memset(memo, 0, sizeof *memo);
}

/* Everything the settle depends on, bit for bit (memset first: no padding
 * garbage in the memcmp). */
static tb_tower_memo_key key_of(const tb_rigid_world_def *def)
{
    tb_tower_memo_key k;
    memset(&k, 0, sizeof k);
    k.gravity[0] = def->gravity.x;
    k.gravity[1] = def->gravity.y;
    k.gravity[2] = def->gravity.z;
    k.restitution = def->restitution;
    k.friction = def->friction;
    k.iterations = def->iterations;
    k.capacity = def->body_capacity;
    k.contact_capacity = def->contact_capacity;
    k.version = TB_TOWER_SCENE_VERSION;
    return k;
}

/* Lock held. */
static tb_tower_memo_entry *find(tb_tower_memo *memo, const tb_tower_memo_key *k)
{
    for (int i = 0; i < TB_TOWER_MEMO_ENTRIES; i++) {
        tb_tower_memo_entry *e = &memo->entries[i];
        if (e->last_use && memcmp(&e->key, k, sizeof *k) == 0) {
            e->last_use = ++memo->clock;
            return e;
        }
    }
    return NULL;
}

/* Lock held. Takes the image (may be NULL: never settles). */
static tb_tower_memo_entry *insert(tb_tower_memo *memo, const tb_tower_memo_key *k, unsigned char *image, size_t len)
{
    tb_tower_memo_entry *e = &memo->entries[0];
    for (int i = 1; i < TB_TOWER_MEMO_ENTRIES && e->last_use; i++)
        if (memo->entries[i].last_use < e->last_use) e = &memo->entries[i];
    free(e->image);
    e->key = *k;
    e->image = image;
    e->image_len = len;
    e->last_use = ++memo->clock;
    return e;
}

int tb_tower_memo_build(tb_tower_memo *memo, tb_rigid_world *w, int plank_ids[TB_TOWER_PLANKS])
{
    tb_rigid_world_def def;
    tb_rigid_world_get_def(w, &def);
    tb_tower_memo_key k = key_of(&def);

    pthread_mutex_lock(&memo->lock);
    const tb_tower_memo_entry *e = find(memo, &k);
    if (e) {
        memo->counts.hits++;
        int rc = tb_rigid_scene_tower_restore(w, e->image, e->image_len, plank_ids);
        pthread_mutex_unlock(&memo->lock);
        return rc;
    }
    pthread_mutex_unlock(&memo->lock);

    unsigned char *image;
    size_t len;
    int rc = tb_rigid_scene_tower_settle(&def, &image, &len);
    if (rc < 0) {
        /* short of memory, or a world too small for the tower: the plain
         * build, with its own error if it has one; nothing remembered */
        rc = tb_rigid_scene_tower(w, plank_ids);
        return rc < 0 ? rc : 0;
    }

    pthread_mutex_lock(&memo->lock);
    memo->counts.settles++;
    memo->counts.unsettled += !image;
    e = find(memo, &k); /* another thread may have put it in meanwhile: same result */
    if (e) free(image);
    else e = insert(memo, &k, image, len);
    rc = tb_rigid_scene_tower_restore(w, e->image, e->image_len, plank_ids);
    pthread_mutex_unlock(&memo->lock);
    return rc;
}

void tb_tower_memo_get_stats(tb_tower_memo *memo, tb_tower_memo_stats *out)
{
    pthread_mutex_lock(&memo->lock);
    *out = memo->counts;
    out->entries = 0;
    for (int i = 0; i < TB_TOWER_MEMO_ENTRIES; i++) out->entries += memo->entries[i].last_use != 0;
    pthread_mutex_unlock(&memo->lock);
}
