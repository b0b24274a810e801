/* result.h: the error codes every physics kernel (rigid, cloth, soft) returns.
 *
 * One convention, as libuv's: a call that can be refused because of what it
 * was given (a NaN, a value out of range, a full world, a bad save) returns
 * 0 or one of these negative codes, changes nothing when it fails, and
 * tb_phys_strerror() names the code. A programmer error (a NULL world, a
 * NULL out pointer) is not an error code but an assert. */
#ifndef TB_PHYS_RESULT_H
#define TB_PHYS_RESULT_H

enum {
    TB_PHYS_OK = 0,
    TB_PHYS_ERR_INVALID = -1,         /* NaN/Inf or otherwise malformed value */
    TB_PHYS_ERR_RANGE = -2,           /* a number or enum outside its documented range */
    TB_PHYS_ERR_NO_BODY = -3,         /* rigid: id out of range or not a live body */
    TB_PHYS_ERR_FULL = -4,            /* rigid: body or plane capacity reached */
    TB_PHYS_ERR_NO_SPACE = -5,        /* output buffer too small */
    TB_PHYS_ERR_FORMAT = -6,          /* saved state is not ours, truncated or corrupt */
    TB_PHYS_ERR_NO_MEMORY = -7,       /* allocation failed (creation and load only) */
    TB_PHYS_ERR_UNKNOWN_GRAB = -8,    /* a grab handle that holds nothing */
    TB_PHYS_ERR_TOO_MANY_GRABS = -9,  /* every grab slot is taken */
    TB_PHYS_ERR_NOTHING_THERE = -10,  /* a grab or press that starts too far from anything */
    TB_PHYS_ERR_BUSY = -11,           /* soft: a press is already under way */
    TB_PHYS_ERR_NO_PIECE = -12,       /* cloth: no piece of that kind */
    TB_PHYS_ERR_INTERNAL = -13,       /* a construction that cannot fail did (a bug) */
};

/* A short English name for a code ("value out of range"); never NULL. */
const char *tb_phys_strerror(int err);

#endif /* TB_PHYS_RESULT_H */
