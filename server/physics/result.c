/* result.c: names of the physics error codes (result.h). */
#include "physics/result.h"

const char *tb_phys_strerror(int err)
{
    switch (err) {
    case TB_PHYS_OK: return "ok";
    case TB_PHYS_ERR_INVALID: return "invalid value (NaN, infinite or malformed)";
    case TB_PHYS_ERR_RANGE: return "value out of range";
    case TB_PHYS_ERR_NO_BODY: return "unknown body";
    case TB_PHYS_ERR_FULL: return "world is full";
    case TB_PHYS_ERR_NO_SPACE: return "buffer too small";
    case TB_PHYS_ERR_FORMAT: return "not a valid saved world";
    case TB_PHYS_ERR_NO_MEMORY: return "out of memory";
    case TB_PHYS_ERR_UNKNOWN_GRAB: return "no such grab";
    case TB_PHYS_ERR_TOO_MANY_GRABS: return "too many grabs";
    case TB_PHYS_ERR_NOTHING_THERE: return "nothing to take hold of there";
    case TB_PHYS_ERR_BUSY: return "a press is under way";
    case TB_PHYS_ERR_NO_PIECE: return "no such piece of cloth";
    case TB_PHYS_ERR_INTERNAL: return "internal error";
    default: return "unknown error";
    }
}
