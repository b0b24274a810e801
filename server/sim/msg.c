/* msg.c: shared, reference-counted encoded messages (see msg.h). */
#include "sim/msg.h"

#include <stdlib.h>
#include <string.h>

tb_msg *tb_msg_new(size_t len)
{
    tb_msg *msg = malloc(sizeof *msg + TB_MSG_HEADROOM + len);
    if (!msg)
        return NULL;
    atomic_init(&msg->refs, 1);
    msg->len = len;
    msg->tick = 0;
    msg->made_ns = 0;
    msg->type = 0;
    msg->base_tick = 0;
    msg->fields = 0;
    msg->serial = 0;
    msg->from_room = false;
    msg->supersede = TB_SUPERSEDE_NONE;
    msg->supersede_key = 0;
    return msg;
}

tb_msg *tb_msg_from(const void *data, size_t len)
{
    tb_msg *msg = tb_msg_new(len);
    if (msg && len)
        memcpy(tb_msg_data(msg), data, len);
    return msg;
}

tb_msg *tb_msg_ref(tb_msg *msg)
{
    if (msg)
        atomic_fetch_add_explicit(&msg->refs, 1, memory_order_relaxed);
    return msg;
}

void tb_msg_unref(tb_msg *msg)
{
    if (msg && atomic_fetch_sub_explicit(&msg->refs, 1, memory_order_acq_rel) == 1)
        free(msg);
}
