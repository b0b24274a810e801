/* error.c: names for the codes in error.h. */
#include "sim/error.h"

const char *tb_strerror(int code)
{
    switch (code) {
    case 0: return "ok";
    case TB_EINVAL: return "invalid argument";
    case TB_ENOMEM: return "out of memory";
    case TB_EFULL: return "queue full";
    case TB_EBADID: return "room id must be 1..32 characters of A-Z a-z 0-9 _ -";
    case TB_EMAXROOMS: return "room limit reached";
    case TB_EROOMFULL: return "room is full";
    case TB_EBADSCENE: return "unknown scene";
    case TB_ERANGE: return "value out of range or not finite";
    case TB_EUNKNOWN: return "unknown name";
    case TB_ENOTSUP: return "not supported by this world";
    case TB_EPATH: return "path refused";
    case TB_ENOENT: return "not found";
    case TB_ESHUTDOWN: return "server is shutting down";
    case TB_ECAP: return "limit reached";
    case TB_ENOBODY: return "no such body, or nothing there";
    case TB_EBUSY: return "already under way";
    case TB_ELIMIT: return "too many at once";
    default: return "unknown error";
    }
}
